/**
 * The password-check gate (src/auth/check-gate.ts) on its own: places, queues and their bounds per
 * address and per network, round robin over networks, recently successful addresses first, clients
 * gone while waiting. test/http/login-flood.test.ts floods it over real HTTP.
 */
import t from 'tap'
import { CheckGate, checkGateStats } from '../../src/auth/check-gate.js'

t.test('the gate: free places go round robin over the widest networks; a network holds at most per_prefix running and per_prefix_waiting waiting', async (t) => {
  const gate = new CheckGate({
    concurrency: 1,
    queue: 100,
    per_address: 100,
    per_address_waiting: 100,
    per_prefix: 1,
    per_prefix_waiting: 5
  })
  let release!: () => void
  const order: string[] = []
  const first = gate.run('x1', () => false, async () => await new Promise<void>((resolve) => { release = resolve }), ['n1/56', 'n1/48'])
  const waiting: Array<Promise<void>> = []
  for (let i = 0; i < 5; i++) waiting.push(gate.run(`x${i + 2}`, () => false, async () => { order.push(`n1-${i}`) }, ['n1/56', 'n1/48']))
  await t.rejects(gate.run('x9', () => false, async () => {}, ['n1/56', 'n1/48']), { code: 'too_many_attempts' }, 'a sixth waiting from the network: 429')
  await t.rejects(gate.run('x9', () => false, async () => {}, ['n1b/56', 'n1/48']), { code: 'too_many_attempts' }, 'from another /56 of the same /48 too')
  waiting.push(gate.run('y', () => false, async () => { order.push('n2') }, ['n2/56', 'n2/48']))
  release()
  await first
  await Promise.all(waiting)
  t.same(order.slice(0, 2), ['n1-0', 'n2'], 'the other network\'s check runs second, not after the five queued before it')
  t.equal(gate.running + gate.queued, 0)
  // a known address (a success) is served first and not bounded by its networks
  const known = new CheckGate({
    concurrency: 1,
    queue: 3,
    per_address: 100,
    per_address_waiting: 100,
    per_prefix: 1,
    per_prefix_waiting: 100,
    reserved: 1,
    known_ttl: 60
  })
  known.succeeded('k')
  let free!: () => void
  const held = known.run('a', () => false, async () => await new Promise<void>((resolve) => { free = resolve }), ['n/24'])
  const seq: string[] = []
  const others = [known.run('b', () => false, async () => { seq.push('b') }, ['m/24']), known.run('c', () => false, async () => { seq.push('c') }, ['o/24'])]
  await t.rejects(known.run('d', () => false, async () => {}, ['p/24']), { code: 'busy' }, 'the last place is reserved')
  const k = known.run('k', () => false, async () => { seq.push('k') }, ['n/24'])
  free()
  await Promise.all([held, k, ...others])
  t.same(seq, ['k', 'b', 'c'], 'the known address takes the reserved place and runs first')
})

t.test('the gate: a waiting check whose client has gone is dropped, never run', async (t) => {
  const gate = new CheckGate({ concurrency: 1, queue: 10, per_address: 10, per_address_waiting: 10 })
  let release!: () => void
  const first = gate.run('a', () => false, async () => await new Promise<string>((resolve) => { release = () => resolve('first') }))
  const ran: string[] = []
  const gone = new Set(['b', 'c'])
  const waiting = ['b', 'c', 'd'].map(async (who) => await gate.run(who, () => gone.has(who), async () => { ran.push(who); return who }))
  t.equal(gate.queued, 3)
  const before = checkGateStats.dropped
  release()
  t.equal(await first, 'first')
  const settled = await Promise.allSettled(waiting)
  t.same(ran, ['d'], 'only the client still there is checked')
  t.same(settled.map((s) => s.status), ['rejected', 'rejected', 'fulfilled'])
  t.equal(checkGateStats.dropped - before, 2)
  t.equal(gate.running, 0)
  // one address runs at most per_address checks; its others wait (per_address_waiting), beyond that 429
  const small = new CheckGate({ concurrency: 4, queue: 10, per_address: 2, per_address_waiting: 1 })
  const frees: Array<() => void> = []
  const hold = async (): Promise<void> => await new Promise<void>((resolve) => { frees.push(resolve) })
  const x1 = small.run('x', () => false, hold)
  const x2 = small.run('x', () => false, hold)
  const order: string[] = []
  const x3 = small.run('x', () => false, async () => { order.push('x3') })
  t.equal(small.running, 2, 'x runs two, though places are free')
  t.equal(small.queued, 1, 'its third waits')
  await t.rejects(small.run('x', () => false, async () => {}), { code: 'too_many_attempts' }, 'a fourth: 429')
  await small.run('y', () => false, async () => { order.push('y') })
  t.same(order, ['y'], 'another address runs at once')
  for (const f of frees.splice(0)) f()
  await Promise.all([x1, x2, x3])
  t.same(order, ['y', 'x3'], 'x3 ran when x had a place again')
  t.equal(small.running, 0)
})

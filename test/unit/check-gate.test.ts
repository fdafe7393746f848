/**
 * The password-check gate (src/auth/check-gate.ts) on its own: places, queues and their bounds per
 * address and per network, round robin over networks, recently successful addresses first, clients
 * gone while waiting. test/http/login-flood.test.ts floods it over real HTTP.
 */
import t from 'tap'
import { CheckGate, checkGateStats, type CheckGateOptions } from '../../src/auth/check-gate.js'

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

/** A check that runs until released. */
function held (): { fn: () => Promise<void>, release: () => void } {
  let release!: () => void
  const p = new Promise<void>((resolve) => { release = resolve })
  return { fn: async () => await p, release }
}
const here = (): boolean => false
const tick = async (): Promise<void> => await new Promise((resolve) => setImmediate(resolve))
/** Ten places, ten waiting, ten per address unless told. */
const gateOf = (o: Partial<CheckGateOptions>): CheckGate =>
  new CheckGate({ concurrency: 10, queue: 10, per_address: 10, per_address_waiting: 10, ...o })

t.test('the fast path holds per_prefix too; a finished check gives its address and networks their places back', async (t) => {
  const gate = gateOf({ per_prefix: 1, per_prefix_waiting: 1 })
  const a = held()
  const ra = gate.run('a', here, a.fn, ['n/24'])
  t.equal(gate.tracked, 2, 'a and n/24 counted')
  const rb = gate.run('b', here, async () => {}, ['n/24'])
  t.equal(gate.running, 1, 'places are free, but n/24 runs one')
  t.equal(gate.queued, 1)
  t.equal(gate.tracked, 4, 'a, b, n/24 and its lane')
  const before = { ...checkGateStats }
  await t.rejects(gate.run('c', here, async () => {}, ['n/24']), { code: 'too_many_attempts' }, 'n/24 has one waiting already')
  t.equal(checkGateStats.prefix - before.prefix, 1, 'counted as a network refusal')
  await gate.run('d', here, async () => {}, ['m/24'])
  t.equal(gate.queued, 1, 'another network\'s check ran and finished: b still waits for n/24')
  a.release()
  await Promise.all([ra, rb])
  await gate.run('e', here, async () => {}, ['n/24'])
  t.equal(gate.running + gate.queued, 0, 'n/24 free again: a later check runs at once')
  t.equal(gate.tracked, 0, 'nothing counted once idle')
  // checks that name no network share none
  const two = held()
  const r1 = gate.run('x', here, two.fn)
  const r2 = gate.run('y', here, two.fn)
  t.equal(gate.running, 2, 'two addresses without networks run at once')
  two.release()
  await Promise.all([r1, r2])
})

t.test('the address\'s waiting count: a started or a dropped waiter gives its place back; a refusal leaves a running count as it was', async (t) => {
  const gate = gateOf({ per_address: 1, per_address_waiting: 1, per_prefix: 10, per_prefix_waiting: 1 })
  const x1 = held()
  const r1 = gate.run('x', here, x1.fn, ['n/24'])
  const x2 = held()
  const r2 = gate.run('x', here, x2.fn, ['n/24'])
  const before = checkGateStats.address
  await t.rejects(gate.run('x', here, async () => {}, ['n/24']), { code: 'too_many_attempts' })
  t.equal(checkGateStats.address - before, 1, 'counted as an address refusal')
  t.equal(gate.running, 1, 'x still runs one: the refusal did not forget it')
  const none = new CheckGate({ concurrency: 10, queue: 10, per_address: 1, per_address_waiting: 0 })
  const n1 = held()
  const rn1 = none.run('x', here, n1.fn)
  await t.rejects(none.run('x', here, async () => {}), { code: 'too_many_attempts' }, 'no waiting allowed')
  await t.rejects(none.run('x', here, async () => {}), { code: 'too_many_attempts' }, 'again: x\'s running check is still counted')
  n1.release()
  await rn1
  // a refusal leaves a network's running count as it was, and its waiting one
  const nets = gateOf({ concurrency: 2, queue: 1, per_address: 1, per_prefix: 1 })
  const [n1x, n1r, n1s] = [held(), held(), held()]
  const rn1x = nets.run('x', here, n1x.fn, ['p/24'])
  const rn1r = nets.run('r', here, n1r.fn, ['r/24'])
  const rn1s = nets.run('s', here, n1s.fn, ['s/24'])
  await t.rejects(nets.run('x', here, async () => {}, ['p/24']), { code: 'busy' }, 'the queue is full')
  n1r.release()
  await rn1r
  n1s.release()
  await rn1s
  const ry = nets.run('y', here, async () => {}, ['p/24'])
  t.equal(nets.queued, 1, 'a place is free, but p/24 runs x: y waits (the refusal did not forget p/24)')
  n1x.release()
  await Promise.all([rn1x, ry])
  const [q1, q2, yh] = [held(), held(), held()]
  const rq = [nets.run('q', here, q1.fn, ['q/24']), nets.run('r', here, q2.fn, ['r/24'])]
  const ryh = nets.run('y', here, yh.fn, ['p/24'])
  await t.rejects(nets.run('z', here, async () => {}, ['p/24']), { code: 'busy' }, 'the queue is full')
  q1.release()
  await rq[0]
  await tick()
  t.equal(nets.running, 2, 'y started in q\'s place')
  q2.release()
  await rq[1]
  const rw = nets.run('w', here, async () => {}, ['p/24'])
  t.equal(nets.queued, 1, 'a place is free, but p/24 runs y: w waits (the refusal while y waited did not forget p/24)')
  yh.release()
  await Promise.all([ryh, rw])
  t.equal(nets.tracked, 0)
  x1.release()
  await r1
  await tick()
  t.equal(gate.running, 1, 'x2 started')
  const r3 = gate.run('x', here, async () => {}, ['n/24'])
  t.equal(gate.queued, 1, 'x may wait again: x2 gave its waiting place back, and so did n/24')
  x2.release()
  await Promise.all([r2, r3])
  // a dropped waiter gives its places back too
  const y1 = held()
  const ry1 = gate.run('y', here, y1.fn, ['m/24'])
  let gone = false
  const ry2 = gate.run('y', () => gone, async () => {}, ['m/24'])
  gone = true
  await gate.run('z', here, async () => {}, ['o/24'])
  await t.rejects(ry2, { code: 'busy' }, 'dropped when a check finished and it had gone')
  t.equal(gate.queued, 0)
  const ry3 = gate.run('y', here, async () => {}, ['m/24'])
  t.equal(gate.queued, 1, 'y and m/24 may wait again')
  y1.release()
  await Promise.all([ry1, ry3])
  t.equal(gate.tracked, 0)
})

t.test('dispatch: never past concurrency; a lane whose waiter may not run yet is passed over; addresses without networks take turns', async (t) => {
  const gate = new CheckGate({ concurrency: 2, queue: 10, per_address: 1, per_address_waiting: 10 })
  const x1 = held()
  const y1 = held()
  const rx1 = gate.run('x', here, x1.fn)
  const ry1 = gate.run('y', here, y1.fn)
  const order: string[] = []
  const y2 = held()
  const z = held()
  const rx2 = gate.run('x', here, async () => { order.push('x2') })
  const ry2 = gate.run('y', here, async () => { order.push('y2'); await y2.fn() })
  const rz = gate.run('z', here, async () => { order.push('z'); await z.fn() })
  y1.release()
  await ry1
  await tick()
  t.equal(gate.running, 2, 'one place came free: one waiter started, not more')
  t.same(order, ['y2'], 'x\'s lane comes first but x runs its one: y2 runs')
  y2.release()
  z.release()
  x1.release()
  await Promise.all([rx1, rx2, ry2, rz])
  t.same(order, ['y2', 'z', 'x2'])
  // round robin between addresses with no networks: each address is a lane of its own
  const one = new CheckGate({ concurrency: 1, queue: 10, per_address: 10, per_address_waiting: 10 })
  const h = held()
  const first = one.run('h', here, h.fn)
  const seq: string[] = []
  const rs = ['a1', 'a2', 'a3'].map(async (n) => await one.run('a', here, async () => { seq.push(n) }))
  rs.push(one.run('b', here, async () => { seq.push('b1') }))
  h.release()
  await Promise.all([first, ...rs])
  t.same(seq, ['a1', 'b1', 'a2', 'a3'], 'b waits behind one of a\'s, not all three')
  t.equal(one.tracked + gate.tracked, 0)
})

t.test('a full queue: its gone waiters are swept to make room (from every lane), else 503 busy, counted', async (t) => {
  const gate = gateOf({ concurrency: 1, queue: 2, reserved: 1, known_ttl: 60 })
  gate.succeeded('k')
  const h = held()
  const first = gate.run('h', here, h.fn)
  let gone = false
  const w1 = gate.run('a', () => gone, async () => {})
  const w2 = gate.run('k', () => gone, async () => {})
  const before = checkGateStats.busy
  await t.rejects(gate.run('b', here, async () => {}), { code: 'busy' }, 'one place, the other reserved: busy')
  t.equal(checkGateStats.busy - before, 1, 'counted')
  gone = true
  const ran: string[] = []
  const w3 = gate.run('c', here, async () => { ran.push('c') })
  const w4 = gate.run('k', here, async () => { ran.push('k') })
  await t.rejects(w1, { code: 'busy' }, 'a gone waiter in a lane: swept')
  await t.rejects(w2, { code: 'busy' }, 'a gone known waiter: swept')
  t.equal(gate.queued, 2, 'c and k wait in their places')
  h.release()
  await Promise.all([first, w3, w4])
  t.same(ran, ['k', 'c'])
  t.equal(gate.tracked, 0)
  // swept as soon as the queue is exactly full
  const full = new CheckGate({ concurrency: 1, queue: 2, per_address: 10, per_address_waiting: 10 })
  const h2 = held()
  const busy = full.run('h', here, h2.fn)
  let left = false
  const leavers = [full.run('a', () => left, async () => {}), full.run('b', () => left, async () => {})]
  left = true
  const stays = full.run('c', here, async () => {})
  await t.rejects(leavers[0], { code: 'busy' })
  await t.rejects(leavers[1], { code: 'busy' })
  h2.release()
  await Promise.all([busy, stays])
})

t.test('a recently successful address: known for known_ttl, then bounded again; at most 20,000 remembered, the oldest forgotten', async (t) => {
  /** Whether a check from `bucket` runs beside another of its network's (per_prefix 1): only a known address's does. */
  const runsAtOnce = async (bucket: string, g: CheckGate = gate): Promise<boolean> => {
    const h = held()
    const r1 = g.run('other', here, h.fn, ['n/24'])
    const r2 = g.run(bucket, here, async () => {}, ['n/24'])
    await tick()
    const atOnce = g.queued === 0
    h.release()
    await Promise.all([r1, r2])
    return atOnce
  }
  const gate = gateOf({ per_prefix: 1, known_ttl: 0.05 })
  t.equal(await runsAtOnce('k'), false, 'unknown: n/24 runs one')
  gate.succeeded('k')
  t.equal(await runsAtOnce('k'), true, 'known: its network\'s bound does not apply')
  await new Promise((resolve) => setTimeout(resolve, 80))
  t.equal(await runsAtOnce('k'), false, 'known_ttl (50 ms) later: bounded again')
  const many = gateOf({ per_prefix: 1, known_ttl: 60 })
  const atOnce = async (bucket: string): Promise<boolean> => await runsAtOnce(bucket, many)
  for (let i = 0; i < 20_000; i++) many.succeeded(`a${i}`)
  t.equal(await atOnce('a0'), true, '20,000 remembered: the first still known')
  many.succeeded('a20000')
  t.equal(await atOnce('a0'), false, 'the 20,001st forgets the oldest')
  t.equal(await atOnce('a1'), true, 'and only it')
})

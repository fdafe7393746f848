/**
 * The request chains (src/pipeline/chains.ts): the table in docs/architecture.md
 * is the one in the code, every chain reads top to bottom in the table's
 * order, the modes that reach the upstream admit a request alike, and the
 * runner awaits only what a step returned as a promise.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { CHAINS, STEPS, buildChains, chainTable, run, type Impl, type Mode, type Step, type Token } from '../../src/pipeline/chains.js'
import { ROOT } from '../fixtures/gateway.js'
import { E, GatewayError, mapResult } from '../../src/errors.js'

const modes = Object.keys(CHAINS) as Mode[]
const names = Object.keys(STEPS)
const nameOf = (token: string): string => token.split(':')[0]
const chain = (m: Mode): readonly string[] => CHAINS[m]

t.test('docs/architecture.md shows the chains of the code', async (t) => {
  const doc = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8')
  const table = /<!-- chains:begin -->\n([\s\S]*?)\n<!-- chains:end -->/.exec(doc)?.[1]
  t.equal(table, chainTable(), 'docs/architecture.md: run npm run docs:tables')
})

t.test('every chain takes its steps in the one order, each at most once, each option declared', async (t) => {
  for (const m of modes) {
    const order = chain(m).map((x) => names.indexOf(nameOf(x)))
    t.notOk(order.includes(-1), `${m}: every step is in STEPS`)
    t.same(order, [...order].sort((a, b) => a - b), `${m}: in STEPS order`)
    t.equal(new Set(order).size, order.length, `${m}: no step twice`)
    for (const token of chain(m)) {
      const [name, option] = token.split(':')
      const options = (STEPS as Record<string, { options?: Record<string, string> }>)[name].options
      if (option === undefined) t.equal(options, undefined, `${m}: ${name} has no options`)
      else t.ok(options?.[option], `${m}: ${token} says why it differs`)
    }
  }
})

t.test('what reaches the upstream or is decided for it is admitted alike', async (t) => {
  const admission = ['authenticate', 'keyIp', 'rateLimit', 'digest', 'org', 'signingKeys']
  for (const m of ['upstream', 'upgrade', 'decision', 'decision-upgrade'] as const) {
    t.same(chain(m).map(nameOf).filter((n) => admission.includes(n)), admission, `${m}: the admission steps`)
    t.ok(chain(m).includes('org:upstream'), `${m}: the upstream's org`)
  }
  for (const m of ['upgrade', 'decision-upgrade'] as const) {
    t.ok(chain(m).includes('crossSite'), `${m}: a handshake gets the cross-site check`)
    t.ok(chain(m).includes('digest:empty'), `${m}: a handshake's digest is the empty body's`)
  }
  for (const m of ['user', 'user+org', 'user+org-if-member'] as const) {
    t.same(chain(m).slice(1, 5), ['authenticate:login', 'keyIp', 'rateLimit:headers', 'digest:read'], `${m}: as a forwarded request, before its org and handler`)
  }
  t.same(modes.filter((m) => chain(m).at(-1) !== 'handler'), ['upstream', 'upgrade'], 'every other mode ends in its route\'s handler')
})

t.test('the runner awaits only a promise, and stops at an answer or an error', async (t) => {
  type Ctx = { answered: boolean, seen: string[] }
  const step = (name: string): Step<Ctx> => (ctx) => { ctx.seen.push(name) }
  const later = (name: string): Step<Ctx> => async (ctx) => {
    await new Promise((resolve) => setImmediate(resolve)); ctx.seen.push(name)
  }
  const answer: Step<Ctx> = (ctx) => { ctx.seen.push('answer'); ctx.answered = true }
  const fresh = (): Ctx => ({ answered: false, seen: [] })

  let ctx = fresh()
  t.equal(run([step('a'), step('b'), step('c')], ctx), undefined, 'decided from memory: no promise')
  t.same(ctx.seen, ['a', 'b', 'c'])

  ctx = fresh()
  const pending = run([step('a'), later('b'), step('c'), later('d'), step('e')], ctx)
  t.ok(pending instanceof Promise, 'a step that returned a promise: the rest waits for it')
  t.same(ctx.seen, ['a'], 'nothing after it has run yet')
  await pending
  t.same(ctx.seen, ['a', 'b', 'c', 'd', 'e'], 'then each in order')

  ctx = fresh()
  t.equal(run([step('a'), answer, step('c')], ctx), undefined)
  t.same(ctx.seen, ['a', 'answer'], 'an answer stops the chain')
  ctx = fresh()
  await run([later('a'), answer, step('c')], ctx)
  t.same(ctx.seen, ['a', 'answer'], 'after a promise too')
  ctx = fresh()
  await run([answer, later('b')], ctx)
  t.same(ctx.seen, ['answer'], 'before a promise too')

  const boom = (): void => { throw new Error('refused') }
  ctx = fresh()
  t.throws(() => run([step('a'), boom, step('c')], ctx), /refused/, 'thrown at once from memory')
  t.same(ctx.seen, ['a'])
  ctx = fresh()
  await t.rejects(async () => { await run([later('a'), boom, step('c')], ctx) }, /refused/, 'a rejection after a promise')
  t.same(ctx.seen, ['a'])

  // a refusal returned from memory (no throw): handed back at once, nothing after it runs
  const no = E.invalidToken()
  ctx = fresh()
  t.equal(run([step('a'), () => no, step('c')], ctx), no, 'returned from memory: handed back')
  t.same(ctx.seen, ['a'])
  ctx = fresh()
  await t.rejects(async () => { await run([later('a'), () => no, step('c')], ctx) }, { code: 'invalid_token' }, 'after a promise: thrown')
  t.same(ctx.seen, ['a'])
  // a refusal a step's promise resolves to (a Result): the same as one returned
  const resolvesTo = (err: GatewayError): Step<Ctx> => async (ctx) => { ctx.seen.push('asked'); return err }
  ctx = fresh()
  await t.rejects(async () => { await run([resolvesTo(no), step('c')], ctx) }, { code: 'invalid_token' }, 'the first promise resolved to a refusal: thrown')
  t.same(ctx.seen, ['asked'], 'nothing after it runs')
  ctx = fresh()
  await t.rejects(async () => { await run([later('a'), resolvesTo(no), step('c')], ctx) }, { code: 'invalid_token' }, 'a later one too')
  t.same(ctx.seen, ['a', 'asked'])
})

t.test('mapResult: at once for a value or a refusal, through the promise otherwise; a rejected GatewayError is a refusal', async (t) => {
  const twice = (v: number, w: number | undefined): number => v * (w ?? 2)
  t.equal(mapResult(3, twice), 6, 'a value: ok applied at once, no promise')
  t.equal(mapResult(3, twice, 10), 30, 'with the value passed beside it')
  const no = E.invalidToken()
  t.equal(mapResult<number, number>(no, twice), no, 'a refusal: handed on as it is, ok not called')
  const other = E.csrfFailed()
  t.equal(mapResult<number, number, GatewayError>(no, twice as never, other, (e, w) => e === no ? w : e), other, 'or to `refused`, with the value beside it')
  const later = mapResult(Promise.resolve(3), twice)
  t.ok(later instanceof Promise, 'a promise: a promise')
  t.equal(await later, 6)
  t.equal(await mapResult<number, number>(Promise.resolve(no), twice), no, 'a promise of a refusal: the refusal')
  const down = E.storeUnavailable()
  t.equal(await mapResult<number, number>(Promise.reject(down), twice), down, 'a promise rejected with a GatewayError (the store down): resolves to it')
  t.equal(await mapResult<number, number | undefined>(Promise.reject(down), twice, undefined, () => undefined), undefined, 'handed to `refused` too')
  await t.rejects(async () => await mapResult(Promise.reject(new TypeError('a bug')), twice), TypeError, 'anything else still rejects')
  t.equal(mapResult(null, (v: null) => v === null ? no : 1), no, 'ok may refuse at once')
  t.equal(await mapResult(1, async () => no), no, 'or later')
})

t.test('buildChains: a step off in the config is left out', async (t) => {
  const seen: string[] = []
  const impl = Object.fromEntries(modes.flatMap((m) => chain(m)).map((token) => [token, token.startsWith('rateLimit') ? null : () => { seen.push(token) }])) as unknown as Impl
  const chains = buildChains(impl)
  t.equal(chains.user.length, CHAINS.user.length - 1, 'rateLimit is not in the chain')
  run(chains.user, { answered: false } as never)
  t.same(seen, CHAINS.user.filter((x: Token) => !x.startsWith('rateLimit')), 'the rest, in order')
})

/**
 * One path: the access rules, upstream.public_paths and the decision decide
 * on exactly the string the upstream receives (docs/security.md). A
 * differential property over generated request targets (origin- and
 * absolute-form, dot segments, escapes, `;`, `//`, backslashes, case, UTF-8,
 * overlong), each sent raw in proxy mode with and without a credential, as a
 * WebSocket upgrade, and described to a decision: the verdict sidegate gave
 * is the one the rules give on the target the upstream got (or would get),
 * and a forwarded request's upstream got exactly that target; or the request
 * was refused as malformed (400).
 */
import t, { type Test } from 'tap'
import fc from 'fast-check'
import { startEcho } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { send, verdictOf } from '../fixtures/verdicts.js'
import { fuzzSeed } from '../fixtures/seed.js'
import { AccessRules } from '../../src/access/rules.js'
import { publicUpstream } from '../../src/access/public.js'
import type { Identity } from '../../src/auth/index.js'

const access = {
  default_policy: 'one_factor',
  rules: [
    { paths: ['/open/**'], policy: 'bypass' },
    { paths: ['/ops/**'], policy: 'deny' },
    { paths: ['/secure/**'], policy: 'two_factor' },
    { paths: ['/admin/**'], methods: ['DELETE'], policy: 'deny' }
  ]
}
const PUBLIC = ['/status']

const db = embeddedStore()
const echo = await startEcho()
const proxy = await startGateway(db.url, { upstream: { url: echo.url, public_paths: PUBLIC }, access })
const decider = await startGateway(db.url, { redis: { url: db.url, prefix: proxy.config.redis.prefix }, server: { trusted_proxies: ['127.0.0.1'] }, upstream: { public_paths: PUBLIC }, access })
t.teardown(async () => { await proxy.close(); await decider.close(); await echo.close(); await db.stop() })

const bob = await makeUser(proxy, 'bob')
const token = await proxy.store.privateTokens.create(bob.id)
const HOST = new URL(proxy.url).host

// the oracle: the rules, over the target the upstream receives
const rules = new AccessRules(proxy.config.access)
const isPublic = publicUpstream(PUBLIC)
const caller = { identity: { userId: bob.id, method: 'private_token', factors: undefined, user: bob } as unknown as Identity, orgId: undefined }
function expected (method: string, forwarded: string, credential: boolean): string {
  const path = forwarded.split('?')[0]
  if (isPublic(path)) return 'allowed'
  const req = { method, target: path, clientIp: '127.0.0.1' }
  const p = rules.matchPath(path)
  const b = rules.before(req, p)
  if (b === 'bypass') return 'allowed'
  if (b === 'deny') return '403'
  if (!credential) return '401'
  return rules.decide(req, caller, p).allowed ? 'allowed' : '403'
}

/** What the upstream receives for a target sent to proxy mode (RFC 9112 §3.2.2), or null: to be refused. */
function forwardedOf (target: string, host: string): string | null {
  if (target.startsWith('/')) return target
  const m = /^https?:\/\/([^/?]*)(.*)$/i.exec(target)
  if (m === null || m[1].toLowerCase() !== host.toLowerCase()) return null
  return m[2] === '' ? '/' : m[2].startsWith('?') ? '/' + m[2] : m[2]
}

const SEGMENTS = ['open', 'ops', 'secure', 'status', 'admin', 'x', 'OPS', 'Ops', '.', '..', '%2e', '%2E%2e', '.%2e', '%2f', '%2F', '%5c', '\\', ';x', '..;',
  'ops;p', 'open;a=b', '', '%80', '%bf', '%c0%ae', '%c0%ae%c0%ae', '%c3%a9', '\xc3\xa9', '%25', '%6f%70%73', '%3B', '%00', 'a%2f..%2f..%2fops']
const PREFIXES = ['', '', '', `http://${HOST}`, `HTTP://${HOST}`, `hTTp://${HOST.toUpperCase()}`, `https://${HOST}`, 'http://other.example', `http://${HOST}.evil`, 'ftp://x', `//${HOST}`]
const targets = fc.tuple(
  fc.constantFrom(...PREFIXES),
  fc.array(fc.constantFrom(...SEGMENTS), { minLength: 0, maxLength: 5 }),
  fc.constantFrom('', '', '/', '?q=1', '?next=/ops/x')
).map(([prefix, segs, tail]) => {
  const path = segs.length === 0 && prefix !== '' ? '' : '/' + segs.join('/')
  return prefix + path + tail
})

async function oneTarget (t: Test, target: string): Promise<boolean> {
  const fwd = forwardedOf(target, HOST)
  const auth = { authorization: `Token ${token}` }
  let ok = true
  const check = (what: string, got: string, want: string, seen?: string): void => {
    if (got === want && (seen === undefined || got !== 'allowed' || seen === fwd)) return
    ok = false
    t.fail(`${what} ${JSON.stringify(target)}: ${got}${seen === undefined ? '' : ` (upstream got ${JSON.stringify(seen)})`}, want ${want} on ${JSON.stringify(fwd)}`)
  }
  for (const [what, headers, upgrade] of [['proxy, a token', auth, false], ['proxy, no credential', {}, false], ['upgrade, a token', auth, true]] as const) {
    const before = echo.seen.length
    const got = verdictOf(await send(proxy.url, 'GET', target, headers, { upgrade }))
    // Node's own parser refuses some targets (a raw UTF-8 byte)
    // with 400 before sidegate sees them: refused all the same
    if (got === '400') continue
    const seen = echo.seen.length > before ? echo.seen[echo.seen.length - 1].url : undefined
    check(what, got, fwd === null ? '400' : expected('GET', fwd, Object.keys(headers).length > 0), seen)
    if (got !== 'allowed' && seen !== undefined) check(`${what}: refused yet forwarded`, 'forwarded', 'not forwarded')
  }
  // a decision: the proxy in front forwards the target as the client sent it
  for (const style of ['nginx', 'caddy'] as const) {
    const described: Record<string, string> = style === 'nginx' ? { 'x-original-method': 'GET', 'x-original-uri': target } : { 'x-forwarded-method': 'GET', 'x-forwarded-uri': target }
    const got = verdictOf(await send(decider.url, 'GET', '/_sidegate/auth', { ...auth, ...described }))
    if (got === '400' && !target.startsWith('/')) continue
    if (got === '400' && /[\x00-\x20\x7f-\xff]/.test(target)) continue
    check(`decision (${style})`, got, expected('GET', target, true))
  }
  return ok
}

t.test('the rules decide on the target the upstream receives: proxy mode, upgrades and decisions (fuzzed)', async (t) => {
  const seed = fuzzSeed()
  t.comment(`fast-check seed ${seed}`)
  await fc.assert(
    fc.asyncProperty(targets, async (target) => await oneTarget(t, target)),
    { seed, numRuns: Number(process.env.SIDEGATE_ONE_PATH_RUNS ?? 150), endOnFailure: true }
  )
})

t.test('the review\'s targets, each way', async (t) => {
  for (const target of [
    `http://${HOST}/ops/restart`, `HTTP://${HOST}/ops/restart`, `http://${HOST}/foo/../ops/restart`, `http://${HOST}/open/../ops/restart`,
    `http://${HOST}/secure/x`, 'http://' + HOST, `http://${HOST}?x=1`, 'http://other.example/open/x', 'http://x/ops/restart',
    '/ops;x/restart', '/open/..;/ops/restart', '/open;x/../ops/x', '/open/%80', '/open/x%BFy'
  ]) await oneTarget(t, target)
})

t.test('absolute-form is forwarded as its path; another host, another scheme or a relative target is 400', async (t) => {
  const auth = { authorization: `Token ${token}` }
  const REFUSED = 'The request target must be a path starting with "/", or an absolute http(s) URL whose host is the Host header.'
  const before = echo.seen.length
  t.equal((await send(proxy.url, 'GET', `http://${HOST}/api/x?y=1`, auth)).status, 200)
  t.equal(echo.seen[before].url, '/api/x?y=1', 'the upstream got origin-form')
  t.equal((await send(proxy.url, 'GET', `http://${HOST}/ops/restart`, auth)).status, 403, 'the deny rule, as for /ops/restart')
  t.equal((await send(proxy.url, 'GET', `http://${HOST}/ops/restart`, auth, { upgrade: true })).status, 403, 'and as a WebSocket upgrade')
  t.equal((await send(proxy.url, 'GET', `http://${HOST}/open/x`, {})).status, 200, 'a bypass too')
  for (const target of ['http://other.example/api/x', 'ftp://x/api', `http://user@${HOST}/api`]) {
    const r = await send(proxy.url, 'GET', target, auth)
    t.equal(r.status, 400, target)
    t.equal(JSON.parse(r.body ?? '{}').detail, REFUSED, 'saying what a target must be')
    t.equal((await send(proxy.url, 'GET', target, auth, { upgrade: true })).status, 400, `${target} (upgrade)`)
  }
  t.equal(echo.seen.length, before + 2, 'nothing refused reached the upstream')
  const options = await send(proxy.url, 'OPTIONS', '*', auth)
  t.equal(options.status, 200, 'OPTIONS * goes on')
  t.equal(echo.seen[echo.seen.length - 1].url, '/*', 'as /*, the path the rules saw')
  t.equal((await send(proxy.url, 'GET', '*', auth)).status, 400, '* with another method')
})

t.test('a lower-case method in a decision meets the rules for its upper-case name (Caddy passes `delete` on)', async (t) => {
  for (const style of ['nginx', 'caddy'] as const) {
    for (const m of ['delete', 'Delete', 'DELETE']) {
      const described: Record<string, string> = style === 'nginx' ? { 'x-original-method': m, 'x-original-uri': '/admin/users/1' } : { 'x-forwarded-method': m, 'x-forwarded-uri': '/admin/users/1' }
      const r = await send(decider.url, 'GET', '/_sidegate/auth', { authorization: `Token ${token}`, ...described })
      t.equal(r.status, 403, `${style}: ${m}`)
    }
  }
  const get = await send(decider.url, 'GET', '/_sidegate/auth', { authorization: `Token ${token}`, 'x-forwarded-method': 'get', 'x-forwarded-uri': '/admin/users/1' })
  t.equal(get.status, 200, 'get is not DELETE')
})

/**
 * Access rules over real HTTP on the embedded store: one table of requests
 * (paths, methods, networks, subjects, factors, credentials) sent to a
 * proxy-mode gateway and described to a decision gateway as nginx and as
 * Caddy describe it, the same verdict each way; a bypass forwards no identity
 * and strips sidegate's credentials; a denial names no rule in the answer but
 * in the audit trail; a live reload swaps the rules for the next request.
 */
import t from 'tap'
import { request, startEcho } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { signedHeaders } from '../fixtures/creds.js'
import { sameEveryWay, type VerdictCase, type VerdictCreds } from '../fixtures/verdicts.js'
import { eventually } from '../fixtures/wait.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const REPORTS_ORG = 'cccccccc-3333-4333-8333-cccccccccccc'

const access = {
  default_policy: 'one_factor',
  rules: [
    { paths: ['/open/**'], policy: 'bypass' },
    { paths: ['/reports/**'], methods: ['GET'], subjects: ['user:alice', `org:${REPORTS_ORG}`, 'method:access_key'], policy: 'one_factor' },
    { paths: ['/ops/**'], networks: ['10.0.0.0/8'], policy: 'one_factor' },
    { paths: ['/local/**'], networks: ['127.0.0.0/8'], policy: 'one_factor' },
    { paths: ['/ops/**', '/reports/**', '/local/**'], policy: 'deny' },
    { paths: ['/secure/**'], subjects: ['method:private_token'], policy: 'two_factor' },
    { paths: ['/secure/**'], policy: 'two_factor' },
    { paths: ['/mixed/*'], subjects: ['user:alice'], policy: 'deny' },
    { paths: ['/mixed/*'], policy: 'bypass' }
  ]
}

const db = embeddedStore()
const echo = await startEcho()
const proxy = await startGateway(db.url, { upstream: { url: echo.url }, access, audit: { log: true } })
const decider = await startGateway(db.url, { redis: { url: db.url, prefix: proxy.config.redis.prefix }, server: { trusted_proxies: ['127.0.0.1'] }, access })
t.teardown(async () => { await proxy.close(); await decider.close(); await echo.close(); await db.stop() })

await proxy.store.orgs.create('Reports', REPORTS_ORG)
const alice = await makeUser(proxy, 'alice')
const bob = await makeUser(proxy, 'bob', { orgs: { [DEFAULT_ORG]: 'user', [REPORTS_ORG]: 'user' } })
const aliceKey = await proxy.store.accessKeys.create(alice.id)
const bobToken = await proxy.store.privateTokens.create(bob.id)
const aliceToken = await proxy.store.privateTokens.create(alice.id)
const onePwd = await proxy.store.sessions.create(bob.id, 600, 600)
const twoFactors = await proxy.store.sessions.create(bob.id, 600, 600, ['pwd', 'otp'])
const passkey = await proxy.store.sessions.create(bob.id, 600, 600, ['hwk'])
const aliceSession = await proxy.store.sessions.create(alice.id, 600, 600)

const creds: VerdictCreds = {
  session: { cookie: `svc_sessionid=${onePwd.id}`, csrf: onePwd.csrf },
  privateToken: bobToken,
  key: { id: aliceKey.key.id, secret: aliceKey.secret },
  bearer: async () => (await proxy.store.bearerTokens.issue(bob.id, 60, ['pwd', 'otp'])).token,
  memberOrg: REPORTS_ORG,
  otherOrg: DEFAULT_ORG,
  orgHeader: 'X-SVC-ORG'
}

const row = (name: string, method: string, path: string, headers: VerdictCase['headers'], expect: VerdictCase['expect']): VerdictCase => ({ name, method, path, headers, expect })
const token = (t: string) => () => ({ authorization: `Token ${t}` })
const cookie = (id: string) => () => ({ cookie: `svc_sessionid=${id}` })
const sameSite = { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'websocket' }

const ROWS: VerdictCase[] = [
  row('bypass: no credential', 'GET', '/open/page', () => ({}), 'allowed'),
  row('bypass: /open/** covers /open', 'GET', '/open', () => ({}), 'allowed'),
  row('bypass: a bad credential is not even looked at', 'GET', '/open/page', () => ({ authorization: 'Token not-a-token' }), 'allowed'),
  row('an encoded slash is no bypass', 'GET', '/open%2Fpage', () => ({}), '401'),
  row('a dot-dot out of the bypass is no bypass', 'GET', '/open/%2e%2e/reports/q1', () => ({}), '401'),
  row('default one_factor: no credential', 'GET', '/api/things', () => ({}), '401'),
  row('default one_factor: a private token', 'GET', '/api/things', token(bobToken), 'allowed'),
  row('subjects: user:alice', 'GET', '/reports/q1', token(aliceToken), 'allowed'),
  row('subjects: HEAD is GET', 'HEAD', '/reports/q1', token(aliceToken), 'allowed'),
  row('subjects: bob in his default org: the deny rule', 'GET', '/reports/q1', token(bobToken), '403'),
  row('subjects: bob acting in the reports org', 'GET', `/reports/q1?oid=${REPORTS_ORG}`, token(bobToken), 'allowed'),
  row('subjects: method:access_key', 'GET', '/reports/q1', (c, m, p) => signedHeaders(c.key.id, c.key.secret, m, p), 'allowed'),
  row('subjects: POST matches no subject rule: denied before any credential', 'POST', '/reports/q1', () => ({}), '403'),
  row('subjects, no credential: 401, it might match', 'GET', '/reports/q1', () => ({}), '401'),
  row('networks: 127.0.0.1 is in 127/8', 'GET', '/local/x', token(bobToken), 'allowed'),
  row('networks: not in 10/8, denied before any credential', 'GET', '/ops/x', () => ({}), '403'),
  row('a path trick does not escape a deny rule', 'GET', '/x/..%2F..%2Fops/x', token(bobToken), '403'),
  row('two_factor: the password alone', 'GET', '/secure/x', cookie(onePwd.id), '403'),
  row('two_factor: password and code', 'GET', '/secure/x', cookie(twoFactors.id), 'allowed'),
  row('two_factor: a passkey', 'GET', '/secure/x', cookie(passkey.id), 'allowed'),
  row('two_factor: a bearer token obtained with a code', 'GET', '/secure/x', async (c) => ({ authorization: `Bearer ${await c.bearer()}` }), 'allowed'),
  row('two_factor: a private token the rule names by method', 'GET', '/secure/x', token(bobToken), 'allowed'),
  row('two_factor: an access key it does not name', 'GET', '/secure/x', (c, m, p) => signedHeaders(c.key.id, c.key.secret, m, p), '403'),
  row('two_factor: no credential', 'GET', '/secure/x', () => ({}), '401'),
  row('mixed: alice is denied', 'GET', '/mixed/a', cookie(aliceSession.id), '403'),
  row('mixed: bob falls through to the bypass', 'GET', '/mixed/a', token(bobToken), 'allowed'),
  row('mixed: no credential falls through to the bypass', 'GET', '/mixed/a', () => ({}), 'allowed'),
  row('mixed: a bad credential is refused, not bypassed', 'GET', '/mixed/a', () => ({ authorization: 'Token not-a-token' }), '401'),
  { ...row('WebSocket: bypass', 'GET', '/open/ws', () => ({}), 'allowed'), upgrade: true },
  { ...row('WebSocket: the deny rule', 'GET', '/reports/ws', token(bobToken), '403'), upgrade: true },
  { ...row('WebSocket: two_factor with the password alone', 'GET', '/secure/ws', () => ({ cookie: `svc_sessionid=${onePwd.id}`, ...sameSite }), '403'), upgrade: true },
  { ...row('WebSocket: two_factor, password and code', 'GET', '/secure/ws', () => ({ cookie: `svc_sessionid=${twoFactors.id}`, ...sameSite }), 'allowed'), upgrade: true }
]

t.test('every row: proxy mode, the decision as nginx and as Caddy ask, the same verdict', async (t) => {
  await sameEveryWay(t, ROWS, proxy.url, decider.url, creds, (r) => `${r.method} ${r.path}: ${r.name}`)
})

t.test('a bypass forwards no identity and none of sidegate\'s credentials; so does a fall-through to one', async (t) => {
  const r = await request(proxy.url, '/open/page', { headers: { authorization: `Token ${bobToken}`, cookie: `svc_sessionid=${onePwd.id}; theme=dark`, 'x-svc-user-id': 'forged' } })
  t.equal(r.status, 200)
  const h = r.json.headers as Record<string, string>
  t.equal(h['x-svc-user-id'], undefined)
  t.equal(h['x-svc-username'], undefined)
  t.equal(h.cookie, 'theme=dark', 'the session cookie stripped, others kept')
  const m = await request(proxy.url, '/mixed/a', { headers: { authorization: `Token ${bobToken}` } })
  t.equal(m.status, 200)
  t.equal(m.json.headers['x-svc-user-id'], undefined, 'bob, bypassed after the subject rule: no identity goes on')
  const d = await request(decider.url, '/_sidegate/auth', { headers: { authorization: `Token ${bobToken}`, 'x-original-uri': '/mixed/a', 'x-original-method': 'GET' } })
  t.equal(d.status, 200)
  t.equal(d.headers['x-svc-user-id'], undefined, 'nor in a decision')
  const allowed = await request(proxy.url, '/local/x', { headers: { authorization: `Token ${bobToken}` } })
  t.equal(allowed.json.headers['x-svc-user-id'], bob.id, 'an allowed request carries its identity as always')
})

t.test('a denial: 403 access_denied, no rule in the answer; the rule in the audit trail', async (t) => {
  const r = await request(proxy.url, '/secure/x', { headers: { cookie: `svc_sessionid=${onePwd.id}` } })
  t.equal(r.status, 403)
  t.same(r.json, { detail: 'You may not reach this path.', code: 'access_denied' })
  t.notMatch(r.text, /rule|two_factor/)
  t.ok(await eventually(async () => proxy.logs.some((l) => l.includes('"event":"access.denied"') && l.includes('"rule":7') && l.includes('"reason":"two_factor"') && l.includes(`"userId":"${bob.id}"`))), 'audited with the rule, counted from 1 (access.rules[6])')
  const before = await request(proxy.url, '/ops/x', {})
  t.equal(before.status, 403)
  t.ok(await eventually(async () => proxy.logs.some((l) => l.includes('"event":"access.denied"') && l.includes('"rule":5') && l.includes('"via":"GET /ops/x"'))), 'a denial before any credential too')
})

t.test('a live reload swaps the rules for the next request', async (t) => {
  t.equal((await request(proxy.url, '/api/things', { headers: { authorization: `Token ${bobToken}` } })).status, 200)
  proxy.gw.apply({ ...proxy.config, access: { default_policy: 'deny', rules: [{ paths: ['/open/**'], hosts: [], methods: [], networks: [], subjects: [], policy: 'bypass' }], case_insensitive_paths: false } })
  t.equal((await request(proxy.url, '/api/things', { headers: { authorization: `Token ${bobToken}` } })).status, 403, 'default_policy deny now')
  t.equal((await request(proxy.url, '/open/x', {})).status, 200)
  proxy.gw.apply({ ...proxy.config, access: { default_policy: 'one_factor', rules: [], case_insensitive_paths: false } })
  t.equal((await request(proxy.url, '/api/things', { headers: { authorization: `Token ${bobToken}` } })).status, 200, 'and back: no rules')
  t.equal((await request(proxy.url, '/open/x', {})).status, 401, 'no bypass left')
})

/**
 * POST /api/v1/authentication/auth/: the token endpoint, through real HTTP
 * against a real gateway, the embedded store and the echo upstream.
 */
import t from 'tap'
import http from 'node:http'
import { startEcho, request, post, type Res } from '../fixtures/http.js'
import { embeddedStore, ADMIN_PASSWORD, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'

/** A subtest's `t`. */
type T = Parameters<Parameters<typeof t.test>[0]>[0]

const PATH = '/api/v1/authentication/auth/'
const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const FAILED = { detail: 'Unable to log in with provided credentials.', code: 'authentication_failed' }

const db = embeddedStore()
const echo = await startEcho()
const TTL = 900
const g = await startGateway(
  db.url, { upstream: { url: echo.url }, auth: { bearer: { ttl: TTL } }, server: { body_limit: 1024 } }
)
t.teardown(async () => { await g.close(); await echo.close(); await db.stop() })

const alice = await makeUser(g, 'alice')
const form = async (body: string, headers: Record<string, string> = {}): Promise<Res> =>
  await request(g.url, PATH, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } })

/** `2026/11/22 21:03:00 +0000` → epoch ms */
function parseJmsDate (s: string): number {
  const m = /^(\d{4})\/(\d{2})\/(\d{2}) (\d{2}):(\d{2}):(\d{2}) \+0000$/.exec(s)
  if (m === null) return NaN
  const [, y, mo, d, h, mi, se] = m.map(Number)
  return Date.UTC(y, mo - 1, d, h, mi, se)
}

function checkTokenResponse (t: T, r: Res, before: number, username: string, id: string): void {
  t.equal(r.status, 201, r.text)
  t.match(r.headers['content-type'], /^application\/json/)
  t.equal(r.headers['cache-control'], 'no-store', 'tokens are never cached')
  t.same(Object.keys(r.json).sort(), ['date_expired', 'keyword', 'token', 'user'])
  t.equal(r.json.keyword, 'Bearer')
  t.match(r.json.token, /^[A-Za-z0-9_-]{40,}$/, 'a long url-safe token')
  t.match(r.json.date_expired, /^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2} \+0000$/, '%Y/%m/%d %H:%M:%S +0000')
  const exp = parseJmsDate(r.json.date_expired)
  const after = Date.now()
  t.ok(exp >= Math.floor(before / 1000) * 1000 + TTL * 1000 - 2000 && exp <= after + TTL * 1000 + 2000,
    `date_expired is ttl (${TTL}s) ahead: ${r.json.date_expired}`)
  t.equal(r.json.user.id, id)
  t.equal(r.json.user.username, username)
  t.equal(r.json.user.is_active, true)
}

t.test('JSON body: 201 {token, keyword, date_expired, user}; the token works once', async (t) => {
  const before = Date.now()
  const r = await post(g.url, PATH, { username: 'alice', password: 'alice-password' })
  checkTokenResponse(t, r, before, 'alice', alice.id)
  t.match(r.headers['x-request-id'], /^[0-9a-f-]{36}$/)

  const n = echo.seen.length
  const used = await request(g.url, '/api/v1/assets/', { headers: { authorization: `Bearer ${r.json.token}` } })
  t.equal(used.status, 200)
  t.equal(echo.seen.length, n + 1)
  t.equal(echo.seen[n].headers['x-svc-user-id'], alice.id)
  t.equal(echo.seen[n].headers['x-svc-auth-method'], 'bearer')
  t.equal(echo.seen[n].headers['x-svc-org'], DEFAULT_ORG)

  const again = await request(g.url, '/api/v1/assets/', { headers: { authorization: `Bearer ${r.json.token}` } })
  t.equal(again.status, 401)
  t.equal(again.json.code, 'invalid_token')
  t.equal(echo.seen.length, n + 1, 'the second use never reached the upstream')
})

t.test('form body: same answer, and charset parameters are fine', async (t) => {
  const before = Date.now()
  const r = await form('username=alice&password=alice-password')
  checkTokenResponse(t, r, before, 'alice', alice.id)
  const r2 = await request(g.url, PATH, {
    method: 'POST',
    body: 'password=alice-password&username=alice',
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=UTF-8' }
  })
  t.equal(r2.status, 201)
  const r3 = await request(g.url, PATH, { method: 'POST', body: JSON.stringify({ username: 'alice', password: 'alice-password' }), headers: { 'content-type': 'application/json; charset=utf-8' } })
  t.equal(r3.status, 201)
  t.not(r.json.token, r2.json.token, 'every call issues a new token')
  t.not(r2.json.token, r3.json.token)
  // each one is usable (once)
  for (const tok of [r.json.token, r2.json.token, r3.json.token]) {
    t.equal((await request(g.url, '/x', { headers: { authorization: `Bearer ${tok}` } })).status, 200)
  }
  // form-encoded special characters in the password decode correctly
  const odd = await makeUser(g, 'odd', { password: 'p&ss=w+rd %20é' })
  const r4 = await form(`username=odd&password=${encodeURIComponent('p&ss=w+rd %20é')}`)
  t.equal(r4.status, 201)
  t.equal(r4.json.user.id, odd.id)
})

t.test('the login is recorded: last_login set on the user', async (t) => {
  const u = await makeUser(g, 'lastlogin')
  t.equal(u.last_login, null)
  const r = await post(g.url, PATH, { username: 'lastlogin', password: 'lastlogin-password' })
  t.equal(r.status, 201)
  const stored = await g.store.users.get(u.id)
  t.match(stored!.last_login, /^\d{4}-\d{2}-\d{2}T/)
})

t.test('missing username or password: 400 required', async (t) => {
  const cases: Array<[unknown, string]> = [
    [{ password: 'x' }, 'username'],
    [{ username: 'alice' }, 'password'],
    [{ username: '', password: 'x' }, 'username'],
    [{ username: 'alice', password: '' }, 'password'],
    [{ username: 42, password: 'x' }, 'username'],
    [{}, 'username']
  ]
  for (const [body, field] of cases) {
    const r = await post(g.url, PATH, body)
    t.equal(r.status, 400, JSON.stringify(body))
    t.same(r.json, { detail: `${field}: This field is required.`, code: 'required' })
  }
  const f = await form('username=alice')
  t.equal(f.status, 400)
  t.same(f.json, { detail: 'password: This field is required.', code: 'required' })
  const empty = await request(g.url, PATH, { method: 'POST' })
  t.equal(empty.status, 400, 'no body at all')
  t.equal(empty.json.code, 'required')
})

t.test('bad JSON: 400 parse_error; non-object JSON too', async (t) => {
  for (const body of ['{"username": "alice", ', 'not json', '["alice", "pw"]', 'null', '"alice"']) {
    const r = await request(g.url, PATH, { method: 'POST', body, headers: { 'content-type': 'application/json' } })
    t.equal(r.status, 400, body)
    t.equal(r.json.code, 'parse_error', body)
  }
})

t.test('text/plain and other types: 415', async (t) => {
  for (const type of ['text/plain', 'multipart/mixed; boundary=x', 'application/xml']) {
    const r = await request(g.url, PATH, { method: 'POST', body: 'username=alice&password=alice-password', headers: { 'content-type': type } })
    t.equal(r.status, 415, type)
    t.same(r.json, { detail: 'Content-Type must be application/json or application/x-www-form-urlencoded.', code: 'unsupported_media_type' })
  }
})

t.test('body over server.body_limit: 413, declared or streamed', async (t) => {
  const big = JSON.stringify({ username: 'alice', password: 'x'.repeat(2000) })
  const r = await request(g.url, PATH, { method: 'POST', body: big, headers: { 'content-type': 'application/json' } })
  t.equal(r.status, 413)
  t.same(r.json, { detail: 'Request body is too large.', code: 'payload_too_large' })

  // chunked, no Content-Length: the limit is enforced while reading
  const streamed = await new Promise<{ status: number, body: string }>((resolve, reject) => {
    const u = new URL(g.url)
    const req = http.request({ host: u.hostname, port: u.port, method: 'POST', path: PATH, headers: { 'content-type': 'application/json' }, agent: false }, (res) => {
      let body = ''
      res.on('data', (c: Buffer) => { body += c.toString() })
      res.on('end', () => resolve({ status: res.statusCode!, body }))
    })
    req.on('error', reject)
    req.write('{"username": "alice", "password": "')
    for (let i = 0; i < 20; i++) req.write('y'.repeat(1000))
    req.end('"}')
  })
  t.equal(streamed.status, 413)
  t.equal(JSON.parse(streamed.body).code, 'payload_too_large')

  const justUnder = JSON.stringify({ username: 'alice', password: 'alice-password', pad: 'z'.repeat(900) })
  t.ok(Buffer.byteLength(justUnder) <= 1024)
  t.equal((await request(g.url, PATH, { method: 'POST', body: justUnder, headers: { 'content-type': 'application/json' } })).status, 201, 'at the limit is fine')
  t.equal((await request(g.url, '/healthz')).status, 200, 'gateway still serving')
})

t.test('other methods: 405 with Allow', async (t) => {
  for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
    const r = await request(g.url, PATH, { method })
    t.equal(r.status, 405, method)
    t.equal(r.headers.allow, 'POST')
    t.equal(r.json.code, 'method_not_allowed')
  }
  t.equal(echo.seen.filter((s) => s.url === PATH).length, 0, 'never forwarded upstream')
})

t.test('wrong password, unknown user and inactive user are one answer', async (t) => {
  const wrong = await post(g.url, PATH, { username: 'alice', password: 'nope' })
  const unknown = await post(g.url, PATH, { username: 'nobody-here', password: 'nope' })
  const inactiveUser = await makeUser(g, 'dora')
  t.equal((await post(g.url, PATH, { username: 'dora', password: 'dora-password' })).status, 201, 'works while active')
  await g.store.users.setActive(inactiveUser.id, false)
  const inactive = await post(g.url, PATH, { username: 'dora', password: 'dora-password' })
  const noPassword = await g.store.users.create({ username: 'nopw', password: null, orgs: { [DEFAULT_ORG]: 'user' } })
  t.ok(noPassword.id)
  const passwordless = await post(g.url, PATH, { username: 'nopw', password: 'anything' })

  for (const [name, r] of [['wrong password', wrong], ['unknown user', unknown], ['inactive user', inactive], ['passwordless user', passwordless]] as const) {
    t.equal(r.status, 401, name)
    t.same(r.json, FAILED, name)
    t.equal(r.text, wrong.text, `${name}: byte-identical body`)
    t.equal(r.headers['content-type'], wrong.headers['content-type'])
    t.equal(r.headers['content-length'], wrong.headers['content-length'])
    t.same(r.headers['www-authenticate'], wrong.headers['www-authenticate'])
    t.equal(r.headers['cache-control'], 'no-store')
  }
  t.ok(wrong.headers['www-authenticate'], '401 carries WWW-Authenticate')
})

t.test('usernames are case-insensitive (one account per spelling); the stored spelling is returned', async (t) => {
  const u = await makeUser(g, 'MixedCase')
  for (const name of ['MixedCase', 'mixedcase', 'MIXEDCASE']) {
    const r = await post(g.url, PATH, { username: name, password: 'MixedCase-password' })
    t.equal(r.status, 201, name)
    t.equal(r.json.user.id, u.id)
    t.equal(r.json.user.username, 'MixedCase')
  }
  // the password is not case-insensitive
  t.equal((await post(g.url, PATH, { username: 'mixedcase', password: 'MIXEDCASE-PASSWORD' })).status, 401)
  // and no second account can take another spelling of the same name
  await t.rejects(makeUser(g, 'mixedCASE'), { code: 'user_exists' })
  // the bearer token carries the stored spelling upstream
  const r = await post(g.url, PATH, { username: 'MIXEDCASE', password: 'MixedCase-password' })
  const used = await request(g.url, '/x', { headers: { authorization: `Bearer ${r.json.token}` } })
  t.equal(used.json.headers['x-svc-username'], 'MixedCase')
  t.equal(used.json.headers['x-svc-user-id'], u.id)
})

t.test('admin from the first start can log in; token endpoint needs no credential', async (t) => {
  const r = await post(g.url, PATH, { username: 'admin', password: ADMIN_PASSWORD }, { authorization: 'Bearer garbage', cookie: 'svc_sessionid=nope' })
  t.equal(r.status, 201, 'public: a stale credential does not get in the way')
  t.equal(r.json.user.is_superuser, true)
})

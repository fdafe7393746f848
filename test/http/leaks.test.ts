/**
 * Nothing leaks: no user enumeration (answers and timing), no secret in the
 * logs at debug level across every flow, security headers on sidegate's own
 * pages and no-store on every answer that carries a secret. On the embedded
 * store.
 */
import t from 'tap'
import { request, post, startEcho } from '../fixtures/http.js'
import { embeddedStore, startGateway, ADMIN_PASSWORD } from '../fixtures/gateway.js'
import { makeUser, signedHeaders } from '../fixtures/creds.js'
import { login, postForm } from '../fixtures/session.js'
import { checkEnumeration, enumeration } from '../fixtures/enumeration.js'

const db = embeddedStore()
const echo = await startEcho()
t.teardown(async () => { await echo.close(); await db.stop() })
const AK = '/api/v1/authentication/access-keys/'
const PT = '/api/v1/authentication/private-token/'
const TOKEN = '/api/v1/authentication/auth/'

t.test('no user enumeration: identical answers, overlapping response times (40 tries each)', async (t) => {
  checkEnumeration(t, await enumeration(t, 40, { url: db.url }))
})

t.test('at debug level, no password, token, secret, session id or CSRF token appears in the log, whatever the flow', async (t) => {
  const g = await startGateway(db.url, { upstream: { url: echo.url }, log: { level: 'debug' } })
  t.teardown(() => g.close())
  const secrets: Record<string, string> = { 'admin password': ADMIN_PASSWORD, 'user password': 'carol-pass-Xy9-secret', 'wrong password': 'wrong-pass-Qz7-secret' }
  await makeUser(g, 'carol', { password: secrets['user password'] })

  // token endpoint: JSON and form, success and failure
  const tok = await post(g.url, TOKEN, { username: 'admin', password: ADMIN_PASSWORD })
  t.equal(tok.status, 201)
  secrets['bearer token'] = tok.json.token
  t.equal((await post(g.url, TOKEN, { username: 'carol', password: secrets['wrong password'] })).status, 401)
  const formTok = await request(g.url, TOKEN, { method: 'POST', body: new URLSearchParams({ username: 'carol', password: secrets['user password'] }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(formTok.status, 201)
  secrets['second bearer token'] = formTok.json.token
  // bearer, used on the upstream and on sidegate's own endpoint
  t.equal((await request(g.url, '/api/v1/x/', { headers: { authorization: `Bearer ${secrets['bearer token']}` } })).status, 200)
  // with the password again (a permanent credential from a bearer token): it must not reach the log either
  const created = await request(g.url, PT, { method: 'POST', body: JSON.stringify({ password: secrets['user password'] }), headers: { authorization: `Bearer ${secrets['second bearer token']}`, 'content-type': 'application/json' } })
  t.equal(created.status, 201)
  secrets['private token'] = created.json.token
  t.equal((await request(g.url, '/api/v1/x/', { headers: { authorization: `Token ${secrets['private token']}` } })).status, 200)
  t.equal((await request(g.url, PT, { headers: { authorization: `PrivateToken ${secrets['private token']}` } })).status, 200)
  // access key: created over HTTP, then signing
  const ak = await request(g.url, AK, { method: 'POST', body: new URLSearchParams({ password: secrets['user password'] }).toString(), headers: { authorization: `Token ${secrets['private token']}`, 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(ak.status, 201)
  secrets['access-key secret'] = ak.json.secret
  t.equal((await request(g.url, '/api/v1/x/', { headers: signedHeaders(ak.json.id, ak.json.secret, 'GET', '/api/v1/x/') })).status, 200)
  const badSig = signedHeaders(ak.json.id, 'not-the-secret', 'GET', '/api/v1/x/')
  t.equal((await request(g.url, '/api/v1/x/', { headers: badSig })).status, 401)
  secrets['forged signature'] = /signature="([^"]+)"/.exec(badSig.authorization)![1]
  // browser session: form and JSON login, use with CSRF, wrong CSRF, logout
  const s = await login(g.url, 'carol', secrets['user password'])
  secrets['session id'] = s.session
  secrets['CSRF token'] = s.csrf
  t.equal((await request(g.url, '/api/v1/x/', { headers: { cookie: s.cookie } })).status, 200)
  t.equal((await request(g.url, AK, { method: 'POST', headers: { cookie: s.cookie, 'x-csrftoken': s.csrf } })).status, 201)
  t.equal((await request(g.url, AK, { method: 'POST', headers: { cookie: s.cookie, 'x-csrftoken': 'wrong' } })).status, 403)
  t.equal((await request(g.url, '/account/keys', { headers: { cookie: s.cookie } })).status, 200)
  const j = await post(g.url, '/login', { username: 'admin', password: ADMIN_PASSWORD })
  const jsonSession = /svc_sessionid=([^;]+)/.exec(String(j.headers['set-cookie']))![1]
  secrets['second session id'] = jsonSession
  t.equal((await postForm(g.url, '/login', { username: 'carol', password: secrets['wrong password'] })).status, 401)
  t.equal((await request(g.url, '/logout', { method: 'POST', headers: { cookie: s.cookie, 'x-csrftoken': s.csrf } })).status, 200)
  t.equal((await request(g.url, '/api/v1/x/', { headers: { cookie: `svc_sessionid=${jsonSession}`, 'x-csrftoken': 'x' }, method: 'DELETE' })).status, 403)
  // used-up and revoked credentials
  t.equal((await request(g.url, '/api/v1/x/', { headers: { authorization: `Bearer ${secrets['bearer token']}` } })).status, 401)
  t.equal((await request(g.url, PT, { method: 'DELETE', headers: { authorization: `Token ${secrets['private token']}` } })).status, 204)

  // credentials in places no redaction list names: the query, other auth headers, anything named like a secret
  const planted: Record<string, string> = {
    'query token': 'qtok-Secret-11',
    'query api key': 'qkey-Secret-12',
    'Proxy-Authorization': 'proxy-Secret-13',
    'X-Api-Key': 'apikey-Secret-14',
    'X-Auth-Token': 'authtok-Secret-15',
    'X-Amz-Security-Token': 'amz-Secret-16',
    'X-Session-Id': 'sess-Secret-17',
    'X-Client-Secret': 'client-Secret-18',
    'X-Password': 'pw-Secret-19',
    'X-XSRF-TOKEN': 'xsrf-Secret-20',
    'Set-Cookie': 'setcookie-Secret-21',
    'X-Access-Key': 'ak-Secret-22'
  }
  Object.assign(secrets, planted)
  const plantedHeaders = Object.fromEntries(Object.entries(planted).filter(([k]) => !k.startsWith('query')))
  const q = `/api/v1/x/?token=${planted['query token']}&api_key=${encodeURIComponent(planted['query api key'])}&page=2`
  t.equal((await request(g.url, q, { headers: { authorization: `Token ${secrets['private token']}`, ...plantedHeaders, 'X-Trace-Note': 'visible-note' } })).status, 401)
  const all = g.logs.join('')
  const line = g.logs.map((l) => JSON.parse(l)).find((o) => o.msg === 'request received' && o.req.headers['x-trace-note'] === 'visible-note')
  t.ok(line, 'the debug line of the request with planted secrets')
  t.equal(line?.req.url, '/api/v1/x/?token=[redacted]&api_key=[redacted]&page=[redacted]', 'query names kept, values redacted')
  for (const k of Object.keys(plantedHeaders)) t.equal(line?.req.headers[k.toLowerCase()], '[redacted]', `${k}: name logged, value redacted`)
  t.equal(line?.req.headers['x-trace-note'], 'visible-note', 'other headers logged as sent')
  t.equal(line?.req.headers.host, new URL(g.url).host, 'Host logged as sent')
  t.ok(g.logs.filter((l) => l.includes('"request received"')).length >= 20, 'debug lines with the request headers were written')
  t.match(all, /"authorization":"\[redacted\]"/, 'Authorization is logged redacted')
  t.match(all, /"cookie":"\[redacted\]"/, 'Cookie is logged redacted')
  t.match(all, /"x-csrftoken":"\[redacted\]"/, 'X-CSRFToken is logged redacted')
  for (const [what, value] of Object.entries(secrets)) t.notOk(all.includes(value), `no ${what} in ${g.logs.length} log lines`)
})

t.test('sidegate\'s own pages: strict CSP, nosniff, no framing, Referrer-Policy; secrets never cached', async (t) => {
  const g = await startGateway(db.url)
  t.teardown(() => g.close())
  await makeUser(g, 'dora')
  const s = await login(g.url, 'dora', 'dora-password')
  const pages: Array<[string, Awaited<ReturnType<typeof request>>]> = [
    ['GET /login', await request(g.url, '/login')],
    ['login failed (form)', await postForm(g.url, '/login', { username: 'dora', password: 'nope' })],
    ['login redirect', await postForm(g.url, '/login', { username: 'dora', password: 'dora-password' })],
    ['/account/keys', await request(g.url, '/account/keys', { headers: { cookie: s.cookie } })],
    ['/account/keys redirect to login', await request(g.url, '/account/keys')],
    ['/api/docs/', await request(g.url, '/api/docs/')],
    ['/ redirect', await request(g.url, '/')]
  ]
  for (const [what, r] of pages) {
    const csp = String(r.headers['content-security-policy'] ?? '')
    t.match(csp, /default-src 'self'/, `${what}: CSP`)
    t.notMatch(csp, /unsafe-inline|unsafe-eval/, `${what}: CSP allows no inline code`)
    t.ok(/frame-ancestors 'none'/.test(csp) || r.headers['x-frame-options'] === 'DENY', `${what}: no framing`)
    t.equal(r.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`)
    t.equal(r.headers['referrer-policy'], 'same-origin', `${what}: Referrer-Policy`)
  }
  const bearer = await post(g.url, TOKEN, { username: 'dora', password: 'dora-password' })
  const secretAnswers: Array<[string, Awaited<ReturnType<typeof request>>]> = [
    ['token endpoint', bearer],
    ['create access key', await request(g.url, AK, { method: 'POST', headers: { cookie: s.cookie, 'x-csrftoken': s.csrf } })],
    ['list access keys', await request(g.url, AK, { headers: { cookie: s.cookie } })],
    ['create private token', await request(g.url, PT, { method: 'POST', headers: { cookie: s.cookie, 'x-csrftoken': s.csrf } })],
    ['read private token', await request(g.url, PT, { headers: { cookie: s.cookie } })],
    ['JSON login (session cookie)', await post(g.url, '/login', { username: 'dora', password: 'dora-password' })],
    ['an error', await request(g.url, PT)]
  ]
  for (const [what, r] of secretAnswers) {
    t.ok(r.status < 300 || what === 'an error', `${what}: ${r.status}`)
    t.equal(r.headers['cache-control'], 'no-store', `${what}: Cache-Control: no-store`)
    t.equal(r.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`)
  }
})

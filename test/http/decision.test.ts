/**
 * The forward-auth decision endpoint /_sidegate/auth, asked directly as a
 * proxy in front would ask it: the original method and URI from a trusted
 * peer's X-Forwarded-* / X-Original-* headers (ignored from anyone else), the
 * request's own, or what follows the path (Envoy); every credential kind, a
 * signature over the original method and URI, the org rules, public paths,
 * the identity headers of a 200, the JSON errors, `Cache-Control: no-store`.
 * Through real nginx and Caddy: test/proxies/forward-auth.test.ts.
 */
import t from 'tap'
import { request, startEcho, type Res } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { bearer, makeUser, signedHeaders } from '../fixtures/creds.js'
import { login } from '../fixtures/session.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const ORG_A = 'aaaaaaaa-1111-4111-8111-aaaaaaaaaaaa'
const ORG_B = 'bbbbbbbb-2222-4222-8222-bbbbbbbbbbbb'
const AUTH = '/_sidegate/auth'

const db = embeddedStore()
const echo = await startEcho()
// g: no upstream at all, the test client (127.0.0.1) is a trusted proxy. u: an upstream, no trusted proxy.
const g = await startGateway(db.url, { server: { trusted_proxies: ['127.0.0.1'] }, upstream: { public_paths: ['/public'] } })
const u = await startGateway(db.url, { upstream: { url: echo.url } })
t.teardown(async () => { await g.close(); await u.close(); await echo.close(); await db.stop() })

await g.store.orgs.create('Org A', ORG_A)
await g.store.orgs.create('Org B', ORG_B)
const alice = await makeUser(g, 'alice', { orgs: { [DEFAULT_ORG]: 'user', [ORG_A]: 'user' } })
const aliceToken = await g.store.privateTokens.create(alice.id)
const key = await g.store.accessKeys.create(alice.id)

const identity = (r: Res): Record<string, unknown> => ({
  id: r.headers['x-svc-user-id'], username: r.headers['x-svc-username'], org: r.headers['x-svc-org'], method: r.headers['x-svc-auth-method']
})

async function decide (
  headers: Record<string, string>, o: { method?: string, path?: string, base?: string } = {}
): Promise<Res> {
  return await request(o.base ?? g.url, o.path ?? AUTH, { method: o.method ?? 'GET', headers })
}

t.test('200: no body, the identity headers, Cache-Control: no-store; served without upstream.url', async (t) => {
  const r = await decide({ authorization: `Token ${aliceToken}`, 'x-original-uri': '/api/v1/things/?a=1', 'x-original-method': 'GET' })
  t.equal(r.status, 200)
  t.equal(r.text, '')
  t.equal(r.headers['content-length'], '0')
  t.equal(r.headers['cache-control'], 'no-store')
  t.same(identity(r), { id: alice.id, username: 'alice', org: DEFAULT_ORG, method: 'private_token' })
})

t.test('any method of its own; every answer is no-store; 401 is the JSON error with WWW-Authenticate', async (t) => {
  for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PROPFIND']) {
    const r = await decide({ authorization: `Token ${aliceToken}` }, { method })
    t.equal(r.status, 200, method)
    t.equal(r.headers['x-svc-user-id'], alice.id, method)
  }
  const r = await decide({ 'x-forwarded-uri': '/api/x', 'x-forwarded-method': 'GET' })
  t.equal(r.status, 401)
  t.same(r.json, { detail: 'Authentication credentials were not provided.', code: 'not_authenticated' })
  t.match(r.headers['www-authenticate'], /Bearer realm="sidegate"/)
  t.equal(r.headers['cache-control'], 'no-store')
  t.equal(r.headers['x-svc-user-id'], undefined)
  const bad = await decide({ authorization: 'Token nope', 'x-forwarded-uri': '/api/x' })
  t.equal(bad.status, 401)
  t.equal(bad.json.code, 'invalid_token')
})

t.test('a one-time bearer token is used up by the decision', async (t) => {
  const tok = await bearer(g.url, 'alice', 'alice-password')
  const first = await decide({ authorization: `Bearer ${tok}`, 'x-forwarded-uri': '/api/x' })
  t.equal(first.status, 200)
  t.equal(first.headers['x-svc-auth-method'], 'bearer')
  const again = await decide({ authorization: `Bearer ${tok}`, 'x-forwarded-uri': '/api/x' })
  t.equal(again.status, 401)
  t.equal(again.json.code, 'invalid_token')
})

t.test('a session: the original method decides whether X-CSRFToken is needed', async (t) => {
  const s = await login(g.url, 'alice', 'alice-password')
  const get = await decide({ cookie: s.cookie, 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/api/x' }, { method: 'GET' })
  t.equal(get.status, 200)
  t.equal(get.headers['x-svc-auth-method'], 'session')
  // nginx's subrequest may come as GET for an original POST: the original method counts
  const post = await decide({ cookie: s.cookie, 'x-original-method': 'POST', 'x-original-uri': '/api/x' }, { method: 'GET' })
  t.equal(post.status, 403)
  t.equal(post.json.code, 'csrf_failed')
  const withToken = await decide({ cookie: s.cookie, 'x-csrftoken': s.csrf, 'x-original-method': 'POST', 'x-original-uri': '/api/x' })
  t.equal(withToken.status, 200)
})

t.test('a signature is verified over the original method and URI', async (t) => {
  const path = '/api/v1/assets/?limit=5'
  const ok = await decide({ ...signedHeaders(key.key.id, key.secret, 'PATCH', path), 'x-forwarded-method': 'PATCH', 'x-forwarded-uri': path })
  t.equal(ok.status, 200, ok.text)
  t.same(identity(ok), { id: alice.id, username: 'alice', org: DEFAULT_ORG, method: 'access_key' })
  // signed for the original request, but the proxy describes another one: refused
  const otherUri = await decide({ ...signedHeaders(key.key.id, key.secret, 'PATCH', path), 'x-forwarded-method': 'PATCH', 'x-forwarded-uri': '/api/v1/assets/?limit=6' })
  t.equal(otherUri.status, 401)
  t.equal(otherUri.json.code, 'invalid_signature')
  const otherMethod = await decide({ ...signedHeaders(key.key.id, key.secret, 'PATCH', path), 'x-forwarded-method': 'DELETE', 'x-forwarded-uri': path })
  t.equal(otherMethod.json.code, 'invalid_signature')
  // signed over the decision request itself: not what the original request was
  const own = await decide({ ...signedHeaders(key.key.id, key.secret, 'GET', AUTH), 'x-forwarded-method': 'PATCH', 'x-forwarded-uri': path })
  t.equal(own.json.code, 'invalid_signature')
  // X-Forwarded-* first, then X-Original-*
  const both = await decide({ ...signedHeaders(key.key.id, key.secret, 'PUT', '/a'), 'x-forwarded-method': 'PUT', 'x-original-method': 'GET', 'x-forwarded-uri': '/a', 'x-original-uri': '/b' })
  t.equal(both.status, 200)
})

t.test('Envoy: below the path is the original URI; the request\'s own method', async (t) => {
  const path = '/api/v1/assets/?x=1'
  const r = await decide(signedHeaders(key.key.id, key.secret, 'DELETE', path), { method: 'DELETE', path: AUTH + path })
  t.equal(r.status, 200, r.text)
  t.equal(r.headers['x-svc-auth-method'], 'access_key')
  const org = await decide({ authorization: `Token ${aliceToken}` }, { path: `${AUTH}/api/x?oid=${ORG_A}` })
  t.equal(org.headers['x-svc-org'], ORG_A)
})

t.test('the org rules of the original request: ?oid= in its URI, the org header, 403, 400, 404', async (t) => {
  const tok = { authorization: `Token ${aliceToken}` }
  t.equal((await decide({ ...tok, 'x-forwarded-uri': `/api/x?oid=${ORG_A}` })).headers['x-svc-org'], ORG_A)
  t.equal((await decide({ ...tok, 'x-forwarded-uri': '/api/x', 'x-svc-org': ORG_A })).headers['x-svc-org'], ORG_A)
  t.equal((await decide({ ...tok, 'x-forwarded-uri': '/api/x?oid=default', 'x-svc-org': ORG_A })).headers['x-svc-org'], DEFAULT_ORG, '?oid= before the header')
  // ?oid= on the decision request's own URI does not count when the proxy sent the original URI
  t.equal((await decide({ ...tok, 'x-forwarded-uri': '/api/x' }, { path: `${AUTH}?oid=${ORG_A}` })).headers['x-svc-org'], DEFAULT_ORG)
  const forbidden = await decide({ ...tok, 'x-forwarded-uri': `/api/x?oid=${ORG_B}` })
  t.equal(forbidden.status, 403)
  t.same(forbidden.json, { detail: 'You are not a member of this organization.', code: 'org_forbidden' })
  t.equal(forbidden.headers['cache-control'], 'no-store')
  const invalid = await decide({ ...tok, 'x-forwarded-uri': '/api/x', 'x-svc-org': 'nope' })
  t.equal(invalid.status, 400)
  t.equal(invalid.json.code, 'invalid_org')
  const missing = await decide({ ...tok, 'x-forwarded-uri': '/api/x?oid=dddddddd-4444-4444-8444-dddddddddddd' })
  t.equal(missing.status, 404)
  t.equal(missing.json.code, 'org_not_found')
})

t.test('a public path of the original URI: 200 without identity, no credential looked at', async (t) => {
  const tok = await bearer(g.url, 'alice', 'alice-password')
  const r = await decide({ authorization: `Bearer ${tok}`, 'x-forwarded-uri': '/public/logo.png' })
  t.equal(r.status, 200)
  t.equal(r.headers['x-svc-user-id'], undefined)
  t.equal(r.headers['x-svc-org'], undefined)
  t.equal(r.headers['cache-control'], 'no-store')
  t.equal((await decide({ 'x-forwarded-uri': '/public' })).status, 200, 'no credential needed')
  t.equal((await decide({ 'x-forwarded-uri': '/public/../api/x' })).status, 401, 'a dot segment is never public')
  t.equal((await decide({ 'x-forwarded-uri': '/publicity' })).status, 401, 'whole segments')
  // the token was not used up
  t.equal((await decide({ authorization: `Bearer ${tok}`, 'x-forwarded-uri': '/api/x' })).status, 200)
})

t.test('a malformed original method or URI is 400 bad_request', async (t) => {
  const cases: Array<Record<string, string>> = [{ 'x-forwarded-method': 'GE T' }, { 'x-forwarded-method': 'x'.repeat(40) }, { 'x-forwarded-uri': 'http://evil/' }, { 'x-forwarded-uri': 'api/x' }, { 'x-original-uri': '' }]
  for (const h of cases) {
    const r = await decide({ authorization: `Token ${aliceToken}`, ...h })
    t.equal(r.status, 400, JSON.stringify(h))
    t.equal(r.json.code, 'bad_request')
    t.equal(r.headers['cache-control'], 'no-store')
  }
})

t.test('only a peer in server.trusted_proxies gets a decision: any other gets 403 untrusted_proxy, logged once per peer', async (t) => {
  const bob = await makeUser(u, 'bob')
  const k = await u.store.accessKeys.create(bob.id)
  const tok = await u.store.privateTokens.create(bob.id)
  const path = '/api/v1/x/'
  const cases: Array<[string, Record<string, string>, string]> = [
    // forged X-Forwarded-*: deciding the request's own GET instead would skip the CSRF check of the POST it names
    ['a session POST named in X-Forwarded-*', { 'x-forwarded-method': 'POST', 'x-forwarded-uri': path, 'x-original-uri': path }, AUTH],
    ['a signature over what the headers claim', { ...signedHeaders(k.key.id, k.secret, 'POST', path), 'x-forwarded-method': 'POST', 'x-forwarded-uri': path }, AUTH],
    ['a signature over its own target', signedHeaders(k.key.id, k.secret, 'GET', AUTH), AUTH],
    // a client asking for its own signed identity (X-SVC-Identity) on a proxy-mode gateway
    ['a private token, no forwarding header', { authorization: `Token ${tok}` }, AUTH],
    ['Envoy\'s form', { authorization: `Token ${tok}` }, AUTH + '/api/x'],
    ['a public path', { 'x-forwarded-uri': '/public/x' }, AUTH]
  ]
  for (const [what, headers, p] of cases) {
    const r = await decide(headers, { base: u.url, path: p })
    t.same([r.status, r.json?.code], [403, 'untrusted_proxy'], what)
    t.equal(r.headers['x-svc-user-id'], undefined, `${what}: no identity`)
    t.equal(r.headers['cache-control'], 'no-store')
  }
  const warnings = u.logs.filter((l) => l.includes('server.trusted_proxies') && l.includes('"level":40'))
  t.equal(warnings.length, 1, 'one warning for the one peer')
  t.match(JSON.parse(warnings[0]), { peer: '127.0.0.1', msg: /trusted_proxies/ })
  t.equal(echo.seen.length, 0, 'with an upstream configured, a decision is never forwarded')
})

t.test('the Cookie header for the upstream: the client\'s without sidegate\'s cookies, on public paths too', async (t) => {
  const s = await login(g.url, 'alice', 'alice-password')
  const other = 'theme=dark; app_session=abc'
  const r = await decide({ cookie: `theme=dark; ${s.cookie}; app_session=abc`, 'x-forwarded-uri': '/api/x' })
  t.equal(r.status, 200)
  t.equal(r.headers['x-svc-auth-method'], 'session')
  t.equal(r.headers.cookie, other, 'other cookies kept, in order')
  const pub = await decide({ cookie: `${s.cookie}; theme=dark`, 'x-forwarded-uri': '/public/x' })
  t.equal(pub.headers.cookie, 'theme=dark', 'a public path too')
  const only = await decide({ cookie: s.cookie, 'x-forwarded-uri': '/public/x' })
  t.equal(only.headers.cookie, '', 'nothing left: empty (the proxy removes the header)')
  const none = await decide({ authorization: `Token ${aliceToken}`, 'x-forwarded-uri': '/api/x' })
  t.equal(none.headers.cookie, '', 'no Cookie at all: empty')
})

t.test('an original URI with a byte Node\'s parser refuses in a request target is 400, as in proxy mode (raw UTF-8: test/http/verdicts.test.ts)', async (t) => {
  for (const bad of ['/a\tb', '/a b', '/public/a b']) {
    const b = await decide({ 'x-original-uri': bad })
    t.same([b.status, b.json?.code], [400, 'bad_request'], JSON.stringify(bad))
  }
})

t.test('the caller\'s rate limit and key rules apply to decisions; a signed body digest is refused, not decided unchecked', async (t) => {
  const rl = await startGateway(db.url, { redis: { url: db.url, prefix: g.config.redis.prefix }, server: { trusted_proxies: ['127.0.0.1'] }, rate_limit: { enabled: true, limit: 2, window: 60 } })
  t.teardown(async () => { await rl.close() })
  const bob = await makeUser(rl, 'bob-rl')
  const tok = { authorization: `Token ${await rl.store.privateTokens.create(bob.id)}` }
  const codes = []
  for (let i = 0; i < 3; i++) codes.push((await decide(tok, { base: rl.url })).status)
  t.same(codes, [200, 200, 429], 'limit 2 per 60 s: the third decision is 429')
  const last = await decide(tok, { base: rl.url })
  t.equal(last.json?.code, 'rate_limited')
  t.ok(Number(last.headers['retry-after']) > 0, 'with Retry-After')

  const k = await g.store.accessKeys.create(alice.id, 0, { allow_ips: ['10.9.9.9'] })
  const outside = await decide({ ...signedHeaders(k.key.id, k.secret, 'GET', '/api/v1/x/'), 'x-forwarded-uri': '/api/v1/x/', 'x-forwarded-method': 'GET' })
  t.same([outside.status, outside.json?.code], [403, 'ip_not_allowed'], 'a key\'s IP allow-list')

  const date = new Date().toUTCString()
  const text = ['(request-target): post /api/v1/upload/', `date: ${date}`, 'digest: SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='].join('\n')
  const { createHmac } = await import('node:crypto')
  const mac = createHmac('sha256', key.secret).update(text).digest('base64')
  const digest = await decide({
    date,
    digest: 'SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=',
    'x-forwarded-uri': '/api/v1/upload/',
    'x-forwarded-method': 'POST',
    authorization: `Signature keyId="${key.key.id}",algorithm="hmac-sha256",headers="(request-target) date digest",signature="${mac}"`
  })
  t.same([digest.status, digest.json?.code], [400, 'bad_request'], 'a signed digest: 400, the body stays at the proxy')
})

t.test('a browser\'s navigation without a credential: to nginx a 401 naming the login page in X-SVC-Login, to Caddy, Traefik and Envoy the 303 itself', async (t) => {
  const nav = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document', 'sec-fetch-site': 'none' }
  // nginx: X-Original-URI; it cannot pass a redirect on from auth_request (it would become 500)
  const nginx = await decide({ ...nav, 'x-original-method': 'GET', 'x-original-uri': '/app/report?year=2026&tab=a' })
  t.equal(nginx.status, 401)
  t.equal(nginx.headers['x-svc-login'], '/login?next=%2Fapp%2Freport%3Fyear%3D2026%26tab%3Da')
  t.match(nginx.text, /<code>not_authenticated<\/code> \(401\)/, 'sidegate\'s usual 401 otherwise, as the page a navigation gets (nginx shows its own)')
  t.match(nginx.headers['www-authenticate'], /Bearer realm="sidegate"/)
  t.equal(nginx.headers['cache-control'], 'no-store')
  const api = await decide({ accept: 'application/json', 'x-original-method': 'GET', 'x-original-uri': '/app/report' })
  t.equal(api.status, 401)
  t.equal(api.headers['x-svc-login'], undefined, 'an API call: no login page')
  const post = await decide({ ...nav, 'x-original-method': 'POST', 'x-original-uri': '/app/form' })
  t.equal(post.status, 401)
  t.equal(post.headers['x-svc-login'], undefined, 'a form post: no login page')
  const tok = await decide({ ...nav, authorization: 'Token not-a-token', 'x-original-method': 'GET', 'x-original-uri': '/app/report' })
  t.equal(tok.headers['x-svc-login'], undefined, 'a refused credential: no login page')
  const expired = await decide({ ...nav, cookie: 'svc_sessionid=never-issued', 'x-original-uri': '/app/report' })
  t.same([expired.status, expired.headers['x-svc-login']], [401, '/login?next=%2Fapp%2Freport'], 'an expired session: the login page')

  // Traefik and Caddy: X-Forwarded-Uri; absolute from the proxy's X-Forwarded-Proto and -Host
  // (Traefik resolves a relative Location against sidegate's own address)
  const traefik = await decide({ ...nav, 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/app/report?x=1', 'x-forwarded-host': 'app.example.com', 'x-forwarded-proto': 'https' })
  t.equal(traefik.status, 303)
  t.equal(traefik.headers.location, 'https://app.example.com/login?next=%2Fapp%2Freport%3Fx%3D1')
  t.equal(traefik.headers['cache-control'], 'no-store')
  t.equal(traefik.headers['x-svc-user-id'], undefined)
  const bare = await decide({ ...nav, 'x-forwarded-uri': '/app/report' })
  t.same([bare.status, bare.headers.location], [303, '/login?next=%2Fapp%2Freport'], 'no X-Forwarded-Host: relative')
  for (const host of ['evil.example/x', 'a b', 'user@evil.example', '']) {
    const odd = await decide({ ...nav, 'x-forwarded-uri': '/app/report', 'x-forwarded-host': host })
    t.same([odd.status, odd.headers.location], [303, '/login?next=%2Fapp%2Freport'], `X-Forwarded-Host ${JSON.stringify(host)}: not a host, relative`)
  }
  const caddyApi = await decide({ accept: '*/*', 'sec-fetch-mode': 'cors', 'x-forwarded-uri': '/app/report' })
  t.equal(caddyApi.status, 401, 'fetch() from a page: 401')
  // Envoy: the original path below /_sidegate/auth
  const envoy = await decide(nav, { path: `${AUTH}/app/report?x=1` })
  t.same([envoy.status, envoy.headers.location], [303, '/login?next=%2Fapp%2Freport%3Fx%3D1'])
  const pub = await decide({ ...nav, 'x-original-uri': '/public/page' })
  t.equal(pub.status, 200, 'a public path needs no sign-in')
})

t.test('open-redirect attempts in the original URI never become a next that leaves the site', async (t) => {
  const nav = { accept: 'text/html', 'sec-fetch-mode': 'navigate' }
  for (const uri of ['//evil.example/x', '///evil.example', '/\\evil.example', '/login?next=//evil.example', '/login', '/logout?next=https://evil.example']) {
    const n = await decide({ ...nav, 'x-original-uri': uri })
    t.same([n.status, n.headers['x-svc-login']], [401, '/login?next=%2F'], `nginx, ${uri}: back to "/"`)
    const c = await decide({ ...nav, 'x-forwarded-uri': uri, 'x-forwarded-host': 'app.example.com' })
    t.same([c.status, c.headers.location], [303, 'http://app.example.com/login?next=%2F'], `Caddy, ${uri}: back to "/"`)
  }
})

t.test('nginx\'s refusals: X-SVC-Error names the code, and /_sidegate/error/<code> answers it as a page or as JSON', async (t) => {
  const asNginx = await decide({ 'x-original-uri': '/api/x', 'x-original-method': 'GET' })
  t.equal(asNginx.status, 401)
  t.equal(asNginx.headers['x-svc-error'], 'not_authenticated', 'asked with X-Original-URI (nginx auth_request): the code')
  const org = await decide({ authorization: `Token ${aliceToken}`, 'x-original-uri': `/api/x?oid=${ORG_B}` })
  t.equal(org.headers['x-svc-error'], 'org_forbidden')
  const asCaddy = await decide({ 'x-forwarded-uri': '/api/x', 'x-forwarded-method': 'GET' })
  t.equal(asCaddy.headers['x-svc-error'], undefined, 'Caddy, Traefik and Envoy pass the body on: no such header')
  const ok = await decide({ authorization: `Token ${aliceToken}`, 'x-original-uri': '/api/x' })
  t.equal(ok.headers['x-svc-error'], undefined, 'nor on a 200')

  const id = '6f1a1c7e-1111-4222-8333-000000000001'
  const json = await request(g.url, `/_sidegate/error/org_forbidden?request_id=${id}`, { headers: { accept: 'application/json' } })
  t.equal(json.status, 403)
  t.same(json.json, { detail: 'You are not a member of this organization.', code: 'org_forbidden' })
  t.equal(json.headers['x-request-id'], id, 'the refused request\'s id')
  const page = await request(g.url, `/_sidegate/error/access_denied?request_id=${id}`, { headers: { accept: 'text/html', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' } })
  t.equal(page.status, 403)
  t.match(page.headers['content-type'], /^text\/html/)
  t.match(page.text, 'You may not reach this path.')
  t.match(page.text, id)
  const challenge = await request(g.url, '/_sidegate/error/not_authenticated')
  t.equal(challenge.status, 401)
  t.match(challenge.headers['www-authenticate'], /realm="sidegate"/, 'a 401 carries its challenge')
  const limited = await request(g.url, '/_sidegate/error/invalid_org')
  t.equal(limited.status, 400, 'a refusal nginx turned into 500 gets its own status back')
  const forged = await request(g.url, '/_sidegate/error/org_forbidden?request_id=%0d%0aSet-Cookie:%20x=1')
  t.not(forged.headers['x-request-id'], '\r\nSet-Cookie: x=1', 'a request id that does not look like one is not echoed')
  t.equal(forged.headers['set-cookie'], undefined)
  const proxyId = 'edge/7+Zq=@lb1:42'
  const passed = await request(g.url, `/_sidegate/error/org_forbidden?request_id=${encodeURIComponent(proxyId)}`)
  t.equal(passed.headers['x-request-id'], proxyId, 'an id as X-Request-ID accepts it from a proxy: echoed')
  const markup = await request(g.url, '/_sidegate/error/access_denied?request_id=%3Cscript%3E', { headers: { accept: 'text/html', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' } })
  t.not(markup.headers['x-request-id'], '<script>', 'markup is never echoed: the refused request keeps its own id')
  t.notMatch(markup.text, /<script>|&lt;script/, 'nor shown, escaped or not')
  t.equal((await request(g.url, '/_sidegate/error/no_such_code')).status, 404, 'not a catalogue code: 404')
  t.equal((await request(g.url, '/_sidegate/error/__proto__')).status, 404)
  t.equal((await request(g.url, '/_sidegate/error/Not-A-Code')).status, 404)
})

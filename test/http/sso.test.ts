/**
 * One sign-in for several apps (session.cookies, docs/sso.md) over real HTTP
 * on the embedded store, the client naming each host in Host (or, as a
 * trusted proxy, X-Forwarded-Host): the session cookie's Domain and the CSRF
 * cookie's scope; a browser refused at an app (proxy mode, and the decision
 * as each proxy family asks) sent to the portal with the absolute URL; the
 * way back after a password, a TOTP code or a passkey, and every
 * open-redirect vector refused on the way; logout clearing the Domain
 * cookie; CSRF across sibling hosts. In process: test/unit/sso.test.ts;
 * through real nginx and Caddy: test/proxies/sso.test.ts; logout on two
 * replicas: test/topology/sso-logout.test.ts.
 */
import t from 'tap'
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto'
import { post, request, startEcho, type Res } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { postForm, setCookies } from '../fixtures/session.js'
import { oathtool, stepTime } from '../fixtures/oathtool.js'
import { CookieJar } from '../fixtures/jar.js'

const db = embeddedStore()
const echo = await startEcho()
const SSO = { cookies: [{ domain: 'example.com', portal_url: 'https://auth.example.com' }], cookie_secure: true }
// the client is the trusted proxy: it says the scheme (https) and, where a test says so, the host
const g = await startGateway(db.url, { upstream: { url: echo.url }, server: { trusted_proxies: ['127.0.0.1'] }, session: SSO })
const shared = { redis: { url: db.url, prefix: g.config.redis.prefix } }
const decider = await startGateway(db.url, { ...shared, server: { trusted_proxies: ['127.0.0.1'] }, session: SSO })
const scripts = await startGateway(db.url, { ...shared, upstream: { url: echo.url }, server: { trusted_proxies: ['127.0.0.1'] }, session: { ...SSO, cookies: [{ ...SSO.cookies[0], csrf_domain: true }] } })
const plain = await startGateway(db.url, { ...shared, upstream: { url: echo.url } })
t.teardown(async () => {
  for (const x of [g, decider, scripts, plain]) await x.close()
  await echo.close()
  await db.stop()
})
await makeUser(g, 'alice')

const NAVIGATE = { accept: 'text/html', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document', 'sec-fetch-site': 'none' }
const PORTAL = 'auth.example.com'
const HTTPS = { 'x-forwarded-proto': 'https' }
const portalLogin = (url: string): string => `https://auth.example.com/login?next=${encodeURIComponent(url)}`
const at = (host: string, h: Record<string, string> = {}): Record<string, string> => ({ host, ...HTTPS, ...h })
const cookieOf = (r: Res): string => Object.entries(setCookies(r)).filter(([, c]) => c.attrs['max-age'] !== '0').map(([n, c]) => `${n}=${c.value}`).join('; ')

async function signIn (next: string, base = g.url, host = PORTAL): Promise<Res> {
  return await postForm(base, '/login', { username: 'alice', password: 'alice-password', next }, at(host, { origin: `https://${host}` }))
}

t.test('the session cookie takes Domain=<the domain> under it; the CSRF cookie stays on the portal\'s host', async (t) => {
  const r = await signIn('/account/keys')
  t.equal(r.status, 303)
  const raw = r.headers['set-cookie']!
  t.match(raw[0], /^svc_sessionid=; Path=\/; Max-Age=0; HttpOnly/, 'first a host-only copy cleared (with both, a request would be ambiguous)')
  t.notMatch(raw[0], /Domain/)
  const c = setCookies(r)
  t.equal(c.svc_sessionid.attrs.domain, 'example.com', 'every app under example.com gets the session')
  t.ok('secure' in c.svc_sessionid.attrs && 'httponly' in c.svc_sessionid.attrs)
  t.equal(c.svc_csrftoken.attrs.domain, undefined, 'the CSRF token: the portal\'s host only')
  const via = setCookies(await postForm(g.url, '/login', { username: 'alice', password: 'alice-password' }, { host: 'sidegate:8080', 'x-forwarded-host': 'App.Example.com' }))
  t.equal(via.svc_sessionid.attrs.domain, 'example.com', 'a trusted proxy\'s X-Forwarded-Host decides')
  const other = setCookies(await signIn('/x', g.url, 'example.org'))
  t.equal(other.svc_sessionid.attrs.domain, undefined, 'a host under no listed domain: the host-only cookie of before')
  const before = setCookies(await postForm(plain.url, '/login', { username: 'alice', password: 'alice-password' }, { host: PORTAL }))
  t.equal(before.svc_sessionid.attrs.domain, undefined, 'without session.cookies: unchanged')
  const js = setCookies(await signIn('/x', scripts.url))
  t.equal(js.svc_csrftoken.attrs.domain, 'example.com', 'csrf_domain: true shares the CSRF cookie too')
})

t.test('a browser refused at an app is sent to the portal with the absolute URL; at the portal, to its own page', async (t) => {
  const r = await request(g.url, '/report?year=2026&q=%2F%2Fx', { headers: at('app.example.com', NAVIGATE) })
  t.equal(r.status, 303)
  t.equal(r.headers.location, portalLogin('https://app.example.com/report?year=2026&q=%2F%2Fx'))
  const own = await request(g.url, '/report', { headers: at(PORTAL, NAVIGATE) })
  t.equal(own.headers.location, '/login?next=%2Freport', 'the portal\'s own paths: as before')
  const outside = await request(g.url, '/report', { headers: at('example.org', NAVIGATE) })
  t.equal(outside.headers.location, '/login?next=%2Freport', 'a host under no listed domain: as before')
  const bypassed = await request(plain.url, '/report', { headers: { host: 'app.example.com', ...NAVIGATE } })
  t.equal(bypassed.headers.location, '/login?next=%2Freport', 'without session.cookies: as before')
  const api = await request(g.url, '/report', { headers: at('app.example.com', { accept: 'application/json' }) })
  t.equal(api.status, 401, 'an API call keeps its 401')
  const sneaky = await request(g.url, '//evil.example/x', { headers: at('app.example.com', NAVIGATE) })
  t.equal(sneaky.headers.location, portalLogin('https://app.example.com/'), 'a target that would leave the site: the app\'s "/"')
})

t.test('the decision, as every proxy family asks: the portal with the original absolute URL', async (t) => {
  const ask = async (headers: Record<string, string>, path = '/_sidegate/auth'): Promise<Res> => await request(decider.url, path, { headers: { ...NAVIGATE, ...headers } })
  const want = portalLogin('https://app.example.com/a/b?c=1')
  const nginx = await ask({ 'x-original-uri': '/a/b?c=1', 'x-forwarded-host': 'app.example.com', 'x-forwarded-proto': 'https' })
  t.same([nginx.status, nginx.headers['x-svc-login']], [401, want], 'nginx: the 401 naming the portal')
  const caddy = await ask({ 'x-forwarded-uri': '/a/b?c=1', 'x-forwarded-method': 'GET', 'x-forwarded-host': 'app.example.com', 'x-forwarded-proto': 'https' })
  t.same([caddy.status, caddy.headers.location], [303, want], 'Caddy, Traefik: the 303')
  const envoy = await ask({ host: 'app.example.com', 'x-forwarded-host': 'app.example.com', 'x-forwarded-proto': 'https' }, '/_sidegate/auth/a/b?c=1')
  t.same([envoy.status, envoy.headers.location], [303, want], 'Envoy: the 303')
  const portal = await ask({ 'x-original-uri': '/a', 'x-forwarded-host': PORTAL, 'x-forwarded-proto': 'https' })
  t.equal(portal.headers['x-svc-login'], '/login?next=%2Fa', 'asked about the portal\'s host: its own page')
  const plainHttp = await ask({ 'x-forwarded-uri': '/a', 'x-forwarded-host': 'app.example.com', 'x-forwarded-proto': 'http' })
  t.equal(plainHttp.headers.location, 'https://auth.example.com/login', 'an app over plain http: no way back to it (the portal\'s page)')
})

t.test('after a password, back to the app; the page\'s form may go on there (CSP)', async (t) => {
  const next = 'https://app.example.com/report?year=2026'
  const page = await request(g.url, `/login?next=${encodeURIComponent(next)}`, { headers: at(PORTAL) })
  t.equal(page.status, 200)
  t.match(page.text, `name="next" value="${next.replace('&', '&amp;')}"`)
  t.match(page.headers['content-security-policy'], "form-action 'self' https://app.example.com;")
  const r = await signIn(next)
  t.equal(r.headers.location, next)
  const jar = new CookieJar()
  jar.take(PORTAL, r)
  const back = await request(g.url, '/report?year=2026', { headers: jar.for('app.example.com', { ...HTTPS, ...NAVIGATE }) })
  t.equal(back.status, 200, 'the app, with the cookie the browser sends it')
  t.equal(back.json.headers['x-svc-username'], 'alice')
  const signedIn = await request(g.url, `/login?next=${encodeURIComponent(next)}`, { headers: jar.for(PORTAL, HTTPS) })
  t.same([signedIn.status, signedIn.headers.location], [302, next], 'already signed in at the portal: straight back')
  const json = await post(g.url, '/login', { username: 'alice', password: 'alice-password', next }, at(PORTAL))
  t.equal(json.json.next, next, 'a JSON sign-in says where')
})

t.test('every open-redirect vector ends on the portal\'s page, after signing in too', async (t) => {
  const vectors = [
    '//evil.example', '//evil.example/path', '/\\evil.example', '\\\\evil.example', '/\\/evil.example', 'https://evil.example',
    'http:evil.example', 'javascript:alert(1)', 'data:text/html,x', 'evil.example', '/\t/evil.example', '/\n/evil.example', ' /account',
    '/login', '/logout?x=1', '', 'x'.repeat(3000),
    'https://example.com.evil/x', 'https://example.com@evil.example', 'https://app.example.com@evil.example/', 'https://evil\\@example.com',
    'https:\\\\evil.example', 'https:/\\evil.example', 'https://evil%2eexample.com', 'https://app.example.com%2f@evil.example', '%2f%2fevil.example',
    'https://app.exa\tmple.com/', 'https://app.example.com/\n', 'JAVASCRIPT:alert(1)', 'JaVaScRiPt://app.example.com/%0aalert(1)',
    'http://app.example.com/x', 'HTTP://APP.EXAMPLE.COM/', 'https://app.example.com:99999/', 'https://app.example.com:0x1bb/',
    'https://app.example.com./', 'https://badexample.com/', 'https://auth.example.com/login?next=https://evil.example', 'wss://app.example.com/'
  ]
  for (const next of vectors) {
    const r = await signIn(next)
    t.equal(r.headers.location, '/account/keys', `next=${JSON.stringify(next.slice(0, 50))}`)
    const page = await request(g.url, `/login?next=${encodeURIComponent(next)}`, { headers: at(PORTAL) })
    t.notMatch(page.headers['content-security-policy'], /form-action 'self' \S/, `${JSON.stringify(next.slice(0, 50))}: the CSP names no other origin`)
  }
  t.equal((await signIn('https://app.example.com:8443/x')).headers.location, 'https://app.example.com:8443/x', 'a port on a listed host is that host')
  t.equal((await signIn('HTTPS://App.Example.COM/A')).headers.location, 'https://app.example.com/A', 'the scheme and host as the URL parser writes them')
})

t.test('after a TOTP code, back to the app', async (t) => {
  const u = await makeUser(g, 'totp-alice')
  const e = (await g.store.mfa.begin(u.id))!
  t.ok(await g.store.mfa.confirm(u.id, oathtool(e.secret)))
  const next = 'https://other.example.com/x'
  const page = await postForm(g.url, '/login', { username: 'totp-alice', password: 'totp-alice-password', next }, at(PORTAL))
  t.equal(page.status, 200)
  t.match(page.text, `name="next" value="${next}"`, 'the code page carries it on')
  t.match(page.headers['content-security-policy'], "form-action 'self' https://other.example.com;")
  const done = await postForm(g.url, '/login/mfa', { code: oathtool(e.secret, stepTime(Date.now(), 1)), next }, at(PORTAL, { cookie: cookieOf(page) }))
  t.equal(done.status, 303)
  t.equal(done.headers.location, next)
  t.equal(setCookies(done).svc_sessionid.attrs.domain, 'example.com')
})

t.test('after a passkey, back to the app', async (t) => {
  const u = await makeUser(g, 'pk-alice')
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const jwk = publicKey.export({ format: 'jwk' })
  const cose = Buffer.concat([Buffer.from([0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]), Buffer.from(jwk.x!, 'base64url'), Buffer.from([0x22, 0x58, 0x20]), Buffer.from(jwk.y!, 'base64url')])
  const id = randomBytes(16).toString('base64url')
  const handle = randomBytes(32).toString('base64url')
  t.ok(await g.store.passkeys.add({ id, user_id: u.id, user_handle: handle, public_key: cose.toString('base64url'), counter: 0, transports: ['internal'], device_type: 'singleDevice', backed_up: false, name: 'k' }))
  const o = await post(g.url, '/login/passkey/options', {}, at(PORTAL))
  const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge: o.json.options.challenge, origin: `https://${PORTAL}`, crossOrigin: false }))
  const authData = Buffer.concat([createHash('sha256').update(PORTAL).digest(), Buffer.from([0x05, 0, 0, 0, 1])])
  const signature = sign('sha256', Buffer.concat([authData, createHash('sha256').update(clientData).digest()]), privateKey)
  const response = { clientDataJSON: clientData.toString('base64url'), authenticatorData: authData.toString('base64url'), signature: signature.toString('base64url'), userHandle: handle }
  const next = 'https://app.example.com/from-passkey'
  const r = await post(g.url, '/login/passkey', { state: o.json.state, response: { id, rawId: id, type: 'public-key', response, clientExtensionResults: {} }, next }, at(PORTAL))
  t.equal(r.status, 200, r.text)
  t.equal(r.json.next, next, 'the page goes on there')
  t.equal(setCookies(r).svc_sessionid.attrs.domain, 'example.com')
})

t.test('logout at the portal clears the cookie for the whole domain and ends the session for every app', async (t) => {
  const r = await signIn('/account/keys')
  const jar = new CookieJar()
  jar.take(PORTAL, r)
  const app = (): Promise<Res> => request(g.url, '/page', { headers: jar.for('app.example.com', { ...HTTPS, ...NAVIGATE }) })
  t.equal((await app()).status, 200)
  const sent = jar.header('other.example.com')!
  const out = await request(g.url, '/logout', { method: 'POST', headers: jar.for(PORTAL, { ...HTTPS, 'x-csrftoken': jar.value(PORTAL, 'svc_csrftoken')!, origin: `https://${PORTAL}` }) })
  t.equal(out.status, 200)
  jar.take(PORTAL, out)
  const cleared = out.headers['set-cookie']!.filter((c) => c.startsWith('svc_sessionid='))
  t.same(cleared.map((c) => /Domain=([^;]+)/.exec(c)?.[1] ?? 'host-only'), ['host-only', 'example.com'], 'both scopes cleared')
  t.ok(cleared.every((c) => c.includes('Max-Age=0')))
  t.equal(jar.header('app.example.com'), undefined, 'the browser sends the apps nothing more')
  const again = await request(g.url, '/page', { headers: { ...at('other.example.com', NAVIGATE), cookie: sent } })
  t.same([again.status, again.headers.location], [303, portalLogin('https://other.example.com/page')], 'the session itself is over, whatever a client sends')
})

t.test('CSRF across sibling hosts: same-site is not same-origin; unsafe methods need the token', async (t) => {
  const r = await signIn('/account/keys')
  const jar = new CookieJar()
  jar.take(PORTAL, r)
  const csrf = jar.value(PORTAL, 'svc_csrftoken')!
  for (const [what, h] of [['Sec-Fetch-Site: same-site', { 'sec-fetch-site': 'same-site' }], ['Origin of a sibling', { origin: 'https://app.example.com' }], ['Referer of a sibling', { referer: 'https://app.example.com/x' }]] as const) {
    const out = await request(g.url, '/logout', { method: 'POST', headers: jar.for(PORTAL, { ...HTTPS, 'x-csrftoken': csrf, ...h }) })
    t.same([out.status, out.json?.code], [403, 'csrf_failed'], `logout, ${what}: refused`)
    const login = await postForm(g.url, '/login', { username: 'alice', password: 'alice-password' }, at(PORTAL, h))
    t.same([login.status, login.json?.code], [403, 'csrf_failed'], `login, ${what}: refused (no sibling signs a browser in)`)
  }
  t.equal((await request(g.url, '/page', { headers: jar.for('app.example.com', HTTPS) })).status, 200, 'still signed in')
  const noToken = await request(g.url, '/api/x', { method: 'POST', headers: jar.for('app.example.com', HTTPS), body: '' })
  t.same([noToken.status, noToken.json?.code], [403, 'csrf_failed'], 'an unsafe method at an app with the domain cookie and no X-CSRFToken')
  const withToken = await request(g.url, '/api/x', { method: 'POST', headers: jar.for('app.example.com', { ...HTTPS, 'x-csrftoken': csrf }), body: '' })
  t.equal(withToken.status, 200, 'with the session\'s token')
  const ws = await request(decider.url, '/_sidegate/auth', { headers: jar.for('app.example.com', { 'x-forwarded-uri': '/ws', 'x-forwarded-host': 'app.example.com', 'x-forwarded-proto': 'https', upgrade: 'websocket', 'sec-websocket-key': 'x', origin: 'https://other.example.com' }) })
  t.same([ws.status, ws.json?.code], [403, 'csrf_failed'], 'a WebSocket handshake from a sibling app')
})

/**
 * Requests a browser sends from another site: the token endpoint, /login and
 * /logout (form posts need no CORS preflight), WebSocket upgrades carrying
 * only the session cookie; and session cookies tossed in from a sibling
 * sub-domain. All over real HTTP against a real gateway on the embedded store.
 */
import t from 'tap'
import { request, startEcho, post, type Res } from '../fixtures/http.js'
import { embeddedStore, startGateway, type TestGateway } from '../fixtures/gateway.js'
import { bearer, makeUser } from '../fixtures/creds.js'
import { login, postForm, setCookies } from '../fixtures/session.js'
import { upgrade } from '../fixtures/raw.js'

const db = embeddedStore()
const echo = await startEcho()
const g = await startGateway(db.url, { upstream: { url: echo.url } })
t.teardown(async () => { await g.close(); await echo.close(); await db.stop() })

const TOKEN = '/api/v1/authentication/auth/'
const PROFILE = '/api/v1/x/'
/** the origin the test client addresses: what a browser would send as Origin */
const own = (gw: TestGateway): string => new URL(gw.url).origin
const EVIL = 'http://evil.example'

const tokenForm = async (
  gw: TestGateway, username: string, password: string, headers: Record<string, string> = {}
): Promise<Res> =>
  await postForm(gw.url, TOKEN, { username, password }, headers)

t.test('token endpoint: a cross-site browser post is refused (403 csrf_failed) and never counted', async (t) => {
  const u = await makeUser(g, 'tess')
  const crossSite: Array<[string, Record<string, string>]> = [
    ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site' }],
    ['Sec-Fetch-Site: same-site', { 'sec-fetch-site': 'same-site', origin: own(g) }],
    ['Origin of another site', { origin: EVIL }],
    ['Origin: null', { origin: 'null' }],
    ['Origin of this host on another port', { origin: 'http://127.0.0.1:1' }],
    ['Origin with https on this host', { origin: own(g).replace('http:', 'https:') }],
    ['no Origin, Referer of another site', { referer: `${EVIL}/page` }],
    ['an unparsable Origin', { origin: 'not a url' }]
  ]
  for (const [what, headers] of crossSite) {
    // the right password, even: the answer must not depend on it
    const r = await tokenForm(g, 'tess', 'tess-password', headers)
    t.equal(r.status, 403, what)
    t.equal(r.json?.code, 'csrf_failed', what)
    t.notOk(r.json?.token, `${what}: no token`)
    const j = await post(g.url, TOKEN, { username: 'tess', password: 'tess-password' }, headers)
    t.equal(j.status, 403, `${what} (JSON)`)
  }
  // the attack: more wrong passwords than the lockout allows, from the victim's browser
  for (let i = 0; i < 10; i++) {
    t.equal((await tokenForm(g, 'tess', 'wrong', { origin: EVIL })).status, 403)
  }
  const ok = await tokenForm(g, 'tess', 'tess-password')
  t.equal(ok.status, 201, 'the owner is not locked out: nothing was counted')
  t.equal(ok.json.user.id, u.id)
})

t.test('token endpoint: same-origin browsers and non-browser clients keep working', async (t) => {
  await makeUser(g, 'toby')
  const allowed: Array<[string, Record<string, string>]> = [
    ['no Sec-Fetch-Site, no Origin (curl, scripts)', {}],
    ['Sec-Fetch-Site: same-origin', { 'sec-fetch-site': 'same-origin', origin: own(g) }],
    ['Sec-Fetch-Site: none (typed by the user)', { 'sec-fetch-site': 'none' }],
    ['own Origin, no Sec-Fetch-Site', { origin: own(g) }],
    ['own Referer, no Origin', { referer: `${own(g)}/login?next=/x` }]
  ]
  for (const [what, headers] of allowed) {
    t.equal((await tokenForm(g, 'toby', 'toby-password', headers)).status, 201, what)
    t.equal((await post(g.url, TOKEN, { username: 'toby', password: 'toby-password' }, headers)).status, 201, `${what} (JSON)`)
  }
})

t.test('/login without Sec-Fetch-Site: Origin, then Referer, decide; Origin: null is cross-site', async (t) => {
  await makeUser(g, 'lina')
  for (const [what, headers] of [
    ['Origin of another site', { origin: EVIL }],
    ['Origin: null', { origin: 'null' }],
    ['Referer of another site', { referer: `${EVIL}/x` }],
    ['Origin of a sibling sub-domain', { origin: 'http://app.127.0.0.1.nip.io' }]
  ] as Array<[string, Record<string, string>]>) {
    const r = await postForm(g.url, '/login', { username: 'lina', password: 'lina-password' }, headers)
    t.equal(r.status, 403, what)
    t.equal(r.json?.code, 'csrf_failed', what)
    t.equal(r.headers['set-cookie'], undefined, `${what}: the browser is not signed in`)
    const j = await post(g.url, '/login', { username: 'lina', password: 'lina-password' }, headers)
    t.equal(j.status, 403, `${what} (JSON)`)
    t.equal(j.headers['set-cookie'], undefined)
  }
  t.equal((await postForm(g.url, '/login', { username: 'lina', password: 'lina-password' }, { origin: own(g) })).status, 303, 'own Origin')
  t.equal((await postForm(g.url, '/login', { username: 'lina', password: 'lina-password' }, { referer: `${own(g)}/login` })).status, 303, 'own Referer')
  t.equal((await postForm(g.url, '/login', { username: 'lina', password: 'lina-password' })).status, 303, 'neither: not a browser')
  t.equal((await postForm(g.url, '/login', { username: 'lina', password: 'lina-password' }, { 'sec-fetch-site': 'same-origin', origin: EVIL })).status, 303,
    'Sec-Fetch-Site decides when present (every browser that sends it also sends an accurate one)')

  const s = await login(g.url, 'lina', 'lina-password')
  const out = await postForm(g.url, '/logout', { csrfmiddlewaretoken: s.csrf }, { cookie: s.cookie, origin: EVIL })
  t.equal(out.status, 403, 'logout from another site: refused')
  t.ok(await g.store.sessions.get(s.session), 'the session is still there')
})

t.test('the gateway\'s own origin: https and X-Forwarded-Host only from a trusted proxy, or https with cookie_secure', async (t) => {
  const proxied = await startGateway(db.url, { server: { trusted_proxies: ['127.0.0.1'] } })
  const secure = await startGateway(db.url, { session: { cookie_secure: true } })
  t.teardown(async () => { await proxied.close(); await secure.close() })
  for (const gw of [proxied, secure, g]) await makeUser(gw, 'omar')
  const try_ = async (gw: TestGateway, headers: Record<string, string>): Promise<number> =>
    (await postForm(gw.url, '/login', { username: 'omar', password: 'omar-password' }, headers)).status

  const behind = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'gw.example' }
  t.equal(await try_(proxied, { ...behind, origin: 'https://gw.example' }), 303, 'trusted proxy: the public origin is https://gw.example')
  t.equal(await try_(proxied, { ...behind, origin: 'https://gw.example:443' }), 303, 'default port written out: the same origin')
  t.equal(await try_(proxied, { ...behind, origin: 'http://gw.example' }), 403, 'trusted proxy said https: http is another origin')
  t.equal(await try_(proxied, { ...behind, origin: own(proxied) }), 403, 'the address behind the proxy is not the public origin')
  t.equal(await try_(proxied, { 'x-forwarded-proto': 'https', origin: own(proxied).replace('http:', 'https:') }), 303, 'no X-Forwarded-Host: Host')

  t.equal(await try_(g, { ...behind, origin: 'https://gw.example' }), 403, 'an untrusted peer cannot name the origin it is checked against')
  t.equal(await try_(g, { ...behind, origin: own(g) }), 303, 'from an untrusted peer, Host and plain http count')

  t.equal(await try_(secure, { origin: own(secure).replace('http:', 'https:') }), 303, 'cookie_secure: the gateway is https to browsers')
  t.equal(await try_(secure, { origin: own(secure) }), 403, 'cookie_secure: http is another origin')
})

t.test('WebSocket upgrade with only the session cookie: refused from another origin (403 csrf_failed)', async (t) => {
  await makeUser(g, 'wes')
  const s = await login(g.url, 'wes', 'wes-password')
  const before = echo.seen.length
  for (const [what, headers] of [
    ['Origin of another site', { origin: EVIL }],
    ['Origin of a sibling sub-domain', { origin: 'http://chat.127.0.0.1.nip.io' }],
    ['Origin: null', { origin: 'null' }],
    ['Sec-Fetch-Site: same-site', { 'sec-fetch-site': 'same-site', origin: own(g) }]
  ] as Array<[string, Record<string, string>]>) {
    const r = await upgrade(g.url, '/ws', { cookie: s.cookie, ...headers })
    t.match(r.head, /^HTTP\/1\.1 403 /, what)
    t.equal(JSON.parse(r.body).code, 'csrf_failed', what)
  }
  t.equal(echo.seen.length, before, 'none reached the upstream')

  for (const [what, headers] of [
    ['own Origin', { origin: own(g) }],
    ['Sec-Fetch-Site: same-origin', { 'sec-fetch-site': 'same-origin', origin: own(g) }],
    ['no Origin (not a browser)', {}]
  ] as Array<[string, Record<string, string>]>) {
    const r = await upgrade(g.url, '/ws', { cookie: s.cookie, ...headers })
    t.match(r.head, /^HTTP\/1\.1 101 /, what)
    r.socket.destroy()
  }
  // header credentials: no page of another site can make a browser send them
  const tok = await bearer(g.url, 'wes', 'wes-password')
  const viaBearer = await upgrade(g.url, '/ws', { authorization: `Bearer ${tok}`, origin: EVIL })
  t.match(viaBearer.head, /^HTTP\/1\.1 101 /, 'bearer token from any origin')
  viaBearer.socket.destroy()
  const pt = await g.store.privateTokens.create((await g.store.users.byUsername('wes'))!.id)
  const viaToken = await upgrade(g.url, '/ws', { authorization: `Token ${pt}`, cookie: s.cookie, origin: EVIL })
  t.match(viaToken.head, /^HTTP\/1\.1 101 /, 'private token (it decides over the cookie) from any origin')
  viaToken.socket.destroy()
})

t.test('two different session ids in one request are refused (401 invalid_session), identical copies are fine', async (t) => {
  const victim = await makeUser(g, 'vic')
  await makeUser(g, 'mallory')
  const v = await login(g.url, 'vic', 'vic-password')
  const m = await login(g.url, 'mallory', 'mallory-password')
  const who = async (cookie: string | string[]): Promise<Res> => await request(g.url, PROFILE, { headers: { cookie } })

  for (const [what, cookie] of [
    ['the tossed cookie first', `svc_sessionid=${m.session}; svc_sessionid=${v.session}`],
    ['the tossed cookie last', `svc_sessionid=${v.session}; svc_sessionid=${m.session}`],
    ['with other cookies between', `svc_sessionid=${v.session}; theme=dark; svc_csrftoken=${v.csrf}; svc_sessionid=${m.session}`],
    ['a quoted copy of another value', `svc_sessionid=${v.session}; svc_sessionid="${m.session}"`],
    ['one of them unknown', `svc_sessionid=${v.session}; svc_sessionid=nope`],
    ['the current and the legacy name, different', `svc_sessionid=${v.session}; sessionid=${m.session}`],
    ['the legacy name first', `sessionid=${m.session}; svc_sessionid=${v.session}`],
    ['the legacy name twice, different', `sessionid=${m.session}; sessionid=${v.session}`]
  ]) {
    const r = await who(cookie)
    t.equal(r.status, 401, what)
    t.equal(r.json.code, 'invalid_session', what)
  }
  const split = await request(g.url, PROFILE, { rawHeaders: ['Host', 'x', 'Cookie', `svc_sessionid=${m.session}`, 'Cookie', `svc_sessionid=${v.session}`] })
  t.equal(split.status, 401, 'two Cookie headers are one list')

  for (const [what, cookie] of [
    ['identical duplicates', `svc_sessionid=${v.session}; svc_sessionid=${v.session}`],
    ['the same id quoted and not', `svc_sessionid=${v.session}; svc_sessionid="${v.session}"`],
    ['the same id under both names', `svc_sessionid=${v.session}; sessionid=${v.session}`],
    ['the legacy name alone', `sessionid=${v.session}`],
    ['one session id among other cookies', `a=1; svc_sessionid=${v.session}; a=2`]
  ]) {
    const r = await who(cookie)
    t.equal(r.status, 200, what)
    t.equal(r.json.headers['x-svc-user-id'], victim.id, `${what}: the victim`)
  }

  // an unsafe method: ambiguous before the CSRF check is even reached
  const unsafe = await request(g.url, PROFILE, { method: 'POST', headers: { cookie: `svc_sessionid=${v.session}; svc_sessionid=${m.session}`, 'x-csrftoken': v.csrf } })
  t.equal(unsafe.json.code, 'invalid_session')

  // the page and /login do not pick either
  t.equal((await request(g.url, '/account/keys', { headers: { cookie: `svc_sessionid=${v.session}; svc_sessionid=${m.session}` } })).status, 302, 'keys page: sign in')
  const again = await login(g.url, 'vic', 'vic-password', { headers: { cookie: `svc_sessionid=${v.session}; svc_sessionid=${m.session}` } })
  t.ok(again.session)
  t.ok(await g.store.sessions.get(m.session), 'signing in does not end a session it cannot attribute')
})

t.test('legacy name not accepted: a sessionid cookie is just another cookie', async (t) => {
  const g2 = await startGateway(db.url, { upstream: { url: echo.url }, session: { accept_legacy_cookie: false } })
  t.teardown(() => g2.close())
  const u = await makeUser(g2, 'ned')
  const s = await login(g2.url, 'ned', 'ned-password')
  const r = await request(g2.url, PROFILE, { headers: { cookie: `svc_sessionid=${s.session}; sessionid=something-else` } })
  t.equal(r.status, 200)
  t.equal(r.json.headers['x-svc-user-id'], u.id)
})

t.test('a login clears a legacy session cookie the browser still sends, so the new session is not ambiguous', async (t) => {
  await makeUser(g, 'lucy')
  const stale = await login(g.url, 'lucy', 'lucy-password')
  const r = await login(g.url, 'lucy', 'lucy-password', { headers: { cookie: `sessionid=${stale.session}` } })
  const c = setCookies(r.res)
  t.equal(c.sessionid?.value, '', 'the legacy cookie is cleared')
  t.equal(c.sessionid?.attrs['max-age'], '0')
  t.equal(setCookies((await login(g.url, 'lucy', 'lucy-password')).res).sessionid, undefined, 'not sent when there was none')
})

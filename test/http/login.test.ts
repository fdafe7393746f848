/**
 * Browser sessions over plain HTTP: the login page and form, cookies, CSRF,
 * safe redirects, logout, expiry. On the embedded store (a session's expiry as
 * a Redis TTL: test/topology/redis-http.test.ts).
 */
import t from 'tap'
import { request, post, type Res } from '../fixtures/http.js'
import { embeddedStore, sqliteOf, startGateway, ADMIN_PASSWORD } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { idleTimeout, login, postForm, setCookies } from '../fixtures/session.js'
import { safeNext } from '../../src/routes/login.js'
import { sleep } from '../fixtures/wait.js'

const db = embeddedStore()
const g = await startGateway(db.url)
t.teardown(async () => { await g.close(); await db.stop() })

const alice = await makeUser(g, 'alice')
const PROFILE = '/api/v1/users/profile/'
const TOKEN = '/api/v1/authentication/private-token/'
type Asserts = Pick<typeof t, 'match' | 'notMatch' | 'equal'>

/** Nothing a strict CSP would block: no inline script, style or event handler. */
function assertNoInline (t: Asserts, html: string): void {
  t.notMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/i, 'no inline <script>')
  t.notMatch(html, /<style/i, 'no <style>')
  t.notMatch(html, /\sstyle=/i, 'no style attribute')
  t.notMatch(html, /\son[a-z]+=/i, 'no event handler attribute')
  t.notMatch(html, /javascript:/i, 'no javascript: URL')
}

function assertPageHeaders (t: Asserts, h: Record<string, unknown>): void {
  const csp = String(h['content-security-policy'])
  t.match(csp, /default-src 'self'/)
  t.match(csp, /frame-ancestors 'none'/)
  t.notMatch(csp, /unsafe-inline|unsafe-eval/, 'CSP allows no inline code')
  t.equal(h['x-content-type-options'], 'nosniff')
  t.equal(h['x-frame-options'], 'DENY')
  t.equal(h['referrer-policy'], 'same-origin')
}

t.test('GET /login: a labelled form, no inline code, security headers', async (t) => {
  const r = await request(g.url, '/login')
  t.equal(r.status, 200)
  t.match(r.headers['content-type'], /^text\/html/)
  t.equal(r.headers['cache-control'], 'no-store')
  assertPageHeaders(t, r.headers)
  assertNoInline(t, r.text)
  t.match(r.text, /<form method="post" action="\/login"/)
  t.match(r.text, /<label for="username">Username<\/label>/)
  t.match(r.text, /<input id="username" name="username"[^>]*autocomplete="username"/)
  t.match(r.text, /<label for="password">Password<\/label>/)
  t.match(r.text, /<input id="password" name="password" type="password"[^>]*autocomplete="current-password"/)
  t.match(r.text, /<html lang="en">/)
  const css = /href="(\/_sidegate\/static\/sidegate\.css\?v=[^"]+)"/.exec(r.text)
  t.ok(css, 'links its stylesheet')
  const c = await request(g.url, css![1])
  t.equal(c.status, 200)
  t.match(c.headers['content-type'], /^text\/css/)
  t.match(c.headers['cache-control'], /max-age=31536000/, 'versioned asset cached long')

  const evil = await request(g.url, '/login?next=' + encodeURIComponent('/x"><script>alert(1)</script>'))
  t.notMatch(evil.text, /<script>alert/, 'next is never reflected raw')
  t.match((await request(g.url, '/login?next=' + encodeURIComponent('//evil.example'))).text, /name="next" value="\/account\/keys"/)
})

t.test('POST /login (form): wrong password shows the error, right one sets the cookies and redirects', async (t) => {
  const bad = await postForm(g.url, '/login', { username: 'alice', password: 'nope', next: PROFILE })
  t.equal(bad.status, 401)
  t.match(bad.text, /role="alert"[^>]*>Incorrect username or password\.</)
  t.match(bad.text, /value="alice"/, 'username kept')
  t.match(bad.text, /name="next" value="\/api\/v1\/users\/profile\/"/, 'next kept')
  t.equal(bad.headers['set-cookie'], undefined, 'no cookie on failure')
  assertNoInline(t, bad.text)
  const unknown = await postForm(g.url, '/login', { username: 'nobody-here', password: 'nope', next: PROFILE })
  t.equal(unknown.status, 401)
  t.equal(unknown.text.replace('nobody-here', 'alice'), bad.text, 'an unknown user gets the same page')

  const ok = await login(g.url, 'alice', 'alice-password', { next: PROFILE })
  t.equal(ok.res.status, 303)
  t.equal(ok.res.headers.location, PROFILE)
  const c = setCookies(ok.res)
  t.same(Object.keys(c.svc_sessionid.attrs).sort(), ['httponly', 'path', 'samesite'], 'session cookie: HttpOnly, SameSite, Path, not Secure over plain HTTP')
  t.equal(c.svc_sessionid.attrs.path, '/')
  t.equal(c.svc_sessionid.attrs.samesite, 'Lax')
  t.same(Object.keys(c.svc_csrftoken.attrs).sort(), ['path', 'samesite'], 'CSRF cookie readable by scripts')
  t.equal(c.svc_csrftoken.attrs.samesite, 'Lax')
  const s = await g.store.sessions.get(ok.session)
  t.ok(s, 'the session is in the store')
  t.equal(s!.user_id, alice.id)
  t.equal(ok.csrf, s!.csrf, 'the CSRF cookie is the session\'s token')

  const me = await request(g.url, PROFILE, { headers: { cookie: ok.cookie } })
  t.equal(me.status, 200)
  t.equal(me.json.username, 'alice')
  t.not((await g.store.users.get(alice.id))!.last_login, null, 'last_login recorded')
})

t.test('the session id is rotated at login, and the old session ends', async (t) => {
  const first = await login(g.url, 'alice', 'alice-password')
  const second = await login(g.url, 'alice', 'alice-password', { headers: { cookie: first.cookie } })
  t.not(second.session, first.session)
  t.not(second.csrf, first.csrf)
  t.equal(await g.store.sessions.get(first.session), null, 'old session deleted')
  t.equal((await request(g.url, PROFILE, { headers: { cookie: first.cookie } })).json.code, 'invalid_session')
  t.equal((await request(g.url, PROFILE, { headers: { cookie: second.cookie } })).status, 200)

  // a session held under the legacy cookie name is ended too, and that cookie cleared
  const legacy = await g.store.sessions.create(alice.id, 60)
  const third = await login(g.url, 'alice', 'alice-password', { headers: { cookie: `sessionid=${legacy.id}` } })
  t.equal(await g.store.sessions.get(legacy.id), null)
  t.not(third.session, legacy.id)
})

t.test('POST /login (JSON)', async (t) => {
  const r = await post(g.url, '/login', { username: 'alice', password: 'alice-password', next: '//evil.example' })
  t.equal(r.status, 200)
  t.equal(r.json.user.username, 'alice')
  t.equal(r.json.next, '/account/keys', 'unsafe next replaced')
  t.equal(r.json.user.password, undefined)
  const c = setCookies(r)
  t.ok(c.svc_sessionid.attrs.httponly !== undefined)
  t.equal((await request(g.url, PROFILE, { headers: { cookie: `svc_sessionid=${c.svc_sessionid.value}` } })).status, 200)

  const wrong = await post(g.url, '/login', { username: 'alice', password: 'x' })
  const unknown = await post(g.url, '/login', { username: 'nobody', password: 'x' })
  t.equal(wrong.status, 401)
  t.same(wrong.json, { detail: 'Unable to log in with provided credentials.', code: 'authentication_failed' })
  t.same(unknown.json, wrong.json, 'unknown user: same answer')
  t.equal(wrong.headers['set-cookie'], undefined)
  const missing = await post(g.url, '/login', { username: 'alice' })
  t.equal(missing.status, 400)
  t.equal(missing.json.code, 'required')
  const empty = await postForm(g.url, '/login', { username: '', password: '' })
  t.equal(empty.status, 400)
  t.match(empty.text, /Enter your username and password/)
})

t.test('Secure: with session.cookie_secure, or HTTPS as said by a trusted proxy only', async (t) => {
  const secure = await startGateway(db.url, { session: { cookie_secure: true } })
  const proxied = await startGateway(db.url, { server: { trusted_proxies: ['127.0.0.1'] } })
  t.teardown(async () => { await secure.close(); await proxied.close() })
  for (const gw of [secure, proxied]) await makeUser(gw, 'sec')

  const a = setCookies((await login(secure.url, 'sec', 'sec-password')).res)
  t.ok('secure' in a.svc_sessionid.attrs, 'cookie_secure: session cookie Secure')
  t.ok('secure' in a.svc_csrftoken.attrs, 'cookie_secure: CSRF cookie Secure')

  const b = setCookies((await login(proxied.url, 'sec', 'sec-password', { headers: { 'x-forwarded-proto': 'https' } })).res)
  t.ok('secure' in b.svc_sessionid.attrs, 'trusted proxy said https')
  t.ok('secure' in b.svc_csrftoken.attrs)
  const c = setCookies((await login(proxied.url, 'sec', 'sec-password', { headers: { 'x-forwarded-proto': 'http' } })).res)
  t.notOk('secure' in c.svc_sessionid.attrs, 'trusted proxy said http')

  const d = setCookies((await login(g.url, 'alice', 'alice-password', { headers: { 'x-forwarded-proto': 'https' } })).res)
  t.notOk('secure' in d.svc_sessionid.attrs, 'X-Forwarded-Proto from an untrusted peer is ignored')
})

t.test('next: same-origin paths only, everything else lands on /account/keys', async (t) => {
  const bad = [
    '//evil.example', '//evil.example/path', '/\\evil.example', '\\\\evil.example', '/\\/evil.example',
    'https://evil.example', 'http:evil.example', 'javascript:alert(1)', 'data:text/html,x', 'evil.example',
    '/\t/evil.example', '/\n/evil.example', ' /account', '/login', '/logout?x=1', '', 'x'.repeat(3000)
  ]
  for (const next of bad) {
    t.equal(safeNext(next), '/account/keys', JSON.stringify(next))
    const r = await postForm(g.url, '/login', { username: 'alice', password: 'alice-password', next })
    t.equal(r.headers.location, '/account/keys', `login with next=${JSON.stringify(next.slice(0, 40))}`)
  }
  t.equal(safeNext(undefined), '/account/keys')
  t.equal(safeNext(['/x']), '/account/keys')
  for (const [next, want] of [
    ['/api/v1/users/profile/', '/api/v1/users/profile/'],
    ['/a/b?c=1&d=%2F%2Fe#f', '/a/b?c=1&d=%2F%2Fe#f'],
    ['/api/docs/', '/api/docs/'],
    ['/a/../b', '/b'],
    ['/ü', '/%C3%BC']
  ]) {
    t.equal(safeNext(next), want, next)
    t.equal((await postForm(g.url, '/login', { username: 'alice', password: 'alice-password', next })).headers.location, want)
  }
})

t.test('cross-site login and logout are refused (Sec-Fetch-Site)', async (t) => {
  for (const site of ['cross-site', 'same-site']) {
    const r = await postForm(g.url, '/login', { username: 'alice', password: 'alice-password' }, { 'sec-fetch-site': site })
    t.equal(r.status, 403, site)
    t.equal(r.json.code, 'csrf_failed')
    t.equal(r.headers['set-cookie'], undefined)
  }
  t.equal((await postForm(g.url, '/login', { username: 'alice', password: 'alice-password' }, { 'sec-fetch-site': 'same-origin' })).status, 303)
  const s = await login(g.url, 'alice', 'alice-password')
  const r = await postForm(g.url, '/logout', { csrfmiddlewaretoken: s.csrf }, { cookie: s.cookie, 'sec-fetch-site': 'cross-site' })
  t.equal(r.status, 403)
  t.ok(await g.store.sessions.get(s.session), 'session still there')
})

t.test('CSRF: unsafe methods with a session need X-CSRFToken bound to that session', async (t) => {
  const s = await login(g.url, 'alice', 'alice-password')
  const other = await login(g.url, 'alice', 'alice-password')
  t.equal((await request(g.url, TOKEN, { headers: { cookie: s.cookie } })).status, 200, 'GET needs no token')
  const none = await request(g.url, TOKEN, { method: 'POST', headers: { cookie: s.cookie } })
  t.equal(none.status, 403)
  t.equal(none.json.code, 'csrf_failed')
  t.equal((await request(g.url, TOKEN, { method: 'POST', headers: { cookie: s.cookie, 'x-csrftoken': 'nope' } })).json.code, 'csrf_failed')
  t.equal((await request(g.url, TOKEN, { method: 'POST', headers: { cookie: s.cookie, 'x-csrftoken': other.csrf } })).json.code, 'csrf_failed', 'another session\'s token')
  t.equal(await g.store.privateTokens.get(alice.id), null, 'nothing was created')
  const ok = await request(g.url, TOKEN, { method: 'POST', headers: { cookie: s.cookie, 'x-csrftoken': s.csrf } })
  t.equal(ok.status, 201)
  t.equal(await g.store.privateTokens.get(alice.id), ok.json.token)
  // header credentials need no CSRF token
  const viaToken = await request(g.url, TOKEN, { method: 'DELETE', headers: { authorization: `Token ${ok.json.token}` } })
  t.equal(viaToken.status, 204)
})

t.test('POST /logout: CSRF-protected, deletes the session in the store, clears the cookies', async (t) => {
  const s = await login(g.url, 'alice', 'alice-password')
  const noToken = await request(g.url, '/logout', { method: 'POST', headers: { cookie: s.cookie } })
  t.equal(noToken.status, 403)
  t.equal(noToken.json.code, 'csrf_failed')
  t.equal((await postForm(g.url, '/logout', { csrfmiddlewaretoken: 'wrong' }, { cookie: s.cookie })).status, 403)
  t.equal((await request(g.url, PROFILE, { headers: { cookie: s.cookie } })).status, 200, 'still signed in')

  const out = await request(g.url, '/logout', { method: 'POST', headers: { cookie: s.cookie, 'x-csrftoken': s.csrf } })
  t.equal(out.status, 200)
  const c = setCookies(out)
  t.equal(c.svc_sessionid.value, '')
  t.equal(c.svc_sessionid.attrs['max-age'], '0')
  t.equal(c.svc_csrftoken.attrs['max-age'], '0')
  t.equal(await g.store.sessions.get(s.session), null, 'gone from the store')
  const after = await request(g.url, PROFILE, { headers: { cookie: s.cookie } })
  t.equal(after.status, 401)
  t.equal(after.json.code, 'invalid_session')

  // the page's form (no script): the token in a form field, then to the login page
  const s2 = await login(g.url, 'alice', 'alice-password')
  const f = await postForm(g.url, '/logout', { csrfmiddlewaretoken: s2.csrf }, { cookie: s2.cookie })
  t.equal(f.status, 303)
  t.equal(f.headers.location, '/login')
  t.equal(await g.store.sessions.get(s2.session), null)
  t.equal((await request(g.url, '/logout', { method: 'POST' })).status, 200, 'logging out without a session is harmless')
})

t.test('/account/keys needs a session; /login with one goes on; / leads to sign-in', async (t) => {
  const anon = await request(g.url, '/account/keys')
  t.equal(anon.status, 302)
  t.equal(anon.headers.location, '/login?next=%2Faccount%2Fkeys')
  t.equal((await request(g.url, '/account/keys', { headers: { cookie: 'svc_sessionid=nope' } })).status, 302)
  t.equal((await request(g.url, '/')).headers.location, '/account/keys')

  const u = await makeUser(g, '<b>&eve')
  const s = await login(g.url, u.username, `${u.username}-password`)
  const page = await request(g.url, '/account/keys', { headers: { cookie: s.cookie } })
  t.equal(page.status, 200)
  assertPageHeaders(t, page.headers)
  assertNoInline(t, page.text)
  t.equal(page.headers['cache-control'], 'no-store')
  t.match(page.text, /Signed in as <strong id="username">&lt;b&gt;&amp;eve<\/strong>/, 'username escaped')
  t.match(page.text, new RegExp(`name="csrfmiddlewaretoken" value="${s.csrf}"`))
  t.match(page.text, /<script src="\/_sidegate\/static\/account\.js\?v=[^"]+" defer><\/script>/)
  t.match(page.text, /data-csrf-cookie="svc_csrftoken"/)

  const again = await request(g.url, '/login?next=%2Fapi%2Fdocs%2F', { headers: { cookie: s.cookie } })
  t.equal(again.status, 302)
  t.equal(again.headers.location, '/api/docs/')
  const js = await request(g.url, /src="([^"]+account\.js[^"]+)"/.exec(page.text)![1])
  t.equal(js.status, 200)
  t.match(js.headers['content-type'], /^text\/javascript/)
})

t.test('idle timeout: a used session lives on, an idle one ends', async (t) => {
  // the record's end in the file (in Redis, the key's TTL: test/topology/redis-http.test.ts)
  await idleTimeout(t, db.url, (g, hash) => sqliteOf(g).prepare('SELECT 1 FROM sessions WHERE hash = ? AND exp > ?').get(hash, Date.now()) !== undefined)
})

t.test('absolute timeout: a session ends however busy it is', async (t) => {
  // idle = absolute: in use every 0.3 s the idle timer never runs out first
  const absolute = 3
  const g2 = await startGateway(db.url, { session: { idle_timeout: absolute, absolute_timeout: absolute } })
  t.teardown(() => g2.close())
  const loginAt = Date.now()
  const s = await login(g2.url, 'admin', ADMIN_PASSWORD)
  // used until refused (with a deadline): when it is refused, and that it was served until then
  const ok: number[] = []
  let r: Res
  for (;;) {
    r = await request(g2.url, PROFILE, { headers: { cookie: s.cookie } })
    if (r.status !== 200 || Date.now() - loginAt > absolute * 1000 + 15_000) break
    ok.push(Date.now() - loginAt)
    await sleep(300)
  }
  const refusedAfter = Date.now() - loginAt
  t.equal(r.status, 401, `refused ${refusedAfter} ms after login`)
  t.equal(r.json.code, 'invalid_session')
  // the session was created after loginAt, and is checked against its creation time: never early
  t.ok(refusedAfter >= absolute * 1000, `not before the ${absolute} s absolute timeout`)
  t.ok(ok.length >= 3, `busy until then: ${ok.length} uses served, the last ${ok.at(-1)} ms after login`)
  t.equal(await g2.store.sessions.get(s.session), null, 'and deleted')
})

t.test('disabling a user ends their browser sessions; they cannot sign in again', async (t) => {
  const u = await makeUser(g, 'dave')
  const s = await login(g.url, 'dave', 'dave-password')
  t.equal((await request(g.url, PROFILE, { headers: { cookie: s.cookie } })).status, 200)
  await g.store.users.setActive(u.id, false)
  t.equal((await request(g.url, PROFILE, { headers: { cookie: s.cookie } })).json.code, 'invalid_session')
  const again = await postForm(g.url, '/login', { username: 'dave', password: 'dave-password' })
  t.equal(again.status, 401)
  t.match(again.text, /Incorrect username or password/, 'same message as a wrong password')
})

t.test('config: session timeouts and lockout are validated', async (t) => {
  const { buildConfig } = await import('../../src/config/index.js')
  t.throws(() => buildConfig({ session: { idle_timeout: 0 } }), /session\.idle_timeout/)
  t.throws(() => buildConfig({ session: { idle_timeout: 600, absolute_timeout: 300 } }), /session\.absolute_timeout: must be at least session\.idle_timeout/)
  t.throws(() => buildConfig({ auth: { lockout: { max_failures: -1 } } }), /auth\.lockout\.max_failures/)
  t.throws(() => buildConfig({ auth: { lockout: { window: 0 } } }), /auth\.lockout\.window/)
  t.throws(() => buildConfig({ auth: { lockout: { attempts: 3 } } }), /auth\.lockout\.attempts: unknown key/)
  const c = buildConfig({})
  t.same(c.auth.lockout, { max_failures: 7, window: 1800, address_max_failures: 100, ipv6_prefix: 64 })
  t.equal(c.session.idle_timeout, 7200)
  t.equal(c.session.absolute_timeout, 86400)
})

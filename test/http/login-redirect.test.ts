/**
 * session.login_redirect in proxy mode: a browser's navigation to a protected
 * page without a credential (or with an expired session) is sent to
 * /login?next=<the page>, and comes back there after signing in; API clients,
 * a credential that is refused, other methods and frames keep their 401; an
 * original URL that would leave the site never becomes a `next` that does.
 * On sidegate's own `user` routes (the demo API without an upstream) the same.
 * Off, every such request is 401. Real gateways on the embedded store, an echo upstream.
 * The same rows as forward-auth decisions: test/http/verdicts.test.ts; through
 * nginx and Caddy: test/proxies/forward-auth.test.ts; in Chromium: test/browser/browser.test.ts.
 */
import t from 'tap'
import { request, startEcho } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { rawHead, rawRequest } from '../fixtures/raw.js'
import { login, postForm, setCookies } from '../fixtures/session.js'

const db = embeddedStore()
const echo = await startEcho()
const g = await startGateway(db.url, { upstream: { url: echo.url, public_paths: ['/public'] } })
const demo = await startGateway(db.url, { redis: { url: db.url, prefix: g.config.redis.prefix } })
const off = await startGateway(
  db.url,
  {
    redis: { url: db.url, prefix: g.config.redis.prefix },
    upstream: { url: echo.url },
    session: { login_redirect: false }
  }
)
t.teardown(async () => { await g.close(); await demo.close(); await off.close(); await echo.close(); await db.stop() })
const alice = await makeUser(g, 'alice')
const token = await g.store.privateTokens.create(alice.id)

/** What Chromium sends when a person opens a page. */
const NAVIGATE = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document', 'sec-fetch-site': 'none', 'sec-fetch-user': '?1' }
const SITE = 'http://site.invalid'

/** The `next` a login URL carries, and that it is one. */
function nextOf (location: string | undefined): string | null {
  const u = new URL(location ?? '', SITE)
  return u.origin === SITE && u.pathname === '/login' ? u.searchParams.get('next') : null
}

/** Where a path-only `next` leads from the site, or null when it leaves it. */
function staysOnSite (next: string): boolean {
  return next.startsWith('/') && !next.startsWith('//') && !next.includes('\\') && new URL(next, SITE).origin === SITE
}

t.test('a navigation without a credential: 303 to /login with the page (and its query) as next, not forwarded', async (t) => {
  const before = echo.seen.length
  const r = await request(g.url, '/app/report?year=2026&q=a%20b', { headers: NAVIGATE })
  t.equal(r.status, 303)
  t.equal(r.headers.location, '/login?next=%2Fapp%2Freport%3Fyear%3D2026%26q%3Da%2520b')
  t.equal(nextOf(r.headers.location), '/app/report?year=2026&q=a%20b')
  t.equal(r.headers['cache-control'], 'no-store')
  t.ok(r.headers['x-request-id'], 'X-Request-Id as on any answer')
  t.equal(r.text, '')
  t.equal(echo.seen.length, before, 'not forwarded')
  const head = await request(g.url, '/app/report', { method: 'HEAD', headers: NAVIGATE })
  t.equal(head.status, 303, 'HEAD too')
  const old = await request(g.url, '/app/report', { headers: { accept: 'text/html' } })
  t.equal(old.status, 303, 'Accept: text/html without any Sec-Fetch-* header (a browser without Fetch Metadata)')
  t.equal(nextOf(old.headers.location), '/app/report')
})

t.test('API clients and whatever is not a navigation keep their 401 (JSON but to a browser\'s navigation)', async (t) => {
  const cases: Array<[string, Record<string, string>, string?]> = [
    ['no headers (curl)', {}],
    ['Accept: */*', { accept: '*/*' }],
    ['Accept: application/json', { accept: 'application/json' }],
    ['a navigation whose Accept names JSON only', { ...NAVIGATE, accept: 'application/json' }],
    ['fetch() from a page', { accept: '*/*', 'sec-fetch-mode': 'cors', 'sec-fetch-dest': 'empty', 'sec-fetch-site': 'same-origin' }],
    ['fetch() asking for HTML', { accept: 'text/html', 'sec-fetch-mode': 'cors', 'sec-fetch-dest': 'empty', 'sec-fetch-site': 'same-origin' }],
    ['Accept: text/html with Sec-Fetch-Site but no mode', { accept: 'text/html', 'sec-fetch-site': 'same-origin' }],
    ['a navigation into an iframe (the login page refuses to be framed)', { ...NAVIGATE, 'sec-fetch-dest': 'iframe' }],
    ['an image', { accept: 'image/avif,image/webp,*/*', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image' }],
    ['a form post (its body could not be sent again)', { ...NAVIGATE, 'content-type': 'application/x-www-form-urlencoded' }, 'POST'],
    ['a navigation with an unknown private token', { ...NAVIGATE, authorization: 'Token not-a-token' }],
    ['a navigation with a malformed Authorization header', { ...NAVIGATE, authorization: 'Bearer' }],
    ['a navigation with an unsupported scheme', { ...NAVIGATE, authorization: 'Basic YTpi' }],
    ['a navigation with two different session cookies (ambiguous: signing in would not change it)', { ...NAVIGATE, cookie: 'svc_sessionid=one; svc_sessionid=two' }]
  ]
  for (const [name, headers, method] of cases) {
    const r = await request(g.url, '/app/report', { method: method ?? 'GET', headers, body: method === 'POST' ? 'a=1' : undefined })
    t.equal(r.status, 401, name)
    t.equal(r.headers.location, undefined, `${name}: no Location`)
    // a form post and the ambiguous cookies are still a browser's navigation:
    // the 401 as a page (test/http/error-pages.test.ts)
    const page = method === 'POST' || headers.cookie !== undefined
    t.equal(r.headers['content-type'], page ? 'text/html; charset=utf-8' : 'application/json', `${name}: ${page ? 'the page' : 'JSON'}`)
  }
})

t.test('a credential: forwarded as before (a navigation too)', async (t) => {
  const r = await request(g.url, '/app/report', { headers: { ...NAVIGATE, authorization: `Token ${token}` } })
  t.equal(r.status, 200)
  t.equal(r.json.headers['x-svc-user-id'], alice.id)
  const s = await login(g.url, 'alice', 'alice-password')
  const withSession = await request(g.url, '/app/report', { headers: { ...NAVIGATE, cookie: s.cookie } })
  t.equal(withSession.status, 200)
  t.equal(withSession.json.headers['x-svc-auth-method'], 'session')
  const pub = await request(g.url, '/public/page', { headers: NAVIGATE })
  t.equal(pub.status, 200, 'a public path needs no sign-in')
})

t.test('an expired or logged-out session cookie: a navigation is sent to sign in again, an API call is 401', async (t) => {
  const s = await login(g.url, 'alice', 'alice-password')
  const out = await request(g.url, '/logout', { method: 'POST', headers: { cookie: s.cookie, 'x-csrftoken': s.csrf } })
  t.equal(out.status, 200)
  const nav = await request(g.url, '/app/report?x=1', { headers: { ...NAVIGATE, cookie: s.cookie } })
  t.equal(nav.status, 303, 'logged out')
  t.equal(nextOf(nav.headers.location), '/app/report?x=1')
  const unknown = await request(g.url, '/app/report', { headers: { ...NAVIGATE, cookie: 'svc_sessionid=never-issued' } })
  t.equal(unknown.status, 303, 'an unknown (expired) id')
  const api = await request(g.url, '/app/report', { headers: { accept: 'application/json', cookie: s.cookie } })
  t.equal(api.status, 401)
  t.equal(api.json.code, 'invalid_session')
})

t.test('open-redirect attempts in the original URL never become a next that leaves the site', async (t) => {
  const host = new URL(g.url).host
  // absolute-form targets are taken as their path (src/http/target.ts) when they name this host
  const targets = ['//evil.example/x', '///evil.example/x', '/\\evil.example/x', '/\\/evil.example', '/%5C%5Cevil.example', '/%2F%2Fevil.example', `http://${host}//evil.example/x`, `HTTP://${host}/\\evil.example`]
  for (const target of targets) {
    const r = await rawRequest(g.url, rawHead('GET', target, [['Host', new URL(g.url).host], ['Connection', 'close'], ...Object.entries(NAVIGATE)]))
    t.equal(r.status, 303, `${target}: sent to sign in`)
    const next = nextOf(r.headers.location)
    t.ok(next !== null && staysOnSite(next), `${target}: ${String(r.headers.location)} → next ${String(next)} stays on the site`)
    // and the login page, then the form post, keep it on the site too
    const page = await request(g.url, r.headers.location)
    const field = /name="next" value="([^"]*)"/.exec(page.text)?.[1]?.replace(/&amp;/g, '&').replace(/&#39;/g, "'").replace(/&quot;/g, '"')
    t.ok(field !== undefined && staysOnSite(field), `${target}: the form's next ${String(field)}`)
    const signed = await postForm(g.url, '/login', { username: 'alice', password: 'alice-password', next: field ?? '' })
    t.equal(signed.status, 303)
    t.ok(staysOnSite(signed.headers.location ?? ''), `${target}: after sign-in to ${String(signed.headers.location)}`)
  }
  // an absolute-form target naming another host is refused, never sent anywhere
  for (const target of ['https://evil.example/x', 'http://evil.example', `http://evil.example@${host}/x`]) {
    const r = await rawRequest(g.url, rawHead('GET', target, [['Host', host], ['Connection', 'close'], ...Object.entries(NAVIGATE)]))
    t.equal(r.status, 400, `${target}: 400`)
    t.equal(r.headers.location, undefined, `${target}: no redirect`)
  }
  // what a safe target keeps
  const r = await request(g.url, '/a/b/?q=%2F%2Fevil.example', { headers: NAVIGATE })
  t.equal(nextOf(r.headers.location), '/a/b/?q=%2F%2Fevil.example', 'an encoded "//" in the query is the query\'s')
})

t.test('the way back: the login page carries next, the form post returns to the page with its query', async (t) => {
  const r = await request(g.url, '/app/report?year=2026&tab=sales', { headers: NAVIGATE })
  const page = await request(g.url, r.headers.location!, { headers: NAVIGATE })
  t.equal(page.status, 200)
  t.match(page.text, 'name="next" value="/app/report?year=2026&amp;tab=sales"')
  const signed = await postForm(g.url, '/login', { username: 'alice', password: 'alice-password', next: '/app/report?year=2026&tab=sales' })
  t.equal(signed.status, 303)
  t.equal(signed.headers.location, '/app/report?year=2026&tab=sales')
  const cookie = Object.entries(setCookies(signed)).map(([name, c]) => `${name}=${c.value}`).join('; ')
  const back = await request(g.url, signed.headers.location!, { headers: { ...NAVIGATE, cookie } })
  t.equal(back.status, 200)
  t.equal(back.json.url, '/app/report?year=2026&tab=sales', 'the upstream got the page with its query')
})

t.test('sidegate\'s own user routes (the demo API without an upstream): a navigation signs in, an API call is 401', async (t) => {
  const nav = await request(demo.url, '/api/v1/users/profile/', { headers: NAVIGATE })
  t.equal(nav.status, 303)
  t.equal(nextOf(nav.headers.location), '/api/v1/users/profile/')
  t.equal(nav.headers['x-request-id'] !== undefined, true)
  const api = await request(demo.url, '/api/v1/users/profile/')
  t.equal(api.status, 401)
  t.equal(api.json.code, 'not_authenticated')
  const keys = await request(demo.url, '/api/v1/authentication/access-keys/', { headers: NAVIGATE })
  t.equal(keys.status, 303, 'the account API likewise')
  const post = await request(demo.url, '/api/v1/authentication/access-keys/', { method: 'POST', headers: NAVIGATE, body: '' })
  t.equal(post.status, 401, 'not a POST')
  const s = await login(demo.url, 'alice', 'alice-password')
  const me = await request(demo.url, '/api/v1/users/profile/', { headers: { ...NAVIGATE, cookie: s.cookie } })
  t.equal(me.status, 200)
  t.equal(me.json.username, 'alice')
})

t.test('session.login_redirect: false: a navigation without a credential is 401, as a page with a link to sign in', async (t) => {
  const r = await request(off.url, '/app/report', { headers: NAVIGATE })
  t.equal(r.status, 401)
  t.match(r.text, /<code>not_authenticated<\/code>[\s\S]*<a href="\/login">Sign in<\/a>/)
  t.equal(r.headers.location, undefined)
})

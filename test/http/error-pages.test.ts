/**
 * Refusals as pages for browsers, JSON for everyone else, over real HTTP: a
 * browser's navigation (Sec-Fetch-Mode: navigate, or Accept: text/html without
 * Fetch Metadata) gets the status, code and headers of the JSON answer as an
 * HTML page in the login page's style; an API client (any Accept but HTML, JSON, any
 * Authorization header, a fetch()) keeps the JSON byte for byte.
 */
import t from 'tap'
import { request, startEcho } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { login } from '../fixtures/session.js'
import { freePort } from '../fixtures/redis.js'

const db = embeddedStore()
const echo = await startEcho()
const g = await startGateway(db.url, {
  upstream: { url: echo.url },
  access: { default_policy: 'one_factor', rules: [{ paths: ['/staff/**'], subjects: ['user:nobody'], policy: 'one_factor' }, { paths: ['/staff/**'], policy: 'deny' }] }
})
const dead = await startGateway(db.url, { upstream: { url: `http://127.0.0.1:${await freePort()}`, public_paths: ['/pub/'] } })
t.teardown(async () => { await g.close(); await dead.close(); await echo.close(); await db.stop() })
await makeUser(g, 'alice')
const s = await login(g.url, 'alice', 'alice-password')
const NAVIGATE = { 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document', 'sec-fetch-site': 'none', accept: 'text/html,application/xhtml+xml,*/*;q=0.8' }

t.test('a refused navigation: the page, with the JSON answer\'s status, code and headers', async (t) => {
  const page = await request(g.url, '/staff/report', { headers: { ...NAVIGATE, cookie: s.cookie } })
  t.equal(page.status, 403)
  t.match(page.headers['content-type'], /^text\/html; charset=utf-8$/)
  t.match(page.text, /<title>Not allowed · sidegate<\/title>/)
  t.match(page.text, /<code>access_denied<\/code> \(403\)/)
  t.match(page.text, new RegExp(`request <code>${page.headers['x-request-id'] as string}</code>`), 'the request id, to quote to an operator')
  t.match(page.text, /<link rel="stylesheet" href="\/_sidegate\/static\/sidegate\.css\?v=[\w-]+"/, 'the login page\'s style')
  t.match(page.headers['content-security-policy'], /default-src 'self'/)
  t.equal(page.headers['x-frame-options'], 'DENY')
  const css = /href="([^"]+sidegate\.css[^"]*)"/.exec(page.text)![1]
  t.equal((await request(g.url, css)).status, 200, 'its stylesheet is served')
  t.equal(echo.seen.filter((r) => r.url === '/staff/report').length, 0, 'nothing forwarded')
})

t.test('API clients keep the JSON: any Accept but HTML, an Authorization header, a fetch() from a page', async (t) => {
  const json = await request(g.url, '/staff/report', { headers: { cookie: s.cookie } })
  t.equal(json.status, 403)
  t.equal(json.headers['content-type'], 'application/json')
  t.same(json.json, { detail: 'You may not reach this path.', code: 'access_denied' })
  for (const h of <Array<Record<string, string>>>[
    { accept: 'application/json' },
    { ...NAVIGATE, 'sec-fetch-mode': 'cors', 'sec-fetch-dest': 'empty' },
    { accept: 'text/html', authorization: 'Token nope' }
  ]) {
    const r = await request(g.url, '/staff/report', { headers: { ...h, cookie: s.cookie } })
    t.match([r.headers['content-type'], r.text], ['application/json', /^\{"detail":/], JSON.stringify(h))
  }
})

t.test('a 401 page keeps the challenges; the upstream down is a 502 page; a POST navigation too', async (t) => {
  const r = await request(g.url, '/account/mfa', { method: 'POST', body: 'csrfmiddlewaretoken=x&action=begin', headers: { ...NAVIGATE, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(r.status, 401)
  t.match(r.text, /<title>Sign-in needed · sidegate<\/title>[\s\S]*<a href="\/login">Sign in<\/a>/)
  t.ok(r.headers['www-authenticate'], 'the challenges as on the JSON answer')
  const down = await request(dead.url, '/pub/anything', { headers: NAVIGATE })
  t.match([down.status, down.text], [502, /The service is not answering[\s\S]*<code>upstream_unavailable<\/code>/])
  const api = await request(dead.url, '/pub/anything')
  t.match([api.status, api.json], [502, { code: 'upstream_unavailable' }])
})

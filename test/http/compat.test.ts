/**
 * `compat: jumpserver` and the middle ground (docs/jumpserver.md), one rule at
 * a time: the replay cache's grace for a repeated GET, the Date window from a
 * (key, Date) pair's first sighting, JumpServer's login and logout paths, and
 * the admin API that compat never relaxes.
 */
import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { startEcho, request } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser, signedHeaders } from '../fixtures/creds.js'
import { buildConfig } from '../../src/config/index.js'
import { adminAuthConfig } from '../../src/admin/api.js'

const db = embeddedStore()
const echo = await startEcho()
t.teardown(async () => { await echo.close(); await db.stop() })

/** Just after a second begins: what follows shares one Date second. */
async function secondStart (): Promise<void> { await sleep(1020 - Date.now() % 1000) }

t.test('replay_grace: the same GET or HEAD again within the grace passes, later it is a replay; any other method is once', async (t) => {
  const g = await startGateway(
    db.url, { upstream: { url: echo.url }, auth: { signature: { replay_cache: true, replay_grace: 1 } } }
  )
  t.teardown(() => g.close())
  const u = await makeUser(g, 'grace')
  const { key, secret } = await g.store.accessKeys.create(u.id)
  await secondStart()
  const get = signedHeaders(key.id, secret, 'GET', '/r')
  const post = signedHeaders(key.id, secret, 'POST', '/r')
  t.equal((await request(g.url, '/r', { headers: get })).status, 200)
  t.equal((await request(g.url, '/r', { headers: get })).status, 200, 'the same GET again at once')
  t.equal((await request(g.url, '/r', { method: 'HEAD', headers: signedHeaders(key.id, secret, 'HEAD', '/r') })).status, 200)
  t.equal((await request(g.url, '/r', { method: 'POST', headers: post, body: '' })).status, 200)
  const again = await request(g.url, '/r', { method: 'POST', headers: post, body: '' })
  t.equal(again.json?.code, 'signature_replayed', 'a POST is accepted once')
  await sleep(1300)
  const late = await request(g.url, '/r', { headers: get })
  t.equal(late.json?.code, 'signature_replayed', 'the same GET after the grace')
})

t.test('date_window: a Date first seen fresh stays accepted past clock_skew for its key; one first seen stale opens nothing', async (t) => {
  const g = await startGateway(
    db.url, { upstream: { url: echo.url }, auth: { signature: { clock_skew: 1, date_window: 60 } } }
  )
  t.teardown(() => g.close())
  const u = await makeUser(g, 'window')
  const { key, secret } = await g.store.accessKeys.create(u.id)
  const other = await g.store.accessKeys.create(u.id)
  const frozen = new Date().toUTCString()
  t.equal((await request(g.url, '/a', { headers: signedHeaders(key.id, secret, 'GET', '/a', { date: frozen }) })).status, 200, 'fresh')
  await sleep(2200)
  t.equal((await request(g.url, '/b', { headers: signedHeaders(key.id, secret, 'GET', '/b', { date: frozen }) })).status, 200, 'past the skew: the Date was seen fresh for this key')
  const otherKey = await request(g.url, '/b', { headers: signedHeaders(other.key.id, other.secret, 'GET', '/b', { date: frozen }) })
  t.equal(otherKey.json?.code, 'signature_expired', 'another key never sent that Date while fresh')
  const stale = new Date(Date.now() - 30_000).toUTCString()
  t.equal((await request(g.url, '/c', { headers: signedHeaders(key.id, secret, 'GET', '/c', { date: stale }) })).json?.code, 'signature_expired')
  t.equal((await request(g.url, '/c', { headers: signedHeaders(key.id, secret, 'GET', '/c', { date: stale }) })).json?.code, 'signature_expired', 'a stale Date opened no window')
  const forged = signedHeaders(key.id, 'not-the-secret', 'GET', '/d', { date: frozen })
  t.equal((await request(g.url, '/d', { headers: forged })).json?.code, 'invalid_signature', 'the MAC is checked first')
})

t.test('compat: jumpserver serves the login form and handler at /core/auth/login/ and the logout at /core/auth/logout/; without it they are not sidegate\'s', async (t) => {
  const g = await startGateway(db.url, { compat: 'jumpserver' })
  t.teardown(() => g.close())
  await makeUser(g, 'erin')
  const page = await request(g.url, '/core/auth/login/', { headers: { accept: 'text/html' } })
  t.equal(page.status, 200)
  t.match(page.text, /<form/)
  const login = await request(g.url, '/core/auth/login/', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', referer: `${g.url}/core/auth/login/` }, body: 'username=erin&password=erin-password&csrfmiddlewaretoken=' })
  t.equal(login.status, 303)
  const cookies = [login.headers['set-cookie'] ?? []].flat()
  t.match(cookies.join('\n'), /jms_sessionid=[^;]+;.*HttpOnly/)
  const csrf = /jms_csrftoken=([^;]+)/.exec(cookies.join('\n'))![1]
  const session = /jms_sessionid=([^;]+)/.exec(cookies.join('\n'))![1]
  const wrong = await request(g.url, '/core/auth/login/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'erin', password: 'nope' }) })
  t.equal(wrong.status, 401, 'a wrong password, as at /login')
  const cross = await request(g.url, '/core/auth/login/', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' }, body: 'username=erin&password=erin-password' })
  t.equal(cross.status, 403, 'a cross-site post is refused')
  const noCsrf = await request(g.url, '/core/auth/logout/', { method: 'POST', headers: { cookie: `jms_sessionid=${session}`, 'content-type': 'application/x-www-form-urlencoded' }, body: '' })
  t.equal(noCsrf.status, 403, 'logout needs the CSRF token')
  const out = await request(g.url, '/core/auth/logout/', { method: 'POST', headers: { cookie: `jms_sessionid=${session}`, 'content-type': 'application/x-www-form-urlencoded' }, body: `csrfmiddlewaretoken=${csrf}` })
  t.equal(out.status, 303)
  t.equal((await request(g.url, '/api/v1/users/profile/', { headers: { cookie: `jms_sessionid=${session}` } })).status, 401, 'the session ended')
  t.equal((await request(g.url, '/core/auth/logout/')).status, 405, 'no GET logout: a link on another site could log users out')

  const plain = await startGateway(db.url, { names: { abbrev: 'JMS' }, upstream: { url: echo.url } })
  t.teardown(() => plain.close())
  const n = echo.seen.length
  const none = await request(plain.url, '/core/auth/login/', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'username=erin&password=erin-password' })
  t.equal(none.status, 401, 'without compat: an upstream path like any other, which needs a credential')
  t.equal(echo.seen.length, n)
})

t.test('compat never relaxes the admin API: a skew only compat set to 0 is the default 300 there; every signature once, no grace, no Date window', async (t) => {
  const admin = adminAuthConfig(buildConfig({ compat: 'jumpserver', auth: { signature: { replay_grace: 5, date_window: 600 } } })).auth.signature
  t.match(admin, { clock_skew: 300, replay_cache: true, require_digest: true, replay_grace: 0, date_window: 0 })
  t.equal(adminAuthConfig(buildConfig({ compat: 'jumpserver', auth: { signature: { clock_skew: 0 } } })).auth.signature.clock_skew, 0, 'a skew set explicitly is the operator\'s choice, as before')
  t.equal(adminAuthConfig(buildConfig({ compat: 'jumpserver', auth: { signature: { clock_skew: 60 } } })).auth.signature.clock_skew, 60)
  const plain = buildConfig({ compat: 'jumpserver' })
  t.same(plain.server.trusted_proxies, [], 'the forward-auth trust rules are not touched')
})

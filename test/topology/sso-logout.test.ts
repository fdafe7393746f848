/**
 * Logout everywhere (docs/sso.md): two gateways on one real Redis, as two
 * replicas behind one load balancer, with session.cookies. A browser signs in
 * at the portal on one replica; the other replica serves both apps with that
 * session from its in-process cache (a session is trusted there for up to 5 s,
 * so within a second only the invalidation over pub/sub can end it); a logout
 * at the portal on the first replica ends it for every app on the second.
 */
import t from 'tap'
import { request, startEcho } from '../fixtures/http.js'
import { startGateway } from '../fixtures/gateway.js'
import { startRedis } from '../fixtures/redis.js'
import { makeUser } from '../fixtures/creds.js'
import { CookieJar } from '../fixtures/jar.js'
import { postForm } from '../fixtures/session.js'

const redis = await startRedis()
const echo = await startEcho()
const doc = {
  upstream: { url: echo.url },
  server: { trusted_proxies: ['127.0.0.1'] },
  session: { cookies: [{ domain: 'example.com', portal_url: 'https://auth.example.com' }], cookie_secure: true },
  redis: { prefix: `sso${process.pid}:` }
}
const a = await startGateway(redis.url, doc)
const b = await startGateway(redis.url, doc)
t.teardown(async () => { await a.close(); await b.close(); await echo.close(); await redis.stop() })
await makeUser(a, 'alice')
const HTTPS = { 'x-forwarded-proto': 'https' }
const NAVIGATE = { accept: 'text/html', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' }

t.test('a logout at the portal on one replica ends the session for every app on the other within a second', async (t) => {
  const jar = new CookieJar()
  const signed = await postForm(a.url, '/login', { username: 'alice', password: 'alice-password', next: 'https://app.example.com/' }, { host: 'auth.example.com', ...HTTPS })
  t.equal(signed.status, 303)
  jar.take('auth.example.com', signed)
  const apps = ['app.example.com', 'other.example.com']
  const visit = async (host: string): Promise<number> =>
    (await request(b.url, '/page', { headers: jar.for(host, { ...HTTPS, ...NAVIGATE }) })).status
  // what the browser held before the logout: sent again after it, as a stolen or stale cookie would be
  const held = Object.fromEntries(apps.map((h) => [h, jar.header(h)!]))
  for (const host of apps) t.equal(await visit(host), 200, `${host} on the other replica: signed in`)
  // answered from that replica's memory now: its store reads stop
  const cached = await request(b.url, '/page', { headers: { ...HTTPS, host: 'app.example.com', cookie: held['app.example.com'] } })
  t.equal(cached.status, 200)

  const out = await request(a.url, '/logout', { method: 'POST', headers: jar.for('auth.example.com', { ...HTTPS, 'x-csrftoken': jar.value('auth.example.com', 'svc_csrftoken')!, origin: 'https://auth.example.com' }) })
  t.equal(out.status, 200)
  const at = Date.now()
  const ended: Record<string, number> = {}
  while (Object.keys(ended).length < apps.length && Date.now() - at < 5000) {
    for (const host of apps) {
      if (ended[host] !== undefined) continue
      const r = await request(b.url, '/page', { headers: { ...HTTPS, ...NAVIGATE, host, cookie: held[host] } })
      if (r.status === 303) ended[host] = Date.now() - at
    }
  }
  for (const host of apps) {
    t.ok(ended[host] !== undefined && ended[host] < 1000, `${host} on the other replica: refused ${String(ended[host])} ms after the logout`)
  }
  const r = await request(b.url, '/page', { headers: { ...HTTPS, ...NAVIGATE, host: 'app.example.com', cookie: held['app.example.com'] } })
  t.equal(r.headers.location, 'https://auth.example.com/login?next=' + encodeURIComponent('https://app.example.com/page'), 'sent to the portal again')
})

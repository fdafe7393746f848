/**
 * nginx caching sidegate's decisions (deploy/forward-auth/nginx-decision-cache.conf,
 * optional): real nginx runs deploy/forward-auth/nginx.conf with the cache
 * files in place of its "never cache" lines. An allowed private token or
 * session is asked about once per 2 s; a revoked token is let through until
 * its cached decision expires (the delay is measured and printed: at most
 * proxy_cache_valid, which nginx counts in whole seconds, plus one); a
 * one-time bearer token, a signature and a refusal are
 * never cached; a cached POST with its CSRF token does not admit one without.
 * Skipped without nginx, saying why.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { bearer, makeUser, signedHeaders } from '../fixtures/creds.js'
import { ROOT, embeddedStore, startGateway } from '../fixtures/gateway.js'
import { request, startEcho } from '../fixtures/http.js'
import { findNginx, startNginx } from '../fixtures/nginx.js'
import { login } from '../fixtures/session.js'

const DIR = join(ROOT, 'deploy', 'forward-auth')
/** proxy_cache_valid in nginx-decision-cache-location.conf */
const VALID_MS = 2000
const NO_CACHE = 'proxy_no_cache 1;\n    proxy_cache_bypass 1;'

const nginx = findNginx()
t.test('nginx caching decisions (deploy/forward-auth/nginx-decision-cache.conf)', { skip: 'why' in nginx ? nginx.why : false }, async (t) => {
  const store = embeddedStore()
  const echo = await startEcho()
  const g = await startGateway(store.url, { server: { trusted_proxies: ['127.0.0.1'] } })
  t.teardown(async () => { await g.close(); await echo.close(); await store.stop() })
  const alice = await makeUser(g, 'alice')
  const sg = new URL(g.url)
  const up = new URL(echo.url)
  const main = readFileSync(join(DIR, 'nginx.conf'), 'utf8')
  t.ok(main.includes(NO_CACHE), 'nginx.conf has the lines the cache replaces')
  const px = await startNginx((nginx as { bin: string }).bin, (port, home) => {
    const fill = (text: string): string => text.replace(/\$\{([A-Z_]+)\}/g, (_, n: string) => String({ LISTEN_PORT: port, SIDEGATE_HOST: sg.hostname, SIDEGATE_PORT: sg.port, UPSTREAM_HOST: up.hostname, UPSTREAM_PORT: up.port, CACHE_DIR: join(home, 'decisions') }[n]))
    return fill(readFileSync(join(DIR, 'nginx-decision-cache.conf'), 'utf8')) + '\n' +
      fill(main).replace(NO_CACHE, `include ${join(DIR, 'nginx-decision-cache-location.conf')};`)
  }, (fn) => t.teardown(fn))

  /** decisions sidegate was asked for so far (its access lines) */
  const asked = (): number => g.logs.filter((l) => l.includes('"path":"/_sidegate/auth"')).length
  let n = 0
  const unique = (): string => `/api/v1/things/?n=${++n}`

  t.test('a private token: asked once, then answered from the cache until revoked and expired', async (t) => {
    const token = await g.store.privateTokens.create(alice.id)
    const path = unique()
    const before = asked()
    const first = await request(px.url, path, { headers: { authorization: `Token ${token}` } })
    t.equal(first.status, 200)
    const again = await request(px.url, path, { headers: { authorization: `Token ${token}` } })
    t.equal(again.status, 200)
    t.equal(asked() - before, 1, 'the second request was not asked about')
    // another URI is another decision
    t.equal((await request(px.url, unique(), { headers: { authorization: `Token ${token}` } })).status, 200)
    t.equal(asked() - before, 2)

    // revoked: let through while the cached decision lives, then refused
    const warm = await request(px.url, path, { headers: { authorization: `Token ${token}` } })
    t.equal(warm.status, 200)
    const revokedAt = Date.now()
    await g.store.privateTokens.revoke(alice.id)
    t.equal((await request(px.url, unique(), { headers: { authorization: `Token ${token}` } })).status, 401, 'an uncached request is refused at once')
    let delay = -1
    while (Date.now() - revokedAt < VALID_MS + 3000) {
      const r = await request(px.url, path, { headers: { authorization: `Token ${token}` } })
      if (r.status === 401) { delay = Date.now() - revokedAt; break }
      t.equal(r.status, 200)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    t.comment(`revocation delay through the decision cache: ${delay} ms (proxy_cache_valid ${VALID_MS} ms)`)
    t.ok(delay >= 0, 'refused once the cached decision expired')
    // nginx counts validity in whole seconds: up to one more
    t.ok(delay <= VALID_MS + 1000 + 500, `within proxy_cache_valid and nginx's rounding (${delay} ms)`)
  })

  t.test('a one-time bearer token is never cached: its second use is refused', async (t) => {
    const tok = await bearer(g.url, 'alice', 'alice-password')
    const path = unique()
    t.equal((await request(px.url, path, { headers: { authorization: `Bearer ${tok}` } })).status, 200)
    t.equal((await request(px.url, path, { headers: { authorization: `Bearer ${tok}` } })).status, 401)
  })

  t.test('a signature is never cached: each request is asked about', async (t) => {
    const key = await g.store.accessKeys.create(alice.id)
    const path = unique()
    const headers = signedHeaders(key.key.id, key.secret, 'GET', path)
    const before = asked()
    t.equal((await request(px.url, path, { headers })).status, 200)
    t.equal((await request(px.url, path, { headers })).status, 200)
    t.equal(asked() - before, 2)
  })

  t.test('a refusal is never cached', async (t) => {
    const path = unique()
    const before = asked()
    t.equal((await request(px.url, path, { headers: { authorization: 'Token AAAAAAAAAAAAAAAAAAAAAAAA' } })).status, 401)
    t.equal((await request(px.url, path, { headers: { authorization: 'Token AAAAAAAAAAAAAAAAAAAAAAAA' } })).status, 401)
    t.equal(asked() - before, 2)
  })

  t.test('a session: a POST admitted with its CSRF token does not admit one without', async (t) => {
    const s = await login(g.url, 'alice', 'alice-password')
    const path = unique()
    t.equal((await request(px.url, path, { method: 'POST', headers: { cookie: s.cookie, 'x-csrftoken': s.csrf } })).status, 200)
    t.equal((await request(px.url, path, { method: 'POST', headers: { cookie: s.cookie } })).status, 403)
    // nor a GET's decision another method
    const get = unique()
    t.equal((await request(px.url, get, { headers: { cookie: s.cookie } })).status, 200)
    t.equal((await request(px.url, get, { method: 'DELETE', headers: { cookie: s.cookie } })).status, 403)
  })
})

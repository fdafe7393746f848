/**
 * Two separate `sidegate start` processes on one Redis and one prefix: what
 * one replica consumes or what an admin revokes holds on the other too.
 */
import t from 'tap'
import { startRedis } from '../fixtures/redis.js'
import { startEcho, request } from '../fixtures/http.js'
import { ADMIN_PASSWORD, SECRET, spawnGateway } from '../fixtures/gateway.js'
import { bearer, signedHeaders } from '../fixtures/creds.js'
import { Keyring } from '../../src/crypto.js'
import { RedisStore } from '../../src/store/redis/index.js'
import { eventually } from '../fixtures/wait.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const PREFIX = `rep${process.pid}:`

// each thing is stopped at teardown from the moment it exists (teardowns run last-registered first)
const redis = await startRedis()
t.teardown(async () => { await redis.stop() })
const echo = await startEcho()
t.teardown(async () => { await echo.close() })
const started = await Promise.allSettled(
  [0, 1].map(async () => await spawnGateway(redis.url, { upstream: { url: echo.url } }, PREFIX))
)
const gws = started.flatMap((s) => s.status === 'fulfilled' ? [s.value] : [])
t.teardown(async () => { await Promise.all(gws.map(async (g) => await g.stop())) })
for (const s of started) if (s.status === 'rejected') throw s.reason
const [a, b] = gws
const store = new RedisStore(
  { url: redis.url, prefix: PREFIX, commandTimeout: 2000, connectTimeout: 2000, cache: { max: 100, ttl: 30 } },
  new Keyring(SECRET)
)
t.teardown(async () => { await store.close() })
await store.connect()

const replicas = [a, b]

const user = await store.users.create({ username: 'ruth', password: 'ruth-password', orgs: { [DEFAULT_ORG]: 'user' } })

t.test('both replicas bootstrapped one store: one admin, usable on both', async (t) => {
  t.equal(await store.users.count(), 2, 'admin (created once, by whichever replica won) and ruth')
  t.equal((await store.users.list()).filter((u) => u.username === 'admin').length, 1)
  for (const g of replicas) {
    const tok = await bearer(g.url, 'admin', ADMIN_PASSWORD)
    t.equal((await request(g.url, '/api/v1/x/', { headers: { authorization: `Bearer ${tok}` } })).status, 200)
  }
})

t.test('50 concurrent uses of one bearer token over two processes: exactly one 200', async (t) => {
  for (let round = 0; round < 3; round++) {
    // issued by one replica, alternating
    const tok = await bearer(replicas[round % 2].url, 'ruth', 'ruth-password')
    const before = echo.seen.length
    const results = await Promise.all(Array.from({ length: 50 }, async (_, i) =>
      await request(replicas[i % 2].url, `/api/v1/x/?i=${i}`, { headers: { authorization: `Bearer ${tok}` } })))
    const ok = results.filter((r) => r.status === 200)
    const refused = results.filter((r) => r.status === 401)
    t.equal(ok.length, 1, `round ${round}: one 200`)
    t.equal(refused.length, 49, `round ${round}: 49 × 401`)
    t.ok(refused.every((r) => r.json?.code === 'invalid_token'), 'all invalid_token')
    t.equal(ok[0]?.json.headers['x-svc-user-id'], user.id)
    t.equal(echo.seen.length - before, 1, 'the upstream saw exactly one request')
  }
})

t.test('a session created through the store works on both replicas', async (t) => {
  const s = await store.sessions.create(user.id, 600)
  for (const g of replicas) {
    const r = await request(g.url, '/api/v1/x/', { headers: { cookie: `svc_sessionid=${s.id}` } })
    t.equal(r.status, 200)
    t.equal(r.json.headers['x-svc-auth-method'], 'session')
    t.equal(r.json.headers['x-svc-user-id'], user.id)
  }
  await store.sessions.delete(s.id)
  // a replica may serve the session from its cache until the invalidation message arrives: wait for it
  for (const g of replicas) {
    let r = await request(g.url, '/api/v1/x/', { headers: { cookie: `svc_sessionid=${s.id}` } })
    t.ok(await eventually(async () => (r = await request(g.url, '/api/v1/x/', { headers: { cookie: `svc_sessionid=${s.id}` } })).status === 401), 'deleted: refused on both')
    t.equal(r.status, 401)
    t.equal(r.json.code, 'invalid_session')
  }
})

t.test('a private token revoked through the store is refused by both long before the 30 s cache TTL', async (t) => {
  const tok = await store.privateTokens.create(user.id)
  const call = async (url: string): Promise<number> => (await request(url, '/api/v1/x/', { headers: { authorization: `Token ${tok}` } })).status
  // both accept it, and so have it cached (for auth.cache.ttl, 300 s by default)
  for (const g of replicas) t.equal(await call(g.url), 200)
  await store.privateTokens.revoke(user.id)
  for (const g of replicas) t.ok(await eventually(async () => (await call(g.url)) === 401), 'refused')
})

t.test('an access key revoked, and a user disabled, are refused by both long before the 30 s cache TTL', async (t) => {
  const { key, secret } = await store.accessKeys.create(user.id)
  const call = async (url: string): Promise<any> => await request(url, '/p', { headers: signedHeaders(key.id, secret, 'GET', '/p') })
  for (const g of replicas) t.equal((await call(g.url)).status, 200)
  await store.accessKeys.delete(key.id)
  for (const g of replicas) t.ok(await eventually(async () => (await call(g.url)).status === 401), 'revoked key refused')

  const k2 = await store.accessKeys.create(user.id)
  const call2 = async (url: string): Promise<any> => await request(url, '/p', { headers: signedHeaders(k2.key.id, k2.secret, 'GET', '/p') })
  for (const g of replicas) t.equal((await call2(g.url)).status, 200)
  await store.users.setActive(user.id, false)
  for (const g of replicas) {
    t.ok(await eventually(async () => (await call2(g.url)).status === 401), 'disabled user refused')
    t.equal((await call2(g.url)).json.code, 'user_inactive')
  }
})

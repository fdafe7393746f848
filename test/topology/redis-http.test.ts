/**
 * What the HTTP tests (test/http/, on the embedded store) check of Redis
 * itself, against gateways on a real Redis: credentials refused without a
 * Redis command (auth.test.ts); the per-user session index, pruned and
 * expiring (hardening.test.ts); the identity key set as Redis holds it,
 * created once by concurrent starters, re-encrypted by `secret rotate`
 * (identity.test.ts); the lockout count in one Redis key shared by replicas
 * (lockout.test.ts); an idle session's record expiring in Redis (login.test.ts).
 * Each file keeps its embedded-store version of these beside the rest.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { commandsRun, startRedis } from '../fixtures/redis.js'
import { startEcho, request, post, type Res } from '../fixtures/http.js'
import { checkSealedKeySet, SECRET, startGateway, redisOf, type TestGateway } from '../fixtures/gateway.js'
import { forgedCredentials, makeUser } from '../fixtures/creds.js'
import { idleTimeout, login } from '../fixtures/session.js'
import { eventually } from '../fixtures/wait.js'
import { Keyring } from '../../src/crypto.js'
import { ensureKeySet } from '../../src/forward/identity.js'
import { JWKS_KEY } from '../../src/store/keyset.js'

const redis = await startRedis()
const echo = await startEcho()
t.teardown(async () => { await echo.close(); await redis.stop() })

// test/http/auth.test.ts

t.test('forged credentials: the normal 401, without a single Redis command; genuine ones of every kind work', async (t) => {
  // a Redis and a gateway of their own, so every command that Redis runs is this test's
  const own = await startRedis()
  const probe = new Redis(own.url)
  // the audit trail off, as in test/http/auth.test.ts: a refused bearer token would be one XADD besides
  const gw = await startGateway(own.url, { upstream: { url: echo.url }, audit: { stream: false } })
  // another deployment (same Redis, another secret key): what it issues must mean nothing to gw
  const other = await startGateway(own.url, { upstream: { url: echo.url }, secret_key: 'another-secret-key-that-is-long-enough-987' })
  t.teardown(async () => { await other.close(); await gw.close(); probe.disconnect(); await own.stop() })
  await forgedCredentials(t, gw, other, async () => await commandsRun(probe), 'Redis command')
})

// test/http/hardening.test.ts

t.test('the per-user session index: expired ids are pruned at the next login, and the index expires', async (t) => {
  const short = await startGateway(redis.url, { session: { idle_timeout: 1, absolute_timeout: 120 } })
  t.teardown(() => short.close())
  const u = await makeUser(short, 'ida')
  const index = `${short.config.redis.prefix}user-sess:${u.id}`
  const sessKey = (h: string): string => `${short.config.redis.prefix}sess:${h}`
  const first = await Promise.all([1, 2, 3].map(async () => await login(short.url, 'ida', 'ida-password')))
  t.equal(await redisOf(short).scard(index), 3, 'three sessions indexed')
  const ttl = await redisOf(short).ttl(index)
  t.ok(ttl > 60 && ttl <= 120, `the index expires with the longest session (absolute timeout 120 s): TTL ${ttl}`)

  // idle for a second: the records expire in Redis (no request touches them)
  const members = await redisOf(short).smembers(index)
  t.ok(await eventually(async () => (await Promise.all(members.map(async (h) => await redisOf(short).exists(sessKey(h))))).every((n) => n === 0), 10_000, 100), 'the sessions expired')
  t.equal(await redisOf(short).scard(index), 3, 'the index still names them')

  const next = await login(short.url, 'ida', 'ida-password')
  const h = new Keyring(SECRET).lookup(next.session)
  t.same(await redisOf(short).smembers(index), [h], 'the next login dropped the three expired ids')
  t.equal((await request(short.url, '/api/v1/users/profile/', { headers: { cookie: next.cookie } })).status, 200)
  for (const s of first) t.equal((await request(short.url, '/api/v1/users/profile/', { headers: { cookie: s.cookie } })).status, 401)
})

// test/http/identity.test.ts

t.test('the key set in Redis: private halves encrypted with the secret key, never in the clear', async (t) => {
  const g = await startGateway(redis.url, { upstream: { url: echo.url }, identity: { jwt: { enabled: true, audience: 'orders-service', ttl: 60 } } })
  t.teardown(() => g.close())
  await g.gw.identity!.ready() // the key set, created on this first start
  await checkSealedKeySet(t, await redisOf(g).get(g.config.redis.prefix + JWKS_KEY), g.store)
})

t.test('first start: concurrent creators, one key set (compare-and-set)', async (t) => {
  const { openTestStore } = await import('../fixtures/store-contract.js')
  const prefix = `ks${process.pid}:`
  const stores = await Promise.all([0, 1, 2, 3, 4].map(async () => await openTestStore({ url: redis.url }, prefix)))
  t.teardown(async () => { for (const s of stores) await s.close() })
  const sets = await Promise.all(stores.map(async (s) => await ensureKeySet(s, 'EdDSA')))
  t.equal(sets.filter((s) => s.created).length, 1, 'exactly one created it')
  t.equal(new Set(sets.map((s) => s.keys.map((k) => k.kid).join())).size, 1, 'all see the same key')
})

t.test('`secret rotate` re-encrypts the signing keys; a store with another key reads them as unreadable', async (t) => {
  const { openTestStore } = await import('../fixtures/store-contract.js')
  const prefix = `sr${process.pid}:`
  const s = await openTestStore({ url: redis.url }, prefix)
  t.teardown(async () => { await s.close() })
  await s.redis.set(prefix + 'key-check', new Keyring(SECRET).checkValue())
  const before = await ensureKeySet(s, 'EdDSA')
  const NEW = 'the-new-secret-key-that-is-long-enough-9876543210'
  const r = await s.rotateKey(new Keyring(NEW), { dryRun: false, limit: null, where: 'test', db: 0, progress: () => {} })
  t.equal(r.done, true)
  t.equal(r.converted, 1, 'the one signing key')
  const after = await openTestStore({ url: redis.url }, prefix, { secret: NEW })
  t.teardown(async () => { await after.close() })
  const set = await after.signingKeys.get()
  t.equal(set.keys[0].kid, before.keys[0].kid)
  t.same(set.keys[0].private, before.keys[0].private, 'the same private key, readable under the new secret')
  t.equal((await s.signingKeys.get()).keys[0].private, null, 'the old secret cannot read it any more')
})

// test/http/lockout.test.ts

// 127.0.0.1 is a trusted proxy, so each test can speak for
// several client IPs (documentation addresses, never contacted)
const trusted = { server: { trusted_proxies: ['127.0.0.1'] } }
const TOKEN = '/api/v1/authentication/auth/'
const from = (ip: string): Record<string, string> => ({ 'x-forwarded-for': ip })
const token = async (
  gw: TestGateway, username: string, password: string, ip: string
): Promise<Res> => await post(gw.url, TOKEN, { username, password }, from(ip))

t.test('the count lives in one Redis key, shared by every replica', async (t) => {
  const shared = { url: redis.url, prefix: 'lockshare:' }
  const a = await startGateway(redis.url, { ...trusted, redis: shared })
  const b = await startGateway(redis.url, { ...trusted, redis: shared })
  t.teardown(async () => { await a.close(); await b.close() })
  await makeUser(a, 'frank')
  const ip = '192.0.2.6'
  for (let i = 0; i < 4; i++) await token(a, 'frank', 'wrong', ip)
  for (let i = 0; i < 3; i++) await token(b, 'frank', 'wrong', ip)
  const keys = await redisOf(a).keys('lockshare:fail:*')
  t.equal(keys.length, 2, 'one key per (username, address), one per address (auth.lockout.address_max_failures)')
  for (const key of keys) {
    t.notMatch(key, /frank|192\.0\.2/, 'neither username nor IP readable in the key')
    t.equal(await redisOf(a).get(key), '7')
    const ttl = await redisOf(a).ttl(key)
    t.ok(ttl > 0 && ttl <= 1800, `the key expires (ttl ${ttl})`)
  }
  t.equal((await token(a, 'frank', 'frank-password', ip)).status, 429, 'replica A sees B\'s failures')
  t.equal((await token(b, 'frank', 'frank-password', ip)).status, 429)
})

// test/http/login.test.ts

t.test('idle timeout: a used session lives on, an idle one ends', async (t) => {
  await idleTimeout(t, redis.url, async (g, hash) => await redisOf(g).exists(`${g.config.redis.prefix}sess:${hash}`) === 1)
})

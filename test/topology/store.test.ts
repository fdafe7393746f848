/**
 * RedisStore on a real Redis: the Store contract (test/fixtures/store-contract.ts,
 * the suite SqliteStore passes too), then what only Redis has: what is
 * stored and how (secrets at rest, TTLs, lookup entries), credentials refused
 * without a command, the in-process caches and their invalidation across
 * replicas through pub/sub, and Redis going away.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { commandsRun, startRedis } from '../fixtures/redis.js'
import { SECRET } from '../fixtures/gateway.js'
import { Keyring } from '../../src/crypto.js'
import { RedisStore } from '../../src/store/redis/index.js'
import { UNREADABLE } from '../../src/store/types.js'
import { sleep, eventually } from '../fixtures/wait.js'
import { redisStores, rejectsWith, storeContract } from '../fixtures/store-contract.js'

const redis = await startRedis()
const raw = new Redis(redis.url)
const opened: RedisStore[] = []
t.teardown(async () => {
  for (const s of opened) await s.close()
  raw.disconnect()
  await redis.stop()
})

t.test('the Store contract', async (t) => { storeContract(t, redisStores({ url: redis.url })) })

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
let n = 0
const freshPrefix = (): string => `st${process.pid}-${n++}:`

async function open (
  prefix: string, o: { secret?: string, cacheTtl?: number, onUnreadable?: (record: string) => void } = {}
): Promise<RedisStore> {
  const s = new RedisStore({
    url: redis.url,
    prefix,
    commandTimeout: 2000,
    connectTimeout: 2000,
    cache: { max: 1000, ttl: o.cacheTtl ?? 30 },
    onUnreadable: o.onUnreadable
  }, new Keyring(o.secret ?? SECRET))
  opened.push(s)
  await s.connect()
  return s
}

/** Every key under the prefix with every string it holds, read raw. */
async function dump (prefix: string): Promise<Array<{ key: string, values: string[] }>> {
  const keys = await raw.keys(`${prefix}*`)
  const out: Array<{ key: string, values: string[] }> = []
  for (const key of keys) {
    const type = await raw.type(key)
    let values: string[]
    if (type === 'string') values = [(await raw.get(key)) ?? '']
    else if (type === 'set') values = await raw.smembers(key)
    else if (type === 'hash') values = Object.entries(await raw.hgetall(key)).flat()
    else if (type === 'list') values = await raw.lrange(key, 0, -1)
    else if (type === 'zset') values = await raw.zrange(key, '0', '-1')
    else values = [`<unexpected type ${type}>`]
    out.push({ key, values })
  }
  return out
}

t.test('secrets at rest: nothing readable in Redis without the key', async (t) => {
  const prefix = freshPrefix()
  const s = await open(prefix)
  const u = await s.users.create({ username: 'gina', password: 'gina-password-9', orgs: { [DEFAULT_ORG]: 'user' } })
  const u2 = await s.users.create({ username: 'hank', password: 'hank-password-9' })
  const { key, secret } = await s.accessKeys.create(u.id)
  const pt = await s.privateTokens.create(u.id)
  const bt = (await s.bearerTokens.issue(u.id, 600)).token
  const sess = await s.sessions.create(u.id, 600)
  await s.limits.markOnce('sig', 'some-signature-value', 60)

  const secrets: Record<string, string> = {
    'access-key secret': secret,
    'private token': pt,
    'bearer token': bt,
    'session id': sess.id,
    'csrf token': sess.csrf,
    password: 'gina-password-9',
    'other password': 'hank-password-9',
    'replay value': 'some-signature-value'
  }
  const all = await dump(prefix)
  t.ok(all.length >= 8, `found ${all.length} keys to check`)
  for (const [what, value] of Object.entries(secrets)) {
    const leaks = all.filter((e) => e.key.includes(value) || e.values.some((x) => x.includes(value))).map((e) => e.key)
    t.same(leaks, [], `${what} not stored in plaintext`)
  }
  t.ok(all.some((e) => e.values.some((x) => x.includes(key.id))), 'the (public) key id is stored: the scan sees the records')

  for (const id of [u.id, u2.id]) {
    const rec = JSON.parse((await raw.get(`${prefix}user:${id}`))!)
    t.match(rec.password_hash, /^scrypt\$/, 'password stored as a scrypt hash')
  }

  const back = await s.accessKeys.get(key.id)
  t.equal(back!.secret, secret, 'the access-key secret decrypts back')
  t.same(back!.key, key)
  const cold = await open(prefix)
  t.equal((await cold.accessKeys.get(key.id))!.secret, secret, 'and from a fresh store, not only from cache')
  t.equal(await cold.privateTokens.get(u.id), pt)
})

t.test('a store opened with another secret key caches nothing it cannot read', async (t) => {
  const prefix = freshPrefix()
  const s = await open(prefix)
  const u = await s.users.create({ username: 'ivy', password: 'ivy-password' })
  const { key } = await s.accessKeys.create(u.id)
  await s.privateTokens.create(u.id)
  const wrong = await open(prefix, { secret: 'another-secret-key-that-is-long-enough-xyz' })
  t.equal(await wrong.accessKeys.get(key.id), null, 'access-key secret: unusable')
  t.equal(await wrong.privateTokens.read(u.id), UNREADABLE)
  t.equal(wrong.caches.accessKeys.size, 0, 'nothing cached')
  t.equal(wrong.caches.privateTokens.size, 0)
})

t.test('private token: concurrent creates leave one lookup entry in Redis, revokes none', async (t) => {
  const prefix = freshPrefix()
  const stores = [await open(prefix), await open(prefix), await open(prefix)]
  const u = await stores[0].users.create({ username: 'jill', password: 'jill-password' })
  const first = await stores[0].privateTokens.create(u.id)
  const made = await Promise.all(
    Array.from({ length: 12 }, async (_, i) => await stores[i % stores.length].privateTokens.create(u.id))
  )
  const current = await stores[0].privateTokens.get(u.id)
  t.ok(made.includes(current!), 'the readable token is one of those created')
  const fresh = await open(prefix) // no cache
  const valid = []
  for (const tok of [first, ...made]) if ((await fresh.privateTokens.userIdFor(tok)) !== null) valid.push(tok)
  t.same(valid, [current], 'only the readable token authenticates: none is orphaned')
  t.equal((await raw.keys(`${prefix}pt:*`)).length, 1, 'one lookup entry in Redis')
  await Promise.all([stores[1].privateTokens.revoke(u.id), stores[2].privateTokens.revoke(u.id)])
  t.ok(await eventually(async () => (await fresh.privateTokens.userIdFor(current!)) === null), 'revoked (fresh had it cached)')
  t.equal((await raw.keys(`${prefix}pt:*`)).length, 0)
})

t.test('tagged credentials: every kind works; a wrong tag, another kind or another secret key is refused without a Redis command', async (t) => {
  // a Redis of its own, so every command it runs is this test's
  const own = await startRedis()
  const probe = new Redis(own.url)
  t.teardown(async () => { probe.disconnect(); await own.stop() })
  const s = new RedisStore({ url: own.url, prefix: 'tag:', commandTimeout: 2000, connectTimeout: 2000, cache: { max: 100, ttl: 30 } }, new Keyring(SECRET))
  opened.push(s)
  await s.connect()
  const u = await s.users.create({ username: 'tess', password: 'tess-password' })
  const pt = await s.privateTokens.create(u.id)
  const bt = (await s.bearerTokens.issue(u.id, 60)).token
  const sess = await s.sessions.create(u.id, 60)
  const shape = /^[A-Za-z0-9_-]{44}$/
  for (const v of [pt, bt, sess.id]) t.match(v, shape, 'URL- and header-safe, 44 characters')

  /** Runs fn and returns its result with the number of commands Redis ran meanwhile. */
  const counted = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
    const before = await commandsRun(probe)
    const v = await fn()
    return [v, await commandsRun(probe) - before]
  }
  /** The same random part with another valid-looking tag, and the same tag on another random part. */
  const forgeries = (v: string): string[] => {
    const flip = (c: string): string => c === 'A' ? 'B' : 'A'
    return [v.slice(0, 43) + flip(v[43]), v.slice(0, 32) + 'AAAAAAAAAAAA', flip(v[0]) + v.slice(1), v.slice(0, 43)]
  }
  const foreign = new Keyring('another-secret-key-that-is-long-enough-987')

  // private token: genuine first (not cached yet: a fresh store), then forgeries
  const cold = new RedisStore({ url: own.url, prefix: 'tag:', commandTimeout: 2000, connectTimeout: 2000, cache: { max: 100, ttl: 30 } }, new Keyring(SECRET))
  opened.push(cold)
  await cold.connect()
  const [unknownPt, unknownCost] = await counted(async () => await cold.privateTokens.userIdFor(new Keyring(SECRET).issue('private token')))
  t.equal(unknownPt, null, 'a well-tagged token that was never stored: refused')
  t.ok(unknownCost >= 1, `…after asking Redis (${unknownCost} commands): the counter sees lookups`)
  t.equal(await cold.privateTokens.userIdFor(pt), u.id, 'genuine private token')
  for (const f of [...forgeries(pt), foreign.issue('private token'), new Keyring(SECRET).issue('bearer token')]) {
    const [v, cost] = await counted(async () => await cold.privateTokens.userIdFor(f))
    t.equal(v, null, `private token ${f}: refused`)
    t.equal(cost, 0, 'no Redis command')
  }

  // bearer: forgeries first (a refused forgery must not use up anything), then the genuine one, once
  for (const f of [...forgeries(bt), foreign.issue('bearer token'), new Keyring(SECRET).issue('session id')]) {
    const [v, cost] = await counted(async () => await s.bearerTokens.consume(f))
    t.equal(v, null, `bearer ${f}: refused`)
    t.equal(cost, 0, 'no Redis command')
  }
  t.equal((await s.bearerTokens.consume(bt))?.user_id, u.id, 'genuine bearer token, first use')
  t.equal(await s.bearerTokens.consume(bt), null, 'still single use')

  // sessions: get, touch and delete of a forged id touch nothing; the genuine one is intact
  for (const f of [...forgeries(sess.id), foreign.issue('session id'), pt]) {
    const [v, cost] = await counted(async () => {
      const got = await cold.sessions.get(f)
      await cold.sessions.touch(f, 5)
      await cold.sessions.delete(f)
      return got
    })
    t.equal(v, null, `session ${f}: refused`)
    t.equal(cost, 0, 'no Redis command')
  }
  t.match(await cold.sessions.get(sess.id), { id: sess.id, user_id: u.id, csrf: sess.csrf }, 'genuine session')
})

t.test('bearer token: stored with a TTL, deleted when consumed', async (t) => {
  const prefix = freshPrefix()
  const s = await open(prefix)
  const u = await s.users.create({ username: 'mia', password: 'mia-password' })
  const { token, expires } = await s.bearerTokens.issue(u.id, 600)
  t.ok(Math.abs(expires.getTime() - (Date.now() + 600_000)) < 10_000, 'expires in ttl seconds')
  const k = `${prefix}bt:${new Keyring(SECRET).lookup(token)}`
  const ttl = await raw.ttl(k)
  t.ok(ttl > 590 && ttl <= 600, `key has a TTL of about 600 s (got ${ttl})`)
  t.equal((await s.bearerTokens.consume(token))?.user_id, u.id, 'first use')
  t.equal(await s.bearerTokens.consume(token), null, 'second use')
  t.equal(await raw.exists(k), 0, 'gone from Redis')
})

t.test('sessions: stored with the idle timeout as TTL, which touch extends', async (t) => {
  const prefix = freshPrefix()
  const s = await open(prefix)
  const u = await s.users.create({ username: 'olga', password: 'olga-password' })
  const sess = await s.sessions.create(u.id, 100)
  t.match(sess, { user_id: u.id, id: String, csrf: String })
  t.ok(Math.abs(sess.created - Date.now()) < 10_000)
  t.not(sess.csrf, sess.id)
  const got = await s.sessions.get(sess.id)
  t.same(got, sess, 'same record, same csrf token')
  t.equal(await s.sessions.get(sess.id + 'x'), null)

  const k = `${prefix}sess:${new Keyring(SECRET).lookup(sess.id)}`
  const t0 = await raw.ttl(k)
  t.ok(t0 > 90 && t0 <= 100, `created with the ttl (got ${t0})`)
  await s.sessions.touch(sess.id, 5000)
  const t1 = await raw.ttl(k)
  t.ok(t1 > 4990 && t1 <= 5000, `touch extends it (got ${t1})`)

  await s.sessions.delete(sess.id)
  t.equal(await raw.exists(k), 0, 'deleted from Redis')
})

t.test('cross-replica cache invalidation through pub/sub', async (t) => {
  const prefix = freshPrefix()
  const A = await open(prefix)
  // default cache ttl: 30 s, so only invalidation can make B see a change within ANNOUNCED_WITHIN (10 s)
  const B = await open(prefix)
  const u = await A.users.create({ username: 'sam', password: 'sam-password', orgs: { [DEFAULT_ORG]: 'user' } })

  t.test('B really caches: a change written behind its back is not seen', async (t) => {
    const { key } = await A.accessKeys.create(u.id)
    t.equal((await B.accessKeys.get(key.id))!.key.is_active, true)
    const rk = `${prefix}ak:${key.id}`
    const rec = JSON.parse((await raw.get(rk))!)
    await raw.set(rk, JSON.stringify({ ...rec, is_active: false }))
    await sleep(300)
    t.equal((await B.accessKeys.get(key.id))!.key.is_active, true, 'B answers from its cache')
  })

  t.test('access key deactivated on A: B sees it inactive long before the cache TTL', async (t) => {
    const { key } = await A.accessKeys.create(u.id)
    t.equal((await B.accessKeys.get(key.id))!.key.is_active, true)
    await A.accessKeys.setActive(key.id, false)
    t.ok(await eventually(async () => (await B.accessKeys.get(key.id))?.key.is_active === false), 'inactive on B')
  })

  t.test('access key revoked on A: B sees null long before the cache TTL', async (t) => {
    const { key } = await A.accessKeys.create(u.id)
    t.not(await B.accessKeys.get(key.id), null)
    await A.accessKeys.delete(key.id)
    t.ok(await eventually(async () => (await B.accessKeys.get(key.id)) === null), 'gone on B')
  })

  // a private token revoked or replaced on one replica: the contract
  // suite (test/fixtures/store-contract.ts) covers it on every store

  t.test('user disabled on A: B sees is_active false long before the cache TTL, and drops the user\'s cached keys', async (t) => {
    const { key } = await A.accessKeys.create(u.id)
    t.equal((await B.users.get(u.id))!.is_active, true)
    t.not(await B.accessKeys.get(key.id), null)
    t.ok(B.caches.accessKeys.size > 0)
    await A.users.setActive(u.id, false)
    t.ok(await eventually(async () => (await B.users.get(u.id))!.is_active === false), 'disabled on B')
    t.equal(B.caches.accessKeys.size, 0, 'cached keys of the user evicted')
    await A.users.setActive(u.id, true)
    t.ok(await eventually(async () => (await B.users.get(u.id))!.is_active), 'enabled again on B')
  })

  t.test('membership changed on A: B sees it long before the cache TTL', async (t) => {
    const org = await A.orgs.create('Gamma')
    t.same((await B.users.get(u.id))!.orgs, { [DEFAULT_ORG]: 'user' })
    await A.users.setMembership(u.id, org.id, 'admin')
    t.ok(await eventually(async () => (await B.users.get(u.id))!.orgs[org.id] === 'admin'), 'granted on B')
  })
})

t.test('cache TTL is the fallback when an invalidation is never received', async (t) => {
  const prefix = freshPrefix()
  // 5 s: room for the writes and reads below while the entries are fresh, on a busy machine too
  const ttl = 5
  const A = await open(prefix)
  const B = await open(prefix, { cacheTtl: ttl })
  const u = await A.users.create({ username: 'tess', password: 'tess-password' })
  const { key } = await A.accessKeys.create(u.id)
  const pt = await A.privateTokens.create(u.id)
  t.equal((await B.accessKeys.get(key.id))!.key.is_active, true)
  t.equal(await B.privateTokens.userIdFor(pt), u.id)
  t.equal((await B.users.get(u.id))!.is_active, true)
  const cachedBy = Date.now()

  // Changes written without any message, as if the message was lost.
  const rk = `${prefix}ak:${key.id}`
  await raw.set(rk, JSON.stringify({ ...JSON.parse((await raw.get(rk))!), is_active: false }))
  await raw.del(`${prefix}pt:${new Keyring(SECRET).lookup(pt)}`)
  const uk = `${prefix}user:${u.id}`
  await raw.set(uk, JSON.stringify({ ...JSON.parse((await raw.get(uk))!), is_active: false }))

  t.equal((await B.accessKeys.get(key.id))!.key.is_active, true, 'still cached right after')
  t.equal(await B.privateTokens.userIdFor(pt), u.id, 'still cached right after')
  t.equal((await B.users.get(u.id))!.is_active, true, 'still cached right after')
  // every entry was made before cachedBy: all have expired ttl s after it
  await sleep(cachedBy + ttl * 1000 + 100 - Date.now())
  t.equal((await B.accessKeys.get(key.id))!.key.is_active, false, 'key re-read after the TTL')
  t.equal(await B.privateTokens.userIdFor(pt), null, 'token re-read after the TTL')
  t.equal((await B.users.get(u.id))!.is_active, false, 'user re-read after the TTL')
})

t.test('a replica whose subscription dropped starts cold when it reconnects', async (t) => {
  const prefix = freshPrefix()
  const A = await open(prefix)
  const B = await open(prefix) // 30 s cache
  const u = await A.users.create({ username: 'uma', password: 'uma-password' })
  const { key } = await A.accessKeys.create(u.id)
  t.equal((await B.accessKeys.get(key.id))!.key.is_active, true)
  // Kill every pub/sub connection: B misses whatever is published meanwhile.
  await raw.call('CLIENT', 'KILL', 'TYPE', 'pubsub')
  const rk = `${prefix}ak:${key.id}`
  await raw.set(rk, JSON.stringify({ ...JSON.parse((await raw.get(rk))!), is_active: false }))
  t.ok(await eventually(async () => (await B.accessKeys.get(key.id))!.key.is_active === false, 5000), 'B dropped its cache on reconnect')
  // and the subscription works again afterwards
  const { key: k2 } = await A.accessKeys.create(u.id)
  t.ok(await eventually(async () => {
    await B.accessKeys.get(k2.id)
    return (await raw.pubsub('NUMSUB', `${prefix}invalidate`) as [string, number])[1] >= 2
  }, 5000), 'resubscribed')
  t.equal((await B.accessKeys.get(k2.id))!.key.is_active, true)
  await A.accessKeys.setActive(k2.id, false)
  t.ok(await eventually(async () => (await B.accessKeys.get(k2.id))!.key.is_active === false), 'invalidation reaches B again')
})

t.test('Redis down: every call fails fast with 503 store_unavailable, cached entries included', async (t) => {
  const other = await startRedis()
  t.teardown(() => other.stop())
  const down = new RedisStore({ url: other.url, prefix: 'x:', commandTimeout: 500, connectTimeout: 500, cache: { max: 10, ttl: 30 } }, new Keyring(SECRET))
  opened.push(down)
  await down.connect()
  const u = await down.users.create({ username: 'vera', password: 'vera-password' })
  const { key } = await down.accessKeys.create(u.id)
  const pt = await down.privateTokens.create(u.id)
  const unseen = await down.users.create({ username: 'walt', password: 'walt-password' })
  // cached (30 s)
  t.equal((await down.users.get(u.id))!.id, u.id)
  t.not(await down.accessKeys.get(key.id), null)
  t.equal(await down.privateTokens.userIdFor(pt), u.id)
  t.ok(down.caches.users.size > 0 && down.caches.accessKeys.size > 0 && down.caches.privateTokens.size > 0)
  await other.kill()
  const start = Date.now()
  await rejectsWith(t, down.ping(), 503, 'store_unavailable', 'ping')
  // a token with a valid tag needs Redis; one without is refused in process, Redis or not
  await rejectsWith(t, down.bearerTokens.consume(new Keyring(SECRET).issue('bearer token')), 503, 'store_unavailable', 'consume')
  t.equal(await down.bearerTokens.consume('x'), null, 'an untagged token is refused without Redis')
  await rejectsWith(t, down.users.get(unseen.id), 503, 'store_unavailable', 'getUser, not cached')
  // the client has noticed (its socket closed): from here nothing is served from cache
  t.ok(await eventually(async () => !down.isReady, 2000), 'the client sees the connection gone')
  await rejectsWith(t, down.users.get(u.id), 503, 'store_unavailable', 'getUser, cached')
  await rejectsWith(t, down.accessKeys.get(key.id), 503, 'store_unavailable', 'getAccessKey, cached')
  await rejectsWith(t, down.privateTokens.userIdFor(pt), 503, 'store_unavailable', 'userIdForPrivateToken, cached')
  t.ok(Date.now() - start < 5000, 'no hang')
})

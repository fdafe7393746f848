/**
 * A value read from Redis before a change, whose reply is handled after the
 * change's invalidation, is never cached (src/store/cache.ts `stamp`): a
 * replica or worker stops accepting a disabled key as soon as the
 * invalidation reaches it, not a cache TTL later. The interleaving is injected
 * with a proxy that holds Redis's replies to one replica
 * (test/fixtures/tcp-proxy.ts).
 */
import t from 'tap'
import { startRedis } from '../fixtures/redis.js'
import { holdingProxy } from '../fixtures/tcp-proxy.js'
import { SECRET } from '../fixtures/gateway.js'
import { eventually } from '../fixtures/wait.js'
import { Keyring } from '../../src/crypto.js'
import { RedisStore } from '../../src/store/redis/index.js'

const redis = await startRedis()
const proxy = await holdingProxy(Number(new URL(redis.url).port))
t.teardown(async () => { await proxy.close(); await redis.stop() })

let n = 0
async function open (url: string, prefix: string): Promise<RedisStore> {
  const s = new RedisStore(
    { url, prefix, commandTimeout: 5000, connectTimeout: 2000, cache: { max: 100, ttl: 60 } }, new Keyring(SECRET)
  )
  await s.connect()
  t.teardown(async () => { await s.close() })
  return s
}

t.test('another replica disables a key while this one reads it: the stale read is not cached', async (t) => {
  const prefix = `race${n++}:`
  const a = await open(proxy.url, prefix)
  const b = await open(redis.url, prefix)
  const user = await b.users.create({ username: 'alice', password: 'alice-password' })
  const { key } = await b.accessKeys.create(user.id)
  const invalidations = proxy.toSubscribers().length
  proxy.hold()
  const read = a.accessKeys.get(key.id)
  // Redis has answered A's read (active), A has not heard it yet
  await eventually(async () => proxy.held().includes(key.id) && proxy.held().endsWith('\r\n'))
  await b.accessKeys.setActive(key.id, false)
  // the invalidation reached A's subscriber (not held), and A handled it
  await eventually(async () => proxy.toSubscribers().slice(invalidations).includes(`ak:${key.id}`))
  await new Promise((resolve) => setTimeout(resolve, 50))
  proxy.release()
  t.equal((await read)?.key.is_active, true, 'the read that started before the disable saw it active')
  t.equal((await a.accessKeys.get(key.id))?.key.is_active, false, 'the next read is not served from a stale cache')
})

t.test('the same holds for users, sessions and private tokens', async (t) => {
  const prefix = `race${n++}:`
  const a = await open(proxy.url, prefix)
  const b = await open(redis.url, prefix)
  const user = await b.users.create({ username: 'carol', password: 'carol-password' })
  const session = await b.sessions.create(user.id, 600)
  const token = await b.privateTokens.create(user.id)
  const seen = proxy.toSubscribers().length
  proxy.hold()
  const reads = [a.users.get(user.id), a.sessions.get(session.id), a.privateTokens.userIdFor(token)]
  await eventually(async () => proxy.held().includes(user.id) && proxy.held().split(user.id).length >= 4)
  await b.users.setActive(user.id, false)
  await b.sessions.end(user.id, session.id)
  await b.privateTokens.revoke(user.id)
  await eventually(async () => proxy.toSubscribers().slice(seen).includes(`user-aks:${user.id}`))
  await new Promise((resolve) => setTimeout(resolve, 50))
  proxy.release()
  await Promise.all(reads)
  t.equal((await a.users.get(user.id))?.is_active, false, 'the user: disabled')
  t.equal(await a.sessions.get(session.id), null, 'the session: ended')
  t.equal(await a.privateTokens.userIdFor(token), null, 'the private token: revoked')
})

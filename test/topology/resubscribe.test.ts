/**
 * The invalidation subscriber after Redis restarts: sidegate subscribes again
 * itself (ioredis's own resubscribe has no handler, and a store closed during it
 * died of the unhandled rejection), so a revocation made after the restart is
 * still heard long before the cache's TTL.
 */
import t from 'tap'
import { startRedis } from '../fixtures/redis.js'
import { startEcho, request } from '../fixtures/http.js'
import { SECRET, spawnGateway } from '../fixtures/gateway.js'
import { DEFAULT_ORG_ID } from '../../src/auth/org.js'
import { Keyring } from '../../src/crypto.js'
import { RedisStore } from '../../src/store/redis/index.js'
import { eventually } from '../fixtures/wait.js'

const PREFIX = `resub${process.pid}:`

t.test('a private token revoked after a Redis restart is refused at once, not after the cache TTL', async (t) => {
  const redis = await startRedis({ persist: true })
  t.teardown(async () => { await redis.stop() })
  const echo = await startEcho()
  t.teardown(async () => { await echo.close() })
  const g = await spawnGateway(redis.url, { upstream: { url: echo.url } }, PREFIX)
  t.teardown(async () => { await g.stop() })
  const store = new RedisStore(
    { url: redis.url, prefix: PREFIX, commandTimeout: 2000, connectTimeout: 2000, cache: { max: 100, ttl: 30 } },
    new Keyring(SECRET)
  )
  t.teardown(async () => { await store.close() })
  await store.connect()
  const user = await store.users.create({ username: 'rhea', password: 'rhea-password', orgs: { [DEFAULT_ORG_ID]: 'user' } })
  const tok = await store.privateTokens.create(user.id)
  const call = async (): Promise<number> =>
    (await request(g.url, '/api/v1/x/', { headers: { authorization: `Token ${tok}` } })).status

  await redis.kill()
  await redis.restart()
  t.ok(await eventually(async () => await call() === 200, 30_000), 'served again after the restart')
  // accepted, so cached (auth.cache.ttl: 300 s); a second for the subscriber to be back (its
  // reconnect empties the caches, which would hide a subscription lost)
  await new Promise((resolve) => setTimeout(resolve, 1000))
  t.equal(await call(), 200, 'cached')
  await store.privateTokens.revoke(user.id)
  t.ok(await eventually(async () => await call() === 401, 10_000), 'the revocation was heard: refused')
  t.equal(g.proc.exitCode, null, 'and the gateway is still running')
})

/**
 * A Redis that comes back empty (restarted without persistence) under a
 * running gateway: it used to be set up again silently, with a new admin.
 * Now it is reported (warning, metric) and set up again, or, with
 * store.require_existing, refused: the gateway exits 2 and writes nothing.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { spawnGateway } from '../fixtures/gateway.js'
import { request } from '../fixtures/http.js'
import { startRedis } from '../fixtures/redis.js'
import { eventually } from '../fixtures/wait.js'

t.test('a Redis that comes back empty: a warning and a metric, then the store is set up again', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const g = await spawnGateway(redis.url, {}, 'lost1:')
  t.teardown(async () => { await g.stop() })
  t.notMatch(g.output(), /store is EMPTY/, 'a first start on an empty Redis with a configured key is no loss')
  await redis.kill()
  await redis.restart()
  t.ok(await eventually(async () => /the store is EMPTY although this process had checked its key against it/.test(g.output()), 60_000), `warned: ${g.output().slice(-600)}`)
  const line = JSON.parse(g.output().split('\n').find((l) => l.includes('store is EMPTY'))!)
  t.match(line, { level: 40, reason: 'check_value_lost', redis: /^redis:\/\/127\.0\.0\.1:\d+/ })
  t.match((await request(g.metricsUrl, '/metrics')).text, /^sidegate_store_data_missing_total 1$/m, 'counted')
  t.ok(await eventually(async () => (await request(g.url, '/readyz')).status === 200, 30_000), 'serving again, on a store set up anew')
})

t.test('store.require_existing: the gateway refuses the empty store and exits 2, writing nothing', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const g = await spawnGateway(redis.url, { store: { require_existing: true } }, 'lost2:')
  t.teardown(async () => { await g.stop() })
  await redis.kill()
  await redis.restart()
  t.ok(await eventually(async () => g.proc.exitCode !== null, 60_000), 'it stops')
  t.equal(g.proc.exitCode, 2, 'exit 2', { output: g.output().slice(-3000) })
  t.match(g.output(), /sidegate: the store at .* is empty, but the secret key \(SIDEGATE_SECRET_KEY\) was used before: .*store\.require_existing is true/)
  const raw = new Redis(redis.url)
  t.teardown(() => raw.disconnect())
  t.same(await raw.keys('lost2:*'), [], 'no admin, no org, no key check value written')
})

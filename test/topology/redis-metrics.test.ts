/**
 * sidegate_redis_up and sidegate_redis_errors_total of a `sidegate start`
 * process on a real Redis that dies (the rest of /metrics, on the embedded
 * store: test/http/metrics.test.ts).
 */
import t from 'tap'
import { startRedis, REFUSED_URL } from '../fixtures/redis.js'
import { SECRET, spawnGateway } from '../fixtures/gateway.js'
import { Keyring } from '../../src/crypto.js'
import { request, scrapeMetrics as scrape } from '../fixtures/http.js'
import { eventually } from '../fixtures/wait.js'

const PROFILE = '/api/v1/users/profile/'

// each thing is stopped from the moment it exists (teardowns run last-registered first)
const redis = await startRedis()
t.teardown(async () => { await redis.stop() })
const prefix = 'metrics:'
const gw = await spawnGateway(redis.url, { upstream: { url: REFUSED_URL, timeout: 5 } }, prefix)
t.teardown(async () => { await gw.stop() })

t.test('sidegate_redis_up is 1 while Redis is up', async (t) => {
  const r = await request(gw.metricsUrl, '/metrics')
  t.equal(r.status, 200)
  t.match(r.text, /^sidegate_redis_up 1$/m)
})

t.test('Redis errors are counted and sidegate_redis_up drops', async (t) => {
  const before = await scrape(gw.metricsUrl)
  await redis.kill()
  t.teardown(async () => { await redis.restart() })
  // well-tagged but unknown: it takes a Redis command to refuse it (an untagged one would not)
  const unknown = { authorization: `Bearer ${new Keyring(SECRET).issue('bearer token')}` }
  let r = await request(gw.url, PROFILE, { headers: unknown })
  t.ok(await eventually(async () => (r = await request(gw.url, PROFILE, { headers: unknown })).status === 503), 'the gateway notices')
  t.equal(r.status, 503)
  const after = await scrape(gw.metricsUrl)
  const errs = (m: Map<string, number>): number => (m.get('sidegate_redis_errors_total{kind="connection"}') ?? 0) + (m.get('sidegate_redis_errors_total{kind="command"}') ?? 0)
  t.ok(errs(after) > errs(before), 'redis errors counted')
  t.equal(after.get('sidegate_redis_up'), 0)
  t.ok((after.get('sidegate_http_requests_total{status="503",auth_method="none"}') ?? 0) >= 1)
})

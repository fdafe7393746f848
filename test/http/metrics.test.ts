/**
 * GET /metrics of a `sidegate start` process: the Prometheus text, the
 * counters as requests move them, WebSocket upgrades, the listener off, and
 * metrics.auth (with --workers too). On the embedded store, where
 * sidegate_redis_up is 1 while the store file is open (Redis errors and
 * sidegate_redis_up with a Redis that dies: test/topology/redis-metrics.test.ts).
 */
import t from 'tap'
import http from 'node:http'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../fixtures/cleanup.js'
import { freePort, listeningPorts, REFUSED_URL } from '../fixtures/redis.js'
import { embeddedStore, openStoreAt, spawnGateway } from '../fixtures/gateway.js'
import { request, scrapeMetrics as scrape, startEcho } from '../fixtures/http.js'
import { upgrade } from '../fixtures/raw.js'
import { bearer, signedHeaders } from '../fixtures/creds.js'
import { Metrics } from '../../src/observability/metrics.js'
import { buildConfig } from '../../src/config/index.js'
import { eventually, bootstrappedAdmin } from '../fixtures/wait.js'

const PROFILE = '/api/v1/users/profile/'

// each thing is stopped from the moment it exists (teardowns run last-registered first)
const db = embeddedStore()
t.teardown(async () => { await db.stop() })
const prefix = 'metrics:'
const gw = await spawnGateway(db.url, { upstream: { url: REFUSED_URL, timeout: 5 } }, prefix)
t.teardown(async () => { await gw.stop() })
const store = await openStoreAt(db.url, prefix)
t.teardown(async () => { await store.close() })
const admin = await bootstrappedAdmin(store)

t.test('/metrics is Prometheus text on the admin listener only', async (t) => {
  const r = await request(gw.metricsUrl, '/metrics')
  t.equal(r.status, 200)
  t.match(r.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  t.match(r.text, /# TYPE sidegate_http_requests_total counter/)
  t.match(r.text, /# TYPE sidegate_http_request_duration_seconds histogram/)
  t.match(r.text, /^process_cpu_user_seconds_total /m, 'process metrics')
  t.match(r.text, /^nodejs_heap_size_used_bytes /m, 'runtime metrics')
  t.match(r.text, /^sidegate_redis_up 1$/m, 'the store is up (here the embedded store\'s file is open)')
  t.match(r.text, /^sidegate_draining 0$/m)
  t.equal((await request(gw.metricsUrl, '/')).status, 404, 'nothing else on the admin listener')
  t.not((await request(gw.url, '/metrics')).status, 200, 'not served on the gateway port (so not through the Service)')
})

t.test('counters move: requests by status and method, auth failures by code, upstream errors, cache hits', async (t) => {
  const before = await scrape(gw.metricsUrl)
  const get = (m: Map<string, number>, k: string): number => m.get(k) ?? 0
  const delta = (after: Map<string, number>, k: string): number => get(after, k) - get(before, k)

  await request(gw.url, '/healthz')
  await request(gw.url, PROFILE) // no credentials
  await request(gw.url, PROFILE, { headers: { authorization: 'Bearer nope' } })
  await request(gw.url, PROFILE, { headers: { authorization: 'Bearer nope' } })
  const tok = await bearer(gw.url)
  const up = await request(gw.url, PROFILE, { headers: { authorization: `Bearer ${tok}` } }) // authenticated, upstream down
  t.equal(up.status, 502)
  const { key, secret } = await store.accessKeys.create(admin!.id)
  for (let i = 0; i < 3; i++) await request(gw.url, PROFILE, { headers: signedHeaders(key.id, secret, 'GET', PROFILE) })

  const after = await scrape(gw.metricsUrl)
  t.equal(delta(after, 'sidegate_http_requests_total{status="200",auth_method="none"}'), 1, '/healthz')
  t.equal(delta(after, 'sidegate_http_requests_total{status="401",auth_method="none"}'), 3, 'refused before any identity')
  t.equal(delta(after, 'sidegate_http_requests_total{status="201",auth_method="none"}'), 1, 'token endpoint')
  t.equal(delta(after, 'sidegate_http_requests_total{status="502",auth_method="bearer"}'), 1)
  t.equal(delta(after, 'sidegate_http_requests_total{status="502",auth_method="access_key"}'), 3)
  t.equal(delta(after, 'sidegate_auth_failures_total{code="not_authenticated"}'), 1)
  t.equal(delta(after, 'sidegate_auth_failures_total{code="invalid_token"}'), 2)
  t.equal(delta(after, 'sidegate_upstream_errors_total{code="upstream_unavailable"}'), 4)
  t.ok(delta(after, 'sidegate_cache_hits_total{cache="access_keys"}') >= 2, 'the key was read from the store once, then from the cache')
  t.ok(delta(after, 'sidegate_cache_misses_total{cache="access_keys"}') >= 1)
  t.ok(get(after, 'sidegate_cache_entries{cache="access_keys"}') >= 1)
  t.equal(delta(after, 'sidegate_http_request_duration_seconds_count'), 9, 'one latency observation per request')
})

t.test('WebSocket upgrades are counted: 101 when the upstream switched, the error code when refused', async (t) => {
  const echo = await startEcho()
  const g2 = await spawnGateway(db.url, { upstream: { url: echo.url } }, prefix)
  t.teardown(async () => { await g2.stop(); await echo.close() })
  const pt = await store.privateTokens.create(admin!.id)
  const before = await scrape(g2.metricsUrl)
  const ok = await upgrade(g2.url, '/ws', { authorization: `Token ${pt}` })
  t.match(ok.head, /^HTTP\/1\.1 101/)
  ok.socket.destroy()
  const refused = await upgrade(g2.url, '/ws')
  t.match(refused.head, /^HTTP\/1\.1 401/)
  const down = await upgrade(gw.url, '/ws', { authorization: `Token ${pt}` }) // gw's upstream is down
  t.match(down.head, /^HTTP\/1\.1 502/)
  const after = await scrape(g2.metricsUrl)
  const delta = (k: string): number => (after.get(k) ?? 0) - (before.get(k) ?? 0)
  t.equal(delta('sidegate_http_requests_total{status="101",auth_method="private_token"}'), 1, 'the upgrade')
  t.equal(delta('sidegate_http_requests_total{status="401",auth_method="none"}'), 1, 'the refusal')
  t.equal(delta('sidegate_auth_failures_total{code="not_authenticated"}'), 1)
  const downAfter = await scrape(gw.metricsUrl)
  t.ok((downAfter.get('sidegate_http_requests_total{status="502",auth_method="private_token"}') ?? 0) >= 1, 'an upgrade the upstream could not take: 502')
})

t.test('metrics.enabled: false opens no admin listener; defaults and validation', async (t) => {
  const port = await freePort()
  const g2 = await spawnGateway(db.url, { metrics: { enabled: false, host: '127.0.0.1', port } }, prefix)
  t.teardown(async () => { await g2.stop() })
  // what the process listens on (not "is the port refused": another process on the machine may take it)
  t.same(listeningPorts(g2.proc.pid!), [Number(new URL(g2.url).port)], 'the gateway listens on its own port only')
  t.same(listeningPorts(gw.proc.pid!), [Number(new URL(gw.url).port), Number(new URL(gw.metricsUrl).port)].sort((a, b) => a - b), 'while one with metrics on listens on both')
  t.same(buildConfig({}).metrics, { enabled: true, host: '0.0.0.0', port: 7080, auth: { bearer_token_file: null, username: null, password_file: null } })
  t.throws(() => buildConfig({ metrics: { port: 70000 } }), /metrics\.port/)
  t.throws(() => buildConfig({ metrics: { path: '/m' } }), /metrics\.path: unknown key/)
})

/** GET /metrics with Node's own Basic encoding (http.get `auth`), as a scraper would send it. */
async function basicScrape (url: string, auth: string): Promise<number> {
  const u = new URL(url)
  return await new Promise((resolve, reject) => {
    http.get({ host: u.hostname, port: u.port, path: '/metrics', auth, agent: false }, (res) => { res.resume(); resolve(res.statusCode ?? 0) }).on('error', reject)
  })
}

t.test('metrics.auth: a bearer token or a Basic credential the scrape must send; 401 with WWW-Authenticate otherwise; with --workers too', async (t) => {
  const dir = tempDir('sidegate-metrics-auth-')
  writeFileSync(join(dir, 'token'), 'scrape-token-0123456789\n')
  writeFileSync(join(dir, 'password'), 'pässword-9876')
  const auth = { bearer_token_file: join(dir, 'token'), username: 'prometheus', password_file: join(dir, 'password') }
  for (const args of [[], ['--workers', '2']]) {
    const port = await freePort()
    const g = await spawnGateway(db.url, { metrics: { host: '127.0.0.1', port, auth } }, prefix, { args })
    const base = `http://127.0.0.1:${port}`
    t.ok(await eventually(async () => await request(base, '/metrics').then(() => true, () => false), 60_000), 'listening')
    const none = await request(base, '/metrics')
    t.same([none.status, none.json?.code], [401, 'not_authenticated'], `${args.join(' ') || 'one process'}: no credential`)
    t.same(none.headers['www-authenticate'], 'Bearer realm="sidegate metrics", Basic realm="sidegate metrics", charset="UTF-8"', 'names both schemes')
    t.notMatch(none.text, /sidegate_http_requests_total/, 'and no metrics')
    const wrong = await request(base, '/metrics', { headers: { authorization: 'Bearer scrape-token-012345678' } })
    t.same([wrong.status, wrong.json?.code], [401, 'authentication_failed'], 'a wrong token')
    const right = await request(base, '/metrics', { headers: { authorization: 'Bearer scrape-token-0123456789' } })
    t.equal(right.status, 200, 'the token (the file\'s trailing newline is not part of it)')
    t.match(right.text, /^sidegate_redis_up 1$/m)
    t.equal(await basicScrape(base, 'prometheus:pässword-9876'), 200, 'Basic, encoded by node:http')
    t.equal(await basicScrape(base, 'prometheus:wrong'), 401, 'a wrong password')
    t.equal(await basicScrape(base, 'grafana:pässword-9876'), 401, 'a wrong username')
    await g.stop()
  }
  t.throws(() => buildConfig({ metrics: { auth: { username: 'prometheus' } } }), /metrics\.auth\.password_file: metrics\.auth\.username and metrics\.auth\.password_file go together/)
  const missing = await spawnGateway(db.url, { metrics: { host: '127.0.0.1', port: await freePort(), auth: { bearer_token_file: join(dir, 'nope') } } }, prefix).then(() => null, (err: Error) => err.message)
  t.match(missing, /metrics\.auth\.bearer_token_file: cannot read .*nope: ENOENT/, 'a missing file stops the start, named')
})

t.test('status labels stay bounded', async (t) => {
  const m = new Metrics({ processMetrics: false })
  m.request(299, undefined, undefined, 0.0001)
  m.request(200, 'bearer', undefined, 0.003)
  m.request(200, 'weird', undefined, 40)
  const text = await m.registry.metrics()
  t.match(text, /status="2xx",auth_method="none"/, 'a non-standard code becomes its class')
  t.match(text, /status="200",auth_method="none"\} 1/, 'an unknown method is "none"')
  // counted in plain numbers and handed to prom-client at scrape time: the histogram as prom-client would show it
  t.match(text, /sidegate_http_request_duration_seconds_bucket\{le="0.001"\} 1\n/, 'each duration in its bucket')
  t.match(text, /sidegate_http_request_duration_seconds_bucket\{le="0.005"\} 2\n/, 'buckets are cumulative')
  t.match(text, /sidegate_http_request_duration_seconds_bucket\{le="30"\} 2\n/, 'above the last bound only in +Inf')
  t.match(text, /sidegate_http_request_duration_seconds_bucket\{le="\+Inf"\} 3\n/)
  t.match(text, /sidegate_http_request_duration_seconds_count 3\n/)
  t.match(text, /sidegate_http_request_duration_seconds_sum 40.0031\d*\n/)
  m.request(200, 'bearer', undefined, 0.003)
  const again = await m.registry.metrics()
  t.match(again, /status="200",auth_method="bearer"\} 2\n/, 'a second scrape adds what came since the first')
  t.match(again, /sidegate_http_request_duration_seconds_count 4\n/)
})

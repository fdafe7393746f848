/**
 * Rate limits per authenticated caller, shared by every
 * replica. Two `sidegate start` processes on one Redis, real HTTP; the CLI
 * (`sidegate limit set|list|clear`) as a process against the same Redis.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { startRedis } from '../fixtures/redis.js'
import { startEcho, request, type Res } from '../fixtures/http.js'
import { SECRET, spawnGateway, startGateway } from '../fixtures/gateway.js'
import { cliIn } from '../fixtures/procs.js'
import { makeUser, signedHeaders } from '../fixtures/creds.js'
import { eventually } from '../fixtures/wait.js'

const redis = await startRedis()
const echo = await startEcho()
const prefix = `rl${process.pid}:`
const rateLimit = { enabled: true, limit: 20, window: 10, methods: { access_key: '3/60s' } }
const conf = { upstream: { url: echo.url }, rate_limit: rateLimit }
t.teardown(async () => { await echo.close(); await redis.stop() })
const [a, b] = await Promise.all([spawnGateway(redis.url, conf, prefix), spawnGateway(redis.url, conf, prefix)])
t.teardown(async () => { await a.stop(); await b.stop() })
// an in-process gateway on the same data, for the store API (users, keys, tokens)
const admin = await startGateway(redis.url, { upstream: { url: echo.url }, redis: { url: redis.url, prefix } })
t.teardown(async () => { await admin.close() })

const cli = async (...args: string[]) => await cliIn('/tmp', [...args, '--config', a.configFile], { env: { SIDEGATE_SECRET_KEY: SECRET } })
const tokenOf = async (name: string): Promise<{ id: string, token: string }> => {
  const u = await makeUser(admin, name)
  return { id: u.id, token: await admin.store.privateTokens.create(u.id) }
}
const get = async (base: string, token: string, path = '/api/x'): Promise<Res> => await request(base, path, { headers: { authorization: `Token ${token}` } })

t.test('limit 20 per 10 s, 30 requests over two replicas at once: exactly 20 answered, 10 refused with 429', async (t) => {
  const { token } = await tokenOf('burst')
  const rs = await Promise.all(
    Array.from({ length: 30 }, async (_, i) => await get(i % 2 === 0 ? a.url : b.url, token))
  )
  const ok = rs.filter((r) => r.status === 200)
  const limited = rs.filter((r) => r.status === 429)
  t.equal(ok.length, 20)
  t.equal(limited.length, 10)
  t.ok(ok.some((r) => r.json.url === '/api/x'), 'the 200s are the upstream\'s')
  t.same(ok.map((r) => r.headers['ratelimit-policy']).filter((v, i, all) => all.indexOf(v) === i), ['"default";q=20;w=10'], 'RateLimit-Policy on every success')
  const remaining = ok.map((r) => Number(/;r=(\d+);/.exec(String(r.headers.ratelimit))![1])).sort((x, y) => x - y)
  t.same(remaining, Array.from({ length: 20 }, (_, i) => i), 'RateLimit r= counts down 19…0, each value once')
  for (const r of limited) {
    t.equal(r.json.code, 'rate_limited')
    t.match(r.json.detail, /^Rate limit exceeded; try again in \d+ seconds?\.$/)
    const retry = Number(r.headers['retry-after'])
    t.ok(retry >= 1 && retry <= 10, `Retry-After ${retry}`)
    t.equal(r.headers['ratelimit-policy'], '"default";q=20;w=10')
    t.match(r.headers.ratelimit, new RegExp(`^"default";r=0;t=${retry}$`))
  }
})

t.test('another user has a bucket of its own; sidegate\'s own API is counted too', async (t) => {
  const { token } = await tokenOf('other')
  const r = await get(b.url, token, '/api/v1/users/profile/')
  t.equal(r.status, 200)
  t.equal(r.headers.ratelimit, '"default";r=19;t=10')
})

t.test('rate_limit.methods: access keys get their own policy, counted per user and method; the same user\'s token stays on the default', async (t) => {
  const u = await makeUser(admin, 'signer')
  const { key, secret } = await admin.store.accessKeys.create(u.id)
  const token = await admin.store.privateTokens.create(u.id)
  const statuses: number[] = []
  for (let i = 0; i < 4; i++) {
    const r = await request(i % 2 === 0 ? a.url : b.url, '/api/s', { headers: signedHeaders(key.id, secret, 'GET', '/api/s') })
    statuses.push(r.status)
    t.equal(r.headers['ratelimit-policy'], '"access_key";q=3;w=60')
  }
  t.same(statuses, [200, 200, 200, 429])
  const viaToken = await get(a.url, token)
  t.equal(viaToken.status, 200)
  t.equal(viaToken.headers['ratelimit-policy'], '"default";q=20;w=10')
})

t.test('sidegate limit set|list|clear: a user\'s and a key\'s own limit, on both replicas at once', async (t) => {
  const { id, token } = await tokenOf('vip')
  const { key, secret } = await admin.store.accessKeys.create(id)
  const set = await cli('limit', 'set', 'vip', '2/30s')
  t.equal(set.code, 0, set.stderr)
  t.match(set.stdout, /user vip: 2\/30s/)
  for (const g of [a, b]) {
    t.ok(await eventually(async () => (await get(g.url, token, '/api/probe')).headers['ratelimit-policy'] === '"user";q=2;w=30'), 'the user\'s limit applies')
  }
  // the probes above used the user's bucket up
  t.equal((await get(a.url, token)).status, 429)
  const keySet = await cli('limit', 'set', key.id, '1/1h', '--json')
  t.equal(keySet.code, 0, keySet.stderr)
  t.same(JSON.parse(keySet.stdout), { key: key.id, id: key.id, limit: 1, window: 3600 })
  t.ok(await eventually(async () => (await request(b.url, '/api/k', { headers: signedHeaders(key.id, secret, 'GET', '/api/k') })).headers['ratelimit-policy'] === '"key";q=1;w=3600'), 'the key\'s limit wins over the user\'s')
  t.equal((await request(a.url, '/api/k', { headers: signedHeaders(key.id, secret, 'GET', '/api/k') })).status, 429)
  const list = await cli('limit', 'list')
  t.equal(list.code, 0, list.stderr)
  t.match(list.stdout, /rate_limit enabled; default 20\/10s per user; access_key 3\/60s/)
  t.match(list.stdout, new RegExp(`user  ${id}  vip  2/30s`))
  t.match(list.stdout, new RegExp(`key   ${key.id}  vip  1/3600s`))
  const clear = await cli('limit', 'clear', 'vip')
  t.equal(clear.code, 0, clear.stderr)
  t.ok(await eventually(async () => (await get(b.url, token, '/api/after')).headers['ratelimit-policy'] === '"default";q=20;w=10'), 'cleared: the default again')
  for (const bad of [['limit', 'set', 'vip', '0/10s'], ['limit', 'set', 'vip', '10'], ['limit', 'set', 'vip', '5/2d'], ['limit', 'set', 'vip']]) {
    const r = await cli(...bad)
    t.equal(r.code, 2, `${bad.join(' ')}: usage error`)
  }
  const unknown = await cli('limit', 'set', 'nobody', '1/1s')
  t.equal(unknown.code, 1)
  t.match(unknown.stderr, /no user or access key "nobody"/)
})

t.test('rate_limit disabled (the default): no RateLimit fields, nothing counted', async (t) => {
  const { token } = await tokenOf('free')
  for (let i = 0; i < 25; i++) {
    const r = await get(admin.url, token)
    t.equal(r.status, 200)
    t.equal(r.headers.ratelimit, undefined)
  }
})

t.test('Redis failing the count (scripts refused: the credential still reads, the count fails): on_store_error allow lets requests through uncounted, deny answers 503; logged once per outage, counted in metrics', async (t) => {
  const own = await startRedis()
  t.teardown(async () => { await own.stop() })
  const p = `rlfail${process.pid}:`
  const base = { upstream: { url: echo.url }, redis: { url: own.url, prefix: p, command_timeout: 300 }, log: { level: 'info' } }
  const allow = await spawnGateway(own.url, { ...base, rate_limit: { enabled: true, limit: 100, window: 60 } }, p)
  const deny = await spawnGateway(own.url, { ...base, rate_limit: { enabled: true, limit: 100, window: 60, on_store_error: 'deny' } }, p)
  t.teardown(async () => { await allow.stop(); await deny.stop() })
  const store = await startGateway(own.url, { redis: { url: own.url, prefix: p } })
  const u = await makeUser(store, 'carol')
  const token = await store.store.privateTokens.create(u.id)
  await store.close()
  for (const g of [allow, deny]) t.equal((await get(g.url, token)).status, 200)
  // Redis refuses scripts from now on (ACL): the credential still reads (GET), the
  // rate-limit script fails, as it would with Redis gone, without taking authentication with it
  const ctl = new Redis(own.url)
  t.teardown(() => { ctl.disconnect() })
  await ctl.call('ACL', 'SETUSER', 'default', '-eval', '-evalsha')
  const allowed = []
  const denied = []
  for (let i = 0; i < 3; i++) {
    allowed.push(await get(allow.url, token))
    denied.push(await get(deny.url, token))
  }
  t.same(allowed.map((r) => r.status), [200, 200, 200], 'allow: through')
  t.same(allowed.map((r) => r.headers.ratelimit), [undefined, undefined, undefined], 'uncounted: no RateLimit fields')
  t.same(denied.map((r) => [r.status, r.json.code]), [[503, 'store_unavailable'], [503, 'store_unavailable'], [503, 'store_unavailable']], 'deny: 503')
  for (const g of [allow, deny]) {
    t.equal(g.output().split('\n').filter((l) => l.includes('rate limit: the store is unavailable')).length, 1, 'logged once')
    const m = await (await fetch(g.metricsUrl + '/metrics')).text()
    t.match(m, /^sidegate_rate_limit_store_errors_total 3$/m)
  }
  await ctl.call('ACL', 'SETUSER', 'default', '+eval', '+evalsha')
  t.ok(await eventually(async () => (await get(allow.url, token)).headers.ratelimit !== undefined, 30_000), 'counted again once Redis is back')
  t.ok(await eventually(async () => allow.output().includes('rate limit: the store is back'), 10_000), 'and it says so')
})

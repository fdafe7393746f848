/**
 * `sidegate start --workers N` (src/app/primary.ts): real processes (a primary and
 * its node:cluster workers, from dist/), a real Redis, an echo upstream, real
 * HTTP. Which worker served a request is read from its access log line
 * ("worker": 1..N; the primary is 0 and serves none). Every wait is a deadline
 * on an answer or a log line, generous for a loaded 2-core machine.
 */
import t from 'tap'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { parse, stringify } from 'yaml'
import { startRedis } from '../fixtures/redis.js'
import { request, startEcho, type Res } from '../fixtures/http.js'
import { SECRET, spawnGateway, type SpawnedGateway } from '../fixtures/gateway.js'
import { cliIn, startIn, workdir } from '../fixtures/procs.js'
import { openTestStore } from '../fixtures/store-contract.js'
import { signedHeaders, signedWithBody } from '../fixtures/creds.js'
import { bootstrappedAdmin, eventually, ANNOUNCED_WITHIN } from '../fixtures/wait.js'

const redis = await startRedis()
t.teardown(async () => { await redis.stop() })
const echo = await startEcho()
t.teardown(async () => { await echo.close() })

/** a deadline for what involves a process starting or stopping on a loaded machine */
const SLOW = 60_000
const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'

interface Line { [k: string]: any }

function lines (g: SpawnedGateway): Line[] {
  const out: Line[] = []
  for (const l of g.output().split('\n')) {
    if (!l.startsWith('{')) continue
    try { out.push(JSON.parse(l)) } catch {}
  }
  return out
}

/** The access lines for `path` (exact), each with the worker that wrote it. */
function served (g: SpawnedGateway, path: string, status?: number): Line[] {
  return lines(g).filter((l) => l.msg === 'request' && l.path === path && (status === undefined || l.status === status))
}

/** The workers (1..N) whose access lines show `path` (with `status`). */
function workersFor (g: SpawnedGateway, path: string, status?: number): Set<number> {
  return new Set(served(g, path, status).map((l) => l.worker as number))
}

/**
 * Requests `path` on new connections (round robin hands each to the
 * next worker) until every one of `n` workers logged it with `status`.
 */
async function untilEveryWorker (
  g: SpawnedGateway, path: string, status: number, n: number, headers: Record<string, string> = {}, ms = SLOW
): Promise<boolean> {
  return await eventually(async () => {
    await request(g.url, path, { headers })
    return workersFor(g, path, status).size >= n
  }, ms, 10)
}

/** The primary's "worker listening" lines: worker slot → its latest pid. */
function workerPids (g: SpawnedGateway): Map<number, number> {
  const m = new Map<number, number>()
  for (const l of lines(g)) if (l.msg === 'worker listening' && l.worker === 0) m.set(l.worker_id, l.pid)
  return m
}

function alive (pid: number): boolean {
  try { process.kill(pid, 0); return true } catch { return false }
}

function metric (text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '))
  return line === undefined ? NaN : Number(line.slice(series.length + 1))
}

async function scrape (g: SpawnedGateway): Promise<string> {
  return (await request(g.metricsUrl, '/metrics')).text
}

const prefix = `workers${process.pid}:`
// the gateway most tests share: 2 workers, the admin API on, reloads only by SIGHUP
const g = await spawnGateway(redis.url, {
  upstream: { url: echo.url },
  log: { level: 'info' },
  admin: { enabled: true },
  reload: { watch: false }
}, prefix, { args: ['--workers', '2'] })
t.teardown(async () => { await g.stop('SIGKILL') })
// the primary's listeners are bound before the workers start:
// the fixture's wait for them is not a wait for both workers
if (!(await eventually(async () => workerPids(g).size === 2, SLOW))) throw new Error(`two workers not listening: ${g.output()}`)
const store = await openTestStore({ url: redis.url }, prefix)
t.teardown(async () => { await store.close() })
const admin = (await bootstrappedAdmin(store))!

t.test('two workers serve the public port; the primary serves no request', async (t) => {
  const pids = workerPids(g)
  t.equal(pids.size, 2, 'the primary logged two workers listening')
  t.equal(new Set(pids.values()).size, 2, 'two processes')
  t.notOk([...pids.values()].includes(g.proc.pid!), 'neither is the primary')
  t.ok(await untilEveryWorker(g, '/healthz', 200, 2), '/healthz answered by worker 1 and worker 2')
  t.ok(await untilEveryWorker(g, '/readyz', 200, 2), '/readyz answered by worker 1 and worker 2')
  t.same([...workersFor(g, '/readyz')].sort(), [1, 2])
  t.notOk(lines(g).some((l) => l.msg === 'request' && l.worker === 0), 'no access line from the primary')
  t.ok(lines(g).filter((l) => l.msg !== undefined).every((l) => typeof l.worker === 'number'), 'every log line names its worker')
})

t.test('/metrics on the primary is the sum over the workers', async (t) => {
  const series = 'sidegate_http_requests_total{status="401",auth_method="none"}'
  const before = metric(await scrape(g), series) || 0 // no such series before the first 401
  const beforeLines = lines(g).filter((l) => l.msg === 'request' && l.status === 401).length
  const path = '/api/metrics-sum'
  // until both workers have refused some: the sum must count both
  let sent = 0
  t.ok(await eventually(async () => {
    t.equal((await request(g.url, path)).status, 401)
    sent++
    return workersFor(g, path, 401).size === 2 && sent >= 10
  }, SLOW, 10), 'both workers answered 401')
  const perWorker = [1, 2].map((w) => served(g, path, 401).filter((l) => l.worker === w).length)
  t.ok(perWorker.every((n) => n > 0 && n < sent), `each worker counted only part of them (${perWorker.join(' + ')})`)
  // the log lines and the figures, both read until they agree (the log is written in batches)
  let seen = ''
  t.ok(await eventually(async () => {
    const logged = lines(g).filter((l) => l.msg === 'request' && l.status === 401).length - beforeLines
    const now = metric(await scrape(g), series)
    seen = `before ${before}, now ${now}, logged ${logged}, sent ${sent}`
    return now === before + logged && logged >= sent
  }, SLOW, 100), 'the primary\'s figure rose by every 401 both workers logged')
  t.comment(seen)
  const text = await scrape(g)
  t.equal(metric(text, 'sidegate_workers'), 2, 'sidegate_workers')
  t.equal(metric(text, 'sidegate_redis_up'), 1, 'sidegate_redis_up: 1 when every worker\'s Redis is up (not summed)')
  t.match(text, /^sidegate_http_request_duration_seconds_count \d+$/m, 'the histogram too')
  t.equal(text.match(/^# TYPE sidegate_http_requests_total /gm)?.length, 1, 'one series family, not one per worker')
})

t.test('the admin API works through the primary, relayed to the workers with the client\'s address', async (t) => {
  const token = await store.privateTokens.create(admin.id)
  const auth = { authorization: `Token ${token}` }
  for (let i = 0; i < 4; i++) {
    const r = await request(g.adminUrl, '/admin/v1/users', { headers: auth })
    t.equal(r.status, 200)
    t.ok((r.json as Array<{ username: string }>).some((u) => u.username === 'admin'))
  }
  t.equal((await request(g.adminUrl, '/admin/v1/users')).status, 401, 'no credential: 401')
  const created = await request(g.adminUrl, '/admin/v1/users', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ username: 'relayed', password: 'relayed-password-1' }) })
  t.equal(created.status, 201, 'a POST with a body')
  t.ok(await store.users.byUsername('relayed'), 'created in the store')
  // an access key's IP allow-list is checked against the client's address, which the worker must see through the relay
  const here = await store.accessKeys.create(admin.id, undefined, { allow_ips: ['127.0.0.1'] })
  const elsewhere = await store.accessKeys.create(admin.id, undefined, { allow_ips: ['10.1.2.3'] })
  t.equal((await request(g.adminUrl, '/admin/v1/users', { headers: signedHeaders(here.key.id, here.secret, 'GET', '/admin/v1/users') })).status, 200, 'key allowed from 127.0.0.1')
  const refused = await request(g.adminUrl, '/admin/v1/users', { headers: signedHeaders(elsewhere.key.id, elsewhere.secret, 'GET', '/admin/v1/users') })
  t.equal(refused.status, 403)
  t.equal((refused.json as { code: string }).code, 'ip_not_allowed', 'key allowed only from 10.1.2.3: refused')
  // another Date: the admin API accepts each signature once
  const spoofed = await request(g.adminUrl, '/admin/v1/users', { headers: { ...signedHeaders(elsewhere.key.id, elsewhere.secret, 'GET', '/admin/v1/users', { date: new Date(Date.now() - 2000).toUTCString() }), 'x-sidegate-relay-peer': '10.1.2.3' } })
  t.equal(spoofed.status, 403, 'a client cannot name its own address to the worker')
  // the admin API has its own listener: the primary's metrics listener does not answer it
  t.equal((await request(g.metricsUrl, '/admin/v1/users', { headers: auth })).status, 404, 'not on the metrics port')
  // through the relay too: a signed body must be covered by a signed digest, and a signature counts once
  const body = JSON.stringify({ username: 'unsigned-body', password: 'unsigned-body-1' })
  const bare = await request(g.adminUrl, '/admin/v1/users', { method: 'POST', headers: { ...signedHeaders(here.key.id, here.secret, 'POST', '/admin/v1/users'), 'content-type': 'application/json' }, body })
  t.same([bare.status, (bare.json as { code: string }).code], [401, 'invalid_digest'], 'a signed POST without a signed digest')
  const headers = signedWithBody(here.key.id, here.secret, 'POST', '/admin/v1/users', body)
  t.equal((await request(g.adminUrl, '/admin/v1/users', { method: 'POST', headers, body })).status, 201, 'with one')
  const again = await request(g.adminUrl, '/admin/v1/users', { method: 'POST', headers, body })
  t.same([again.status, (again.json as { code: string }).code], [401, 'signature_replayed'], 'sent again to whichever worker: refused')
})

t.test('a private token revoked through the CLI is refused by every worker', async (t) => {
  const user = await store.users.create({ username: 'revoked', password: 'revoked-password-1', orgs: { [DEFAULT_ORG]: 'user' } })
  const token = await store.privateTokens.create(user.id)
  const auth = { authorization: `Token ${token}` }
  // both workers accept it, and so hold it in their caches
  t.ok(await untilEveryWorker(g, '/inv/before', 200, 2, auth), 'accepted by worker 1 and worker 2')
  const r = await cliIn(join(g.configFile, '..'), ['token', 'revoke', 'revoked', '--config', g.configFile], { env: { SIDEGATE_SECRET_KEY: SECRET } })
  t.equal(r.code, 0, r.stderr)
  t.ok(await untilEveryWorker(g, '/inv/after', 401, 2, auth, ANNOUNCED_WITHIN), 'refused by worker 1 and worker 2 within the deadline (the pub/sub announcement, not the cache ttl)')
  for (let i = 0; i < 10; i++) t.equal((await request(g.url, '/inv/later', { headers: auth })).status, 401, 'and from then on')
  t.ok(await eventually(async () => served(g, '/inv/later').length === 10, SLOW), 'their lines')
  t.same([...workersFor(g, '/inv/later', 401)].sort(), [1, 2], 'from both workers')
})

t.test('SIGHUP: the primary reloads once and every worker applies it', async (t) => {
  const reloadLines = (): Line[] => lines(g).filter((l) => typeof l.msg === 'string' && l.msg.startsWith('config reload'))
  const successes = async (): Promise<number> => metric(await scrape(g), 'sidegate_config_reloads_total{result="success"}')
  const edit = (f: (d: any) => void): void => { const d = parse(readFileSync(g.configFile, 'utf8')); f(d); writeFileSync(g.configFile, stringify(d)) }
  const before = reloadLines().length
  const counted = await successes()
  t.equal((await request(g.url, '/status/x')).status, 401, 'protected before')
  edit((d) => { d.upstream.public_paths = ['/status/'] })
  g.proc.kill('SIGHUP')
  t.ok(await eventually(async () => reloadLines().length > before, SLOW), 'a reload line')
  t.ok(await untilEveryWorker(g, '/status/x', 200, 2), 'public on worker 1 and worker 2')
  const added = reloadLines().slice(before)
  t.equal(added.length, 1, 'one line for the reload, not one per worker')
  t.equal(added[0].msg, 'config reloaded: upstream.public_paths')
  t.equal(added[0].worker, 0, 'from the primary')
  t.equal(await successes(), counted + 1, 'counted once')
  edit((d) => { d.upstream.public_paths = [] })
  g.proc.kill('SIGHUP')
  t.ok(await eventually(async () => reloadLines().length > before + 1, SLOW), 'a second reload line')
  t.ok(await untilEveryWorker(g, '/status/y', 401, 2), 'protected again on both')
  // a key that cannot change live: refused by the primary, no worker changes
  edit((d) => { d.names = { abbrev: 'XYZ' } })
  const n = reloadLines().length
  g.proc.kill('SIGHUP')
  t.ok(await eventually(async () => reloadLines().length > n, SLOW))
  t.match(reloadLines()[n].msg, /^config reload refused: names\.abbrev/)
  edit((d) => { delete d.names })
})

t.test('a worker killed with SIGKILL is replaced and serving goes on', async (t) => {
  const before = workerPids(g)
  const victim = before.get(1)!
  process.kill(victim, 'SIGKILL')
  t.ok(await eventually(async () => workerPids(g).get(1) !== victim, SLOW), 'a new worker 1 is listening')
  const dead = lines(g).find((l) => l.msg === 'worker died; restarting it' && l.pid === victim)
  t.ok(dead, 'the death is logged')
  t.equal(dead?.signal, 'SIGKILL')
  t.equal(workerPids(g).get(2), before.get(2), 'worker 2 was left alone')
  t.ok(await eventually(async () => metric(await scrape(g), 'sidegate_worker_restarts_total') === 1, SLOW), 'counted')
  t.ok(await eventually(async () => metric(await scrape(g), 'sidegate_workers') === 2, SLOW), 'two workers again')
  const start = lines(g).length
  t.ok(await eventually(async () => {
    t.equal((await request(g.url, '/healthz')).status, 200)
    return new Set(lines(g).slice(start).filter((l) => l.msg === 'request' && l.path === '/healthz').map((l) => l.worker)).size === 2
  }, SLOW, 10), 'both serve after the restart')
})

t.test('a SIGKILLed primary leaves no worker behind', async (t) => {
  const pids = [...workerPids(g).values()]
  t.equal(pids.length, 2)
  await g.stop('SIGKILL')
  t.ok(await eventually(async () => pids.every((p) => !alive(p)), SLOW), 'both workers exited with their primary')
})

t.test('SIGTERM: every worker drains, an in-flight request completes, exit 0', async (t) => {
  const gw = await spawnGateway(redis.url, {
    upstream: { url: echo.url, public_paths: ['/slow/'] },
    log: { level: 'info' },
    server: { drain_delay: 1, shutdown_grace: 20 }
  }, `${prefix}term:`, { args: ['--workers', '2'] })
  t.teardown(async () => { await gw.stop('SIGKILL') })
  t.ok(await eventually(async () => workerPids(gw).size === 2, SLOW), 'both workers listening')
  const pids = [...workerPids(gw).values()]
  t.equal(pids.length, 2)
  // reload.watch (on here): the primary watches the file, and every worker applies the change
  const d = parse(readFileSync(gw.configFile, 'utf8'))
  d.upstream.public_paths = ['/slow/', '/status/']
  writeFileSync(gw.configFile, stringify(d))
  t.ok(await untilEveryWorker(gw, '/status/w', 200, 2), 'a file change reaches worker 1 and worker 2')
  const reloaded = lines(gw).filter((l) => typeof l.msg === 'string' && l.msg.startsWith('config reload'))
  t.same(reloaded.map((l) => [l.worker, l.trigger, l.msg]), [[0, 'file', 'config reloaded: upstream.public_paths']], 'one line, from the primary')
  const seen = echo.seen.length
  const slow: Promise<Res> = request(gw.url, '/slow/4000')
  t.ok(await eventually(async () => echo.seen.slice(seen).some((s) => s.url === '/slow/4000'), SLOW), 'the slow request is at the upstream')
  const exited = new Promise<number | null>((resolve) => gw.proc.once('exit', (code) => resolve(code)))
  gw.proc.kill('SIGTERM')
  const r = await slow
  t.equal(r.status, 200, 'the in-flight request completed')
  t.equal(await exited, 0, 'the primary exited 0')
  t.ok(pids.every((p) => !alive(p)), 'and every worker before it')
  const drained = lines(gw).filter((l) => l.msg === 'draining: readiness is now false').map((l) => l.worker).sort()
  t.same(drained, [1, 2], 'both workers drained')
  t.ok(lines(gw).some((l) => l.msg === 'stopped: every worker has exited' && l.worker === 0 && l.code === 0))
})

t.test('bad --workers values and server.workers: one clear line, exit 2', async (t) => {
  const { dir } = await workdir({ redis: { url: redis.url, prefix: `${prefix}bad:` } })
  for (const args of [['--workers', '0'], ['--workers=-1'], ['--workers', 'abc'], ['--workers', '257'], ['--workers', '1.5']]) {
    const r = await cliIn(dir, ['start', ...args], { env: { SIDEGATE_SECRET_KEY: SECRET } })
    t.equal(r.code, 2, `${args.join(' ')}: exit 2`)
    t.match(r.stderr, /^sidegate: --workers must be a whole number from 1 to 256 or "auto", got "[^"]*"\n$/, `${args.join(' ')}: ${r.stderr.trim()}`)
  }
  const dash = await cliIn(dir, ['start', '--workers', '-1'], { env: { SIDEGATE_SECRET_KEY: SECRET } })
  t.equal(dash.code, 2, '--workers -1: exit 2')
  t.notMatch(dash.stderr, /\n\s+at /, 'no stack trace')
  const other = await cliIn(dir, ['user', 'list', '--workers', '2'], { env: { SIDEGATE_SECRET_KEY: SECRET } })
  t.equal(other.code, 2)
  t.match(other.stderr, /--workers is an option of start only/)
  writeFileSync(join(dir, 'gateway.yml'), stringify({ ...parse(readFileSync(join(dir, 'gateway.yml'), 'utf8')), server: { workers: 0 } }))
  const file = await cliIn(dir, ['start'], { env: { SIDEGATE_SECRET_KEY: SECRET } })
  t.equal(file.code, 2)
  t.equal(file.stderr, 'sidegate: config: server.workers: must be a whole number from 1 to 256 or "auto", got 0\n')
  const check = await cliIn(dir, ['config', 'check'])
  t.equal(check.code, 2, 'config check says the same')
})

t.test('first start with 3 workers: one secret key, one admin, one Default org', async (t) => {
  const p = `${prefix}first:`
  const { dir, url } = await workdir({ redis: { url: redis.url, prefix: p }, log: { level: 'info' } })
  // no SIDEGATE_SECRET_KEY, no SIDEGATE_ADMIN_PASSWORD: a key file and a password are generated
  const s = await startIn(dir, url, { args: ['--workers', '3'] })
  t.teardown(async () => { await s.stop('SIGKILL') })
  t.ok(existsSync(join(dir, 'sidegate.key')), 'the key file')
  const key = readFileSync(join(dir, 'sidegate.key'), 'utf8').trim()
  const st = await openTestStore({ url: redis.url }, p, { secret: key })
  t.teardown(async () => { await st.close() })
  t.same((await st.users.list()).map((u) => u.username), ['admin'], 'exactly one user: admin')
  t.same((await st.orgs.list()).map((o) => o.name), ['Default'], 'exactly one org: Default')
  const all = s.out().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
  t.equal(all.filter((l) => l.msg === 'created the first superuser').length, 1, 'one worker created it')
  t.equal(all.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('generated a new secret key')).length, 1, 'one key generated')
  t.equal(s.err().match(/created superuser "admin" with password/g)?.length, 1, 'the password printed once')
  t.ok(await eventually(async () => {
    const now = s.out().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
    return new Set(now.filter((l) => l.msg === 'worker listening').map((l) => l.worker_id)).size === 3
  }, SLOW), 'three workers listening')
  t.equal(await s.stop('SIGTERM'), 0)
})

t.test('a worker that cannot start ends the whole start with its exit code', async (t) => {
  // the port taken: every worker's listen fails (exit 1), the primary stops the rest and exits 1
  const { dir, port } = await workdir({ redis: { url: redis.url, prefix: `${prefix}taken:` } })
  const blocker = createServer()
  await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve))
  t.teardown(() => { blocker.close() })
  const taken = await cliIn(dir, ['start', '--workers', '2'], { env: { SIDEGATE_SECRET_KEY: SECRET } })
  t.equal(taken.code, 1, 'port taken: exit 1')
  t.match(taken.stderr, new RegExp(`^sidegate: cannot listen on 127\\.0\\.0\\.1:${port} \\(listen\\.port\\): address in use \\(EADDRINUSE\\); set listen\\.port \\(or SIDEGATE_PORT\\)\n`), taken.stderr)
  t.notMatch(taken.stdout, /"msg":"(sidegate|worker|metrics) listening/, 'nothing said to listen')
  t.notMatch(taken.stderr, /\n\s+at /, 'no stack trace')
  t.match(taken.stdout, /"msg":"a worker ended before every worker was listening; stopping every worker"/)
  // a database the server does not have: each worker's key check stops it with exit 2, a problem no restart cures
  const small = await startRedis({ args: ['--databases', '4'] })
  t.teardown(() => small.stop())
  const db = await workdir({ redis: { url: `${small.url}/9` } })
  const fatal = await cliIn(db.dir, ['start', '--workers', '2'], { env: { SIDEGATE_SECRET_KEY: SECRET } })
  t.equal(fatal.code, 2, 'exit 2, not restarted over and over')
  t.match(fatal.stderr, /^sidegate: cannot select database 9 at /, fatal.stderr)
  t.notMatch(fatal.stdout, /worker died; restarting it/, 'no restart')
})

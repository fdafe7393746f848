/**
 * `sidegate start` as a second instance on one host: every listener (public,
 * metrics, admin) is bound before any "listening" line, and a port that is
 * taken ends the start with one line naming the setting to change (exit 1),
 * in one process and with --workers; SIDEGATE_METRICS_PORT and
 * SIDEGATE_ADMIN_PORT move them. Without upstream.url the start says it is
 * the demo mode. Real processes, real Redis, real sockets.
 */
import t, { type Test } from 'tap'
import { createServer, type Server } from 'node:net'
import { startRedis, freePort } from '../fixtures/redis.js'
import { SECRET } from '../fixtures/gateway.js'
import { cliIn, startIn, workdir } from '../fixtures/procs.js'
import { startEcho } from '../fixtures/http.js'
import { eventually } from '../fixtures/wait.js'

const redis = await startRedis()
const echo = await startEcho()
t.teardown(async () => { await echo.close(); await redis.stop() })
const env = { SIDEGATE_SECRET_KEY: SECRET }
let n = 0
const prefix = (): string => `start${process.pid}-${n++}:`

/** A port held by another process's listener, as a first instance would hold it. */
async function taken (t: Test): Promise<number> {
  const port = await freePort()
  const s: Server = createServer()
  await new Promise<void>((resolve) => s.listen(port, '127.0.0.1', resolve))
  t.teardown(() => { s.close() })
  return port
}

/** The port can be bound again: the failed start left nothing listening on it. */
async function free (port: number): Promise<boolean> {
  const s = createServer()
  return await new Promise<boolean>((resolve) => {
    s.once('error', () => resolve(false))
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
  })
}

const listening = (stdout: string): string[] => stdout.split('\n').filter((l) => /listening/.test(l))

t.test('a second instance on the metrics port of the first: one line naming metrics.port, exit 1, never "listening"', async (t) => {
  const metricsPort = await freePort()
  const metrics = { enabled: true, host: '127.0.0.1', port: metricsPort }
  const first = await workdir({ redis: { url: redis.url, prefix: prefix() }, upstream: { url: echo.url }, metrics })
  const one = await startIn(first.dir, first.url, { env })
  t.teardown(async () => { await one.stop('SIGKILL') })
  t.equal((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status, 200, 'the first serves /metrics')
  const second = await workdir({ redis: { url: redis.url, prefix: prefix() }, upstream: { url: echo.url }, metrics })
  const two = await cliIn(second.dir, ['start'], { env })
  t.equal(two.code, 1)
  t.equal(two.stderr, `sidegate: cannot listen on 127.0.0.1:${metricsPort} (metrics.port): address in use (EADDRINUSE); set metrics.port (or SIDEGATE_METRICS_PORT) or metrics.enabled: false\n`)
  t.same(listening(two.stdout), [], 'no "listening" line')
  t.notMatch(two.stderr + two.stdout, /\n\s+at /, 'no stack trace')
  t.ok(await free(second.port), 'its public port was let go')
  t.equal((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status, 200, 'the first still serves')
})

t.test('the admin port taken: the line names admin.port; the public port taken: listen.port', async (t) => {
  const adminPort = await taken(t)
  const a = await workdir({ redis: { url: redis.url, prefix: prefix() }, admin: { enabled: true, host: '127.0.0.1', port: adminPort } })
  const admin = await cliIn(a.dir, ['start'], { env })
  t.equal(admin.code, 1)
  t.equal(admin.stderr, `sidegate: cannot listen on 127.0.0.1:${adminPort} (admin.port): address in use (EADDRINUSE); set admin.port (or SIDEGATE_ADMIN_PORT) or admin.enabled: false\n`)
  t.same(listening(admin.stdout), [], 'no "listening" line')
  const b = await workdir({ redis: { url: redis.url, prefix: prefix() } })
  const blocker = createServer()
  await new Promise<void>((resolve) => blocker.listen(b.port, '127.0.0.1', resolve))
  t.teardown(() => { blocker.close() })
  const pub = await cliIn(b.dir, ['start'], { env })
  t.equal(pub.code, 1)
  t.equal(pub.stderr, `sidegate: cannot listen on 127.0.0.1:${b.port} (listen.port): address in use (EADDRINUSE); set listen.port (or SIDEGATE_PORT)\n`)
  t.same(listening(pub.stdout), [], 'no "listening" line')
})

t.test('--workers 2 on a taken metrics port: the primary stops before any worker, exit 1, never "listening"', async (t) => {
  const metricsPort = await taken(t)
  const w = await workdir({ redis: { url: redis.url, prefix: prefix() }, metrics: { enabled: true, host: '127.0.0.1', port: metricsPort } })
  const r = await cliIn(w.dir, ['start', '--workers', '2'], { env })
  t.equal(r.code, 1)
  t.equal(r.stderr, `sidegate: cannot listen on 127.0.0.1:${metricsPort} (metrics.port): address in use (EADDRINUSE); set metrics.port (or SIDEGATE_METRICS_PORT) or metrics.enabled: false\n`)
  t.same(listening(r.stdout), [], 'no "listening" line, no worker\'s either')
  t.notMatch(r.stdout, /starting workers/, 'no worker was forked')
})

t.test('SIDEGATE_METRICS_PORT and SIDEGATE_ADMIN_PORT override the file', async (t) => {
  // the file's ports are taken: only the variables' can work
  const [fileMetrics, fileAdmin] = [await taken(t), await taken(t)]
  const [metricsPort, adminPort] = [await freePort(), await freePort()]
  const w = await workdir({ redis: { url: redis.url, prefix: prefix() }, metrics: { enabled: true, host: '127.0.0.1', port: fileMetrics }, admin: { enabled: true, host: '127.0.0.1', port: fileAdmin } })
  for (const workers of ['1', '2']) {
    const s = await startIn(w.dir, w.url, { env: { ...env, SIDEGATE_METRICS_PORT: String(metricsPort), SIDEGATE_ADMIN_PORT: String(adminPort) }, args: ['--workers', workers] })
    t.ok(await eventually(async () => s.out().includes('"msg":"sidegate listening"'), 60_000), 'every listener up')
    t.equal((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status, 200, `--workers ${workers}: /metrics on SIDEGATE_METRICS_PORT`)
    t.equal((await fetch(`http://127.0.0.1:${adminPort}/admin/v1/users`)).status, 401, `--workers ${workers}: the admin API on SIDEGATE_ADMIN_PORT`)
    t.equal(await s.stop('SIGTERM'), 0)
  }
  const check = await cliIn(w.dir, ['config', 'check', '--json'], { env: { SIDEGATE_METRICS_PORT: 'x' } })
  t.equal(check.code, 2)
  t.match(check.stderr, /metrics\.port: must be a whole number/, 'a bad value is a config problem like any')
})

t.test('no upstream.url: the start says it serves the demo API (demo mode), before "listening"; with one it does not', async (t) => {
  const demo = await workdir({ redis: { url: redis.url, prefix: prefix() } })
  const s = await startIn(demo.dir, demo.url, { env })
  await s.stop('SIGTERM')
  const lines = s.out().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string, level: number, warning?: string })
  const at = lines.findIndex((l) => l.warning === 'demo_mode')
  t.ok(at >= 0, 'a demo mode line')
  t.match(lines[at], { level: 40, msg: 'no upstream.url: serving the built-in demo API (demo mode); set upstream.url or SIDEGATE_UPSTREAM to protect your service' })
  t.ok(at < lines.findIndex((l) => l.msg === 'sidegate listening'), 'before "listening"')
  const real = await workdir({ redis: { url: redis.url, prefix: prefix() }, upstream: { url: echo.url } })
  const u = await startIn(real.dir, real.url, { env })
  await u.stop('SIGTERM')
  t.notMatch(u.out(), /demo mode/, 'an upstream: no such line')
})

/**
 * What a start loads (docs/performance.md, "Memory"): on the embedded store,
 * with tracing off and no passkey ceremony, `sidegate start` serves without
 * loading ioredis, @simplewebauthn/server or OpenTelemetry; with a Redis
 * store it loads ioredis at start (so the check can fail); the first passkey
 * ceremony loads @simplewebauthn/server. Every module a process loaded is
 * listed by test/fixtures/load-trace.mjs, each file of dist/bundle/ as the
 * modules it holds (test/fixtures/bundle.ts; its hooks run on a thread of
 * their own, so this process's RSS says nothing about the gateway's: that is
 * measured without the trace, docs/performance.md).
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, SECRET } from '../fixtures/gateway.js'
import { post, request } from '../fixtures/http.js'
import { BIN, workdir } from '../fixtures/procs.js'
import { freePort, startRedis } from '../fixtures/redis.js'
import { login } from '../fixtures/session.js'
import { track } from '../fixtures/cleanup.js'
import { eventually } from '../fixtures/wait.js'
import { loadedModules } from '../fixtures/bundle.js'

const redis = await startRedis()
t.teardown(async () => { await redis.stop() })

// @opentelemetry/api is no SDK: prom-client requires it at start (its CPU metric's exemplars)
const LAZY = /node_modules\/(ioredis|@simplewebauthn|openid-client|@opentelemetry\/(?!api\/))/

/** `sidegate start` with `doc`, traced; `during(url)` runs once it is ready; returns the modules it loaded. */
async function traced (
  t: Test, doc: Record<string, unknown>, during: (url: string) => Promise<void>
): Promise<string[]> {
  const W = await workdir(doc, 'sidegate-lazy-')
  const trace = join(W.dir, 'load-trace')
  const p = track(spawn(process.execPath, ['--import', join(ROOT, 'test', 'fixtures', 'load-trace.mjs'), BIN, 'start'], {
    cwd: W.dir, env: { PATH: process.env.PATH, LOAD_TRACE: trace, SIDEGATE_SECRET_KEY: SECRET, SIDEGATE_ADMIN_PASSWORD: 'admin-password-1' }, stdio: 'ignore'
  }))
  t.teardown(() => { p.kill('SIGKILL') })
  const exited = new Promise<number | null>((resolve) => p.once('close', resolve))
  t.ok(await eventually(async () => await request(W.url, '/readyz').then((r) => r.status === 200, () => false), 60_000, 50), 'ready')
  await during(W.url)
  p.kill('SIGINT')
  t.equal(await exited, 0, 'a clean stop')
  return loadedModules(readFileSync(`${trace}.modules`, 'utf8').trim().split('\n'))
}

const signIn = async (url: string): Promise<void> => {
  const s = await login(url, 'admin', 'admin-password-1')
  if ((await request(url, '/api/v1/users/profile/', { headers: { cookie: s.cookie } })).status !== 200) throw new Error('profile')
}

t.test('the embedded store, a sign-in, an authenticated request: no ioredis, no WebAuthn library, no OpenID client, no OpenTelemetry', async (t) => {
  const modules = await traced(t, {}, signIn)
  t.ok(modules.some((m) => m.includes('node_modules/better-sqlite3/')), 'the trace sees the libraries loaded')
  t.same(modules.filter((m) => LAZY.test(m)), [], 'none of the lazily loaded ones')
})

t.test('a Redis store loads ioredis at start; the first passkey ceremony loads @simplewebauthn/server', async (t) => {
  const modules = await traced(t, { redis: { url: redis.url, prefix: `lazy${process.pid}:` } }, async (url) => {
    await signIn(url)
    const r = await post(url, '/login/passkey/options', {}, { host: `localhost:${new URL(url).port}` })
    t.equal(r.status, 200, `passkey sign-in options: ${r.text.slice(0, 200)}`)
  })
  t.ok(modules.some((m) => m.includes('node_modules/ioredis/')), 'ioredis')
  t.ok(modules.some((m) => m.includes('node_modules/@simplewebauthn/server/')), '@simplewebauthn/server')
  t.notOk(modules.some((m) => /node_modules\/@opentelemetry\/(?!api\/)/.test(m)), 'and still no OpenTelemetry (tracing off)')
})

t.test('an OpenID provider configured: openid-client is loaded by the first sign-in through it, not at start', async (t) => {
  const issuer = `http://127.0.0.1:${await freePort()}`
  const doc = { sign_in: { oidc: [{ id: 'corp', issuer, client_id: 'sidegate', client_secret: 'secret', timeout: 1 }] } }
  const modules = await traced(t, doc, async (url) => {
    t.equal((await request(url, '/login')).status, 200, 'the login page (with its button) needs no OpenID client')
    const r = await request(url, '/login/oidc/corp', { headers: { accept: 'application/json' } })
    t.equal(r.status, 503, 'the provider is down: idp_unavailable, after loading the client')
  })
  t.ok(modules.some((m) => m.includes('node_modules/openid-client/')), 'openid-client')
})

/**
 * A real `sidegate start` process through its life: first start on an empty
 * store, the generated secret key, Redis going away and coming back, and
 * SIGTERM with a request in flight.
 */
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { Redis } from 'ioredis'
import { removeDir, tempDir, track } from '../fixtures/cleanup.js'
import { freePort, listenOn, startRedis, type TestRedis } from '../fixtures/redis.js'
import { startEcho, request, post, type Res } from '../fixtures/http.js'
import { ADMIN_PASSWORD, ROOT, SECRET } from '../fixtures/gateway.js'
import { signedHeaders } from '../fixtures/creds.js'
import { Keyring } from '../../src/crypto.js'
import { RedisStore } from '../../src/store/redis/index.js'
import { eventually, sleep } from '../fixtures/wait.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'

const echo = await startEcho()
t.teardown(() => echo.close())

interface Proc {
  url: string
  dir: string
  proc: ChildProcess
  stderr: () => string
  stdout: () => string
  /** resolves with the exit code once the process has exited */
  exited: Promise<number | null>
  stop: (signal?: NodeJS.Signals) => Promise<number | null>
}

const running = new Set<Proc>()
const dirs = new Set<string>()
t.teardown(async () => {
  for (const p of running) await p.stop('SIGKILL')
  for (const d of dirs) removeDir(d)
})

/**
 * Starts `sidegate start` with a gateway.yml in `dir` (a new temp dir by
 * default) and only the environment given (plus PATH). Waits until `wait`
 * answers 200.
 */
async function launch (o: { config: Record<string, unknown>, env?: Record<string, string>, dir?: string, wait?: '/healthz' | '/readyz' }): Promise<Proc> {
  // a port another process took meanwhile: again on another one
  for (let tries = 1; ; tries++) {
    const p = await tryLaunch(o)
    if (p !== null) return p
    if (tries === 3) throw new Error('gateway: its port was taken in three tries')
  }
}

async function tryLaunch (o: { config: Record<string, unknown>, env?: Record<string, string>, dir?: string, wait?: '/healthz' | '/readyz' }): Promise<Proc | null> {
  const port = await freePort()
  const dir = o.dir ?? tempDir('sidegate-life-')
  dirs.add(dir)
  const file = join(dir, 'gateway.yml')
  // no drain delay (SIGTERM semantics are test/process/shutdown.test.ts's)
  // and no metrics listener on the shared port 7080
  const server = { drain_delay: 0, ...(o.config.server as object | undefined) }
  writeFileSync(file, stringify({ listen: { host: '127.0.0.1', port }, log: { level: 'info' }, metrics: { enabled: false }, ...o.config, server }))
  const proc = track(spawn(process.execPath, [join(ROOT, 'bin', 'sidegate.js'), 'start', '--config', file], {
    env: { PATH: process.env.PATH, ...o.env },
    stdio: ['ignore', 'pipe', 'pipe']
  }))
  let out = ''
  let err = ''
  proc.stdout!.on('data', (c: Buffer) => { out += c.toString() })
  proc.stderr!.on('data', (c: Buffer) => { err += c.toString() })
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
  const url = `http://127.0.0.1:${port}`
  const p: Proc = {
    url,
    dir,
    proc,
    stderr: () => err,
    stdout: () => out,
    exited,
    async stop (signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal)
      const code = await exited
      running.delete(p)
      return code
    }
  }
  running.add(p)
  // this process listens on the port (not another one that took it), then answers
  if (!(await listenOn(proc, port))) {
    await p.stop('SIGKILL')
    if (/EADDRINUSE/.test(err)) return null
    throw new Error(`gateway exited ${proc.exitCode}: ${out}${err}`)
  }
  const end = Date.now() + 60_000
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`gateway exited ${proc.exitCode}: ${out}${err}`)
    try {
      if ((await fetch(url + (o.wait ?? '/readyz'))).status === 200) break
    } catch {}
    if (Date.now() > end) { await p.stop('SIGKILL'); throw new Error(`gateway not up: ${out}${err}`) }
    await sleep(50)
  }
  return p
}

async function openStore (url: string, prefix: string, secret = SECRET): Promise<RedisStore> {
  const s = new RedisStore(
    { url, prefix, commandTimeout: 2000, connectTimeout: 2000, cache: { max: 100, ttl: 30 } }, new Keyring(secret)
  )
  await s.connect()
  return s
}

/** Polls `path` until `ok(res)`; the last response, or null when it never matched within `ms`. */
async function until (
  url: string, path: string, ok: (r: Res) => boolean, ms: number, headers: Record<string, string> = {}
): Promise<Res | null> {
  const end = Date.now() + ms
  for (;;) {
    try {
      const r = await request(url, path, { headers })
      if (ok(r)) return r
    } catch {}
    if (Date.now() > end) return null
    await sleep(100)
  }
}

async function login (url: string, password: string, username = 'admin'): Promise<Res> {
  return await post(url, '/api/v1/authentication/auth/', { username, password })
}

/** A bearer token from the token endpoint used once on a protected path: the status. */
async function useBearer (url: string, password: string): Promise<number> {
  const r = await login(url, password)
  if (r.status !== 201) return r.status
  return (await request(url, '/api/v1/users/profile/', { headers: { authorization: `Bearer ${r.json.token}` } })).status
}

t.test('first start on an empty store: Default org and superuser admin with SIDEGATE_ADMIN_PASSWORD', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const g = await launch({ config: { redis: { url: redis.url, prefix: 'life1:' } }, env: { SIDEGATE_SECRET_KEY: SECRET, SIDEGATE_ADMIN_PASSWORD: ADMIN_PASSWORD } })
  const store = await openStore(redis.url, 'life1:')
  t.teardown(() => store.close())
  t.match(await store.orgs.get(DEFAULT_ORG), { id: DEFAULT_ORG, name: 'Default' })
  const admin = await store.users.byUsername('admin')
  t.match(admin, { username: 'admin', is_superuser: true, is_active: true, orgs: { [DEFAULT_ORG]: 'admin' }, default_org: DEFAULT_ORG })
  t.equal(await store.users.count(), 1)

  const r = await login(g.url, ADMIN_PASSWORD)
  t.equal(r.status, 201, 'the password from the environment works at the token endpoint')
  const prof = await request(g.url, '/api/v1/users/profile/', { headers: { authorization: `Bearer ${r.json.token}` } })
  t.equal(prof.status, 200)
  t.equal(prof.json.username, 'admin')
  t.equal((await login(g.url, 'wrong-password')).status, 401)
  t.notOk(g.stderr().includes(ADMIN_PASSWORD), 'a given password is never printed')
  t.notOk(g.stdout().includes(ADMIN_PASSWORD), 'nor logged')
  t.equal((await request(g.url, '/healthz')).status, 200)
  t.equal((await request(g.url, '/readyz')).status, 200)
  t.equal(await g.stop(), 0)

  // A second start on the same store changes nothing, even with another password.
  const g2 = await launch({ config: { redis: { url: redis.url, prefix: 'life1:' } }, env: { SIDEGATE_SECRET_KEY: SECRET, SIDEGATE_ADMIN_PASSWORD: 'other-password-9' } })
  t.equal(await store.users.count(), 1)
  t.equal((await login(g2.url, ADMIN_PASSWORD)).status, 201, 'the first password still works')
  t.equal((await login(g2.url, 'other-password-9')).status, 401)
  t.equal(await g2.stop(), 0)
})

t.test('first start without SIDEGATE_ADMIN_PASSWORD: a generated password printed once to stderr', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const config = { redis: { url: redis.url, prefix: 'life2:' } }
  const g = await launch({ config, env: { SIDEGATE_SECRET_KEY: SECRET } })
  const m = /created superuser "admin" with password: (\S+)/.exec(g.stderr())
  t.ok(m, `stderr names the password: ${g.stderr()}`)
  const pw = m![1]
  t.ok(pw.length >= 16, 'a long random password')
  t.notOk(g.stdout().includes(pw), 'not in the JSON log')
  t.equal((await login(g.url, pw)).status, 201, 'it works')
  t.equal(await g.stop(), 0)

  const g2 = await launch({ config, env: { SIDEGATE_SECRET_KEY: SECRET } })
  t.notMatch(g2.stderr(), /password/, 'not printed again on the next start')
  t.equal((await login(g2.url, pw)).status, 201, 'and still works')
  t.equal(await g2.stop(), 0)
})

t.test('no secret key configured: a 0600 key file beside the config, reused on the next start', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const dir = tempDir('sidegate-key-')
  const config = { redis: { url: redis.url, prefix: 'life3:' } }
  const env = { SIDEGATE_ADMIN_PASSWORD: ADMIN_PASSWORD }
  const g = await launch({ config, env, dir })
  const keyFile = join(dir, 'sidegate.key')
  const st = statSync(keyFile)
  t.equal(st.mode & 0o777, 0o600, 'mode 0600')
  const key = readFileSync(keyFile, 'utf8').trim()
  t.ok(key.length >= 32, 'a long key')
  t.match(g.stdout(), /generated a new secret key/, 'the log says so')
  t.ok(g.stdout().includes(keyFile), 'and where')
  t.notOk(g.stdout().includes(key) || g.stderr().includes(key), 'the key itself is never logged')

  // Encrypted data written under that key, used through the gateway.
  const store = await openStore(redis.url, 'life3:', key)
  t.teardown(() => store.close())
  const admin = (await store.users.byUsername('admin'))!
  const { key: ak, secret } = await store.accessKeys.create(admin.id)
  const pt = await store.privateTokens.create(admin.id)
  const signed = async (url: string): Promise<number> => (await request(url, '/api/v1/users/profile/', { headers: signedHeaders(ak.id, secret, 'GET', '/api/v1/users/profile/') })).status
  t.equal(await signed(g.url), 200)
  t.equal(await g.stop(), 0)

  const raw = new Redis(redis.url)
  t.teardown(() => raw.disconnect())
  for (const k of await raw.keys('life3:*')) {
    const type = await raw.type(k)
    // every kind of value the store writes: strings, sets, hashes, sorted sets, the audit stream
    const v = type === 'string'
      ? (await raw.get(k))!
      : type === 'set'
        ? (await raw.smembers(k)).join(' ')
        : JSON.stringify(type === 'stream' ? await raw.xrange(k, '-', '+') : type === 'hash' ? await raw.hgetall(k) : await raw.zrange(k, '0', '-1'))
    if (v.includes(key)) t.fail(`the secret key is stored in Redis under ${k}`)
  }

  const g2 = await launch({ config, env, dir })
  t.equal(readFileSync(keyFile, 'utf8').trim(), key, 'the same key file, not rewritten')
  t.notMatch(g2.stdout(), /generated a new secret key/)
  t.equal(await signed(g2.url), 200, 'the access-key secret (encrypted at rest) is still readable')
  t.equal((await request(g2.url, '/api/v1/users/profile/', { headers: { authorization: `Token ${pt}` } })).status, 200, 'the private token still works')
  t.equal(await g2.stop(), 0)

  // The same data under another key: the key check refuses the store (never a crash).
  const g3 = await launch({ config, env: { ...env, SIDEGATE_SECRET_KEY: 'a-different-secret-key-that-is-long-enough' }, dir, wait: '/healthz' })
  // the key check runs once Redis answers, which may be after
  // /healthz does: wait for its verdict (a deadline, not a delay)
  t.ok(await eventually(async () => /is not the key of the store/.test(g3.stdout()), 60_000), 'the log says why')
  const r = await request(g3.url, '/api/v1/users/profile/', { headers: signedHeaders(ak.id, secret, 'GET', '/api/v1/users/profile/') })
  t.not(r.status, 200, 'another key cannot verify the signature')
  t.equal(r.status, 503, 'a gateway with another key serves nothing that needs the store')
  t.equal((await request(g3.url, '/readyz')).status, 503, 'and is not ready')
  t.equal((await request(g3.url, '/healthz')).status, 200, 'and the process is still up')
  t.equal(await g3.stop(), 0)
})

t.test('Redis killed: /readyz 503, protected requests 503 store_unavailable fast, /healthz 200; recovers by itself', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const g = await launch({ config: { redis: { url: redis.url, prefix: 'life4:' }, upstream: { url: echo.url } }, env: { SIDEGATE_SECRET_KEY: SECRET, SIDEGATE_ADMIN_PASSWORD: ADMIN_PASSWORD } })
  const store = await openStore(redis.url, 'life4:')
  const admin = (await store.users.byUsername('admin'))!
  const warm = await store.privateTokens.create(admin.id)
  const cold = await store.privateTokens.create((await store.users.create({ username: 'cold', password: 'cold-password', orgs: { [DEFAULT_ORG]: 'user' } })).id)
  await store.close()
  const bearerToken = (await login(g.url, ADMIN_PASSWORD)).json.token
  t.equal((await request(g.url, '/api/v1/x/', { headers: { authorization: `Token ${warm}` } })).status, 200, 'warm: used (and cached) before the outage')
  t.equal((await request(g.url, '/readyz')).status, 200)

  await redis.kill()
  const notReady = await until(g.url, '/readyz', (r) => r.status === 503, 5000)
  t.ok(notReady, '/readyz turns 503')
  t.equal(notReady?.json.code, 'store_unavailable')
  for (const [what, headers] of [
    ['bearer', { authorization: `Bearer ${bearerToken}` }],
    ['private token never seen by this gateway', { authorization: `Token ${cold}` }],
    ['private token cached by this gateway', { authorization: `Token ${warm}` }]
  ] as Array<[string, Record<string, string>]>) {
    const started = Date.now()
    const r = await request(g.url, '/api/v1/x/', { headers })
    t.equal(r.status, 503, `${what}: 503`)
    t.equal(r.json?.code, 'store_unavailable', what)
    t.ok(Date.now() - started < 5000, `${what}: answered within 5 s, no hang (${Date.now() - started} ms)`)
  }
  const tok = await login(g.url, ADMIN_PASSWORD)
  t.equal(tok.status, 503, 'the token endpoint too')
  t.equal(tok.json?.code, 'store_unavailable')
  t.equal((await request(g.url, '/healthz')).status, 200, '/healthz still 200')
  t.equal(g.proc.exitCode, null, 'still running')

  await redis.restart() // same port, empty data
  t.ok(await until(g.url, '/readyz', (r) => r.status === 200, 30_000), 'ready again without a restart')
  // the store came back empty: the gateway bootstrapped it again on reconnect
  let status = 0
  const end = Date.now() + 30_000
  while (Date.now() < end && (status = await useBearer(g.url, ADMIN_PASSWORD)) !== 200) await sleep(100)
  t.equal(status, 200, 'authenticates again')
  t.equal(await g.stop(), 0)
})

t.test('started while Redis is down: listens, /readyz 503, ready once Redis starts', async (t) => {
  const redis: TestRedis = await startRedis()
  t.teardown(() => redis.stop())
  await redis.kill()
  const g = await launch({ config: { redis: { url: redis.url, prefix: 'life5:' } }, env: { SIDEGATE_SECRET_KEY: SECRET, SIDEGATE_ADMIN_PASSWORD: ADMIN_PASSWORD }, wait: '/healthz' })
  const r = await request(g.url, '/readyz')
  t.equal(r.status, 503)
  t.equal(r.json.code, 'store_unavailable')
  // a token with a valid tag (unknown): only Redis could say more, so 503; an untagged one is a 401 without Redis
  t.equal((await request(g.url, '/api/v1/users/profile/', { headers: { authorization: `Token ${new Keyring(SECRET).issue('private token')}` } })).status, 503)
  t.equal((await login(g.url, ADMIN_PASSWORD)).status, 503)
  await sleep(1500)
  t.equal(g.proc.exitCode, null, 'keeps running while Redis is down')
  await redis.restart()
  t.ok(await until(g.url, '/readyz', (r) => r.status === 200, 30_000), 'becomes ready')
  let status = 0
  const end = Date.now() + 30_000
  while (Date.now() < end && (status = await useBearer(g.url, ADMIN_PASSWORD)) !== 200) await sleep(100)
  t.equal(status, 200, 'bootstrapped and authenticating')
  t.equal(await g.stop(), 0)
})

// SIGTERM (drain delay, grace, in-flight requests) is covered by test/process/shutdown.test.ts

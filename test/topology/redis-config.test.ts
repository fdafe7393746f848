/**
 * redis.mode / sentinels / nodes / password / tls, server.drain_delay and
 * metrics.* in src/config/index.ts; the client factory; a real TLS Redis with a password.
 */
import t from 'tap'
import { execFile, execFileSync, spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Cluster } from 'ioredis'
import { parse } from 'yaml'
import { buildConfig, type Config } from '../../src/config/index.js'
import { createRedisClient, describeRedis } from '../../src/store/redis/connect.js'
import { removeDir, tempDir, track } from '../fixtures/cleanup.js'
import { ROOT } from '../fixtures/gateway.js'
import { freePort, listenOn, startRedis } from '../fixtures/redis.js'
import { openTestStore } from '../fixtures/store-contract.js'

const run = promisify(execFile)
const opts = (c: Config) => ({
  url: c.redis.url,
  commandTimeout: c.redis.command_timeout,
  connectTimeout: c.redis.connect_timeout,
  topology: c.redis
})

t.test('redis.mode defaults to standalone; sentinel and cluster need their addresses', async (t) => {
  const d = buildConfig({})
  t.equal(d.redis.mode, 'standalone')
  t.same(d.redis.sentinels, [])
  t.equal(d.redis.tls.enabled, false)
  const s = buildConfig({ redis: { mode: 'sentinel', name: 'main', sentinels: ['10.0.0.1:26379', 'sentinel-b', '[::1]:26380'] } })
  t.same(s.redis.sentinels, [{ host: '10.0.0.1', port: 26379 }, { host: 'sentinel-b', port: 26379 }, { host: '::1', port: 26380 }], 'default port 26379, IPv6 in brackets')
  t.equal(s.redis.name, 'main')
  const c = buildConfig({ redis: { mode: 'cluster', nodes: ['a:7000', 'b'] } })
  t.same(c.redis.nodes, [{ host: 'a', port: 7000 }, { host: 'b', port: 6379 }])

  const bad: Array<[unknown, RegExp]> = [
    [{ redis: { mode: 'replicated' } }, /redis\.mode: must be one of standalone, sentinel, cluster/],
    [{ redis: { mode: 'sentinel' } }, /redis\.sentinels: sentinel mode needs/],
    [{ redis: { mode: 'cluster' } }, /redis\.nodes: cluster mode needs/],
    [{ redis: { sentinels: ['a:1'] } }, /redis\.sentinels: only used with redis\.mode: sentinel/],
    [{ redis: { mode: 'sentinel', sentinels: ['a:1'], nodes: ['b:2'] } }, /redis\.nodes: only used with redis\.mode: cluster/],
    [{ redis: { mode: 'cluster', nodes: ['a:99999'] } }, /redis\.nodes: each entry must be host:port/],
    [{ redis: { mode: 'cluster', nodes: 'a:1' } }, /redis\.nodes: must be a list/],
    [{ redis: { mode: 'cluster', nodes: ['a:1'], db: 2 } }, /redis\.db: Redis Cluster has only database 0/],
    [{ redis: { db: 16 } }, /redis\.db/],
    [{ redis: { mode: 'sentinel', sentinels: ['a'], name: 'has space' } }, /redis\.name/],
    [{ redis: { tls: { enabled: true, verify: false } } }, /redis\.tls\.verify: unknown key/],
    [{ redis: { tls: true } }, /redis\.tls: must be a mapping/],
    [{ redis: { password: 123 } }, /redis\.password: must be a string/],
    [{ redis: { host: 'x' } }, /redis\.host: unknown key/],
    [{ server: { drain_delay: -1 } }, /server\.drain_delay/],
    [{ metrics: { enabled: 'yes' } }, /metrics\.enabled: must be true or false/],
    [{ listen: { port: 9000 }, metrics: { port: 9000 } }, /metrics\.port: must differ from listen\.port/],
    // the URL's database counts like redis.db (ioredis would log ERR DB index is out of range and use 0)
    [{ redis: { url: 'redis://127.0.0.1:6379/99' } }, /^config: redis\.url: the database after the port must be a whole number from 0 to 15, got "99"$/],
    [{ redis: { url: 'redis://127.0.0.1:6379/16' } }, /redis\.url: the database after the port must be a whole number from 0 to 15, got "16"/],
    [{ redis: { url: 'redis://127.0.0.1:6379/one' } }, /redis\.url: the database after the port must be a whole number from 0 to 15, got "one"/],
    [{ redis: { url: 'redis://127.0.0.1:6379/3', db: 5 } }, /redis\.db: 5 differs from the database in redis\.url \(3\)/]
  ]
  for (const [doc, re] of bad) t.throws(() => buildConfig(doc), re, JSON.stringify(doc))
})

t.test('the database in redis.url is redis.db', async (t) => {
  t.equal(buildConfig({ redis: { url: 'redis://127.0.0.1:6379/3' } }).redis.db, 3)
  t.equal(buildConfig({ redis: { url: 'redis://127.0.0.1:6379/3', db: 3 } }).redis.db, 3, 'both, agreeing')
  t.equal(buildConfig({ redis: { url: 'redis://127.0.0.1:6379/' } }).redis.db, 0)
  t.equal(buildConfig({ redis: { url: 'redis://127.0.0.1:6379', db: 7 } }).redis.db, 7)
  t.equal(buildConfig({}, { SIDEGATE_REDIS_URL: 'redis://127.0.0.1:6379/15' }).redis.db, 15, 'from SIDEGATE_REDIS_URL too')
  t.throws(() => buildConfig({}, { SIDEGATE_REDIS_URL: 'redis://127.0.0.1:6379/99' }), /redis\.url: the database/)
})

t.test('a database the server does not have: fatal at start (exit 2), and for the CLI', async (t) => {
  const small = await startRedis({ args: ['--databases', '4'] })
  t.teardown(() => small.stop())
  const dir = tempDir('sidegate-db-')
  t.teardown(() => removeDir(dir))
  const file = join(dir, 'gateway.yml')
  writeFileSync(file, `listen: {host: 127.0.0.1, port: ${await freePort()}}\nmetrics: {enabled: false}\nredis: {url: "${small.url}/9"}\n`)
  const env = { PATH: process.env.PATH, SIDEGATE_SECRET_KEY: 'x'.repeat(40), SIDEGATE_ADMIN_PASSWORD: 'admin-password-1' }
  const start = await run(process.execPath, [join(ROOT, 'bin', 'sidegate.js'), 'start', '--config', file], { env, timeout: 60_000 }).then(() => ({ code: 0, stderr: '' }), (e) => ({ code: e.code as number, stderr: e.stderr as string }))
  t.equal(start.code, 2, 'start exits 2 instead of running on database 0')
  t.match(start.stderr, /^sidegate: cannot select database 9 at redis:\/\/127\.0\.0\.1:\d+\/9 \(prefix sidegate:\): ERR DB index is out of range\n$/, 'one line saying so')
  const cli = await run(process.execPath, [join(ROOT, 'bin', 'sidegate.js'), 'user', 'list', '--config', file], { env, timeout: 60_000 }).then(() => ({ code: 0, stderr: '' }), (e) => ({ code: e.code as number, stderr: e.stderr as string }))
  t.equal(cli.code, 2, 'the CLI too')
  t.match(cli.stderr, /cannot select database 9/)
  const c = await openTestStore({ url: small.url }, 'probe:')
  t.equal(await c.redis.dbsize(), 0, 'nothing was written to database 0')
  await c.close()
})

t.test('password from SIDEGATE_REDIS_PASSWORD; TLS files relative to the config file; drain_delay default', async (t) => {
  const c = buildConfig({ redis: { password: 'from-file', tls: { enabled: true, ca_file: 'certs/ca.pem' } } }, { SIDEGATE_REDIS_PASSWORD: 'from-env' }, '/etc/sidegate/gateway.yml')
  t.equal(c.redis.password, 'from-env', 'env wins, so the password can come from a Secret')
  t.equal(c.redis.tls.ca_file, '/etc/sidegate/certs/ca.pem')
  t.equal(c.redis.tls.reject_unauthorized, true)
  t.equal(c.server.drain_delay, 5)
  t.same(c.metrics, { enabled: true, host: '0.0.0.0', port: 7080, auth: { bearer_token_file: null, username: null, password_file: null } })
})

t.test('the shipped gateway.yml documents and accepts the new keys', async (t) => {
  const doc = parse(readFileSync(join(ROOT, 'gateway.yml'), 'utf8'))
  const c = buildConfig(doc)
  t.equal(c.redis.mode, 'standalone')
  t.equal(c.server.drain_delay, 5)
  t.equal(c.metrics.port, 7080)
  const text = readFileSync(join(ROOT, 'gateway.yml'), 'utf8')
  for (const k of ['mode:', 'sentinels:', 'nodes:', 'password:', 'tls:', 'drain_delay:', 'metrics:']) t.match(text, k)
})

t.test('the factory builds the client the mode asks for', async (t) => {
  const cl = createRedisClient(opts(buildConfig({ redis: { mode: 'cluster', nodes: ['127.0.0.1:7000'], password: 'pw' } })), 'command')
  t.ok(cl instanceof Cluster, 'cluster mode: an ioredis Cluster')
  t.equal((cl as unknown as Cluster).options.enableOfflineQueue, false, 'command client fails fast')
  t.equal((cl as unknown as Cluster).options.redisOptions?.password, 'pw')
  cl.disconnect()
  const sub = createRedisClient(opts(buildConfig({ redis: { mode: 'cluster', nodes: ['127.0.0.1:7000'] } })), 'subscriber')
  t.equal((sub as unknown as Cluster).options.enableOfflineQueue, true, 'the subscriber queues its SUBSCRIBE')
  sub.disconnect()

  const s = createRedisClient(opts(buildConfig({ redis: { mode: 'sentinel', name: 'm1', sentinels: ['127.0.0.1:26379'], password: 'pw', sentinel_password: 'spw' } })), 'command')
  t.same(s.options.sentinels, [{ host: '127.0.0.1', port: 26379 }])
  t.equal(s.options.name, 'm1')
  t.equal(s.options.role, 'master')
  t.equal(s.options.password, 'pw')
  t.equal(s.options.sentinelPassword, 'spw')
  t.equal(s.options.enableOfflineQueue, false)
  s.disconnect()

  const u = createRedisClient(opts(buildConfig({ redis: { url: 'rediss://:inurl@127.0.0.1:6380/3', password: 'override' } })), 'command')
  t.equal(u.options.password, 'override', 'redis.password wins over the URL')
  t.equal(u.options.db, 3)
  t.ok(u.options.tls, 'rediss:// turns TLS on')
  u.disconnect()

  t.throws(() => createRedisClient(opts(buildConfig({ redis: { tls: { enabled: true, ca_file: '/nonexistent/ca.pem' } } })), 'command'), /redis\.tls\.ca_file: cannot read \/nonexistent\/ca\.pem/)
  t.equal(describeRedis(opts(buildConfig({ redis: { url: 'redis://:secret@h:1' } }))), 'redis://:***@h:1')
  t.equal(describeRedis(opts(buildConfig({ redis: { mode: 'sentinel', sentinels: ['a:1', 'b:2'] } }))), 'sentinel mymaster via a:1,b:2')
  t.equal(describeRedis(opts(buildConfig({ redis: { mode: 'cluster', nodes: ['a:1'] } }))), 'cluster a:1')
})

t.test('sidegate start with a bad redis mode: one line, exit 2', async (t) => {
  const dir = tempDir('sidegate-cfg-')
  t.teardown(() => removeDir(dir))
  writeFileSync(join(dir, 'g.yml'), 'redis:\n  mode: sentinel\n')
  const r = await run(process.execPath, [join(ROOT, 'bin', 'sidegate.js'), 'start', '--config', join(dir, 'g.yml')], { env: { PATH: process.env.PATH } }).then(() => ({ code: 0, stderr: '' }), (e) => e)
  t.equal(r.code, 2)
  t.match(r.stderr, /^sidegate: config: redis\.sentinels: sentinel mode needs at least one host:port\n$/)
})

let hasOpenssl = true
try { execFileSync('openssl', ['version'], { stdio: 'ignore' }) } catch { hasOpenssl = false }

t.test('TLS with a private CA and a password, against a real redis-server', { skip: hasOpenssl ? false : 'openssl not installed' }, async (t) => {
  const dir = tempDir('sidegate-tls-')
  const f = (n: string): string => join(dir, n)
  const ssl = async (...args: string[]): Promise<void> => { await run('openssl', args, { cwd: dir }) }
  await ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '1', '-subj', '/CN=sidegate-test-ca')
  await ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=localhost')
  writeFileSync(f('ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n')
  await ssl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('server.crt'), '-days', '1', '-extfile', f('ext'))
  await ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('other.key'), '-out', f('other.crt'), '-days', '1', '-subj', '/CN=other-ca')

  const port = await freePort()
  const proc = track(spawn('redis-server', ['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--tls-cert-file', f('server.crt'), '--tls-key-file', f('server.key'),
    '--tls-ca-cert-file', f('ca.crt'), '--tls-auth-clients', 'no', '--requirepass', 'tls-pass', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' }))
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) await new Promise((resolve) => { proc.once('exit', resolve); proc.kill('SIGKILL') })
    removeDir(dir)
  })
  t.ok(await listenOn(proc, port), `redis-server listens on ${port} (TLS)`)
  for (const redis of [
    { url: `rediss://127.0.0.1:${port}`, password: 'tls-pass', tls: { ca_file: f('ca.crt') } },
    { url: `redis://localhost:${port}`, password: 'tls-pass', tls: { enabled: true, ca_file: f('ca.crt'), servername: 'localhost' } }
  ]) {
    const store = await openTestStore(redis, 'tls:')
    await store.ping()
    const { token } = await store.bearerTokens.issue('u1', 60)
    t.equal((await store.bearerTokens.consume(token))?.user_id, 'u1', `works over TLS: ${redis.url}`)
    await store.close()
  }
  await t.rejects(openTestStore({ url: `rediss://127.0.0.1:${port}`, password: 'tls-pass', connect_timeout: 500, tls: { ca_file: f('other.crt') } }, 'tls:'), 'an untrusted server certificate is refused')

  // A refused certificate can make the socket emit 'error' twice (the server's alert read after the
  // refusal); ioredis listens for the first one only. Unhandled, the second crashed the process
  // (1 to 3 times in 150 connects). Every socket now keeps a listener:
  const wrongCa = opts(buildConfig({ redis: { url: `rediss://127.0.0.1:${port}`, password: 'tls-pass', connect_timeout: 500, tls: { ca_file: f('other.crt') } } }))
  const client = createRedisClient(wrongCa, 'command')
  client.on('error', () => {})
  await t.rejects(client.connect(), 'refused')
  const socket = client.stream
  t.doesNotThrow(() => socket.emit('error', new Error('a second error after the first')), 'a second error on the refused socket is handled, not thrown')
  client.disconnect()
  // and on real connections, as the gateway would retry with a wrong CA
  const uncaught: Error[] = []
  const onUncaught = (err: Error): void => { uncaught.push(err) }
  process.on('uncaughtException', onUncaught)
  t.teardown(() => { process.off('uncaughtException', onUncaught) })
  for (let i = 0; i < 60; i++) await t.rejects(openTestStore({ url: `rediss://127.0.0.1:${port}`, password: 'tls-pass', connect_timeout: 500, tls: { ca_file: f('other.crt') } }, 'tls:'))
  t.same(uncaught.map(String), [], '60 refused TLS connections: no uncaught error')
  await t.rejects(openTestStore({ url: `rediss://127.0.0.1:${port}`, password: 'wrong', tls: { ca_file: f('ca.crt') } }, 'tls:'), 'a wrong password is refused')
})

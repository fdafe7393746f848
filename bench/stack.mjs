/**
 * The system under test, each part in its own process: a private Redis, the
 * upstream, the bare proxy and sidegate from dist/ (production log level,
 * metrics on), plus the credentials the scenarios use, created with the store
 * API from dist/ against the bench's own Redis.
 */
import { spawn } from 'node:child_process'
import http from 'node:http'
import { mkdtempSync, openSync, closeSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { SignJWT, exportJWK, generateKeyPair } from 'jose'
import { ROOT, freePort, sleep, spawnNode, startRedis, stopProc, track, BENCH } from './lib.mjs'

export const SECRET = 'bench-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz'
export const PREFIX = 'bench:'
export const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
export const PUBLIC_PREFIX = '/public/'
export const API_PATH = '/api/v1/items/?limit=20'
export const PUBLIC_PATH = '/public/items/?limit=20'
export const TRUSTED_ISSUER = 'https://issuer.bench.example'

/** `n` service-account-shaped RS256 tokens of one issuer, and the JWKS file that holds its key. */
export async function trustedTokens (dir, n) {
  const { privateKey, publicKey } = await generateKeyPair('RS256')
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench-1', alg: 'RS256', use: 'sig' }
  const jwksFile = join(dir, 'jwks.json')
  writeFileSync(jwksFile, JSON.stringify({ keys: [jwk] }))
  const now = Math.floor(Date.now() / 1000)
  const jwts = []
  for (let i = 0; i < n; i++) {
    jwts.push(await new SignJWT({ 'kubernetes.io': { namespace: 'bench', serviceaccount: { name: `svc-${i}`, uid: `uid-${i}` } } })
      .setProtectedHeader({ alg: 'RS256', kid: 'bench-1' })
      .setIssuer(TRUSTED_ISSUER).setAudience('sidegate').setSubject(`system:serviceaccount:bench:svc-${i}`)
      .setIssuedAt(now).setNotBefore(now).setExpirationTime(now + 7200)
      .sign(privateKey))
  }
  return { jwts, jwksFile }
}

/** gateway.yml's `auth` trusting that issuer: the Bearer path tells sidegate's own tokens from JWTs by shape. */
export const trustedIssuerAuth = (jwksFile) =>
  ({ trusted_issuers: [{ id: 'bench', issuer: TRUSTED_ISSUER, jwks_file: jwksFile, audiences: ['sidegate'], max_lifetime: 7200 }] })

export async function startStack (o = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'sidegate-bench-'))
  const parts = []
  const stopAll = async () => {
    for (const p of parts.reverse()) await p.stop().catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    const redis = await startRedis()
    parts.push(redis)
    const upstream = await spawnNode(join(BENCH, 'upstream.mjs'))
    parts.push(upstream)
    const upstreamUrl = `http://127.0.0.1:${upstream.info.port}`
    const bare = await spawnNode(join(BENCH, 'bare-proxy.mjs'), [upstreamUrl])
    parts.push(bare)
    const trusted = await trustedTokens(dir, 10)
    const gw = await startSidegate({ dir, redisUrl: redis.url, upstreamUrl, logLevel: o.logLevel ?? 'info', nodeArgs: o.nodeArgs ?? [], extra: { auth: trustedIssuerAuth(trusted.jwksFile) } })
    parts.push(gw)
    return {
      dir,
      redis,
      upstreamUrl,
      bareUrl: `http://127.0.0.1:${bare.info.port}`,
      gatewayUrl: gw.url,
      gatewayPid: gw.pid,
      gatewayLog: gw.logFile,
      /** tokens of the issuer the gateway trusts (the trusted_token scenario) */
      jwts: trusted.jwts,
      pids: { redis: redis.pid, upstream: upstream.proc.pid, bare: bare.proc.pid, sidegate: gw.pid },
      stop: stopAll
    }
  } catch (err) {
    await stopAll()
    throw err
  }
}

const mallocEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('MALLOC_')))

/** `sidegate start` from dist/, its JSON log appended to a file (as a container runtime would collect it). */
/** `extra`: more gateway.yml (the rate-limited scenario's second gateway). */
/** `sqlite`: the embedded store in <dir>/<name>.db instead of Redis. */
export async function startSidegate ({ dir, redisUrl, upstreamUrl, logLevel = 'info', nodeArgs = [], root = ROOT, name = 'sidegate', extra = {}, args = [], sqlite = false }) {
  const port = await freePort()
  const metricsPort = await freePort()
  const file = join(dir, `${name}.yml`)
  writeFileSync(file, stringify({
    listen: { host: '127.0.0.1', port },
    upstream: { url: upstreamUrl, public_paths: [PUBLIC_PREFIX] },
    ...(sqlite ? { store: { backend: 'sqlite', path: join(dir, `${name}.db`) } } : { store: { backend: 'redis' }, redis: { url: redisUrl, prefix: PREFIX } }),
    metrics: { host: '127.0.0.1', port: metricsPort },
    // the bench's nginx in decision mode (bench/peers/nginx-decision.mjs) describes the original request
    server: { drain_delay: 0, trusted_proxies: ['127.0.0.1'] },
    log: { level: logLevel },
    ...extra
  }))
  const logFile = join(dir, `${name}.log`)
  const fd = openSync(logFile, 'a')
  const proc = track(spawn(process.execPath, [...nodeArgs, join(root, 'bin', 'sidegate.js'), 'start', '--config', file, ...args], {
    cwd: dir,
    // glibc's malloc settings reach it (the image sets MALLOC_MMAP_THRESHOLD_: compare with and without)
    env: { PATH: process.env.PATH, NODE_ENV: 'production', SIDEGATE_SECRET_KEY: SECRET, SIDEGATE_ADMIN_PASSWORD: 'bench-admin-password', ...mallocEnv() },
    stdio: ['ignore', fd, 'pipe']
  }))
  closeSync(fd)
  let err = ''
  proc.stderr.setEncoding('utf8')
  proc.stderr.on('data', (c) => { err += c; if (err.length > 20_000) err = err.slice(-10_000) })
  const url = `http://127.0.0.1:${port}`
  const end = Date.now() + 15_000
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`sidegate exited ${proc.exitCode}: ${err}`)
    try {
      const r = await fetch(url + '/readyz')
      if (r.status === 200) break
    } catch {}
    if (Date.now() > end) throw new Error(`sidegate not ready after 15 s: ${err}`)
    await sleep(50)
  }
  return {
    url,
    pid: proc.pid,
    logFile,
    logBytes: () => statSync(logFile).size,
    stop: () => stopProc(proc, 'SIGINT')
  }
}

/**
 * A span sink for a gateway with tracing on (`extra: { tracing: { endpoint: sink.url } }`):
 * an OTLP/HTTP endpoint in this process that reads each export and discards it, so the
 * gateway pays the whole cost of tracing (spans, batching, JSON, the POST) and nothing more.
 */
export async function startSpanSink () {
  const server = http.createServer((req, res) => {
    let bytes = 0
    req.on('data', (c) => { bytes += c.length })
    req.on('end', () => { sink.exports++; sink.bytes += bytes; res.writeHead(200, { 'content-type': 'application/json' }).end('{}') })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const sink = {
    url: `http://127.0.0.1:${server.address().port}`,
    exports: 0,
    bytes: 0,
    stop: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()) })
  }
  return sink
}

/** The store API of dist/, on the bench's Redis and prefix: what `sidegate user add` etc. use. */
export async function openStore (redisUrl) {
  const { buildConfig } = await import(join(ROOT, 'dist', 'config', 'index.js'))
  const { Keyring } = await import(join(ROOT, 'dist', 'crypto.js'))
  const { RedisStore } = await import(join(ROOT, 'dist', 'store', 'redis', 'index.js'))
  const c = buildConfig({ redis: { url: redisUrl, prefix: PREFIX }, secret_key: SECRET })
  const store = new RedisStore({
    url: c.redis.url,
    topology: c.redis,
    prefix: PREFIX,
    commandTimeout: 10_000,
    connectTimeout: c.redis.connect_timeout,
    cache: c.auth.cache
  }, new Keyring(SECRET))
  await store.connect()
  return store
}

/** The embedded store of a gateway started with `sqlite` (its file, beside the gateway: WAL lets both use it). */
export async function openSqliteStore (path) {
  const { Keyring } = await import(join(ROOT, 'dist', 'crypto.js'))
  const { SqliteStore } = await import(join(ROOT, 'dist', 'store', 'sqlite', 'index.js'))
  const store = new SqliteStore({ path, busyTimeout: 5000, cache: { max: 0, ttl: 1 } }, new Keyring(SECRET))
  await store.connect()
  return store
}

/**
 * `users` users in the Default org, each with a private token, an access key
 * and a session: connections are spread over them like separate clients.
 */
export async function seedCredentials (store, users = 10) {
  const out = { users: [], tokens: [], keys: [], sessions: [] }
  for (let i = 0; i < users; i++) {
    const u = await store.users.create({ username: `bench-${i}`, password: null, orgs: { [DEFAULT_ORG]: 'user' } })
    out.users.push(u.id)
    out.tokens.push(await store.privateTokens.create(u.id))
    const k = await store.accessKeys.create(u.id)
    out.keys.push({ id: k.key.id, secret: k.secret })
    const s = await store.sessions.create(u.id, 7200)
    out.sessions.push(s.id)
  }
  return out
}

/** Issues `n` one-time bearer tokens (round-robin over the users) into a file, one per line. */
export async function issueBearerTokens (store, userIds, n, file) {
  const tokens = new Array(n)
  const batch = 2000
  for (let i = 0; i < n; i += batch) {
    const part = await Promise.all(Array.from({ length: Math.min(batch, n - i) }, (_, j) =>
      store.bearerTokens.issue(userIds[(i + j) % userIds.length], 3600)))
    for (let j = 0; j < part.length; j++) tokens[i + j] = part[j].token
  }
  writeFileSync(file, tokens.join('\n') + '\n')
  return file
}

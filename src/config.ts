/**
 * Configuration: read gateway.yml once, apply environment overrides, validate
 * every key and derive the names that depend on `names.abbrev`. This is the
 * only module that reads process.env.
 */
import { readFileSync, existsSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { UsageError } from './errors.js'
import { trustedProxies } from './headers.js'

export interface Names {
  abbrev: string
  orgHeader: string
  sessionCookie: string
  legacySessionCookie: string
  csrfCookie: string
  userIdHeader: string
  usernameHeader: string
  authMethodHeader: string
}

export interface Config {
  /** The config file this came from, or null when running on defaults. */
  file: string | null
  listen: { host: string, port: number }
  upstream: { url: string | null, timeout: number, public_paths: string[] }
  names: Names
  redis: { url: string, prefix: string, command_timeout: number, connect_timeout: number } & RedisTopology
  secret_key: string | null
  secret_key_file: string
  admin_password: string | null
  auth: {
    bearer: { ttl: number }
    signature: { clock_skew: number, required_headers: string[], replay_cache: boolean }
    cache: { max: number, ttl: number }
    /** failed passwords per (username, client IP) within `window` seconds before 429; 0 turns it off */
    lockout: { max_failures: number, window: number }
  }
  session: { accept_legacy_cookie: boolean, idle_timeout: number, absolute_timeout: number, cookie_secure: boolean }
  server: { trusted_proxies: string[], drain_delay: number, shutdown_grace: number, body_limit: number, headers_timeout: number, request_timeout: number, max_header_size: number }
  metrics: MetricsConfig
  docs: { enabled: boolean }
  log: { level: string }
}

type Env = Record<string, string | undefined>

// ---- deployment: Redis topologies, metrics listener, drain delay

export type RedisMode = 'standalone' | 'sentinel' | 'cluster'

export interface RedisTls {
  enabled: boolean
  ca_file: string | null
  cert_file: string | null
  key_file: string | null
  servername: string | null
  reject_unauthorized: boolean
}

/** How to reach Redis beyond `url`: the topology, credentials and TLS. */
export interface RedisTopology {
  mode: RedisMode
  /** sentinel mode: the sentinels and the master group name */
  sentinels: Array<{ host: string, port: number }>
  name: string
  /** cluster mode: seed nodes (any subset of the cluster) */
  nodes: Array<{ host: string, port: number }>
  username: string | null
  password: string | null
  sentinel_password: string | null
  db: number
  tls: RedisTls
}

export interface MetricsConfig {
  enabled: boolean
  host: string
  port: number
}

const REDIS_MODES: RedisMode[] = ['standalone', 'sentinel', 'cluster']
const TLS_KEYS = ['enabled', 'ca_file', 'cert_file', 'key_file', 'servername', 'reject_unauthorized']

function hostPorts (r: Reader, key: string, defPort: number): Array<{ host: string, port: number }> {
  return r.list(key, []).map((v) => {
    const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s\[\]]+))(?::(\d{1,5}))?$/.exec(v.trim())
    const port = m?.[3] === undefined ? defPort : Number(m[3])
    if (m === null || port < 1 || port > 65535) throw new UsageError(`config: ${key}: each entry must be host:port, got ${JSON.stringify(v)}`)
    return { host: m[1] ?? m[2], port }
  })
}

function redisTopology (r: Reader, doc: Record<string, any>, base: string): RedisTopology {
  const tlsDoc: unknown = doc.redis?.tls
  if (tlsDoc !== undefined && tlsDoc !== null) {
    if (typeof tlsDoc !== 'object' || Array.isArray(tlsDoc)) throw new UsageError('config: redis.tls: must be a mapping')
    for (const k of Object.keys(tlsDoc)) {
      if (!TLS_KEYS.includes(k)) throw new UsageError(`config: redis.tls.${k}: unknown key (known: ${TLS_KEYS.join(', ')})`)
    }
  }
  const mode = r.str('redis.mode', 'standalone', (v) => REDIS_MODES.includes(v as RedisMode) ? null : `must be one of ${REDIS_MODES.join(', ')}`) as RedisMode
  const sentinels = hostPorts(r, 'redis.sentinels', 26379)
  const nodes = hostPorts(r, 'redis.nodes', 6379)
  const name = r.str('redis.name', 'mymaster', (v) => /^[\w.-]{1,64}$/.test(v) ? null : 'must be 1 to 64 letters, digits and _ . -')
  if (mode === 'sentinel' && sentinels.length === 0) throw new UsageError('config: redis.sentinels: sentinel mode needs at least one host:port')
  if (mode === 'cluster' && nodes.length === 0) throw new UsageError('config: redis.nodes: cluster mode needs at least one host:port')
  if (mode !== 'sentinel' && sentinels.length > 0) throw new UsageError(`config: redis.sentinels: only used with redis.mode: sentinel (mode is ${mode})`)
  if (mode !== 'cluster' && nodes.length > 0) throw new UsageError(`config: redis.nodes: only used with redis.mode: cluster (mode is ${mode})`)
  const db = r.int('redis.db', 0, 0, 15)
  // TLS files, like the key file, are relative to the config file
  const file = (key: string): string | null => { const v = r.optStr(key); return v === null ? null : resolve(base, v) }
  if (mode === 'cluster' && db !== 0) throw new UsageError('config: redis.db: Redis Cluster has only database 0')
  return {
    mode,
    sentinels,
    name,
    nodes,
    username: r.optStr('redis.username'),
    password: r.optStr('redis.password'),
    sentinel_password: r.optStr('redis.sentinel_password'),
    db,
    tls: {
      enabled: r.bool('redis.tls.enabled', false),
      ca_file: file('redis.tls.ca_file'),
      cert_file: file('redis.tls.cert_file'),
      key_file: file('redis.tls.key_file'),
      servername: r.optStr('redis.tls.servername'),
      reject_unauthorized: r.bool('redis.tls.reject_unauthorized', true)
    }
  }
}

function redisSection (r: Reader, doc: Record<string, any>, base: string): Config['redis'] {
  const url = r.str('redis.url', 'redis://127.0.0.1:6379', urlCheck(['redis:', 'rediss:']))
  const topology = redisTopology(r, doc, base)
  // the URL's database (redis://host:6379/3) counts like redis.db; both may be given only if they agree
  const fromUrl = topology.mode === 'standalone' ? urlDb(url) : null
  if (fromUrl !== null && r.has('redis.db') && fromUrl !== topology.db) {
    throw new UsageError(`config: redis.db: ${topology.db} differs from the database in redis.url (${fromUrl}); give one of them`)
  }
  return {
    url,
    prefix: r.str('redis.prefix', 'sidegate:', (v) => /^[\w:.{}-]{1,64}$/.test(v) ? null : 'must be 1 to 64 characters of letters, digits and _ : . { } -'),
    command_timeout: r.int('redis.command_timeout', 2000, 10, 60000),
    connect_timeout: r.int('redis.connect_timeout', 5000, 100, 60000),
    ...topology,
    db: fromUrl ?? topology.db
  }
}

function metricsConfig (r: Reader): MetricsConfig {
  const m = {
    enabled: r.bool('metrics.enabled', true),
    host: r.str('metrics.host', '0.0.0.0'),
    port: r.int('metrics.port', 9090, 0, 65535)
  }
  if (m.enabled && m.port !== 0 && m.port === r.int('listen.port', 8080, 0, 65535)) {
    throw new UsageError(`config: metrics.port: must differ from listen.port (both ${m.port}); metrics have their own listener`)
  }
  return m
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

export function namesFor (abbrev: string): Names {
  const up = abbrev.toUpperCase()
  const low = abbrev.toLowerCase()
  return {
    abbrev: up,
    orgHeader: `X-${up}-ORG`,
    sessionCookie: `${low}_sessionid`,
    legacySessionCookie: 'sessionid',
    csrfCookie: `${low}_csrftoken`,
    userIdHeader: `X-${up}-User-Id`,
    usernameHeader: `X-${up}-Username`,
    authMethodHeader: `X-${up}-Auth-Method`
  }
}

/** Keys whose values are secrets: an error about them never shows the value. */
const SECRET_KEYS = new Set(['secret_key', 'redis.password', 'redis.sentinel_password'])
/** Keys holding URLs that may carry a password (`redis://:pw@host`): shown with it masked. */
const URL_KEYS = new Set(['redis.url', 'upstream.url'])

/** A value as an error message may show it: secrets hidden, URL passwords masked. */
export function shown (key: string, v: unknown): string {
  if (SECRET_KEYS.has(key)) return '(hidden)'
  if (URL_KEYS.has(key) && typeof v === 'string') return JSON.stringify(maskUrl(v))
  return JSON.stringify(v)
}

/** `scheme://user:password@host` → `scheme://user:***@host`; any other value with an `@` has all before it masked. */
export function maskUrl (v: string): string {
  try {
    const u = new URL(v)
    if (u.password !== '') { u.password = '***'; return u.toString() }
  } catch {}
  const at = v.lastIndexOf('@')
  if (at === -1) return v
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(v)?.[0] ?? ''
  return `${scheme}***${v.slice(at)}`
}

/** Reads one typed value from a nested object, failing with the key's dotted name. */
class Reader {
  constructor (private readonly root: Record<string, unknown>) {}

  /** True when the key is given (not absent, not null). */
  has (key: string): boolean {
    const v = this.raw(key)
    return v !== undefined && v !== null
  }

  private raw (key: string): unknown {
    let cur: unknown = this.root
    for (const part of key.split('.')) {
      if (cur === null || cur === undefined) return undefined
      if (typeof cur !== 'object' || Array.isArray(cur)) throw new UsageError(`config: ${key}: parent is not a mapping`)
      cur = (cur as Record<string, unknown>)[part]
    }
    return cur
  }

  str (key: string, def: string, test?: (v: string) => string | null): string {
    const v = this.raw(key) ?? def
    if (typeof v !== 'string') throw new UsageError(`config: ${key}: must be a string, got ${shown(key, v)}`)
    const why = test?.(v)
    if (why) throw new UsageError(`config: ${key}: ${why}, got ${shown(key, v)}`)
    return v
  }

  optStr (key: string): string | null {
    const v = this.raw(key)
    if (v === undefined || v === null || v === '') return null
    if (typeof v !== 'string') throw new UsageError(`config: ${key}: must be a string, got ${shown(key, v)}`)
    return v
  }

  int (key: string, def: number, min: number, max: number): number {
    let v = this.raw(key) ?? def
    if (typeof v === 'string' && /^\d+$/.test(v.trim())) v = Number(v)
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw new UsageError(`config: ${key}: must be a whole number from ${min} to ${max}, got ${shown(key, v)}`)
    }
    return v
  }

  bool (key: string, def: boolean): boolean {
    let v = this.raw(key) ?? def
    if (v === 'true') v = true
    if (v === 'false') v = false
    if (typeof v !== 'boolean') throw new UsageError(`config: ${key}: must be true or false, got ${shown(key, v)}`)
    return v
  }

  list (key: string, def: string[]): string[] {
    const v = this.raw(key) ?? def
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      throw new UsageError(`config: ${key}: must be a list of strings, got ${shown(key, v)}`)
    }
    return v as string[]
  }
}

const KNOWN: Record<string, string[] | null> = {
  listen: ['host', 'port'],
  upstream: ['url', 'timeout', 'public_paths'],
  names: ['abbrev'],
  redis: ['url', 'prefix', 'command_timeout', 'connect_timeout', 'mode', 'sentinels', 'name', 'nodes', 'username', 'password', 'sentinel_password', 'db', 'tls'],
  secret_key: null,
  secret_key_file: null,
  auth: ['bearer', 'signature', 'cache', 'lockout'],
  session: ['accept_legacy_cookie', 'idle_timeout', 'absolute_timeout', 'cookie_secure'],
  server: ['trusted_proxies', 'drain_delay', 'shutdown_grace', 'body_limit', 'headers_timeout', 'request_timeout', 'max_header_size'],
  metrics: ['enabled', 'host', 'port'],
  docs: ['enabled'],
  log: ['level']
}

/** Keys of the mappings one level further down. */
const KNOWN_NESTED: Record<string, string[]> = {
  'auth.bearer': ['ttl'],
  'auth.signature': ['clock_skew', 'required_headers', 'replay_cache'],
  'auth.cache': ['max', 'ttl'],
  'auth.lockout': ['max_failures', 'window']
}

function checkKnownKeys (doc: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(doc)) {
    if (!(k in KNOWN)) throw new UsageError(`config: ${k}: unknown key (known: ${Object.keys(KNOWN).join(', ')})`)
    const sub = KNOWN[k]
    if (sub && v !== null && v !== undefined) {
      if (typeof v !== 'object' || Array.isArray(v)) throw new UsageError(`config: ${k}: must be a mapping`)
      for (const [s, w] of Object.entries(v)) {
        if (!sub.includes(s)) throw new UsageError(`config: ${k}.${s}: unknown key (known: ${sub.join(', ')})`)
        const deeper = KNOWN_NESTED[`${k}.${s}`]
        if (deeper === undefined || w === null || w === undefined) continue
        if (typeof w !== 'object' || Array.isArray(w)) throw new UsageError(`config: ${k}.${s}: must be a mapping`)
        for (const x of Object.keys(w)) {
          if (!deeper.includes(x)) throw new UsageError(`config: ${k}.${s}.${x}: unknown key (known: ${deeper.join(', ')})`)
        }
      }
    }
  }
}

function urlCheck (protocols: string[]) {
  return (v: string): string | null => {
    try {
      const u = new URL(v)
      return protocols.includes(u.protocol) ? null : `must be a ${protocols.join(' or ')} URL`
    } catch { return 'must be a URL' }
  }
}

/** Applies environment overrides onto the parsed document (env wins). */
function applyEnv (doc: Record<string, any>, env: Env): void {
  const set = (path: string, v: string | undefined): void => {
    if (v === undefined || v === '') return
    const parts = path.split('.')
    let cur = doc
    for (const p of parts.slice(0, -1)) cur = (cur[p] ??= {})
    cur[parts[parts.length - 1]] = v
  }
  set('listen.host', env.SIDEGATE_HOST)
  set('listen.port', env.SIDEGATE_PORT)
  set('upstream.url', env.SIDEGATE_UPSTREAM)
  set('redis.url', env.SIDEGATE_REDIS_URL)
  set('secret_key', env.SIDEGATE_SECRET_KEY)
  set('log.level', env.SIDEGATE_LOG_LEVEL)
  set('redis.password', env.SIDEGATE_REDIS_PASSWORD)
}

/**
 * Builds a validated Config from a parsed document. `file` decides where
 * relative paths (the generated secret key file) live.
 */
export function buildConfig (input: unknown, env: Env = {}, file: string | null = null): Config {
  if (input !== null && input !== undefined && (typeof input !== 'object' || Array.isArray(input))) {
    throw new UsageError('config: the file must be a YAML mapping')
  }
  const doc = structuredClone((input ?? {}) as Record<string, unknown>)
  checkKnownKeys(doc)
  applyEnv(doc, env)
  const r = new Reader(doc)
  const base = file ? dirname(file) : process.cwd()

  const abbrev = r.str('names.abbrev', 'SVC', (v) => /^[A-Za-z][A-Za-z0-9]{0,15}$/.test(v) ? null : 'must be 1 to 16 letters or digits, starting with a letter')
  const upstream = r.optStr('upstream.url')
  if (upstream) r.str('upstream.url', '', urlCheck(['http:', 'https:']))
  const secret = r.optStr('secret_key')
  if (secret !== null && secret.length < 32) throw new UsageError('config: secret_key: must be at least 32 characters (use `openssl rand -base64 48`)')
  const idle = r.int('session.idle_timeout', 7200, 1, 31 * 86400)
  const absolute = r.int('session.absolute_timeout', 86400, 1, 365 * 86400)
  if (absolute < idle) throw new UsageError(`config: session.absolute_timeout: must be at least session.idle_timeout (${idle}), got ${absolute}`)
  const required = r.list('auth.signature.required_headers', ['(request-target)', 'date']).map((h) => h.toLowerCase())

  return {
    file,
    listen: { host: r.str('listen.host', '0.0.0.0'), port: r.int('listen.port', 8080, 0, 65535) },
    upstream: {
      url: upstream,
      timeout: r.int('upstream.timeout', 30, 1, 3600),
      public_paths: r.list('upstream.public_paths', []).map((p) => {
        if (!p.startsWith('/')) throw new UsageError(`config: upstream.public_paths: each entry must start with "/", got ${JSON.stringify(p)}`)
        return p
      })
    },
    names: namesFor(abbrev),
    redis: redisSection(r, doc, base),
    secret_key: secret,
    secret_key_file: resolve(base, r.str('secret_key_file', 'sidegate.key')),
    admin_password: env.SIDEGATE_ADMIN_PASSWORD || null,
    auth: {
      bearer: { ttl: r.int('auth.bearer.ttl', 3600, 1, 31 * 86400) },
      signature: {
        clock_skew: r.int('auth.signature.clock_skew', 300, 1, 86400),
        required_headers: required,
        replay_cache: r.bool('auth.signature.replay_cache', false)
      },
      cache: { max: r.int('auth.cache.max', 10000, 0, 10_000_000), ttl: r.int('auth.cache.ttl', 30, 1, 3600) },
      lockout: { max_failures: r.int('auth.lockout.max_failures', 7, 0, 1000), window: r.int('auth.lockout.window', 1800, 1, 7 * 86400) }
    },
    session: {
      accept_legacy_cookie: r.bool('session.accept_legacy_cookie', true),
      // seconds; minimums are low so tests can watch a session expire
      idle_timeout: idle,
      absolute_timeout: absolute,
      cookie_secure: r.bool('session.cookie_secure', false)
    },
    server: {
      drain_delay: r.int('server.drain_delay', 5, 0, 300),
      trusted_proxies: r.list('server.trusted_proxies', []).map((v) => {
        try { trustedProxies([v]) } catch { throw new UsageError(`config: server.trusted_proxies: each entry must be an IP address or a CIDR range (10.0.0.0/8, fd00::/8), got ${JSON.stringify(v)}`) }
        return v.trim()
      }),
      shutdown_grace: r.int('server.shutdown_grace', 10, 0, 600),
      body_limit: r.int('server.body_limit', 8192, 64, 10 * 1024 * 1024),
      headers_timeout: r.int('server.headers_timeout', 10, 1, 600),
      request_timeout: r.int('server.request_timeout', 60, 1, 3600),
      max_header_size: r.int('server.max_header_size', 16384, 1024, 1024 * 1024)
    },
    docs: { enabled: r.bool('docs.enabled', true) },
    metrics: metricsConfig(r),
    log: { level: r.str('log.level', 'info', (v) => LEVELS.includes(v) ? null : `must be one of ${LEVELS.join(', ')}`) }
  }
}

/**
 * The yaml library's message, `<what> at line L, column C:` then a code
 * frame: the first line without its dangling colon, then the frame indented.
 */
export function yamlError (message: string): string {
  const [first, ...frame] = message.split('\n')
  while (frame.length > 0 && frame[0].trim() === '') frame.shift()
  while (frame.length > 0 && frame[frame.length - 1].trim() === '') frame.pop()
  return first.replace(/:\s*$/, '') + frame.map((l) => `\n    ${l}`).join('')
}

/**
 * The database a redis:// URL names (`/3`), or null when it names none; like
 * `redis.db`, 0 to 15.
 */
export function urlDb (url: string): number | null {
  let path: string
  try { path = new URL(url).pathname } catch { return null }
  if (path === '' || path === '/') return null
  const v = path.slice(1)
  if (!/^\d{1,2}$/.test(v) || Number(v) > 15) throw new UsageError(`config: redis.url: the database after the port must be a whole number from 0 to 15, got ${JSON.stringify(decodeURIComponent(v))}`)
  return Number(v)
}

/**
 * Loads the config file named by --config or SIDEGATE_CONFIG. A file that was
 * named explicitly must exist; the default `gateway.yml` is optional.
 */
export function loadConfig (explicit: string | undefined, env: Env = process.env): Config {
  const named = explicit ?? env.SIDEGATE_CONFIG
  const path = resolve(named ?? 'gateway.yml')
  if (!existsSync(path)) {
    if (named) throw new UsageError(`config: file not found: ${path}`)
    return buildConfig({}, env, null)
  }
  let doc: unknown
  try {
    doc = parseYaml(readFileSync(path, 'utf8'))
  } catch (err) {
    throw new UsageError(`config: ${path}: not valid YAML: ${yamlError((err as Error).message)}`)
  }
  return buildConfig(doc, env, path)
}

/**
 * Configuration: read gateway.yml once, apply environment overrides, validate
 * it against the one schema (src/config/schema.ts: types, defaults, bounds and
 * the shipped file's comments), then derive what depends on more than one key.
 * This is the only module that reads process.env.
 */
import { readFileSync, existsSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { UsageError } from '../errors.js'
import { ENV, Schema, type Doc } from './schema.js'
import { HOST_PORT, validate, type Problem } from './validate.js'
import { OTEL_VARIABLES, tracingConfig, type TracingConfig } from './otel.js'
import { COMPAT, type Source } from './compat.js'
import { maskUrl } from '../http/mask.js'
import { leafKeys } from './live.js'
import { cookieDomainProblems, cookieDomainWarnings } from '../http/cookie-domains.js'; import { signInProblems } from './sign-in.js'; import { issuerProblems, resolvedIssuers } from './issuers.js'

export type { Problem } from './validate.js'
export type { TracingConfig } from './otel.js'
export type { Source } from './compat.js'

export interface Names {
  abbrev: string
  /**
   * abbrev JMS or compat jumpserver: JumpServer's wire shapes where
   * they differ (profile fields, the token endpoint's failures)
   */
  jumpserver: boolean
  orgHeader: string
  sessionCookie: string
  legacySessionCookie: string
  csrfCookie: string
  /** the pending second factor (src/auth/mfa.ts), between the password and the code */
  mfaCookie: string
  userIdHeader: string
  usernameHeader: string
  authMethodHeader: string
  /** what a session's or bearer token's sign-in was made with (RFC 8176 amr values, comma-separated) */
  authFactorsHeader: string
  /** the signed identity (identity.jwt) */
  identityHeader: string
}

export type RedisMode = Doc['redis']['mode']
export type RedisTls = Doc['redis']['tls']
export interface HostPort { host: string, port: number }

/** How to reach Redis beyond `url`: the topology, credentials and TLS. */
export type RedisTopology = Omit<Doc['redis'], 'url' | 'prefix' | 'command_timeout' | 'connect_timeout' | 'sentinels' | 'nodes'> & {
  /** sentinel mode: the sentinels and the master group name */
  sentinels: HostPort[]
  /** cluster mode: seed nodes (any subset of the cluster) */
  nodes: HostPort[]
}

export type MetricsConfig = Doc['metrics']

/** The store section with the backend decided (auto resolved) and the path absolute. */
export type StoreConfig = Omit<Doc['store'], 'backend'> & { backend: 'sqlite' | 'redis' }

export type JwtAlgorithm = Doc['identity']['jwt']['algorithm']
/** identity.jwt, with the issuer decided (defaultIssuer when the file leaves it empty). */
export type JwtConfig = Omit<Doc['identity']['jwt'], 'issuer'> & { issuer: string }

/** The validated configuration every module reads: the document, plus what is derived from it. */
export interface Config extends Omit<Doc, 'names' | 'store' | 'redis' | 'identity' | 'tracing'> {
  store: StoreConfig
  identity: Omit<Doc['identity'], 'jwt'> & { jwt: JwtConfig }
  /** The config file this came from, or null when running on defaults. */
  file: string | null
  names: Names
  redis: Pick<Doc['redis'], 'url' | 'prefix' | 'command_timeout' | 'connect_timeout'> & RedisTopology
  /** SIDEGATE_ADMIN_PASSWORD: the first start's admin password (environment only) */
  admin_password: string | null
  /** the tracing section with the OTEL_* environment applied (./config/otel.ts); url null: off */
  tracing: TracingConfig
  /**
   * every leaf key (dotted) → where its value came from: the
   * schema's default, the compat preset, the file or the environment
   */
  sources: Record<string, Source>
}

type Env = Record<string, string | undefined>

/**
 * Every environment variable sidegate reads (all of them here): the
 * overrides, the file's name, the first start's password, OpenTelemetry's.
 */
export const ENV_VARIABLES: readonly string[] = [...ENV.map(([name]) => name), 'SIDEGATE_CONFIG', 'SIDEGATE_ADMIN_PASSWORD', ...OTEL_VARIABLES]

export function namesFor (abbrev: string, jumpserver = false): Names {
  const up = abbrev.toUpperCase()
  const low = abbrev.toLowerCase()
  return {
    abbrev: up,
    jumpserver: jumpserver || up === 'JMS',
    orgHeader: `X-${up}-ORG`,
    sessionCookie: `${low}_sessionid`,
    legacySessionCookie: 'sessionid',
    csrfCookie: `${low}_csrftoken`,
    mfaCookie: `${low}_mfa`,
    userIdHeader: `X-${up}-User-Id`,
    usernameHeader: `X-${up}-Username`,
    authMethodHeader: `X-${up}-Auth-Method`,
    authFactorsHeader: `X-${up}-Auth-Factors`,
    identityHeader: `X-${up}-Identity`
  }
}

/**
 * identity.jwt.issuer when the file leaves it empty: the gateway's own URL as a
 * service beside it reaches it, the same on every replica: http://localhost:<port>
 * when it listens on every interface, else http://<listen.host>:<port>.
 */
export function defaultIssuer (listen: Pick<Doc['listen'], 'host' | 'port'>): string {
  const h = listen.host.trim()
  const host = h === '' || h === '0.0.0.0' || h === '::' || h === '[::]' ? 'localhost' : h.includes(':') && !h.startsWith('[') ? `[${h}]` : h
  return `http://${host}:${listen.port}`
}

function hostPorts (entries: string[], defPort: number): HostPort[] {
  return entries.map((v) => {
    const m = HOST_PORT.exec(v.trim())!
    return { host: m[1] ?? m[2], port: m[3] === undefined ? defPort : Number(m[3]) }
  })
}

/** Rules that involve more than one key; checked once every key is valid on its own. */
function crossKeyProblems (d: Doc, dbGiven: boolean): Problem[] {
  const p: Problem[] = []
  const r = d.redis
  if (d.session.absolute_timeout < d.session.idle_timeout) {
    p.push({ key: 'session.absolute_timeout', message: `must be at least session.idle_timeout (${d.session.idle_timeout}), got ${d.session.absolute_timeout}` })
  }
  if (r.mode === 'sentinel' && r.sentinels.length === 0) p.push({ key: 'redis.sentinels', message: 'sentinel mode needs at least one host:port' })
  if (r.mode === 'cluster' && r.nodes.length === 0) p.push({ key: 'redis.nodes', message: 'cluster mode needs at least one host:port' })
  if (r.mode !== 'sentinel' && r.sentinels.length > 0) p.push({ key: 'redis.sentinels', message: `only used with redis.mode: sentinel (mode is ${r.mode})` })
  if (r.mode !== 'cluster' && r.nodes.length > 0) p.push({ key: 'redis.nodes', message: `only used with redis.mode: cluster (mode is ${r.mode})` })
  if (r.mode === 'cluster' && r.db !== 0) p.push({ key: 'redis.db', message: 'Redis Cluster has only database 0' })
  // the URL's database (redis://host:6379/3) counts like redis.db; both may be given only if they agree
  if (r.mode === 'standalone') {
    const fromUrl = urlDb(r.url)
    if (fromUrl === 'bad') p.push({ key: 'redis.url', message: `the database after the port must be a whole number from 0 to 15, got ${JSON.stringify(decodeURIComponent(new URL(r.url).pathname.slice(1)))}` })
    else if (fromUrl !== null && dbGiven && fromUrl !== r.db) p.push({ key: 'redis.db', message: `${r.db} differs from the database in redis.url (${fromUrl}); give one of them` })
  }
  const tls = d.listen.tls
  if ((tls.cert_file === null) !== (tls.key_file === null)) {
    p.push({ key: tls.cert_file === null ? 'listen.tls.cert_file' : 'listen.tls.key_file', message: 'listen.tls.cert_file and listen.tls.key_file go together' })
  } else if (tls.cert_file === null && tls.client_ca_file !== null) {
    p.push({ key: 'listen.tls.client_ca_file', message: 'mutual TLS needs TLS: set listen.tls.cert_file and key_file too' })
  }
  if (d.metrics.enabled && d.metrics.port !== 0 && d.metrics.port === d.listen.port) {
    p.push({ key: 'metrics.port', message: `must differ from listen.port (both ${d.metrics.port}); metrics have their own listener` })
  }
  if ((d.metrics.auth.username === null) !== (d.metrics.auth.password_file === null)) {
    p.push({ key: d.metrics.auth.username === null ? 'metrics.auth.username' : 'metrics.auth.password_file', message: 'metrics.auth.username and metrics.auth.password_file go together (HTTP Basic)' })
  }
  if (d.admin.enabled && d.admin.port !== 0) {
    if (d.admin.port === d.listen.port) p.push({ key: 'admin.port', message: `must differ from listen.port (both ${d.admin.port}); the admin API has its own listener` })
    else if (d.metrics.enabled && d.admin.port === d.metrics.port) p.push({ key: 'admin.port', message: `must differ from metrics.port (both ${d.admin.port}); the admin API has its own listener` })
  }
  d.access.rules.forEach((r, i) => {
    if (r.paths.length === 0) p.push({ key: `access.rules[${i}].paths`, message: 'needs at least one path' })
    const certs = r.subjects.filter((s) => s.startsWith('cert:')).length
    if (certs > 0 && certs < r.subjects.length) p.push({ key: `access.rules[${i}].subjects`, message: 'cert: subjects (the client certificate) cannot be mixed with others in one rule: write two rules' })
    else if (certs > 0 && d.listen.tls.client_ca_file === null) p.push({ key: `access.rules[${i}].subjects`, message: 'cert: subjects need mutual TLS: set listen.tls.client_ca_file' })
    else if (r.policy === 'bypass' && r.subjects.length > certs) p.push({ key: `access.rules[${i}].subjects`, message: 'a bypass rule looks at no credential, so it cannot name subjects' })
  })
  return [...p, ...cookieDomainProblems(d.session.cookies), ...signInProblems(d.sign_in),
    ...issuerProblems(d.auth.trusted_issuers)]
}

/**
 * The database a redis:// URL names (`/3`): null when it names none, 'bad'
 * when it is not 0 to 15 (like `redis.db`).
 */
export function urlDb (url: string): number | null | 'bad' {
  let path: string
  try { path = new URL(url).pathname } catch { return null }
  if (path === '' || path === '/') return null
  const v = path.slice(1)
  return /^\d{1,2}$/.test(v) && Number(v) <= 15 ? Number(v) : 'bad'
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
 * Applies environment overrides onto the parsed document (env
 * wins; empty variables are ignored); returns the keys they set.
 */
function applyEnv (doc: Record<string, any>, env: Env): Set<string> {
  const set = new Set<string>()
  for (const [name, path] of ENV) {
    const v = env[name]
    if (v === undefined || v === '') continue
    const parts = path.split('.')
    let cur = doc
    for (const p of parts.slice(0, -1)) cur = (cur[p] ??= {})
    cur[parts[parts.length - 1]] = v
    set.add(path)
  }
  return set
}

/** The value at a dotted key of a parsed document, or undefined (a section that is no mapping included). */
function rawAt (doc: unknown, key: string): unknown {
  let cur = doc
  for (const part of key.split('.')) {
    if (typeof cur !== 'object' || cur === null || Array.isArray(cur)) return undefined
    cur = (cur as Record<string, unknown>)[part]
  }
  return cur
}

/**
 * Fills in the compat preset's keys the document leaves unset (a key written
 * in the file, even as its default, or set by the environment wins); a
 * section that is not a mapping is left to validation. Returns the keys filled in.
 */
function applyCompat (doc: Record<string, any>, explicit: (key: string) => boolean): Set<string> {
  const mode = doc.compat
  const preset = typeof mode === 'string' && Object.hasOwn(COMPAT, mode) ? COMPAT[mode as keyof typeof COMPAT] : {}
  const filled = new Set<string>()
  for (const [key, value] of Object.entries(preset)) {
    if (explicit(key)) continue
    const parts = key.split('.')
    let cur: Record<string, any> | undefined = doc
    for (const p of parts.slice(0, -1)) {
      if (cur[p] === undefined || cur[p] === null) cur[p] = {}
      const next: unknown = cur[p]
      cur = typeof next === 'object' && next !== null && !Array.isArray(next) ? next as Record<string, any> : undefined
      if (cur === undefined) break
    }
    if (cur === undefined) continue
    cur[parts[parts.length - 1]] = value
    filled.add(key)
  }
  return filled
}

/** A config that cannot be used: every problem, one line each (`config: <key>: <what is wrong>`); exit 2. */
export class ConfigError extends UsageError {
  constructor (readonly problems: Problem[]) {
    super(problems.map((p) => `config: ${p.key}: ${p.message}`).join('\n'))
  }
}

function fail (problems: Problem[]): never {
  throw new ConfigError(problems)
}

/** A warning about a valid config: a message and the entries it is about. */
export interface ConfigWarning { code: string, msg: string, entries: string[] }

/**
 * What `sidegate start` warns about in a valid config. The gateway logs each
 * with its entries as a field; `sidegate config check` prints the lines of
 * configWarnings below.
 */
export function configWarningList (c: Config): ConfigWarning[] {
  const out: ConfigWarning[] = []
  if (c.upstream.url === null) out.push({ code: 'demo_mode', msg: DEMO_MODE_WARNING, entries: [] })
  const bare = c.upstream.public_paths.filter((p) => !p.endsWith('/'))
  if (c.upstream.url !== null && bare.length > 0) out.push({ code: 'public_path_without_slash', msg: PUBLIC_PATHS_WARNING, entries: bare })
  if (c.auth.signature.clock_skew === 0) out.push({ code: 'signature_freshness_off', msg: NO_FRESHNESS_WARNING, entries: [] })
  if (c.auth.signature.algorithms.includes('hmac-sha1')) out.push({ code: 'signature_sha1_accepted', msg: SHA1_WARNING, entries: [] })
  const tokenRules = c.access.rules.flatMap(
    (r, i) => r.policy === 'two_factor' && r.subjects.some((s) => s.trim().toLowerCase() === 'method:private_token')
      ? [`access.rules[${i}]`]
      : []
  )
  if (tokenRules.length > 0) out.push({ code: 'two_factor_private_token', msg: TWO_FACTOR_TOKEN_WARNING, entries: tokenRules })
  out.push(...cookieDomainWarnings(c.session))
  return out
}

/** The same warnings as one line each. */
export function configWarnings (c: Config): string[] {
  return configWarningList(c).map((w) => w.entries.length === 0 ? w.msg : `${w.msg} (${w.entries.join(', ')})`)
}

export const DEMO_MODE_WARNING = 'no upstream.url: serving the built-in demo API (demo mode); set upstream.url or SIDEGATE_UPSTREAM to protect your service'
export const NO_FRESHNESS_WARNING = 'auth.signature.clock_skew is 0: signed requests are accepted whatever their Date, so a captured request can be replayed forever' +
  ' (JumpServer\'s behaviour, and compat: jumpserver\'s; go back to a skew, with auth.signature.replay_cache and replay_grace, once clients send a current Date: docs/jumpserver.md)'
export const SHA1_WARNING = 'auth.signature.algorithms lists hmac-sha1: accepted for old JumpServer clients; SHA-1 is weak, drop it once they sign with hmac-sha256'
export const TWO_FACTOR_TOKEN_WARNING = 'access.rules: a two_factor rule names method:private_token: every private token passes it, one its user made after signing in with the password alone too' +
  ' (private tokens record no sign-in factors; access keys do, and such a rule admits a key its user made only after two: docs/access-rules.md)'
export const PUBLIC_PATHS_WARNING = 'upstream.public_paths: an entry without a trailing slash covers that exact path and everything under it (/status: /status and /status/…); end it with / to cover only what is under it'

/**
 * Builds a validated Config from a parsed document. `file` decides where
 * relative paths (the generated secret key file, TLS files) live. Throws a
 * UsageError naming every problem, one line each.
 */
export function buildConfig (input: unknown, env: Env = {}, file: string | null = null): Config {
  if (input !== null && input !== undefined && (typeof input !== 'object' || Array.isArray(input))) {
    throw new UsageError('config: the file must be a YAML mapping')
  }
  const raw = structuredClone((input ?? {}) as Record<string, unknown>)
  // what the file itself sets (a key written as null or left empty in YAML is unset)
  const keys = leafKeys().map((k) => k.key)
  const inFile = new Set(keys.filter((k) => { const v = rawAt(raw, k); return v !== undefined && v !== null }))
  // a section that is not a mapping keeps its own error; env values go only into mappings
  let fromEnv = new Set<string>()
  try { fromEnv = applyEnv(raw, env) } catch {}
  const fromCompat = applyCompat(raw, (k) => inFile.has(k) || fromEnv.has(k))
  const { value, problems } = validate(Schema, raw)
  if (problems.length > 0) fail(problems)
  const d = value as Doc
  const rawRedis = raw.redis as Record<string, unknown> | undefined
  const tracing = tracingConfig(d.tracing, env)
  const cross = [...crossKeyProblems(d, rawRedis?.db !== undefined && rawRedis?.db !== null), ...tracing.problems]
  if (cross.length > 0) fail(cross)
  const base = file ? dirname(file) : process.cwd()
  const path = (v: string | null): string | null => v === null ? null : resolve(base, v)
  return {
    ...d,
    file,
    // `[::1]` as a URL writes it: the address is ::1
    listen: {
      ...d.listen,
      host: d.listen.host.replace(/^\[(.*)\]$/, '$1'),
      tls: {
        ...d.listen.tls,
        cert_file: path(d.listen.tls.cert_file),
        key_file: path(d.listen.tls.key_file),
        client_ca_file: path(d.listen.tls.client_ca_file)
      }
    },
    names: namesFor(d.names.abbrev, d.compat === 'jumpserver'),
    store: { ...d.store, backend: storeBackend(d, rawRedis, env), path: resolve(base, d.store.path) },
    redis: {
      ...d.redis,
      db: d.redis.mode === 'standalone' ? (urlDb(d.redis.url) as number | null) ?? d.redis.db : d.redis.db,
      sentinels: hostPorts(d.redis.sentinels, 26379),
      nodes: hostPorts(d.redis.nodes, 6379),
      // TLS files, like the key file, are relative to the config file
      tls: {
        ...d.redis.tls,
        ca_file: path(d.redis.tls.ca_file),
        cert_file: path(d.redis.tls.cert_file),
        key_file: path(d.redis.tls.key_file)
      }
    },
    identity: { ...d.identity, jwt: { ...d.identity.jwt, issuer: d.identity.jwt.issuer ?? defaultIssuer(d.listen) } },
    secret_key_file: resolve(base, d.secret_key_file),
    admin_password: env.SIDEGATE_ADMIN_PASSWORD || null,
    tracing: tracing.value,
    sources: Object.fromEntries(keys.map((k) => [k, fromEnv.has(k) ? 'env' : inFile.has(k) ? 'file' : fromCompat.has(k) ? 'compat' : 'default'])),
    auth: {
      ...d.auth,
      signature: { ...d.auth.signature, required_headers: d.auth.signature.required_headers.map(lower) },
      trusted_issuers: resolvedIssuers(d.auth.trusted_issuers, path)
    }
  }
}

/** The `redis:` section's defaults, computed at the first auto choice. */
let redisDefaults: Record<string, unknown> | undefined

/**
 * store.backend auto: Redis when SIDEGATE_REDIS_URL is set or the file sets a
 * `redis:` key to something else than its default (a deployment that names
 * its Redis), else the embedded store.
 */
function storeBackend (d: Doc, rawRedis: Record<string, unknown> | undefined, env: Env): 'sqlite' | 'redis' {
  if (d.store.backend !== 'auto') return d.store.backend
  if ((env.SIDEGATE_REDIS_URL ?? '') !== '') return 'redis'
  const defaults = redisDefaults ??= (validate(Schema, {}).value as Doc).redis as Record<string, unknown>
  const given = d.redis as Record<string, unknown>
  return Object.keys(rawRedis ?? {}).some((k) => JSON.stringify(given[k]) !== JSON.stringify(defaults[k])) ? 'redis' : 'sqlite'
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
  return configFromText(readFileSync(path, 'utf8'), path, env)
}

/** The Config of gateway.yml's text, read from `path` (a live reload reads the file once and hashes that text). */
export function configFromText (text: string, path: string, env: Env): Config {
  let doc: unknown
  try {
    doc = parseYaml(text)
  } catch (err) {
    throw new UsageError(`config: ${path}: not valid YAML: ${yamlError((err as Error).message)}`)
  }
  return buildConfig(doc, env, path)
}

/** A value at a dotted key of the Config (derived values as the gateway uses them). */
function configAt (c: Config, key: string): unknown {
  let cur: unknown = c
  for (const part of key.split('.')) cur = (cur as Record<string, unknown> | null | undefined)?.[part]
  return cur
}

/**
 * Every key's value in force and where it came from (`sidegate config check`):
 * secrets are never shown (`(hidden)` when set), passwords in URLs are masked.
 */
export function effectiveValues (c: Config): Array<{ key: string, value: unknown, source: Source }> {
  return leafKeys().map(({ key, node }) => {
    let value = configAt(c, key)
    if (node.secret === true && value !== null && value !== undefined) value = '(hidden)'
    else if (node.url === true && typeof value === 'string') value = maskUrl(value)
    return { key, value: value ?? null, source: c.sources[key] ?? 'default' }
  })
}
function lower (h: string): string { return h.toLowerCase() }

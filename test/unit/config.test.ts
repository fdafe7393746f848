/**
 * Configuration: buildConfig/loadConfig defaults, environment overrides,
 * derived names, and one clear error per bad value naming its key. Plus the
 * real CLI refusing a bad file with exit 2.
 */
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parse } from 'yaml'
import { buildConfig, loadConfig, namesFor } from '../../src/config/index.js'
import { UsageError } from '../../src/errors.js'
import { exitCodeOf } from '../../src/cli/exit-codes.js'
import { defaultsYaml } from '../../src/config/defaults.js'
import { Schema } from '../../src/config/schema.js'
import { liveKeys } from '../../src/config/live.js'
import { formatPolicy, parsePolicy } from '../../src/auth/rate-limit-policy.js'
import { ROOT } from '../fixtures/gateway.js'

/** A subtest's `t`. */
type T = Parameters<Parameters<typeof t.test>[0]>[0]

const SECRET = 'x'.repeat(32)

/** Expects a UsageError (exit 2) whose one-line message matches. */
function fails (t: T, fn: () => unknown, message: RegExp, what = message.source): void {
  let err: unknown
  try { fn() } catch (e) { err = e }
  t.type(err, UsageError, what)
  t.equal(exitCodeOf((err as UsageError)?.code ?? ''), 2, `${what}: exit code 2`)
  t.match((err as Error)?.message, message, what)
  t.notMatch((err as Error)?.message ?? '', /\n/, `${what}: one line`)
}

t.test('defaults', async (t) => {
  const c = buildConfig({})
  const { sources, ...rest } = c
  t.ok(Object.values(sources).every((v) => v === 'default'), 'every value from the schema\'s defaults')
  t.same(rest, {
    compat: 'none',
    file: null,
    listen: { host: '::', port: 8080, tls: { cert_file: null, key_file: null, client_ca_file: null, client_auth: 'require' } },
    upstream: { url: null, timeout: 30, public_paths: [] },
    store: { backend: 'sqlite', path: resolve('sidegate.db'), busy_timeout: 250, require_existing: false },
    names: {
      abbrev: 'SVC',
      jumpserver: false,
      orgHeader: 'X-SVC-ORG',
      sessionCookie: 'svc_sessionid',
      legacySessionCookie: 'sessionid',
      csrfCookie: 'svc_csrftoken',
      mfaCookie: 'svc_mfa',
      userIdHeader: 'X-SVC-User-Id',
      usernameHeader: 'X-SVC-Username',
      authMethodHeader: 'X-SVC-Auth-Method',
      authFactorsHeader: 'X-SVC-Auth-Factors',
      identityHeader: 'X-SVC-Identity'
    },
    redis: {
      url: 'redis://127.0.0.1:6379',
      prefix: 'sidegate:',
      command_timeout: 2000,
      connect_timeout: 5000,
      mode: 'standalone',
      sentinels: [],
      name: 'mymaster',
      nodes: [],
      username: null,
      password: null,
      sentinel_password: null,
      db: 0,
      tls: {
        enabled: false,
        ca_file: null,
        cert_file: null,
        key_file: null,
        servername: null,
        reject_unauthorized: true
      }
    },
    secret_key: null,
    secret_key_file: resolve(process.cwd(), 'sidegate.key'),
    admin_password: null,
    auth: {
      bearer: { ttl: 3600, single_use: true },
      signature: { clock_skew: 300, algorithms: ['hmac-sha256', 'hmac-sha512'], required_headers: ['(request-target)', 'date'], replay_cache: false, replay_grace: 0, date_window: 0, max_body: 1048576, require_digest: false },
      keys: { disable_after: 0, check_interval: 3600 },
      trusted_issuers: [],
      cache: { memory_mb: 128, max: 10000, ttl: 300 },
      lockout: { max_failures: 7, window: 1800, address_max_failures: 100, ipv6_prefix: 64 },
      mfa: { required: 'none', pending_ttl: 600 },
      webauthn: { rp_id: '', origins: [], rp_name: 'sidegate' },
      password_checks: {
        concurrency: 4,
        queue: 64,
        per_address: 2,
        per_address_waiting: 8,
        ipv4_prefixes: [24],
        ipv6_prefixes: [56, 48],
        per_prefix: 2,
        per_prefix_waiting: 16,
        reserved: 16,
        known_ttl: 86400
      }
    },
    org: { unknown: 'reject' },
    access: { default_policy: 'one_factor', rules: [], case_insensitive_paths: false },
    rate_limit: { enabled: false, limit: 600, window: 60, methods: { session: null, bearer: null, private_token: null, access_key: null, trusted_token: null }, on_store_error: 'allow' },
    session: {
      accept_legacy_cookie: true,
      idle_timeout: 7200,
      absolute_timeout: 86400,
      login_redirect: true,
      cookie_secure: false,
      cookies: []
    },
    identity: { jwt: { enabled: false, issuer: 'http://localhost:8080', audience: null, ttl: 60, per_request: false, algorithm: 'EdDSA', publish_ahead: 300 }, groups_max_bytes: 1000 },
    sign_in: { password_order: 'local_first', oidc: [], ldap: [] },
    server: {
      trusted_proxies: [],
      shutdown_grace: 10,
      drain_delay: 5,
      body_limit: 8192,
      headers_timeout: 10,
      request_timeout: 60,
      keep_alive_timeout: 65,
      max_header_size: 16384,
      workers: 1
    },
    docs: { enabled: true },
    log: { level: 'info', refusals_per_second: 100 },
    reload: { watch: true },
    audit: { log: true, stream: true, max_len: 100000 },
    metrics: { enabled: true, host: '0.0.0.0', port: 7080, auth: { bearer_token_file: null, username: null, password_file: null } },
    admin: { enabled: false, host: '127.0.0.1', port: 7081 },
    tracing: { url: null, serviceName: 'sidegate', headers: {}, resource: {}, sampler: { name: 'parentbased_always_on', ratio: 1 }, batch: {}, timeoutMs: 10000 }
  })
  t.same(buildConfig(null), c, 'an empty YAML file (null) is all defaults')
  t.same(buildConfig(undefined), c)
})

t.test('the shipped gateway.yml states exactly the defaults', async (t) => {
  const file = join(ROOT, 'gateway.yml')
  const shipped = buildConfig(parse(readFileSync(file, 'utf8')), {}, file)
  const defaults = buildConfig({}, {}, file)
  t.same({ ...shipped, file: null }, { ...defaults, file: null })
  t.equal(shipped.secret_key_file, join(ROOT, 'sidegate.key'), 'secret_key_file is relative to the config file')
})

t.test('the shipped gateway.yml is the file the schema generates (sidegate config defaults)', async (t) => {
  t.equal(readFileSync(join(ROOT, 'gateway.yml'), 'utf8'), defaultsYaml(), 'regenerate with: node bin/sidegate.js config defaults > gateway.yml')
  // every key is shown as a comment and none is set: the file parses to sections without keys
  const yaml = defaultsYaml()
  // each key's own line uncommented (in schema order, at its depth; its description's lines stay comments)
  const leaves = (node: any, depth = 0): Array<[string, number]> => Object.entries(
    node.properties ?? {}
  ).flatMap(([k, v]: [string, any]) =>
    v.type === 'object' ? leaves(v, depth + 1) : [[k, depth] as [string, number]])
  const queue = leaves(Schema)
  const doc = parse(yaml.split('\n').map((l) => {
    const m = /^(\s*)# ([a-z0-9_]+): /.exec(l)
    if (m === null || queue.length === 0 || m[2] !== queue[0][0] || m[1].length !== queue[0][1] * 2) return l
    queue.shift()
    return m[1] + l.slice(m[0].length - m[2].length - 2)
  }).join('\n'))
  t.equal(queue.length, 0, 'every key has its line')
  const setKeys = (o: any): number => Object.values(o ?? {}).reduce((n: number, v) => n + (v === null ? 0 : typeof v === 'object' && !Array.isArray(v) ? setKeys(v) : 1), 0)
  t.equal(setKeys(parse(yaml)), 0, 'the shipped file sets no key')
  // every key of the schema is in the file (uncommented), and nothing else
  const keys = (node: any, prefix = ''): string[] => Object.entries(node.properties ?? {}).flatMap(([k, v]: [string, any]) =>
    v.type === 'object' ? keys(v, `${prefix}${k}.`) : [`${prefix}${k}`])
  const docKeys = (o: any, prefix = ''): string[] => Object.entries(o).flatMap(([k, v]) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? docKeys(v, `${prefix}${k}.`) : [`${prefix}${k}`])
  t.same(docKeys(doc).sort(), keys(Schema).sort())
  t.ok(keys(Schema).length > 40, 'the walk saw the whole schema')
})

t.test('every problem of a file at once, one line each: unknown keys of a mapping first, then its values in schema order', async (t) => {
  let err: unknown
  try {
    buildConfig({ listen: { prot: 1, port: 'x' }, auth: { bearer: { tll: 1 } }, log: { level: 'loud' }, nope: true })
  } catch (e) { err = e }
  t.type(err, UsageError)
  t.equal(exitCodeOf((err as UsageError).code), 2)
  t.same((err as Error).message.split('\n'), [
    'config: nope: unknown key (known: compat, listen, upstream, names, store, redis, secret_key, secret_key_file, auth, org, access, rate_limit, session, identity, server, metrics, tracing, admin, sign_in, docs, log, audit, reload)',
    'config: listen.prot: unknown key (known: host, port, tls)',
    'config: listen.port: must be a whole number from 0 to 65535, got "x"',
    'config: auth.bearer.tll: unknown key (known: ttl, single_use)',
    'config: log.level: must be one of fatal, error, warn, info, debug, trace, silent, got "loud"'
  ])
})

t.test('store.backend auto: Redis when SIDEGATE_REDIS_URL is set or the file names a Redis, the embedded store otherwise', async (t) => {
  t.equal(buildConfig({}).store.backend, 'sqlite', 'nothing said: the embedded store')
  t.equal(buildConfig({ redis: { url: 'redis://127.0.0.1:6379', prefix: 'sidegate:' } }).store.backend, 'sqlite', 'the shipped file\'s redis defaults name no Redis')
  t.equal(buildConfig({ redis: { url: 'redis://10.0.0.5:6379' } }).store.backend, 'redis', 'another url')
  t.equal(buildConfig({ redis: { prefix: 'team-a:' } }).store.backend, 'redis', 'another prefix')
  t.equal(buildConfig({ redis: { mode: 'sentinel', sentinels: ['s:26379'] } }).store.backend, 'redis', 'sentinel mode')
  t.equal(buildConfig({}, { SIDEGATE_REDIS_URL: 'redis://127.0.0.1:6379' }).store.backend, 'redis', 'SIDEGATE_REDIS_URL, even the default one')
  t.equal(buildConfig({ store: { backend: 'sqlite' }, redis: { url: 'redis://10.0.0.5:6379' } }).store.backend, 'sqlite', 'an explicit backend wins')
  t.equal(buildConfig({}, { SIDEGATE_STORE: 'redis' }).store.backend, 'redis', 'SIDEGATE_STORE')
  t.equal(buildConfig({ store: { path: 'data/gw.db' } }, {}, '/etc/sidegate/gateway.yml').store.path, '/etc/sidegate/data/gw.db', 'the path is relative to the file')
  t.throws(() => buildConfig({ store: { backend: 'mysql' } }), /store\.backend: must be one of auto, sqlite, redis, got "mysql"/)
})

t.test('file values are read and typed', async (t) => {
  const c = buildConfig({
    listen: { host: '127.0.0.1', port: '9000' },
    upstream: { url: 'https://svc.internal:8443/base', timeout: 5, public_paths: ['/public/', '/static/'] },
    names: { abbrev: 'jms' },
    redis: { url: 'rediss://:pw@redis:6380/2', prefix: 'sg{1}:' },
    secret_key: SECRET,
    auth: { bearer: { ttl: 60 }, signature: { clock_skew: 30, required_headers: ['(request-target)', 'Date', 'Accept'], replay_cache: 'true' } },
    session: { cookie_secure: true },
    server: { trusted_proxies: ['10.0.0.1'], body_limit: 1024 },
    log: { level: 'debug' }
  }, { SIDEGATE_ADMIN_PASSWORD: 'first-start-pw' })
  t.same(c.listen, { host: '127.0.0.1', port: 9000, tls: { cert_file: null, key_file: null, client_ca_file: null, client_auth: 'require' } })
  t.same(c.upstream, { url: 'https://svc.internal:8443/base', timeout: 5, public_paths: ['/public/', '/static/'] })
  t.equal(c.names.orgHeader, 'X-JMS-ORG', 'abbrev in any case gives the uppercase names')
  t.equal(c.redis.url, 'rediss://:pw@redis:6380/2')
  t.equal(c.redis.prefix, 'sg{1}:')
  t.equal(c.secret_key, SECRET)
  t.equal(c.admin_password, 'first-start-pw')
  t.same(c.auth.signature, { clock_skew: 30, algorithms: ['hmac-sha256', 'hmac-sha512'], required_headers: ['(request-target)', 'date', 'accept'], replay_cache: true, replay_grace: 0, date_window: 0, max_body: 1048576, require_digest: false })
  t.equal(c.auth.bearer.ttl, 60)
  t.equal(c.session.cookie_secure, true)
  t.same(c.server.trusted_proxies, ['10.0.0.1'])
  t.equal(c.server.body_limit, 1024)
  t.equal(c.log.level, 'debug')
  t.equal(buildConfig({ upstream: { url: '' }, secret_key: '' }).upstream.url, null, 'empty strings mean unset')
  t.equal(buildConfig({ upstream: { url: '' }, secret_key: '' }).secret_key, null)
  t.equal(buildConfig({ listen: null }).listen.port, 8080, 'an empty section is all defaults')
})

t.test('environment overrides win over the file', async (t) => {
  const file = { listen: { host: '127.0.0.1', port: 9000 }, upstream: { url: 'http://a:1' }, redis: { url: 'redis://a:1' }, secret_key: SECRET, log: { level: 'warn' } }
  const env = {
    SIDEGATE_HOST: '::',
    SIDEGATE_PORT: '8181',
    SIDEGATE_UPSTREAM: 'http://upstream:3000',
    SIDEGATE_REDIS_URL: 'redis://cache:6390/1',
    SIDEGATE_SECRET_KEY: 'y'.repeat(40),
    SIDEGATE_LOG_LEVEL: 'error'
  }
  const c = buildConfig(file, env)
  t.same(c.listen, { host: '::', port: 8181, tls: { cert_file: null, key_file: null, client_ca_file: null, client_auth: 'require' } })
  t.equal(c.upstream.url, 'http://upstream:3000')
  t.equal(c.redis.url, 'redis://cache:6390/1')
  t.equal(c.secret_key, 'y'.repeat(40))
  t.equal(c.log.level, 'error')
  for (const [k, path, v] of [
    ['SIDEGATE_HOST', 'listen.host', '::1'],
    ['SIDEGATE_PORT', 'listen.port', 1234],
    ['SIDEGATE_UPSTREAM', 'upstream.url', 'https://x.example'],
    ['SIDEGATE_REDIS_URL', 'redis.url', 'redis://r:1'],
    ['SIDEGATE_SECRET_KEY', 'secret_key', 'z'.repeat(32)],
    ['SIDEGATE_LOG_LEVEL', 'log.level', 'silent']
  ] as const) {
    const one = buildConfig({}, { [k]: String(v) })
    const got = path.split('.').reduce((o: any, p) => o[p], one)
    t.equal(got, v, `${k} alone sets ${path}`)
  }
  t.same(buildConfig(file, { SIDEGATE_PORT: '', SIDEGATE_UPSTREAM: '' }).listen.port, 9000, 'empty variables are ignored')
  t.same(buildConfig(file, { SIDEGATE_UPSTREAM: '' }).upstream.url, 'http://a:1')
  t.same(file.listen, { host: '127.0.0.1', port: 9000 }, 'the parsed document is not modified')
})

t.test('namesFor', async (t) => {
  t.same(namesFor('JMS'), {
    abbrev: 'JMS',
    jumpserver: true,
    orgHeader: 'X-JMS-ORG',
    sessionCookie: 'jms_sessionid',
    legacySessionCookie: 'sessionid',
    csrfCookie: 'jms_csrftoken',
    mfaCookie: 'jms_mfa',
    userIdHeader: 'X-JMS-User-Id',
    usernameHeader: 'X-JMS-Username',
    authMethodHeader: 'X-JMS-Auth-Method',
    authFactorsHeader: 'X-JMS-Auth-Factors',
    identityHeader: 'X-JMS-Identity'
  })
  t.same(namesFor('jms'), namesFor('JMS'))
  t.equal(namesFor('Acme2').orgHeader, 'X-ACME2-ORG')
  t.equal(namesFor('Acme2').sessionCookie, 'acme2_sessionid')
})

t.test('one clear error per bad value, naming the key', async (t) => {
  fails(t, () => buildConfig({ listne: {} }), /^config: listne: unknown key \(known: compat, listen, /)
  fails(t, () => buildConfig({ listen: { prot: 1 } }), /^config: listen\.prot: unknown key \(known: host, port, tls\)$/)
  fails(t, () => buildConfig({ auth: { bearer: { tll: 60 } } }), /^config: auth\.bearer\.tll: unknown key \(known: ttl, single_use\)$/, 'a typo one level deeper')
  fails(t, () => buildConfig({ auth: { signature: { clockskew: 60 } } }), /^config: auth\.signature\.clockskew: unknown key/)
  fails(t, () => buildConfig({ auth: { cache: { size: 1 } } }), /^config: auth\.cache\.size: unknown key \(known: memory_mb, max, ttl\)$/)
  fails(t, () => buildConfig({ auth: { bearer: 3600 } }), /^config: auth\.bearer: must be a mapping$/)
  fails(t, () => buildConfig({ listen: 8080 }), /^config: listen: must be a mapping$/)
  fails(t, () => buildConfig({ listen: { port: 'http' } }), /^config: listen\.port: must be a whole number from 0 to 65535, got "http"$/)
  fails(t, () => buildConfig({ listen: { port: 70000 } }), /^config: listen\.port: .*got 70000$/)
  fails(t, () => buildConfig({ listen: { port: -1 } }), /^config: listen\.port: /)
  fails(t, () => buildConfig({ listen: { port: 80.5 } }), /^config: listen\.port: /)
  fails(t, () => buildConfig({}, { SIDEGATE_PORT: 'eighty' }), /^config: listen\.port: .*got "eighty"$/, 'bad port from the environment')
  fails(t, () => buildConfig({ listen: { host: 8080 } }), /^config: listen\.host: must be a string/)
  fails(t, () => buildConfig({ upstream: { url: 'not a url' } }), /^config: upstream\.url: must be a URL, got "not a url"$/)
  fails(t, () => buildConfig({ upstream: { url: 'ftp://files' } }), /^config: upstream\.url: must be a http: or https: URL/)
  fails(t, () => buildConfig({}, { SIDEGATE_UPSTREAM: 'localhost:3000' }), /^config: upstream\.url: /, 'bad upstream from the environment')
  fails(t, () => buildConfig({ upstream: { timeout: 0 } }), /^config: upstream\.timeout: must be a whole number from 1 to 3600/)
  fails(t, () => buildConfig({ upstream: { public_paths: 'public/' } }), /^config: upstream\.public_paths: must be a list of strings/)
  fails(t, () => buildConfig({ upstream: { public_paths: ['public/'] } }), /^config: upstream\.public_paths: each entry must start with "\/"/)
  fails(t, () => buildConfig({ redis: { url: 'http://redis:6379' } }), /^config: redis\.url: must be a redis: or rediss: URL/)
  fails(t, () => buildConfig({}, { SIDEGATE_REDIS_URL: '127.0.0.1:6379' }), /^config: redis\.url: /)
  fails(t, () => buildConfig({ redis: { prefix: 'has space' } }), /^config: redis\.prefix: /)
  fails(t, () => buildConfig({ secret_key: 'short' }), /^config: secret_key: must be at least 32 characters/)
  fails(t, () => buildConfig({}, { SIDEGATE_SECRET_KEY: 'x'.repeat(31) }), /^config: secret_key: must be at least 32 characters/)
  fails(t, () => buildConfig({ secret_key: 12345 }), /^config: secret_key: must be a string/)
  fails(t, () => buildConfig({ names: { abbrev: 'J-MS' } }), /^config: names\.abbrev: must be 1 to 16 letters or digits, starting with a letter, got "J-MS"$/)
  fails(t, () => buildConfig({ names: { abbrev: '1JMS' } }), /^config: names\.abbrev: /)
  fails(t, () => buildConfig({ names: { abbrev: '' } }), /^config: names\.abbrev: /)
  fails(t, () => buildConfig({ names: { abbrev: 'A'.repeat(17) } }), /^config: names\.abbrev: /)
  fails(t, () => buildConfig({ session: { cookie_secure: 'yes' } }), /^config: session\.cookie_secure: must be true or false, got "yes"$/)
  fails(t, () => buildConfig({ auth: { signature: { required_headers: [1] } } }), /^config: auth\.signature\.required_headers: must be a list of strings/)
  fails(t, () => buildConfig({ auth: { bearer: { ttl: 0 } } }), /^config: auth\.bearer\.ttl: /)
  fails(t, () => buildConfig({ server: { body_limit: 10 } }), /^config: server\.body_limit: must be a whole number from 64 to /)
  fails(t, () => buildConfig({ server: { trusted_proxies: '127.0.0.1' } }), /^config: server\.trusted_proxies: must be a list of strings/)
  fails(t, () => buildConfig({ log: { level: 'verbose' } }), /^config: log\.level: must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"$/)
  fails(t, () => buildConfig({}, { SIDEGATE_LOG_LEVEL: 'loud' }), /^config: log\.level: .*got "loud"$/)
  fails(t, () => buildConfig({ server: { trusted_proxies: ['10.0.0.0/33'] } }), /^config: server\.trusted_proxies: each entry must be an IP address or a CIDR range .*got "10\.0\.0\.0\/33"$/)
  fails(t, () => buildConfig({ server: { trusted_proxies: ['proxy.internal'] } }), /^config: server\.trusted_proxies: each entry must be an IP address or a CIDR range/)
  fails(t, () => buildConfig({ server: { trusted_proxies: ['10.0.0.1/8/2'] } }), /^config: server\.trusted_proxies: /)
  fails(t, () => buildConfig({ server: { max_header_size: 100 } }), /^config: server\.max_header_size: must be a whole number from 1024 to 1048576, got 100$/)
  fails(t, () => buildConfig({ server: { workers: 0 } }), /^config: server\.workers: must be a whole number from 1 to 256 or "auto", got 0$/)
  fails(t, () => buildConfig({ server: { workers: 'all' } }), /^config: server\.workers: must be a whole number from 1 to 256 or "auto", got "all"$/)
  fails(t, () => buildConfig({ server: { workers: 2.5 } }), /^config: server\.workers: .*got 2\.5$/)
  fails(t, () => buildConfig(['listen']), /^config: the file must be a YAML mapping$/)
  fails(t, () => buildConfig('listen: 1'), /^config: the file must be a YAML mapping$/)
})

t.test('loadConfig: files, SIDEGATE_CONFIG, missing and invalid files', async (t) => {
  const dir = t.testdir({
    'good.yml': 'listen:\n  port: 9100\nsecret_key_file: keys/sg.key\n',
    'other.yml': 'listen:\n  port: 9200\n',
    'list.yml': '- listen\n- port\n',
    'scalar.yml': 'just a string\n',
    'bad.yml': 'listen:\n  port: [1\n',
    'badkey.yml': 'listen:\n  port: 99999\n',
    'empty.yml': '',
    empty: {}
  })
  const good = loadConfig(join(dir, 'good.yml'), {})
  t.equal(good.file, join(dir, 'good.yml'))
  t.equal(good.listen.port, 9100)
  t.equal(good.secret_key_file, join(dir, 'keys', 'sg.key'), 'relative to the config file')
  t.equal(loadConfig(undefined, { SIDEGATE_CONFIG: join(dir, 'other.yml') }).listen.port, 9200, 'SIDEGATE_CONFIG names the file')
  t.equal(loadConfig(join(dir, 'good.yml'), { SIDEGATE_CONFIG: join(dir, 'other.yml') }).listen.port, 9100, '--config wins over SIDEGATE_CONFIG')
  t.equal(loadConfig(join(dir, 'good.yml'), { SIDEGATE_PORT: '9300' }).listen.port, 9300, 'the environment wins over the file')
  t.equal(loadConfig(join(dir, 'empty.yml'), {}).listen.port, 8080, 'an empty file is all defaults')

  fails(t, () => loadConfig(join(dir, 'nope.yml'), {}), /^config: file not found: .*nope\.yml$/, 'missing --config file')
  fails(t, () => loadConfig(undefined, { SIDEGATE_CONFIG: join(dir, 'gone.yml') }), /^config: file not found: .*gone\.yml$/, 'missing SIDEGATE_CONFIG file')
  // invalid YAML: the parser's message without its dangling colon, then its code frame
  let yamlErr: unknown
  try { loadConfig(join(dir, 'bad.yml'), {}) } catch (e) { yamlErr = e }
  t.type(yamlErr, UsageError, 'invalid YAML')
  t.equal(exitCodeOf((yamlErr as UsageError).code), 2)
  const [first, ...frame] = (yamlErr as Error).message.split('\n')
  t.match(first, /^config: .*bad\.yml: not valid YAML: .+ at line 3, column 1$/, 'what and where, no dangling colon')
  t.ok(frame.some((l) => l === '      port: [1'), `the code frame, indented: ${JSON.stringify(frame)}`)
  t.match(frame[frame.length - 1], /^ +\^$/, 'ending with the caret')
  fails(t, () => loadConfig(join(dir, 'list.yml'), {}), /^config: the file must be a YAML mapping$/, 'a list')
  fails(t, () => loadConfig(join(dir, 'scalar.yml'), {}), /^config: the file must be a YAML mapping$/, 'a scalar')
  fails(t, () => loadConfig(join(dir, 'badkey.yml'), {}), /^config: listen\.port: /, 'bad value in a file')

  // the default ./gateway.yml is optional
  t.chdir(join(dir, 'empty'))
  const none = loadConfig(undefined, {})
  t.equal(none.file, null)
  t.equal(none.listen.port, 8080)
  t.equal(none.secret_key_file, join(dir, 'empty', 'sidegate.key'))
})

t.test('`sidegate start --config bad.yml` exits 2 with one line naming the key', async (t) => {
  const dir = t.testdir({
    'bad.yml': 'listen:\n  port: 99999\n',
    // were it accepted, it would listen on a random port and look for Redis on a closed one
    'typo.yml': 'listen:\n  host: 127.0.0.1\n  port: 0\nredis:\n  url: redis://127.0.0.1:1\nauth:\n  bearer:\n    tll: 60\n',
    'broken.yml': 'listen: [\n'
  })
  const run = (file: string): ReturnType<typeof spawnSync> => spawnSync(process.execPath, [join(ROOT, 'bin', 'sidegate.js'), 'start', '--config', join(dir, file)], {
    env: { PATH: process.env.PATH, SIDEGATE_SECRET_KEY: SECRET },
    encoding: 'utf8',
    timeout: 60_000
  })
  const bad = run('bad.yml')
  t.equal(bad.status, 2, 'exit 2')
  t.equal(bad.stdout, '', 'nothing on stdout')
  t.match(bad.stderr, /^sidegate: config: listen\.port: must be a whole number from 0 to 65535, got 99999\n$/, 'one line on stderr')

  const typo = run('typo.yml')
  t.equal(typo.status, 2)
  t.match(typo.stderr, /^sidegate: config: auth\.bearer\.tll: unknown key \(known: ttl, single_use\)\n$/)

  const broken = run('broken.yml')
  t.equal(broken.status, 2)
  t.match(broken.stderr, /^sidegate: config: .*broken\.yml: not valid YAML: [^\n]*[^:\n]\n( {4}[^\n]*\n)+$/, 'the message, then the code frame')
  t.match(broken.stderr, /\n {4}listen: \[\n/)

  const missing = run('missing.yml')
  t.equal(missing.status, 2)
  t.match(missing.stderr, /^sidegate: config: file not found: .*missing\.yml\n$/)
})

t.test('server.trusted_proxies takes addresses and CIDR ranges, IPv4 and IPv6', async (t) => {
  const c = buildConfig({ server: { trusted_proxies: ['10.0.0.0/8', ' 192.168.1.7 ', 'fd00::/8', '::1'] } })
  t.same(c.server.trusted_proxies, ['10.0.0.0/8', '192.168.1.7', 'fd00::/8', '::1'])
  t.equal(buildConfig({ server: { max_header_size: 8192 } }).server.max_header_size, 8192)
})

t.test('server.workers: a whole number from 1 to 256, or auto; not live', async (t) => {
  t.equal(buildConfig({}).server.workers, 1)
  t.equal(buildConfig({ server: { workers: 4 } }).server.workers, 4)
  t.equal(buildConfig({ server: { workers: '3' } }).server.workers, 3)
  t.equal(buildConfig({ server: { workers: 'auto' } }).server.workers, 'auto')
  t.notOk(liveKeys().includes('server.workers'), 'a reload cannot change it')
})

t.test('config errors never echo a secret: passwords in URLs are masked, secret keys hidden', async (t) => {
  const pw = 'hunter2-Sup3r-Secret'
  const cases: Array<[string, () => unknown, RegExp]> = [
    ['redis.url of the wrong scheme', () => buildConfig({ redis: { url: `http://user:${pw}@redis:6379` } }), /^config: redis\.url: must be a redis: or rediss: URL, got "http:\/\/user:\*\*\*@redis:6379\/?"$/],
    ['redis.url from the environment', () => buildConfig({}, { SIDEGATE_REDIS_URL: `https://:${pw}@redis` }), /^config: redis\.url: .*\*\*\*@redis/],
    ['an unparsable url with a password', () => buildConfig({ redis: { url: `redis//:${pw}@redis:6379` } }), /^config: redis\.url: must be a URL, got "\*\*\*@redis:6379"$/],
    ['upstream.url with credentials', () => buildConfig({ upstream: { url: `ftp://bob:${pw}@files` } }), /^config: upstream\.url: .*bob:\*\*\*@files/],
    ['redis.password not a string', () => buildConfig({ redis: { password: [pw] } }), /^config: redis\.password: must be a string, got \(hidden\)$/],
    ['redis.sentinel_password not a string', () => buildConfig({ redis: { sentinel_password: { pw } } }), /^config: redis\.sentinel_password: must be a string, got \(hidden\)$/],
    ['secret_key not a string', () => buildConfig({ secret_key: [pw, pw] }), /^config: secret_key: must be a string, got \(hidden\)$/],
    ['secret_key too short', () => buildConfig({ secret_key: pw }), /^config: secret_key: must be at least 32 characters/]
  ]
  for (const [what, fn, message] of cases) {
    fails(t, fn, message, what)
    let msg = ''
    try { fn() } catch (e) { msg = (e as Error).message }
    t.notOk(msg.includes(pw), `${what}: the password is not in "${msg}"`)
  }
})

t.test('compat: jumpserver fills in only what the file and the environment leave unset, and says where each value came from', async (t) => {
  const c = buildConfig({ compat: 'jumpserver' })
  t.equal(c.names.abbrev, 'JMS')
  t.equal(c.names.jumpserver, true)
  t.equal(c.auth.bearer.single_use, false)
  t.equal(c.auth.signature.clock_skew, 0)
  t.equal(c.auth.signature.replay_cache, false)
  t.equal(c.org.unknown, 'default')
  t.same(Object.entries(c.sources).filter(([, v]) => v !== 'default'), [
    ['compat', 'file'], ['names.abbrev', 'compat'], ['auth.bearer.single_use', 'compat'], ['auth.signature.clock_skew', 'compat'],
    ['auth.signature.replay_cache', 'compat'], ['org.unknown', 'compat']
  ])
  // a key set explicitly wins, even set to its default; the environment wins over both
  const set = buildConfig({ compat: 'jumpserver', names: { abbrev: 'SVC' }, auth: { bearer: { single_use: true }, signature: { clock_skew: 300, replay_cache: true, replay_grace: 2 } } }, { SIDEGATE_PORT: '9000' })
  t.equal(set.names.abbrev, 'SVC')
  t.equal(set.names.jumpserver, true, 'JumpServer\'s wire shapes with compat, whatever the abbreviation')
  t.equal(set.auth.bearer.single_use, true)
  t.equal(set.auth.signature.clock_skew, 300)
  t.equal(set.auth.signature.replay_cache, true)
  t.equal(set.org.unknown, 'default', 'what the file leaves unset still comes from compat')
  t.match(set.sources, { 'names.abbrev': 'file', 'auth.bearer.single_use': 'file', 'auth.signature.clock_skew': 'file', 'org.unknown': 'compat', 'listen.port': 'env', 'listen.host': 'default' })
  // a section left empty (as the shipped file's, every key a comment) sets nothing
  t.same(buildConfig({ compat: 'jumpserver', auth: null, names: null }).auth.bearer.single_use, false)
  // without the setting nothing changes
  const { sources: s1, ...none } = buildConfig({ compat: 'none' })
  const { sources: s2, ...defaults } = buildConfig({})
  t.same({ ...none, compat: 'none' }, defaults)
  t.equal(s1.compat, 'file')
  t.equal(s2.compat, 'default')
  fails(t, () => buildConfig({ compat: 'jumpservr' }), /^config: compat: must be one of none, jumpserver, got "jumpservr"/)
})

t.test('sign_in: ids unique across providers, a base and {username} to search, ldap:// or ldaps:// servers only, one password source', async (t) => {
  const dir = (over: Record<string, unknown> = {}): Record<string, unknown> => ({ id: 'corp', urls: ['ldaps://dc1.example.com'], users: { base: 'dc=example,dc=com' }, ...over })
  const ok = buildConfig({ sign_in: { ldap: [dir(), dir({ id: 'other', start_tls: true, urls: ['ldap://dc2.example.com:389'] })] } })
  t.match(ok.sign_in.ldap[0], { provision: 'create', timeout: 5, retry_after: 30, pool: 4, attributes: { id: 'entryUUID', username: 'uid' }, groups: { filter: '(member={dn})', nested: true } })
  t.equal(ok.sign_in.password_order, 'local_first')
  const problems = (doc: Record<string, unknown>): string => { try { buildConfig(doc); return '' } catch (err) { return (err as Error).message } }
  t.match(problems({ sign_in: { ldap: [dir(), dir()] } }), /sign_in\.ldap\[1\]\.id: "corp" is taken by sign_in\.ldap\[0\]\.id/)
  t.match(problems({ sign_in: { ldap: [dir({ id: 'Corp' })] } }), /sign_in\.ldap\[0\]\.id: must be 1 to 64 lowercase letters/)
  t.match(problems({ sign_in: { ldap: [dir({ urls: ['http://dc1.example.com'] })] } }), /sign_in\.ldap\[0\]\.urls: must be a ldap: or ldaps: URL/)
  t.match(problems({ sign_in: { ldap: [dir({ urls: ['ldap://dc1/dc=x'] })] } }), /must name a server only/)
  t.match(problems({ sign_in: { ldap: [dir({ urls: [] })] } }), /sign_in\.ldap\[0\]\.urls: needs at least one server/)
  t.match(problems({ sign_in: { ldap: [dir({ users: { base: '' } })] } }), /sign_in\.ldap\[0\]\.users\.base: is required/)
  t.match(problems({ sign_in: { ldap: [dir({ users: { base: 'dc=x', filter: '(uid=alice)' } })] } }), /users\.filter: must contain \{username\}/)
  t.match(problems({ sign_in: { ldap: [dir({ start_tls: true })] } }), /start_tls: StartTLS is for ldap:\/\/ servers/)
  t.match(problems({ sign_in: { ldap: [dir({ bind_dn: 'cn=x', bind_password: 'a', bind_password_file: '/f' })] } }), /bind_password: give bind_password or bind_password_file, not both/)
  t.match(problems({ sign_in: { ldap: [dir({ bind_password: 'a' })] } }), /bind_dn: a bind password needs bind_dn/)
  t.match(problems({ sign_in: { ldap: [dir({ orgs: [{ group: 'eng', org: 'not-a-uuid' }] })] } }), /orgs\[0\]\.org: must be an org id/)
  t.match(problems({ sign_in: { ldap: [dir({ provision: 'always' })] } }), /provision: must be one of link, create, off/)
  t.match(problems({ sign_in: { ldap: [dir()], oidc: [{ id: 'corp', issuer: 'https://idp.example.com', client_id: 'x', client_secret: 's' }] } }), /sign_in\.oidc\[0\]\.id: "corp" is taken by sign_in\.ldap\[0\]\.id|sign_in\.ldap\[0\]\.id: "corp" is taken by sign_in\.oidc\[0\]\.id/, 'ids unique across oidc and ldap')
  t.notMatch(problems({ sign_in: { ldap: [dir({ bind_password: 'hunter2-secret', bind_dn: null, urls: [] })] } }), /hunter2/, 'a password never in a message')
})

t.test('a rate limit as text (rate_limit.methods, `sidegate limit set`): within 1 to 100000 requests per 1 s to 1 day', async (t) => {
  const cases: Array<[string, { limit: number, window: number } | null]> = [
    ['100/60s', { limit: 100, window: 60 }],
    ['100/60', { limit: 100, window: 60 }],
    ['5/s', { limit: 5, window: 1 }],
    [' 7 / 30 m ', { limit: 7, window: 1800 }],
    ['1000/1h', { limit: 1000, window: 3600 }],
    ['1/1d', { limit: 1, window: 86_400 }],
    ['1/86400', { limit: 1, window: 86_400 }],
    ['100000/1', { limit: 100_000, window: 1 }],
    ['100001/1', null],
    ['0/1', null],
    ['1/0', null],
    ['1/86401', null],
    ['1/2d', null],
    ['1/1M', null],
    ['1/1x', null],
    ['1', null],
    ['', null]
  ]
  for (const [spec, want] of cases) t.same(parsePolicy(spec), want, JSON.stringify(spec))
  t.equal(formatPolicy({ limit: 5, window: 60 }), '5/60s', 'written back in seconds')
  t.throws(() => buildConfig({ secret_key: 'x'.repeat(32), rate_limit: { methods: { bearer: '0/1' } } }),
    /rate_limit\.methods\.bearer: must be <requests>\/<window>, e\.g\. "100\/60s"/)
})

/**
 * `sidegate config check|defaults|schema` over the real binary: exit codes,
 * output, the shipped gateway.yml; the JSON Schema checked by an independent
 * validator (ajv, draft 2020-12, strict) against the shipped file, bad files
 * and sidegate's own verdicts; the warning `check` prints is the one a start
 * logs.
 */
import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { parse, stringify } from 'yaml'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { buildConfig, configWarnings } from '../../src/config/index.js'
import { createLogger } from '../../src/observability/log.js'
import { createGateway } from '../../src/pipeline/server.js'
import { CHECKS } from '../../src/config/validate.js'
import { CHECK_KEYWORDS } from '../../src/config/json-schema.js'
import { removeDir, tempDir } from '../fixtures/cleanup.js'
import { cliIn } from '../fixtures/procs.js'
import { ROOT, SECRET } from '../fixtures/gateway.js'
import { sqliteStore } from '../fixtures/sqlite-store.js'

const dir = tempDir('sidegate-config-')
t.teardown(() => removeDir(dir))
const SHIPPED = readFileSync(join(ROOT, 'gateway.yml'), 'utf8')

function file (name: string, text: string): string {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

t.test('config defaults prints the shipped gateway.yml, byte for byte', async (t) => {
  const r = await cliIn(dir, ['config', 'defaults'])
  t.equal(r.code, 0, r.stderr)
  t.equal(r.stdout, SHIPPED)
  t.equal(r.stderr, '')
})

t.test('config schema prints a JSON Schema (2020-12) an independent validator compiles in strict mode', async (t) => {
  const r = await cliIn(dir, ['config', 'schema'])
  t.equal(r.code, 0, r.stderr)
  t.equal(r.stderr, '')
  const schema = JSON.parse(r.stdout)
  t.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema')
  // strict: an unknown keyword (one of sidegate's own left in) would throw here
  const ajv = new Ajv2020({ strict: true, allErrors: true })
  const valid = ajv.compile(schema)
  t.equal(valid(parse(SHIPPED)), true, `the shipped gateway.yml is valid: ${ajv.errorsText(valid.errors)}`)
  t.equal(valid({}), true, 'every key is optional')
  t.equal(valid(null), false, 'not a mapping')

  /** Documents and whether sidegate takes them: the schema must agree with buildConfig on each. */
  const cases: Array<[string, unknown]> = [
    ['a full document', { listen: { host: '127.0.0.1', port: 9000 }, upstream: { url: 'https://app:8443', timeout: 10, public_paths: ['/status/'] }, redis: { mode: 'sentinel', sentinels: ['s1:26379', '[::1]:26380', 's3'], name: 'main', password: 'pw' }, secret_key: 'k'.repeat(40), auth: { lockout: { max_failures: 0 } }, log: { level: 'debug' } }],
    ['an unknown top-level key', { listn: { port: 1 } }],
    ['an unknown nested key', { listen: { prot: 1 } }],
    ['port out of range', { listen: { port: 99999 } }],
    ['port not a number', { listen: { port: 'eighty' } }],
    ['port a fraction', { listen: { port: 80.5 } }],
    ['a section not a mapping', { listen: 8080 }],
    ['an unknown redis mode', { redis: { mode: 'clustered' } }],
    ['an unknown log level', { log: { level: 'verbose' } }],
    ['abbrev starting with a digit', { names: { abbrev: '9SVC' } }],
    ['abbrev JMS', { names: { abbrev: 'JMS' } }],
    ['abbrev too long', { names: { abbrev: 'A'.repeat(17) } }],
    ['a public path without a leading slash', { upstream: { public_paths: ['status'] } }],
    ['public paths not a list', { upstream: { public_paths: '/status' } }],
    ['an upstream that is not http', { upstream: { url: 'ftp://files' } }],
    ['an upstream left empty', { upstream: { url: '' } }],
    ['an upstream null', { upstream: { url: null } }],
    ['a redis URL that is http', { redis: { url: 'http://127.0.0.1:6379' } }],
    ['a rediss URL', { redis: { url: 'rediss://:pw@cache:6380' } }],
    ['a secret key too short', { secret_key: 'short' }],
    ['a secret key left empty', { secret_key: '' }],
    ['a secret key of 32 characters', { secret_key: 'x'.repeat(32) }],
    ['a sentinel without a port', { redis: { mode: 'sentinel', sentinels: ['10.0.0.1'] } }],
    ['a sentinel with port 0', { redis: { mode: 'sentinel', sentinels: ['10.0.0.1:0'] } }],
    ['a sentinel with port 70000', { redis: { mode: 'sentinel', sentinels: ['10.0.0.1:70000'] } }],
    ['a sentinel as a URL', { redis: { mode: 'sentinel', sentinels: ['redis://10.0.0.1:26379'] } }],
    ['a prefix with a space', { redis: { prefix: 'side gate:' } }],
    ['a prefix with a hash tag', { redis: { prefix: 'sg{1}:' } }],
    ['a group name with a slash', { redis: { mode: 'sentinel', sentinels: ['a:1'], name: 'a/b' } }],
    ['trusted proxies: CIDRs and addresses', { server: { trusted_proxies: ['10.0.0.0/8', 'fd00::/8', '127.0.0.1'] } }],
    ['trusted proxies: a host name', { server: { trusted_proxies: ['proxy.local'] } }],
    ['a boolean that is a number', { docs: { enabled: 1 } }],
    ['a list of numbers', { auth: { signature: { required_headers: [1, 2] } } }],
    ['cache max at its bound', { auth: { cache: { max: 10_000_000 } } }],
    ['cache ttl 0', { auth: { cache: { ttl: 0 } } }]
  ]
  for (const [what, doc] of cases) {
    let sidegate = true
    try { buildConfig(doc) } catch { sidegate = false }
    t.equal(valid(doc), sidegate, `${what}: the schema says ${String(valid(doc))}, sidegate ${String(sidegate)}`)
  }
  t.ok(cases.some(([, d]) => !valid(d)) && cases.some(([, d]) => valid(d)), 'both verdicts occur')
})

t.test('every value check of the config has its JSON Schema counterpart', async (t) => {
  t.same(Object.keys(CHECK_KEYWORDS).sort(), Object.keys(CHECKS).sort())
  const samples: Record<string, string[]> = {
    httpUrl: ['http://a', 'https://a:1/x', 'HTTP://A', 'http:/a', 'ftp://a', 'a', 'http://', 'http:'],
    redisUrl: ['redis://a', 'rediss://:p@a:1/2', 'http://a', 'redis:/', 'redis'],
    abbrev: ['A', 'JMS', 'a1b2', '1a', 'A_B', ''],
    absolutePath: ['/', '/x', 'x', ''],
    hostPort: ['a', 'a:1', '[::1]', '[::1]:65535', 'a:65536', 'a:0', 'a:b', 'a:1:2', ' a:1 '],
    groupName: ['mymaster', 'a.b-c_d', 'a/b', ''],
    prefix: ['sidegate:', 'sg{1}:', 'a b', ''],
    secretKey: ['x'.repeat(32), 'x'.repeat(31)],
    ipOrCidr: ['10.0.0.0/8', '::1', 'fd00::/8', 'proxy', '10.0.0.1/8/8']
  }
  const ajv = new Ajv2020({ strict: true })
  for (const [name, values] of Object.entries(samples)) {
    const valid = ajv.compile({ type: 'string', ...CHECK_KEYWORDS[name] })
    for (const v of values) t.equal(valid(v), CHECKS[name](v) === null, `${name} ${JSON.stringify(v)}`)
  }
})

/** config check's text before its list of values (every key, its value and where it came from) */
const head = (stdout: string): string => stdout.slice(0, stdout.indexOf('values (source: default, compat, file or env):\n'))
/** config check --json without its values */
const withoutValues = (stdout: string): unknown => { const { values, ...rest } = JSON.parse(stdout); return rest }

t.test('config check: ok with the file, exit 0; needs no secret key and no Redis', async (t) => {
  const good = file('good.yml', stringify({ listen: { port: 9000 }, upstream: { url: 'http://127.0.0.1:3000' }, redis: { url: 'redis://127.0.0.1:1' } }))
  const r = await cliIn(dir, ['config', 'check', '--config', good])
  t.equal(r.code, 0, r.stderr)
  t.equal(head(r.stdout), `ok: ${good}\n`)
  t.equal(r.stderr, '')
  const shipped = await cliIn(dir, ['config', 'check', '--config', join(ROOT, 'gateway.yml')])
  t.equal(shipped.code, 0, shipped.stderr)
  const none = await cliIn(tempDir('sidegate-empty-'), ['config', 'check'])
  t.equal(none.code, 0, none.stderr)
  t.match(none.stdout, /^ok: \(no config file: the defaults\)\nwarning: no upstream\.url: .*\(demo mode\)/, 'no gateway.yml here: the defaults are checked (the demo mode)')
  const viaEnv = await cliIn(dir, ['config', 'check'], { env: { SIDEGATE_CONFIG: good } })
  t.equal(head(viaEnv.stdout), `ok: ${good}\n`, 'SIDEGATE_CONFIG names the file')
})

t.test('config check: every problem, one line each, exit 2', async (t) => {
  const bad = file('bad.yml', stringify({ listen: { port: 99999 }, lisen: {}, redis: { mode: 'clustered' }, names: { abbrev: '9' } }))
  const r = await cliIn(dir, ['config', 'check', '--config', bad])
  t.equal(r.code, 2)
  t.equal(r.stdout, '')
  const lines = r.stderr.trimEnd().split('\n')
  t.equal(lines.length, 4, r.stderr)
  t.match(lines[0], /^sidegate: config: /)
  for (const key of ['listen.port', 'lisen', 'redis.mode', 'names.abbrev']) t.ok(lines.some((l) => l.includes(`config: ${key}: `)), `names ${key}`)

  const json = await cliIn(dir, ['config', 'check', '--config', bad, '--json'])
  t.equal(json.code, 2)
  t.equal(json.stderr.trimEnd().split('\n').length, 1, 'one JSON line')
  const j = JSON.parse(json.stderr)
  t.equal(j.code, 'bad_request')
  t.same(j.problems.map((p: { key: string }) => p.key).sort(), ['lisen', 'listen.port', 'names.abbrev', 'redis.mode'])

  const cross = await cliIn(dir, ['config', 'check', '--config', file('cross.yml', stringify({ session: { idle_timeout: 600, absolute_timeout: 60 } }))])
  t.equal(cross.code, 2, 'rules across keys too')
  t.match(cross.stderr, /config: session\.absolute_timeout: must be at least session\.idle_timeout/)

  const hosts = await cliIn(dir, ['config', 'check', '--config', file('hosts.yml', stringify({
    access: { rules: [{ paths: ['/**'], hosts: ['*.10.0.0.1', 'App.example.com'], subjects: [`group:${'g'.repeat(129)}`], policy: 'deny' }] }
  }))])
  t.equal(hosts.code, 2, 'a rule\'s hosts and group subjects')
  t.match(hosts.stderr, /config: access\.rules\[0\]\.hosts: a wildcard over an IP address matches nothing/)
  t.match(hosts.stderr, /config: access\.rules\[0\]\.subjects: group: each part: 1 to 128 characters/)

  const env = await cliIn(dir, ['config', 'check', '--config', file('fine.yml', 'listen:\n  port: 8080\n')], { env: { SIDEGATE_PORT: 'eighty' } })
  t.equal(env.code, 2, 'environment overrides are checked as start would apply them')
  t.match(env.stderr, /config: listen\.port: must be a whole number/)

  const yaml = await cliIn(dir, ['config', 'check', '--config', file('broken.yml', 'listen:\n  port: [8080\n')])
  t.equal(yaml.code, 2)
  t.match(yaml.stderr, /not valid YAML: .*line \d+, column \d+/)
  const missing = await cliIn(dir, ['config', 'check', '--config', join(dir, 'nope.yml')])
  t.equal(missing.code, 2)
  t.match(missing.stderr, /^sidegate: config: file not found: /)
})

t.test('config check: session.cookies that cannot be used, exit 2, each naming its key (docs/sso.md)', async (t) => {
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['a public suffix', { domain: 'co.uk', portal_url: 'https://auth.co.uk' }, /config: session\.cookies\[0\]\.domain: is a public suffix/],
    ['a private public suffix', { domain: 'github.io', portal_url: 'https://auth.github.io' }, /config: session\.cookies\[0\]\.domain: is a public suffix/],
    ['an IP address', { domain: '192.0.2.1', portal_url: 'https://192.0.2.1' }, /config: session\.cookies\[0\]\.domain: must be a domain name, not an IP address/],
    ['a portal over http', { domain: 'example.com', portal_url: 'http://auth.example.com' }, /config: session\.cookies\[0\]\.portal_url: must be an https URL/],
    ['a portal elsewhere', { domain: 'example.com', portal_url: 'https://auth.example.net' }, /config: session\.cookies\[0\]\.portal_url: its host auth\.example\.net is not example\.com nor under it/]
  ]
  for (const [what, entry, want] of cases) {
    const r = await cliIn(dir, ['config', 'check', '--config', file('sso.yml', stringify({ session: { cookies: [entry] } }))])
    t.equal(r.code, 2, `${what}: exit 2`)
    t.match(r.stderr, want, what)
  }
  const plain = await cliIn(dir, ['config', 'check', '--config', file('sso-ok.yml', stringify({ upstream: { url: 'http://127.0.0.1:1' }, session: { cookies: [{ domain: 'example.com', portal_url: 'https://auth.example.com' }] } }))])
  t.equal(plain.code, 0, plain.stderr)
  t.match(plain.stdout, /warning: session\.cookies with session\.cookie_secure false: .* \(session\.cookies\[0\]\)/, 'usable, with the warning a start logs')
  const secure = await cliIn(dir, ['config', 'check', '--config', file('sso-secure.yml', stringify({ upstream: { url: 'http://127.0.0.1:1' }, session: { cookie_secure: true, cookies: [{ domain: 'example.com', portal_url: 'https://auth.example.com' }] } }))])
  t.notMatch(secure.stdout, /warning: session\.cookies/, 'none with cookie_secure')
})

t.test('config check: the warnings a start would log, exit 0', async (t) => {
  const doc = { upstream: { url: 'http://127.0.0.1:1', public_paths: ['/status', '/static/', '/health'] } }
  const path = file('warn.yml', stringify(doc))
  const r = await cliIn(dir, ['config', 'check', '--config', path])
  t.equal(r.code, 0, r.stderr)
  const lines = head(r.stdout).trimEnd().split('\n')
  t.equal(lines[0], `ok: ${path}`)
  t.equal(lines.length, 2, r.stdout)
  t.match(lines[1], /^warning: upstream\.public_paths: an entry without a trailing slash .* \(\/status, \/health\)$/)
  const json = await cliIn(dir, ['config', 'check', '--config', path, '--json'])
  t.same(withoutValues(json.stdout), { ok: true, file: path, warnings: [lines[1].slice('warning: '.length)], warning_codes: ['public_path_without_slash'] })
  const quiet = await cliIn(dir, ['config', 'check', '--config', file('nowarn.yml', stringify({ upstream: { public_paths: ['/status'] } }))])
  t.notMatch(head(quiet.stdout), /public_paths/, 'without an upstream, public paths are not used: no warning about them (a start logs none)')

  // a two_factor rule that lets private tokens in: any private token passes, one a password-only session made too
  const tokenRule = { upstream: { url: 'http://127.0.0.1:1' }, access: { rules: [{ paths: ['/a/**'], policy: 'two_factor' }, { paths: ['/ops/**'], subjects: ['method:private_token'], policy: 'two_factor' }] } }
  const tr = await cliIn(dir, ['config', 'check', '--config', file('token-rule.yml', stringify(tokenRule)), '--json'])
  t.equal(tr.code, 0, tr.stderr)
  const trj = JSON.parse(tr.stdout) as { warning_codes: string[], warnings: string[] }
  t.same(trj.warning_codes, ['two_factor_private_token'])
  t.match(trj.warnings[0], /a two_factor rule names method:private_token: every private token passes it.*\(access\.rules\[1\]\)$/)

  // the gateway logs the same warning when it starts with this config (in process, on a store of its own: no sockets)
  const config = buildConfig({ ...doc, secret_key: SECRET })
  const logs: string[] = []
  const log = createLogger('warn', new Writable({ write (chunk, _e, cb) { logs.push(chunk.toString()); cb() } }) as unknown as NodeJS.WritableStream)
  const store = await sqliteStore()
  t.teardown(() => store.close())
  const gw = createGateway({ config, store, log })
  await gw.shutdown(0)
  log.flush()
  const logged = logs.flatMap((l) => l.trim().split('\n')).map((l) => JSON.parse(l) as { msg: string, entries?: string[] }).filter((l) => l.msg.startsWith('upstream.public_paths'))
  t.equal(logged.length, 1, 'the gateway logged one public-paths warning')
  t.same(configWarnings(config), [`${logged[0].msg} (${logged[0].entries!.join(', ')})`], 'check prints what start logs')
})

t.test('config check without upstream.url: ok, and a warning that this is the demo mode (--json: the code demo_mode)', async (t) => {
  const path = file('demo.yml', stringify({ listen: { port: 8080 } }))
  const r = await cliIn(dir, ['config', 'check', '--config', path])
  t.equal(r.code, 0, r.stderr)
  t.equal(head(r.stdout), `ok: ${path}\nwarning: no upstream.url: serving the built-in demo API (demo mode); set upstream.url or SIDEGATE_UPSTREAM to protect your service\n`)
  const json = await cliIn(dir, ['config', 'check', '--config', path, '--json'])
  t.match(JSON.parse(json.stdout), { ok: true, warnings: [/demo mode/], warning_codes: ['demo_mode'] })
  const env = await cliIn(dir, ['config', 'check', '--config', path, '--json'], { env: { SIDEGATE_UPSTREAM: 'http://127.0.0.1:3000' } })
  t.same(withoutValues(env.stdout), { ok: true, file: path, warnings: [], warning_codes: [] }, 'an upstream (here SIDEGATE_UPSTREAM): no such warning')
})

t.test('config check: every value in force and where it came from (default, compat, file, env); secrets never shown', async (t) => {
  const path = file('compat.yml', stringify({ compat: 'jumpserver', auth: { bearer: { single_use: true } }, redis: { password: 'redis-secret-1', url: 'redis://:pw-in-url@127.0.0.1:1' } }))
  const r = await cliIn(dir, ['config', 'check', '--config', path], { env: { SIDEGATE_PORT: '9001' } })
  t.equal(r.code, 0, r.stderr)
  const values = r.stdout.slice(head(r.stdout).length).trimEnd().split('\n').slice(1)
  const line = (key: string): string | undefined => values.find((l) => l.trim().startsWith(`${key} `))
  t.match(line('compat'), /^ {2}compat +"jumpserver" {2}\(file\)$/)
  t.match(line('names.abbrev'), /"JMS" {2}\(compat\)$/)
  t.match(line('auth.bearer.single_use'), /true {2}\(file\)$/, 'a key set in the file wins over compat')
  t.match(line('auth.signature.clock_skew'), /0 {2}\(compat\)$/)
  t.match(line('org.unknown'), /"default" {2}\(compat\)$/)
  t.match(line('listen.port'), /9001 {2}\(env\)$/)
  t.match(line('listen.host'), /"::" {2}\(default\)$/, 'both families by default (dual stack)')
  t.match(line('redis.password'), /"\(hidden\)" {2}\(file\)$/)
  t.notMatch(r.stdout, /redis-secret-1|pw-in-url/, 'no secret, no password in a URL')
  t.equal(values.length, Object.keys(JSON.parse((await cliIn(dir, ['config', 'check', '--config', path, '--json'])).stdout).values).length, 'one line per key')
  const json = JSON.parse((await cliIn(dir, ['config', 'check', '--config', path, '--json'])).stdout)
  t.same(json.values['auth.bearer.single_use'], { value: true, source: 'file' })
  t.same(json.values['names.abbrev'], { value: 'JMS', source: 'compat' })
})

t.test('config: help, a missing or unknown subcommand, extra arguments', async (t) => {
  const help = await cliIn(dir, ['config', '--help'])
  t.equal(help.code, 0)
  for (const sub of ['check', 'defaults', 'schema']) t.match(help.stdout, new RegExp(`sidegate config ${sub}`))
  t.match((await cliIn(dir, ['--help'])).stdout, /config check\|defaults\|schema/, 'listed in the main help')
  const bare = await cliIn(dir, ['config'])
  t.equal(bare.code, 2)
  t.match(bare.stderr, /sidegate config: a subcommand is needed/)
  const unknown = await cliIn(dir, ['config', 'lint'])
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /unknown command "config lint"/)
  const extra = await cliIn(dir, ['config', 'defaults', 'gateway.yml'])
  t.equal(extra.code, 2)
  t.match(extra.stderr, /config defaults takes no arguments/)
  t.equal(extra.stdout, '')
})

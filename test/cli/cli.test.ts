/**
 * The admin CLI as a user runs it: `node bin/sidegate.js …` on the embedded
 * store, with its effects checked through a running gateway on the same store
 * (the CLI and Redis itself: test/topology/cli-redis.test.ts).
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { checkFieldOrder, cliIn, configDir, mainIn, type CliRun } from '../fixtures/procs.js'
import { startEcho, request, post } from '../fixtures/http.js'
import { embeddedStore, ROOT, SECRET, startGateway, storeDoc } from '../fixtures/gateway.js'
import { signedHeaders } from '../fixtures/creds.js'
import { eventually } from '../fixtures/wait.js'
import { loadedModules } from '../fixtures/bundle.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const PREFIX = `cli${process.pid}:`

const db = embeddedStore()
const echo = await startEcho()
const g = await startGateway(db.url, { upstream: { url: echo.url }, redis: { prefix: PREFIX } })
t.teardown(async () => { await g.close(); await echo.close(); await db.stop() })

const { dir, write: writeConfig } = configDir(t)
// audit.stream off: a command's events go to the store's trail all the same (the token create test)
const CONFIG = writeConfig('gateway.yml', { ...storeDoc(db.url, PREFIX), log: { level: 'warn' }, audit: { stream: false } })

type Run = CliRun

/** Runs the CLI (test/fixtures/procs.ts cliIn) on this file's config unless `config` says otherwise (null: none). */
async function spawnCli (
  args: string[], o: { stdin?: string, config?: string | null, timeout?: number, spawn?: boolean } = {}
): Promise<Run> {
  const full = o.config === null ? args : [...args, '--config', o.config ?? CONFIG]
  return await cliIn(
    dir, full, { env: { SIDEGATE_SECRET_KEY: SECRET }, stdin: o.stdin, timeout: o.timeout, spawn: o.spawn }
  )
}

/**
 * The same entry point in process (bin/sidegate.js only calls main): for the
 * long lists of cases, which a spawned process per case would make slow on a
 * busy machine. The real binary (`spawnCli`) is checked on a sample of each
 * kind: usage, stdin, JSON output, a store file that cannot be opened.
 */
async function inProcess (args: string[], o: { stdin?: string, config?: string | null } = {}): Promise<Run> {
  return await mainIn(o.config === null ? args : [...args, '--config', o.config ?? CONFIG], { env: { SIDEGATE_SECRET_KEY: SECRET }, stdin: o.stdin })
}

const json = (r: Run): any => JSON.parse(r.stdout)
const cli = inProcess

t.test('the real binary: --help exits 0; an unknown command or flag exits 2', async (t) => {
  const [help, cmd, flag, sub] = await Promise.all([
    spawnCli(['--help'], { config: null }), spawnCli(['frobnicate'], { config: null }), spawnCli(['user', 'list', '--bogus']), spawnCli(['key', '--help'], { config: null })
  ])
  t.equal(help.code, 0)
  t.match(help.stdout, /Usage: sidegate <command>/)
  t.equal(sub.code, 0)
  t.match(sub.stdout, /sidegate key revoke/)
  t.equal(cmd.code, 2)
  t.match(cmd.stderr, /unknown command "frobnicate"/)
  t.equal(flag.code, 2)
  t.match(flag.stderr, /--bogus/)
})

t.test('a typo gets the nearest command, subcommand or option, not parseArgs\' text; exit 2', async (t) => {
  const cases: Array<[string[], string]> = [
    [['tokn', 'create', 'alice'], 'sidegate: unknown command "tokn"; did you mean "token"?\n'],
    [['token', 'craete', 'alice'], 'sidegate: unknown command "token craete"; did you mean "token create"?\n'],
    [['user', 'lsit'], 'sidegate: unknown command "user lsit"; did you mean "user list"?\n'],
    [['user', 'list', '--jsn'], 'sidegate: unknown option --jsn; did you mean --json?\n'],
    [['key', 'create', 'bob', '--expire', '90d'], 'sidegate: unknown option --expire; did you mean --expires?\n'],
    [['user', 'add', 'zed', '--password-stdn'], 'sidegate: unknown option --password-stdn; did you mean --password-stdin?\n'],
    [['help', 'tokn'], 'sidegate: unknown command "tokn"; did you mean "token"?\n'],
    [['user', 'list', '-x'], 'sidegate: unknown option -x\nRun `sidegate --help` for usage.\n'],
    [['frobnicate'], 'sidegate: unknown command "frobnicate"\nRun `sidegate --help` for usage.\n'],
    [['user', 'frobnicate'], 'sidegate: unknown command "user frobnicate"; see `sidegate user --help`\n'],
    [['user', 'list', '--org'], 'sidegate: --org needs a value (one starting with "-": --org=-…)\nRun `sidegate --help` for usage.\n'],
    [['user', 'list', '--json=yes'], 'sidegate: --json takes no value\nRun `sidegate --help` for usage.\n']
  ]
  for (const [args, want] of cases) {
    const r = await inProcess(args, { config: null })
    t.same([r.code, r.stderr, r.stdout], [2, want, ''], args.join(' '))
    t.notMatch(r.stderr, /positional argument|Unknown option/, `${args.join(' ')}: not parseArgs' text`)
  }
  const asJson = await inProcess(['tokn', 'create', '--json'], { config: null })
  t.same([asJson.code, JSON.parse(asJson.stderr)], [2, { detail: 'unknown command "tokn"; did you mean "token"?', code: 'bad_request' }], '--json: the same, as {detail, code}')
  const real = await spawnCli(['token', 'create', 'alice', '--jsn'])
  t.same([real.code, real.stderr, real.stdout], [2, 'sidegate: unknown option --jsn; did you mean --json?\n', ''], 'the real binary')
})

t.test('-v and --version print the version', async (t) => {
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
  const [short, long] = await Promise.all([spawnCli(['-v'], { config: null }), spawnCli(['--version'], { config: null })])
  t.same([short.code, short.stdout, short.stderr], [0, `sidegate ${version}\n`, ''])
  t.same([long.code, long.stdout, long.stderr], [0, `sidegate ${version}\n`, ''])
})

t.test('--help answers at once: well under a second of CPU, and it loads no store, server or config module', async (t) => {
  const trace = join(dir, 'load-trace')
  const run = async (args: string[]): Promise<{ code: number | null, cpuMs: number, modules: string[] }> => {
    rmSync(`${trace}.modules`, { force: true })
    const p = spawn(process.execPath, ['--import', join(ROOT, 'test', 'fixtures', 'load-trace.mjs'), join(ROOT, 'bin', 'sidegate.js'), ...args], { cwd: dir, env: { PATH: process.env.PATH, LOAD_TRACE: trace }, stdio: 'ignore' })
    const code = await new Promise<number | null>((resolve) => p.once('close', resolve))
    return { code, cpuMs: (JSON.parse(readFileSync(trace, 'utf8')) as { cpuMs: number }).cpuMs, modules: loadedModules(readFileSync(`${trace}.modules`, 'utf8').trim().split('\n')) }
  }
  const ours = (r: { modules: string[] }): string[] => r.modules.filter((m) => m.includes('/dist/')).map((m) => m.replace(/^.*\/dist\//, ''))
  const help = await run(['--help'])
  t.equal(help.code, 0)
  t.ok(help.cpuMs < 1000, `--help took ${help.cpuMs} ms of CPU (bound: 1000)`)
  t.ok(ours(help).includes('cli/help.js'), `the trace sees the modules loaded: ${ours(help).join(' ')}`)
  const heavy = (m: string): boolean => /^(store\/|server\.js|cluster\.js|runtime\.js|config\.js|config\/|cli\/commands\.js)/.test(m)
  t.same(ours(help).filter(heavy), [], 'no store, server, cluster or config module')
  t.notOk(help.modules.some((m) => /node_modules\/(ioredis|pino|prom-client|@sinclair|yaml)\//.test(m)), 'nor the libraries they use')
  // the same trace sees them where a command needs them
  const defaults = await run(['config', 'defaults'])
  t.equal(defaults.code, 0)
  t.ok(ours(defaults).some((m) => m.startsWith('store/')), 'a command loads the store modules: the check above can fail')
})

t.test('token create prints exactly the token, and its audit event goes to the stream (audit.stream off), not stderr', async (t) => {
  const add = await inProcess(['user', 'add', 'tina', '--password-stdin'], { stdin: 'tina-password-1\n' })
  t.equal(add.code, 0, add.stderr)
  const made = await spawnCli(['token', 'create', 'tina'])
  t.equal(made.code, 0, made.stderr)
  t.match(made.stdout, /^[\w-]{20,}\n$/, 'one token, nothing else, on stdout')
  t.equal((await inProcess(['token', 'show', 'tina'])).stdout, made.stdout, 'the token the user now has')
  t.equal(made.stderr, '', 'nothing on stderr: no JSON log line')
  const key = await spawnCli(['key', 'create', 'tina', '--json'])
  t.equal(key.code, 0, key.stderr)
  t.equal(key.stderr, '', 'key create: nothing on stderr either')
  const { id } = json(key) as { id: string }
  const tail = await spawnCli(['audit', 'tail', '--json', '--limit', '5'])
  t.equal(tail.code, 0, tail.stderr)
  t.match(tail.stderr, /audit\.stream is false in this configuration.*commands .* always do/, 'the note says commands append anyway')
  const events = tail.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
  t.match(events.find((e) => e.event === 'private_token.created'), { actor: 'cli', authMethod: 'cli', username: 'tina', outcome: 'success' }, 'token create is in the audit stream')
  t.match(events.find((e) => e.event === 'key.created'), { actor: 'cli', keyId: id, username: 'tina' }, 'key create too')
  t.notOk(tail.stdout.includes(made.stdout.trim()), 'never the token itself')
})

t.test('--help for every command: exit 0 and names its subcommands', async (t) => {
  const cases: Array<[string[], RegExp[]]> = [
    [['--help'], [/start/, /user add\|list\|show\|disable\|enable\|passwd\|reset-link\|link\|unlink\|grant/, /org add\|list/, /group add\|list\|show\|remove\|members/, /key create\|list\|disable\|enable\|revoke/, /token create\|show\|revoke/]],
    [['help'], [/Commands:/]],
    [['start', '--help'], [/sidegate start/, /SIGTERM/]],
    [['user', '--help'], ['add', 'list', 'show', 'disable', 'enable', 'passwd', 'reset-link', 'link', 'unlink', 'grant'].map((s) => new RegExp(`sidegate user ${s}`))],
    [['group', '--help'], [/sidegate group add <name> \[--org ORG\]/, /sidegate group members add <group> <username>/, /sidegate group members remove/, /idp:/]],
    [['user', 'add', '--help'], [/sidegate user add <username> --password-stdin/]],
    [['org', '--help'], [/sidegate org add/, /sidegate org list/]],
    [['key', '-h'], [/sidegate key create/, /sidegate key list/, /sidegate key disable/, /sidegate key enable/, /sidegate key revoke/]],
    [['token', '--help'], [/sidegate token create/, /sidegate token show/, /sidegate token revoke/]],
    [['help', 'token'], [/sidegate token create/]],
    [['audit', '--help'], [/sidegate audit tail/, /--follow/, /--since/]]
  ]
  const runs: Run[] = []
  for (const [args] of cases) runs.push(await inProcess(args, { config: null }))
  cases.forEach(([args, patterns], i) => {
    const r = runs[i]
    t.equal(r.code, 0, `${args.join(' ')}: exit 0`)
    for (const p of patterns) t.match(r.stdout, p, `${args.join(' ')} mentions ${p}`)
    t.match(r.stdout, /--json/, `${args.join(' ')} lists the global options`)
  })
})

t.test('usage errors exit 2 with a message on stderr', async (t) => {
  const cases: string[][] = [
    [], ['frobnicate'], ['--bogus'], ['user', 'list', '--bogus'], ['user', 'frobnicate'], ['org'],
    ['help', 'frobnicate'], ['start', 'extra'], ['user', 'add', 'x', '--org'],
    ['user', 'add', 'zed'], // no --password-stdin
    ['user', 'add', 'bad name!', '--password-stdin'],
    ['user', 'add', 'zed', '--password-stdin', '--org', 'not-a-uuid'],
    ['org', 'add', 'X', '--id', 'not-a-uuid'], ['key', 'create'], ['token', 'show', 'a', 'b']
  ]
  const runs: Run[] = []
  for (const args of cases) runs.push(await inProcess(args, { stdin: 'long-enough-pw\n' }))
  cases.forEach((args, i) => {
    t.equal(runs[i].code, 2, `${JSON.stringify(args)}: exit 2`)
    // no arguments at all prints the usage text itself
    t.match(args.length === 0 ? runs[i].stdout : runs[i].stderr, /\S/, `${JSON.stringify(args)}: says why`)
  })
  t.equal((await inProcess(['user', 'list'], { config: join(dir, 'missing.yml') })).code, 2, 'config file not found')
  const bad = writeConfig('bad.yml', { ...storeDoc(db.url, PREFIX), listen: { port: 'eighty' } })
  const r = await inProcess(['user', 'list'], { config: bad })
  t.equal(r.code, 2, 'invalid config value')
  t.match(r.stderr, /listen\.port/)
})

t.test('user add with the password on stdin, user list, login with it', async (t) => {
  const add = await spawnCli(['user', 'add', 'bob', '--password-stdin', '--org', DEFAULT_ORG, '--email', 'bob@example.com', '--name', 'Bob B'], { stdin: 'bob-password-1\n' })
  t.equal(add.code, 0, add.stderr)
  t.match(add.stdout, /created user bob/)
  const list = await cli(['user', 'list', '--json'])
  t.equal(list.code, 0)
  const bob = json(list).find((u: any) => u.username === 'bob')
  t.match(bob, { username: 'bob', email: 'bob@example.com', name: 'Bob B', is_active: true, is_superuser: false, orgs: { [DEFAULT_ORG]: 'user' } })
  t.notOk(JSON.stringify(json(list)).includes('scrypt'), 'no password hashes in the listing')
  const text = await cli(['user', 'list'])
  t.match(text.stdout, new RegExp(`${bob.id}\\s+bob`))
  t.match(text.stdout, /admin\s+superuser/)

  const login = await post(g.url, '/api/v1/authentication/auth/', { username: 'bob', password: 'bob-password-1' })
  t.equal(login.status, 201, 'the password read from stdin (without its newline) logs in')

  const byOrg = await cli(['user', 'list', '--json', '--org', DEFAULT_ORG])
  t.ok(json(byOrg).some((u: any) => u.username === 'bob'))

  const dup = await cli(['user', 'add', 'BOB', '--password-stdin'], { stdin: 'another-password\n' })
  t.equal(dup.code, 1, 'duplicate username (any case): exit 1')
  t.match(dup.stderr, /already exists/)
  const short = await cli(['user', 'add', 'shorty', '--password-stdin'], { stdin: 'short\n' })
  t.equal(short.code, 1, 'short password: exit 1')
  t.match(short.stderr, /at least 8/)
  const noOrg = await cli(['user', 'add', 'orphan', '--password-stdin', '--org', '6f1a1c7e-1111-4222-8333-944455556666'], { stdin: 'orphan-password\n' })
  t.equal(noOrg.code, 1, 'unknown org: exit 1')
  const names = json(await cli(['user', 'list', '--json'])).map((u: any) => u.username)
  t.notOk(names.includes('shorty') || names.includes('orphan'), 'refused users were not created')
})

t.test('org add and org list', async (t) => {
  const add = await cli(['org', 'add', 'Sales', '--json'])
  t.equal(add.code, 0, add.stderr)
  const sales = json(add)
  t.match(sales, { name: 'Sales', id: /^[0-9a-f-]{36}$/ })
  const fixed = '6f1a1c7e-aaaa-4222-8333-944455556666'
  const withId = await cli(['org', 'add', 'Ops', '--id', fixed])
  t.equal(withId.code, 0)
  t.match(withId.stdout, new RegExp(`created org Ops \\(${fixed}\\)`))
  const dup = await cli(['org', 'add', 'Ops2', '--id', fixed])
  t.equal(dup.code, 1, 'duplicate id: exit 1')
  const list = json(await cli(['org', 'list', '--json']))
  t.same(list.map((o: any) => o.name).sort(), ['Default', 'Ops', 'Sales'])
  t.ok(list.some((o: any) => o.id === DEFAULT_ORG))
  t.match((await cli(['org', 'list'])).stdout, new RegExp(`${sales.id}\\s+Sales`))
})

t.test('access keys: create, sign a request with it, list, revoke', async (t) => {
  const bob = json(await cli(['user', 'list', '--json'])).find((u: any) => u.username === 'bob')
  const created = await spawnCli(['key', 'create', 'bob', '--json'])
  t.equal(created.code, 0, created.stderr)
  const { id, secret } = json(created)
  t.match(id, /^[0-9a-f-]{36}$/)
  t.match(secret, /^[0-9a-f-]{36}$/)
  const text = await cli(['key', 'create', 'bob'])
  t.match(text.stdout, /AccessKeyID:\s+[0-9a-f-]{36}\nAccessKeySecret:\s+[0-9a-f-]{36}/, 'text output names both parts')

  const call = async (): Promise<any> => await request(g.url, '/api/v1/x/', { headers: signedHeaders(id, secret, 'GET', '/api/v1/x/') })
  const ok = await call()
  t.equal(ok.status, 200, 'a request signed with the printed secret is accepted')
  t.equal(ok.json.headers['x-svc-user-id'], bob.id)
  t.equal(ok.json.headers['x-svc-auth-method'], 'access_key')

  const list = await cli(['key', 'list', 'bob', '--json'])
  t.equal(list.code, 0)
  const listed = json(list).find((k: any) => k.id === id)
  t.match(listed, { id, is_active: true, user_id: bob.id })
  t.ok(Math.abs(Date.parse(listed.date_last_used) - Date.now()) < 60_000, 'the use was recorded')
  t.notOk(list.stdout.includes(secret), 'key list never shows a secret')
  t.match((await cli(['key', 'list', 'bob'])).stdout, new RegExp(id))

  const revoke = await cli(['key', 'revoke', id])
  t.equal(revoke.code, 0, revoke.stderr)
  t.ok(await eventually(async () => (await call()).status === 401), 'the gateway (which had the key cached) refuses it long before its 30 s cache TTL')
  t.equal((await call()).json.code, 'invalid_signature')
  t.notOk(json(await cli(['key', 'list', 'bob', '--json'])).some((k: any) => k.id === id), 'gone from the list')
  t.equal((await cli(['key', 'revoke', id])).code, 1, 'revoking twice: exit 1')
  t.equal((await cli(['key', 'revoke', 'not-a-key'])).code, 1)
  t.equal((await cli(['key', 'create', 'nobody'])).code, 1, 'unknown user: exit 1')
})

t.test('private tokens: create, show, use, revoke', async (t) => {
  const created = await cli(['token', 'create', 'bob'])
  t.equal(created.code, 0, created.stderr)
  const tok = created.stdout.trim()
  t.match(tok, /^[A-Za-z0-9_-]{30,}$/, 'plain output is just the token')
  const call = async (): Promise<any> => await request(g.url, '/api/v1/x/', { headers: { authorization: `Token ${tok}` } })
  t.equal((await call()).status, 200)
  t.equal((await cli(['token', 'show', 'bob'])).stdout.trim(), tok, 'show reads it back')
  t.same(json(await cli(['token', 'show', 'bob', '--json'])), { username: 'bob', token: tok })

  const replaced = json(await cli(['token', 'create', 'bob', '--json'])).token
  t.not(replaced, tok)
  t.ok(await eventually(async () => (await call()).status === 401), 'create replaces: the old token is refused')
  const revoke = await cli(['token', 'revoke', 'bob'])
  t.equal(revoke.code, 0)
  const r = await request(g.url, '/api/v1/x/', { headers: { authorization: `Token ${replaced}` } })
  t.equal(r.status, 401)
  t.equal(r.json.code, 'invalid_token')
  t.equal((await cli(['token', 'show', 'bob'])).code, 1, 'nothing to show: exit 1')
  t.equal((await cli(['token', 'revoke', 'bob'])).code, 1, 'nothing to revoke: exit 1')
})

t.test('user disable and enable: the gateway follows', async (t) => {
  const tok = (await cli(['token', 'create', 'bob'])).stdout.trim()
  const call = async (): Promise<any> => await request(g.url, '/api/v1/x/', { headers: { authorization: `Token ${tok}` } })
  t.equal((await call()).status, 200, 'cached by the gateway')
  const dis = await cli(['user', 'disable', 'bob'])
  t.equal(dis.code, 0, dis.stderr)
  t.ok(await eventually(async () => (await call()).status === 401), 'refused long before the 30 s cache TTL')
  t.equal((await call()).json.code, 'user_inactive')
  const login = await post(g.url, '/api/v1/authentication/auth/', { username: 'bob', password: 'bob-password-1' })
  t.equal(login.status, 401, 'cannot log in either')
  t.match((await cli(['user', 'list'])).stdout, /bob.*disabled/)
  t.equal((await cli(['user', 'enable', 'bob'])).code, 0)
  t.ok(await eventually(async () => (await call()).status === 200), 'accepted again')
  t.equal((await cli(['user', 'disable', 'nobody'])).code, 1, 'unknown user: exit 1')
})

t.test('user passwd: the old password stops working, the new one works', async (t) => {
  const short = await cli(['user', 'passwd', 'bob', '--password-stdin'], { stdin: 'tiny\n' })
  t.equal(short.code, 1)
  const r = await cli(['user', 'passwd', 'bob', '--password-stdin'], { stdin: 'bob-password-2\n' })
  t.equal(r.code, 0, r.stderr)
  t.equal((await post(g.url, '/api/v1/authentication/auth/', { username: 'bob', password: 'bob-password-1' })).status, 401)
  t.equal((await post(g.url, '/api/v1/authentication/auth/', { username: 'bob', password: 'bob-password-2' })).status, 201)
  t.equal((await cli(['user', 'passwd', 'bob'])).code, 2, 'without --password-stdin: usage')
})

t.test('user grant --org ID:admin, and :none to remove', async (t) => {
  const org = json(await cli(['org', 'add', 'Research', '--json']))
  const tok = (await cli(['token', 'create', 'bob'])).stdout.trim()
  const call = async (): Promise<any> => await request(g.url, '/api/v1/x/', { headers: { authorization: `Token ${tok}`, 'x-svc-org': org.id } })
  const before = await call()
  t.equal(before.status, 403, 'not a member yet')
  t.equal(before.json.code, 'org_forbidden')

  const grant = await cli(['user', 'grant', 'bob', '--org', `${org.id}:admin`, '--json'])
  t.equal(grant.code, 0, grant.stderr)
  t.equal(json(grant).orgs[org.id], 'admin')
  const bob = json(await cli(['user', 'list', '--json'])).find((u: any) => u.username === 'bob')
  t.same(bob.orgs, { [DEFAULT_ORG]: 'user', [org.id]: 'admin' })
  t.ok(await eventually(async () => (await call()).status === 200), 'the gateway lets bob act in the org')
  t.equal((await call()).json.headers['x-svc-org'], org.id)

  const remove = await cli(['user', 'grant', 'bob', '--org', `${org.id}:none`])
  t.equal(remove.code, 0)
  t.ok(await eventually(async () => (await call()).status === 403), 'and no longer after :none')
  t.equal((await cli(['user', 'grant', 'bob'])).code, 2, 'grant without --org')
  t.equal((await cli(['user', 'grant', 'bob', '--org', `${org.id}:owner`])).code, 2, 'unknown role')
  t.equal((await cli(['user', 'grant', 'bob', '--org', '6f1a1c7e-1111-4222-8333-944455556666'])).code, 1, 'unknown org')
})

t.test('--superuser makes a superuser', async (t) => {
  const r = await cli(['user', 'add', 'root2', '--password-stdin', '--superuser', '--json'], { stdin: 'root2-password' })
  t.equal(r.code, 0, r.stderr)
  t.equal(json(r).is_superuser, true)
  t.same(json(r).orgs, {})
})

t.test('a store file that cannot be opened: exit 2 with one line naming it, no hang', async (t) => {
  // the embedded store's counterpart of an unreachable Redis
  // (test/topology/cli-redis.test.ts): a file in a dir that does not exist
  const missing = join(dir, 'no-such-dir', 'store.db')
  const cfg = writeConfig('unopenable.yml', { store: { backend: 'sqlite', path: missing } })
  const cases = [['user', 'list'], ['org', 'list', '--json'], ['token', 'create', 'bob']]
  const runs = [
    await spawnCli(cases[0], { config: cfg, timeout: 60_000, spawn: true }),
    ...await Promise.all(cases.slice(1).map(async (args) => await spawnCli(args, { config: cfg })))
  ]
  for (const [i, args] of cases.entries()) {
    const r = runs[i]
    t.equal(r.code, 2, `${args.join(' ')}: exit 2, as a config that cannot be used (null means it hung and was killed)`)
    t.equal(r.stdout, '')
    const lines = r.stderr.trimEnd().split('\n')
    t.equal(lines.length, 1, `one line: ${JSON.stringify(r.stderr)}`)
    if (args.includes('--json')) {
      t.same(JSON.parse(lines[0]), { detail: JSON.parse(lines[0]).detail, code: 'store_file_unusable' }, 'with --json the error is JSON too, with its code')
      t.match(JSON.parse(lines[0]).detail, `cannot open the store file ${missing}: `)
    } else {
      t.match(lines[0], `sidegate: cannot open the store file ${missing}: `)
    }
  }
  t.notOk(existsSync(join(dir, 'no-such-dir')), 'nothing was created for it')
})

t.test('--version prints the package version', async (t) => {
  const r = await spawnCli(['--version'], { config: null })
  t.equal(r.code, 0)
  t.equal(r.stdout, `sidegate ${JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version}\n`)
  t.equal((await inProcess(['user', 'list', '--version'], { config: null })).code, 0, 'wins over a command')
})

t.test('a command group without its subcommand prints the group\'s help (exit 2)', async (t) => {
  for (const group of ['user', 'org', 'key', 'token', 'secret']) {
    const r = await inProcess([group], { config: null })
    t.equal(r.code, 2, `${group}: exit 2`)
    t.match(r.stderr, new RegExp(`sidegate ${group}: a subcommand is needed\\n\\nUsage:`), `${group}: says so`)
    t.match(r.stderr, new RegExp(`sidegate ${group} [a-z]+`), `${group}: lists its subcommands`)
    t.equal(r.stdout, '')
  }
  const real = await spawnCli(['user'], { config: null })
  t.equal(real.code, 2)
  t.match(real.stderr, /sidegate user passwd <username> --password-stdin/)
})

t.test('--json: every error is one JSON line {detail, code} on stderr, with the exit code of its kind', async (t) => {
  const fixed = '6f1a1c7e-bbbb-4222-8333-944455556666'
  t.equal((await cli(['org', 'add', 'Fixed', '--id', fixed])).code, 0)
  const cases: Array<[string[], number, string]> = [
    [['frobnicate'], 2, 'bad_request'],
    [['user', 'list', '--bogus'], 2, 'bad_request'],
    [['user', 'frobnicate'], 2, 'bad_request'],
    [['user', 'add', 'bad name!', '--password-stdin'], 2, 'bad_request'],
    [['user', 'passwd', 'bob'], 2, 'bad_request'],
    [['key', 'create'], 2, 'bad_request'],
    [['user', 'disable', 'nobody'], 1, 'not_found'],
    [['key', 'create', 'nobody'], 1, 'not_found'],
    [['key', 'revoke', fixed], 1, 'not_found'],
    [['token', 'show', 'nobody'], 1, 'not_found'],
    [['user', 'grant', 'bob', '--org', '6f1a1c7e-1111-4222-8333-944455556666'], 1, 'org_not_found'],
    [['org', 'add', 'Again', '--id', fixed], 1, 'org_exists'],
    [['user', 'add', 'bob', '--password-stdin'], 1, 'user_exists']
  ]
  for (const [args, exit, code] of cases) {
    const r = await inProcess([...args, '--json'], { stdin: 'long-enough-password\n' })
    t.equal(r.code, exit, `${args.join(' ')}: exit ${exit}`)
    t.equal(r.stdout, '', 'nothing on stdout')
    const lines = r.stderr.trimEnd().split('\n')
    t.equal(lines.length, 1, `one line: ${r.stderr}`)
    t.match(JSON.parse(lines[0]), { detail: /\S/, code }, `${args.join(' ')}: code ${code}`)
  }
  const cfg = await spawnCli(['user', 'list', '--json'], { config: join(dir, 'missing.yml') })
  t.equal(cfg.code, 2)
  t.match(JSON.parse(cfg.stderr), { code: 'bad_request', detail: /config: file not found/ }, 'config errors too, from the real binary')
})

t.test('exit codes are the same for every command: 1 for an unknown user, 2 for usage', async (t) => {
  const commands = [['user', 'disable'], ['user', 'enable'], ['user', 'passwd'], ['user', 'grant'], ['key', 'create'], ['key', 'list'], ['token', 'create'], ['token', 'show'], ['token', 'revoke']]
  for (const c of commands) {
    const extra = c[1] === 'passwd' ? ['--password-stdin'] : c[1] === 'grant' ? ['--org', DEFAULT_ORG] : []
    t.equal((await inProcess([...c, 'nobody', ...extra], { stdin: 'long-enough-password\n' })).code, 1, `${c.join(' ')} nobody: 1`)
    t.equal((await inProcess([...c], { stdin: 'long-enough-password\n' })).code, 2, `${c.join(' ')} without its argument: 2`)
    t.equal((await inProcess([...c, 'a', 'b'], { stdin: 'long-enough-password\n' })).code, 2, `${c.join(' ')} with two: 2`)
  }
})

t.test('an argument that starts with "-" but is an id is an id (a session id is base64url: one in 64 does)', async (t) => {
  const id = '-AQdyy3cR7XzP6DGJ5KIWT6LcYXKk4BQckAPMyv7JXw' // the shape session list prints (43 base64url characters)
  let r = await inProcess(['session', 'revoke', 'admin', id, '--json'])
  t.same([r.code, JSON.parse(r.stderr)], [1, { detail: `admin has no session ${id}`, code: 'not_found' }], 'looked up as an id, not read as the options -A -Q -d …')
  r = await inProcess(['session', 'revoke', 'admin', '--config', CONFIG, '--', id], { config: null })
  t.equal(r.code, 1, 'after "--" as well')
  r = await inProcess(['session', 'revoke', 'admin', '_' + id.slice(1), '--json'])
  t.equal(JSON.parse(r.stderr).code, 'not_found', 'one starting with "_" too')
  t.equal((await inProcess(['-h'])).code, 0, '-h is still the help')
  r = await inProcess(['user', 'list', '-x'])
  t.same([r.code, /unknown option -x/.test(r.stderr)], [2, true], 'an unknown one-letter option is still a usage error')
  t.equal((await inProcess(['user', 'list', '--bogus'])).code, 2, 'and an unknown long one')
})

t.test('--json lists and records have a stable field order', async (t) => {
  // bob's record was rewritten (grant, disable); records rewritten
  // by Redis's Lua scripts: test/topology/cli-redis.test.ts
  await checkFieldOrder(t, cli)
})

t.test('usernames: letters of any script, as the README\'s percent-encoding implies', async (t) => {
  for (const name of ['józef', 'Ünïcødé', 'ζωή', '李雷', 'نور', 'o.k+1@x-y_z']) {
    const r = await cli(['user', 'add', name, '--password-stdin', '--org', DEFAULT_ORG], { stdin: `${name}-password-1\n` })
    t.equal(r.code, 0, `${name}: accepted (${r.stderr})`)
  }
  for (const name of ['two words', 'emoji😀', 'semi;colon', 'a/b', 'x'.repeat(151)]) {
    const r = await cli(['user', 'add', name, '--password-stdin'], { stdin: 'long-enough-password\n' })
    t.equal(r.code, 2, `${JSON.stringify(name)}: refused`)
  }
  const tok = await post(g.url, '/api/v1/authentication/auth/', { username: 'józef', password: 'józef-password-1' })
  t.equal(tok.status, 201, 'józef logs in')
  const r = await request(g.url, '/api/v1/x/', { headers: { authorization: `Bearer ${tok.json.token}` } })
  t.equal(r.status, 200)
  t.equal(r.json.headers['x-svc-username'], 'j%C3%B3zef', 'and reaches the upstream percent-encoded')
})

t.test('control characters: refused in what the CLI stores; escaped in everything it prints, text and --json', async (t) => {
  const OSC52 = '\u001b]52;c;ZXZpbA==\u0007'
  const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/
  const add = await cli(['user', 'add', 'mallet', '--password-stdin', '--name', 'Mal\rlet'], { stdin: 'mallet-password-1\n' })
  t.same([add.code, add.stderr], [2, 'sidegate: name: control characters (ESC, CR, line breaks, DEL, C1) are not allowed\n'], 'user add --name')
  t.equal((await cli(['user', 'add', 'mallet', '--password-stdin', '--email', 'm@x\n.org'], { stdin: 'mallet-password-1\n' })).code, 2, 'user add --email')
  t.equal((await cli(['user', 'add', 'mallet', '--password-stdin'], { stdin: 'mallet-password-1\n' })).code, 0)
  const key = await cli(['key', 'create', 'mallet', '--name', `deploy${OSC52}`])
  t.equal(key.code, 2, 'key create --name')
  t.match(key.stderr, /name: control characters .* are not allowed/)
  t.equal((await cli(['org', 'add', 'Evil\u001b[2K\rOps'])).code, 2, 'org add')
  t.equal((await cli(['org', 'add', 'Evil\u009b2KOps'])).code, 2, 'a C1 control too')
  t.equal((await cli(['org', 'add', 'Evil\u007fOps'])).code, 2, 'and DEL')

  // what is already stored (written before these checks, or by hand) is escaped when printed
  const u = (await g.store.users.byUsername('mallet'))!
  const forged = `ci\r${OSC52}\u001b[1A\u001b[2Kfake line\nsecond\u007f\u009b`
  const { key: k } = await g.store.accessKeys.create(u.id, 0, { name: forged })
  await g.store.orgs.create('Org\u001b[31m\nred\u0085')
  for (const run of [cli, async (args: string[]) => await spawnCli(args)]) {
    const list = await run(['key', 'list', 'mallet'])
    t.equal(list.code, 0, list.stderr)
    t.notMatch(list.stdout, RAW, 'key list: no raw control character')
    t.equal(list.stdout.trim().split('\n').length, 1, 'one key, one line (the name\'s line break escaped)')
    t.match(list.stdout, `${k.id}  "ci\\u000d\\u001b]52;c;ZXZpbA==\\u0007\\u001b[1A\\u001b[2Kfake line\\u000asecond\\u007f\\u009b"`)
    const orgs = await run(['org', 'list'])
    t.notMatch(orgs.stdout, RAW, 'org list too')
    t.match(orgs.stdout, 'Org\\u001b[31m\\u000ared\\u0085')
    const asJson = await run(['key', 'list', 'mallet', '--json'])
    t.notMatch(asJson.stdout, RAW, '--json: no raw control character either (DEL and C1 escaped as well)')
    t.equal(JSON.parse(asJson.stdout)[0].name, forged, 'and the JSON still reads back to the exact name')
    const unknown = await run(['key', 'list', `nobody${OSC52}`])
    t.equal(unknown.code, 1, 'no such user')
    t.notMatch(unknown.stderr, RAW, 'an error message quoting the input: escaped')
  }
})

/**
 * `sidegate access check` and POST /admin/v1/access/check against a real
 * `sidegate start` process on the embedded store: which rule decides, and
 * why, without sending the request; the same JSON both ways; and the
 * verdict it explains is the one the gateway then gives.
 */
import t from 'tap'
import { request, startEcho } from '../fixtures/http.js'
import { embeddedStore, SECRET, spawnGateway } from '../fixtures/gateway.js'
import { cliOf } from '../fixtures/procs.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const db = embeddedStore()
const echo = await startEcho()
const access = {
  rules: [
    { paths: ['/open/**'], policy: 'bypass' },
    { paths: ['/reports/**'], methods: ['GET'], subjects: ['user:admin', 'method:access_key'], policy: 'one_factor' },
    { paths: ['/reports/**'], policy: 'deny' },
    { paths: ['/secure/**'], policy: 'two_factor' },
    { paths: ['/ops/**'], networks: ['10.0.0.0/8'], policy: 'one_factor' },
    { paths: ['/ops/**'], policy: 'deny' }
  ]
}
const gw = await spawnGateway(db.url, { upstream: { url: echo.url, public_paths: ['/health'] }, admin: { enabled: true }, access }, `acc${process.pid}:`)
t.teardown(async () => { await gw.stop(); await echo.close(); await db.stop() })
const { cli, cliJson } = cliOf(gw.configFile, SECRET)
const adminToken: string = (await cliJson('token', 'create', 'admin')).token

t.test('the text names the request, the caller, the deciding rule and the verdict', async (t) => {
  const r = await cli('access', 'check', '--user', 'admin', 'GET', '/reports/q1')
  t.equal(r.code, 0, r.stderr)
  t.equal(r.stdout.trim(), [
    `GET /reports/q1 from 127.0.0.1, admin (session: pwd) in org ${DEFAULT_ORG}`,
    'matched as /reports/q1',
    'rule 2 (one_factor) matches GET /reports/q1 for user:admin: any valid credential',
    '→ allowed'
  ].join('\n'), 'rules counted from 1, as docs/access-rules.md counts them')
  const anon = await cli('access', 'check', 'GET', '/reports/q1')
  t.equal(anon.stdout.trim(), [
    'GET /reports/q1 from 127.0.0.1, no credential',
    'matched as /reports/q1',
    'passed over: rule 2 (one_factor): no credential has none of user:admin, method:access_key',
    'rule 3 (deny) matches GET /reports/q1: denied; but a rule before it names subjects, so a credential is asked for first',
    '→ 401: a credential is needed'
  ].join('\n'), 'the rule passed over, and why: the gateway asks for a credential first (401), as it answers')
  t.equal(anon.code, 1, 'refused: exit 1')
  const post = await cli('access', 'check', '--user', 'admin', 'POST', '/reports/q1')
  t.match(post.stdout, /passed over: rule 2 \(one_factor\): not for POST \(GET\)/)
  const far = await cli('access', 'check', '--user', 'admin', 'GET', '/ops/x')
  t.match(far.stdout, /passed over: rule 5 \(one_factor\): 127\.0\.0\.1 is not in 10\.0\.0\.0\/8/)
  const two = await cli('access', 'check', '--user', 'admin', '--factor', 'otp', 'GET', '/secure/x')
  t.match(two.stdout, /admin \(session: pwd,otp\)[\s\S]*rule 4 \(two_factor\)[\s\S]*signed in with pwd,otp[\s\S]*→ allowed/)
  const one = await cli('access', 'check', '--user', 'admin', 'GET', '/secure/x')
  t.match(one.stdout, /needs a second factor[\s\S]*→ 403 access_denied/)
  t.equal(one.code, 1, '403: exit 1')
  const token = await cli('access', 'check', '--user', 'admin', '--credential', 'private_token', 'GET', '/secure/x')
  t.match(token.stdout, /private_token is a machine credential the rule does not name \(method:private_token\)/)
  const net = await cli('access', 'check', '--user', 'admin', '--ip', '10.1.2.3', 'GET', '/ops/x')
  t.match(net.stdout, /from 10\.1\.2\.3[\s\S]*rule 5 \(one_factor\)[\s\S]*→ allowed/)
  t.equal(net.code, 0, 'allowed: exit 0')
  const pub = await cli('access', 'check', 'GET', '/health')
  t.match(pub.stdout, /\/health is in upstream\.public_paths: no credential looked at, before any rule/)
  const trick = await cli('access', 'check', 'GET', '/open%2F..%2Freports/q1')
  t.match(trick.stdout, /matched as \/reports\/q1 \(ambiguous: no bypass rule matches it\)[\s\S]*rule 3 \(deny\)/)
  const bypassTrick = await cli('access', 'check', 'GET', '/open/a%2Fb')
  t.match(bypassTrick.stdout, /passed over: rule 1 \(bypass\): an ambiguous path never matches a bypass rule/)
  // an absolute-form target, as a client may send it: matched as the path the gateway forwards
  const absolute = await cli('access', 'check', '--user', 'admin', 'GET', 'HTTP://app.example/x/../ops/restart')
  t.equal(absolute.code, 1, absolute.stderr)
  t.match(absolute.stdout, /matched as \/ops\/restart[\s\S]*rule 6 \(deny\)[\s\S]*→ 403 access_denied/)
  const params = await cli('access', 'check', '--user', 'admin', 'GET', '/open/..;/ops/restart')
  t.match(params.stdout, /matched as \/ops\/restart \(ambiguous[\s\S]*rule 6 \(deny\)/, '`;` parameters stripped, as Tomcat reads them')
  t.equal((await cli('access', 'check', 'GET', 'ftp://x/ops')).code, 2, 'another scheme: a usage error')
})

t.test('an access key: its user and method; --json is the admin API\'s answer', async (t) => {
  const key = await cliJson('key', 'create', 'admin')
  const viaCli = await cliJson('access', 'check', '--key', key.id, 'GET', '/reports/q1?x=1')
  t.match(viaCli, { request: { method: 'GET', path: '/reports/q1?x=1', normalised: '/reports/q1', ambiguous: false, ip: '127.0.0.1' }, caller: { username: 'admin', method: 'access_key', org: DEFAULT_ORG }, decided_by: 'rules', rule: 2, policy: 'one_factor', status: 200, passed_over: [] })
  t.notOk('factors' in viaCli.caller, 'a key has no sign-in factors')
  const api = await request(gw.adminUrl, '/admin/v1/access/check', {
    method: 'POST',
    headers: { authorization: `Token ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ method: 'GET', path: '/reports/q1?x=1', key: key.id })
  })
  t.equal(api.status, 200, api.text)
  t.same(api.json, viaCli, 'the same JSON')
})

t.test('what it explains is what the gateway does, and its exit code says so (0 allowed, 1 refused)', async (t) => {
  const token = (await cliJson('token', 'show', 'admin')).token as string
  const explain = async (...args: string[]): Promise<{ code: number | null, json: any }> => {
    const r = await cli('access', 'check', ...args, '--json')
    return { code: r.code, json: JSON.parse(r.stdout) }
  }
  const table = [
    ['/reports/q1', 'GET'], ['/reports/q1', 'POST'], ['/secure/x', 'GET'], ['/open/x', 'GET'], ['/elsewhere', 'GET'],
    ['/ops/x', 'GET'], ['/open/a%2Fb', 'GET']
  ] as const
  for (const [path, method] of table) {
    const { code, json: explained } = await explain('--user', 'admin', '--credential', 'private_token', method, path)
    const real = await request(gw.url, path, { method, headers: { authorization: `Token ${token}` } })
    t.equal(real.status, explained.status, `${method} ${path}: ${String(explained.why)}`)
    t.equal(code, real.status === 200 ? 0 : 1, `${method} ${path}: exit ${String(code)}`)
    // no credential: the gateway asks for one (401) wherever a rule before the deciding one names subjects
    const none = await explain(method, path)
    const bare = await request(gw.url, path, { method })
    t.equal(bare.status, none.json.status, `${method} ${path}, no credential: ${String(none.json.why)}`)
    t.equal(none.code, bare.status === 200 ? 0 : 1, `${method} ${path}, no credential: exit ${String(none.code)}`)
  }
})

t.test('bad input: a clear message and exit 2 (1 for a missing user or key), 400 or 404 over HTTP', async (t) => {
  const cases: Array<[string[], number, RegExp]> = [
    [['GET'], 2, /expected a method and a path/],
    [['--user', 'nobody', 'GET', '/x'], 1, /no user named "nobody"/],
    [['--key', 'nokey', 'GET', '/x'], 1, /no access key with id "nokey"/],
    [['--user', 'admin', '--factor', 'sms', 'GET', '/x'], 2, /factor: otp, hwk or swk, got "sms"/],
    [['--user', 'admin', '--credential', 'cookie', 'GET', '/x'], 2, /credential: session, bearer, private_token or trusted_token \(an access key: key\), got "cookie"/],
    [['--user', 'admin', '--ip', '10.0.0.0/8', 'GET', '/x'], 2, /ip: an IP address/],
    [['--org', DEFAULT_ORG, 'GET', '/x'], 2, /name one with user/],
    [['GET', 'reports'], 2, /path: must start with "\/"/]
  ]
  for (const [args, code, message] of cases) {
    const r = await cli('access', 'check', ...args)
    t.equal(r.code, code, args.join(' '))
    t.match(r.stderr, message)
  }
  const bad = await request(gw.adminUrl, '/admin/v1/access/check', {
    method: 'POST',
    headers: { authorization: `Token ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ method: 'GET', path: '/x', user: 'nobody' })
  })
  t.same([bad.status, bad.json.code], [404, 'not_found'])
  const extra = await request(gw.adminUrl, '/admin/v1/access/check', {
    method: 'POST',
    headers: { authorization: `Token ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ method: 'GET', path: '/x', colour: 'red' })
  })
  t.equal(extra.status, 400)
})

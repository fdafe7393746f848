/**
 * `sidegate access check --host --group` against a real `sidegate start`
 * process on the embedded store whose rules name hosts and groups: the host
 * and the caller's groups (the store's, or those given) in the text and the
 * JSON, the usage errors, and the verdict the gateway then gives for that
 * Host and that member.
 */
import t from 'tap'
import { request, startEcho } from '../fixtures/http.js'
import { embeddedStore, SECRET, spawnGateway } from '../fixtures/gateway.js'
import { dirname } from 'node:path'
import { cliIn, cliOf } from '../fixtures/procs.js'
import { eventually } from '../fixtures/wait.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const db = embeddedStore()
const echo = await startEcho()
const access = {
  default_policy: 'deny',
  rules: [
    { paths: ['/**'], hosts: ['www.example.com'], policy: 'bypass' },
    { paths: ['/**'], hosts: ['grafana.example.com'], subjects: ['group:Default/eng'], policy: 'one_factor' },
    { paths: ['/**'], hosts: ['*.apps.example.com'], subjects: ['group:admins'], policy: 'one_factor' }
  ]
}
const gw = await spawnGateway(db.url, { upstream: { url: echo.url }, access }, `acch${process.pid}:`)
t.teardown(async () => { await gw.stop(); await echo.close(); await db.stop() })
const { cli, cliJson } = cliOf(gw.configFile, SECRET)

for (const name of ['carol', 'dave']) {
  const added = await cliIn(dirname(gw.configFile), ['user', 'add', name, '--password-stdin', '--org', DEFAULT_ORG, '--config', gw.configFile], {
    env: { SIDEGATE_SECRET_KEY: SECRET }, stdin: `${name}-password-long-enough\n`
  })
  if (added.code !== 0) throw new Error(`user add ${name}: ${added.stderr}`)
}
const eng = await cliJson('group', 'add', 'eng', '--org', DEFAULT_ORG)
const admins = await cliJson('group', 'add', 'admins')
for (const g of [eng.id, admins.id]) await cliJson('group', 'members', 'add', g, 'carol')
const carolToken = (await cliJson('token', 'create', 'carol')).token as string
const daveToken = (await cliJson('token', 'create', 'dave')).token as string
// the running gateway hears of the new groups from the store's invalidation log (read every 250 ms)
if (!await eventually(async () => (await request(gw.url, '/d/1', { headers: { host: 'grafana.example.com', authorization: `Token ${carolToken}` } })).status === 200, 10_000, 50)) {
  throw new Error('the gateway never saw carol\'s groups')
}

t.test('the host and the caller\'s groups, in the text and the JSON', async (t) => {
  const r = await cli('access', 'check', '--host', 'Grafana.example.com:443', '--user', 'carol', 'GET', '/d/1')
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /^GET \/d\/1 at grafana\.example\.com from 127\.0\.0\.1, carol \(session: pwd\)/)
  t.match(r.stdout, /groups: Default\/eng, admins|groups: admins, Default\/eng/)
  t.match(r.stdout, /rule 2 \(one_factor\) matches GET \/d\/1 for group:default\/eng[\s\S]*→ allowed/)
  const dave = await cli('access', 'check', '--host', 'grafana.example.com', '--user', 'dave', 'GET', '/d/1')
  t.equal(dave.code, 1)
  t.match(dave.stdout, /passed over: rule 2 \(one_factor\): this caller has none of group:Default\/eng[\s\S]*default_policy deny/)
  const given = await cliJson('access', 'check', '--host', 'x.apps.example.com', '--user', 'dave', '--group', 'admins', 'GET', '/')
  t.match(given, { request: { host: 'x.apps.example.com' }, caller: { username: 'dave', groups: ['admins'] }, rule: 3, status: 200 })
  const elsewhere = await cliJson('access', 'check', '--host', 'grafana.example.com', '--user', 'carol', 'GET', '/d/1')
  t.same(elsewhere.caller.groups.slice().sort(), ['Default/eng', 'admins'].sort(), 'the store\'s groups')
  const other = await cli('access', 'check', '--host', 'api.example.com', 'GET', '/')
  t.match(other.stdout, /passed over: rule 1 \(bypass\): not for api\.example\.com \(www\.example\.com\)/)
})

t.test('what it explains is what the gateway does for that Host', async (t) => {
  const table: Array<[string, string, string | null]> = [
    ['www.example.com', '/x', null], ['grafana.example.com', '/d/1', carolToken], ['grafana.example.com', '/d/1', daveToken],
    ['a.apps.example.com', '/', carolToken], ['a.apps.example.com', '/', daveToken], ['apps.example.com', '/', carolToken],
    ['other.example.net', '/', carolToken]
  ]
  for (const [host, path, token] of table) {
    const user = token === carolToken ? ['--user', 'carol', '--credential', 'private_token'] : token === daveToken ? ['--user', 'dave', '--credential', 'private_token'] : []
    const r = await cli('access', 'check', '--json', '--host', host, ...user, 'GET', path)
    const explained = JSON.parse(r.stdout)
    const real = await request(gw.url, path, { headers: { host, ...(token === null ? {} : { authorization: `Token ${token}` }) } })
    t.equal(real.status, explained.status, `${host}${path} as ${user[1] ?? 'nobody'}: ${String(explained.why)}`)
    t.equal(r.code, real.status === 200 ? 0 : 1)
  }
})

t.test('bad input: a clear message and exit 2', async (t) => {
  const cases: Array<[string[], RegExp]> = [
    [['--user', 'carol', 'GET', '/'], /the access rules name hosts: give the host the request is for \(--host\)/],
    [['--host', 'a b', 'GET', '/'], /host: a host name or address/],
    [['--host', 'www.example.com', '--group', 'eng', 'GET', '/'], /name one with user/],
    [['--host', 'www.example.com', '--user', 'carol', '--group', 'a%zz', 'GET', '/'], /group: a malformed %-escape/]
  ]
  for (const [args, message] of cases) {
    const r = await cli('access', 'check', ...args)
    t.equal(r.code, 2, args.join(' '))
    t.match(r.stderr, message)
  }
  const noOrg = await cli('access', 'check', '--host', 'www.example.com', '--user', 'carol', '--group', 'Nowhere/eng', 'GET', '/')
  t.equal(noOrg.code, 1, 'an org that does not exist: not found')
  t.match(noOrg.stderr, /no such org/)
})

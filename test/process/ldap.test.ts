/**
 * Passwords checked by a real directory: OpenLDAP's slapd (Debian's), started
 * here with people, a service account and nested groups, in front of a real
 * gateway on the embedded store. Sign-in on the token endpoint (JSON, form,
 * multipart), the login form and JumpServer's login view; wrong, unknown and
 * filtered-out entries; a local user of the same name never taken over;
 * nested groups and the orgs they map to; injection usernames escaped; an empty
 * password never bound (on a server that would accept it); the lockout before
 * any bind; a dead and a hung server skipped within the bound, a server killed
 * mid-run; every server down (503) while a local password still works; ldaps://
 * and StartTLS verified against a test CA, three certificates that do not verify.
 */
import t from 'tap'
import { createServer, type Socket } from 'node:net'
import { writeFileSync } from 'node:fs'
import { request, post, type Res } from '../fixtures/http.js'
import { embeddedStore, SECRET, startGateway, type TestGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { login, postForm, setCookies } from '../fixtures/session.js'
import { oathtool, stepTime } from '../fixtures/oathtool.js'
import { sleep } from '../fixtures/wait.js'
import { freePort } from '../fixtures/redis.js'
import { tempDir } from '../fixtures/cleanup.js'
import { cliIn } from '../fixtures/procs.js'
import { testCa } from '../fixtures/test-ca.js'
import { BASE, PEOPLE, SERVICE_DN, SERVICE_PASSWORD, startSlapd } from '../fixtures/slapd.js'

const PATH = '/api/v1/authentication/auth/'
const ca = testCa('sidegate-ldap-ca-')
ca.ca('ca')
ca.ca('other-ca')
ca.leaf('slapd', 'ca', '/CN=localhost')
ca.leaf('wronghost', 'ca', '/CN=elsewhere', 'subjectAltName=DNS:elsewhere.example\nextendedKeyUsage=serverAuth\n')
ca.leaf('foreign', 'other-ca', '/CN=localhost')
const tls = (name: string): { cert: string, key: string } => ({ cert: ca.path(`${name}.pem`), key: ca.path(`${name}.key`) })

// one directory that, like many Active Directory set-ups, accepts a DN with an empty password
const main = await startSlapd({ allowAnonDn: true, tls: tls('slapd') })
const spare = await startSlapd()
const wrongHost = await startSlapd({ tls: tls('wronghost') })
const foreign = await startSlapd({ tls: tls('foreign') })
const secrets = tempDir('sidegate-ldap-secret-')
const bindFile = `${secrets}/bind`
writeFileSync(bindFile, `${SERVICE_PASSWORD}\n`)

// a server that accepts connections and never answers
const hung = createServer((s: Socket) => { s.on('error', () => {}) })
await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve))
const hungUrl = `ldap://127.0.0.1:${(hung.address() as { port: number }).port}`
const deadUrl = `ldap://127.0.0.1:${await freePort()}`

const db = embeddedStore()
const opened: TestGateway[] = []
t.teardown(async () => {
  for (const g of opened) await g.close()
  for (const s of [main, spare, wrongHost, foreign]) await s.stop()
  hung.close()
  await db.stop()
})

const directory = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: 'corp',
  urls: [main.url],
  bind_dn: SERVICE_DN,
  bind_password_file: bindFile,
  users: { base: `ou=people,${BASE}`, filter: '(&(objectClass=inetOrgPerson)(uid={username})(!(employeeType=disabled)))' },
  groups: { base: `ou=groups,${BASE}` },
  timeout: 1,
  ...over
})

type Doc = Record<string, unknown>
const LOCKOUT = { lockout: { max_failures: 3, window: 60 } }
async function gateway (ldap: Doc[], more: Doc = {}): Promise<TestGateway> {
  const g = await startGateway(db.url, { sign_in: { ldap }, auth: LOCKOUT, ...more })
  opened.push(g)
  return g
}

const g = await gateway([directory({ orgs: [] })])
const eng = await g.store.orgs.create('Engineering')
const all = await g.store.orgs.create('Everyone')
// the main gateway's mapping names orgs made on its store; a reload is not needed: a second gateway on the same store
const mapped = await startGateway(db.url, {
  redis: { prefix: opened[0].config.redis.prefix },
  sign_in: { ldap: [directory({ orgs: [{ group: 'eng', org: eng.id, role: 'member' }, { group: 'leads', org: eng.id, role: 'admin' }, { group: 'everyone', org: all.id }] })] },
  auth: { lockout: { max_failures: 3, window: 60 } }
})
opened.push(mapped)
const localBob = await makeUser(g, 'bob')
const token = async (base: string, username: string, password: string): Promise<Res> =>
  await post(base, PATH, { username, password })
const userBinds = (s: typeof main): string[] => s.binds().filter((l) => l.includes('method=128') && !l.includes(SERVICE_DN))

t.test('the token endpoint (JSON, form, multipart) and the login form sign a directory user in; a user of their own is made once', async (t) => {
  const r = await token(g.url, 'alice', PEOPLE.alice)
  t.equal(r.status, 201, r.text)
  t.equal(r.json.user.username, 'alice', 'provisioned under the directory\'s name: no local alice')
  const alice = (await g.store.users.byUsername('alice'))!
  t.match(await g.store.links.list(alice.id), [{ source: 'ldap:corp', provisioned: true }])
  t.equal(await g.store.passwords.hash(alice.id), null, 'no password of her own here')
  const form = await request(g.url, PATH, { method: 'POST', body: new URLSearchParams({ username: 'alice', password: PEOPLE.alice }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(form.status, 201, 'form')
  const boundary = 'xYzZy'
  const body = Object.entries({ username: 'alice', password: PEOPLE.alice }).map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('') + `--${boundary}--\r\n`
  const multi = await request(g.url, PATH, { method: 'POST', body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } })
  t.equal(multi.status, 201, 'multipart')
  t.equal(multi.json.user.id, alice.id, 'the same user each time')
  const s = await login(g.url, 'alice', PEOPLE.alice)
  t.ok(s.session.length > 20, 'the login form: a session')
  const qualified = await token(g.url, 'corp\\alice', PEOPLE.alice)
  t.same([qualified.status, qualified.json.user?.id], [201, alice.id], 'corp\\alice: that directory alone')
  const at = await token(g.url, 'alice@corp', PEOPLE.alice)
  t.same([at.status, at.json.user?.id], [201, alice.id], 'alice@corp too')
})

t.test('wrong password, unknown user, a filtered-out (disabled) entry: 401 authentication_failed, the same answer', async (t) => {
  for (const [u, p] of [['carol', 'wrong-password'], ['nobody', 'whatever-pw'], ['locked', PEOPLE.locked]]) {
    const r = await token(g.url, u, p)
    t.same([r.status, r.json.code], [401, 'authentication_failed'], u)
  }
  t.equal(await g.store.users.byUsername('locked'), null, 'nothing made for the filtered-out entry')
})

t.test('a local user of the same name is never taken over: the directory\'s bob is bob@corp; the local password stays local bob\'s', async (t) => {
  const viaDir = await token(g.url, 'bob', PEOPLE.bob)
  t.equal(viaDir.status, 201, viaDir.text)
  t.not(viaDir.json.user.id, localBob.id, 'not the local bob')
  t.equal(viaDir.json.user.username, 'bob@corp')
  const local = await token(g.url, 'bob', 'bob-password')
  t.same([local.status, local.json.user?.id], [201, localBob.id], 'the local password: the local user')
  const again = await token(g.url, 'bob@corp', PEOPLE.bob)
  t.equal(again.json.user?.id, viaDir.json.user.id, 'bob@corp: the directory\'s, by its link')
})

t.test('groups, nested, become the user\'s (idp:ldap:corp) and map to orgs; refreshed at each sign-in', async (t) => {
  const r = await token(mapped.url, 'carol', PEOPLE.carol)
  t.equal(r.status, 201, r.text)
  const carol = (await mapped.store.users.byUsername('carol'))!
  t.same(carol.groups?.map((x) => `${x.name}:${x.sources.join('+')}`).sort(), ['eng:idp:ldap:corp', 'everyone:idp:ldap:corp', 'staff:idp:ldap:corp'], 'eng, and staff and everyone through it')
  t.same(carol.orgs, { [eng.id]: 'user', [all.id]: 'user' })
  await token(mapped.url, 'alice', PEOPLE.alice)
  const alice = (await mapped.store.users.byUsername('alice'))!
  t.equal(alice.orgs[eng.id], 'admin', 'leads: admin wins')
})

t.test('injection usernames are escaped (RFC 4515) and sign nobody in; an empty password never reaches a bind', async (t) => {
  const before = userBinds(main).length
  for (const u of ['*', 'a*', '(', ')', '\\', 'ali\u0000ce', 'admin)(|(uid=*', '*)(uid=*))(|(uid=*']) {
    const r = await token(g.url, u, PEOPLE.admin)
    t.equal(r.status, 401, JSON.stringify(u))
  }
  t.equal(userBinds(main).length, before, 'no entry found: no bind as anyone')
  t.ok(main.searches().some((l) => l.includes('(uid=admin\\29\\28|\\28uid=\\2A)')), 'the filter as the server saw it: escaped')
  const empty = await token(g.url, 'alice', '')
  t.equal(empty.status, 400, 'an empty password is refused before anything')
  const spaces = await postForm(g.url, '/login', { username: 'alice', password: '' })
  t.not(spaces.status, 303, 'the form: no session')
  t.equal(userBinds(main).length, before, 'and never bound (this server would have accepted it)')
})

t.test('the lockout runs before any bind: past max_failures the right password is 429 and reaches no server', async (t) => {
  for (let i = 0; i < 3; i++) t.equal((await token(g.url, 'admin', 'wrong-guess')).status, 401)
  const before = userBinds(main).length
  const searches = main.searches().length
  const r = await token(g.url, 'admin', PEOPLE.admin)
  t.same([r.status, r.json.code], [429, 'too_many_attempts'])
  t.equal(userBinds(main).length, before, 'no bind')
  t.equal(main.searches().length, searches, 'not even a search')
  t.equal((await token(g.url, 'corp\\admin', PEOPLE.admin)).status, 429, 'corp\\admin is the same budget')
  for (const spelled of ['ADMIN', ' admin ', 'admin@corp', 'Admin@Corp']) t.equal((await token(g.url, spelled, PEOPLE.admin)).status, 429, `${JSON.stringify(spelled)}: the same budget`)
  t.equal(main.searches().length, searches, 'none of them reached the directory')
})

t.test('failover: a dead and a hung server are skipped within the bound (timeout 1 s each); one killed mid-run', async (t) => {
  const f = await gateway([directory({ urls: [deadUrl, hungUrl, main.url], retry_after: 30 })])
  const start = Date.now()
  t.equal((await token(f.url, 'carol', PEOPLE.carol)).status, 201)
  t.ok(Date.now() - start < 2500, `dead then hung then main: ${Date.now() - start} ms (bound: 1 s per server)`)
  const quick = Date.now()
  t.equal((await token(f.url, 'carol', PEOPLE.carol)).status, 201)
  t.ok(Date.now() - quick < 800, `the failed ones are skipped for retry_after: ${Date.now() - quick} ms`)
  t.ok(f.logs.some((l) => l.includes('LDAP server failed') && l.includes(hungUrl)), 'logged with why')
  const k = await gateway([directory({ id: 'two', urls: [spare.url, main.url] })])
  t.equal((await token(k.url, 'carol', PEOPLE.carol)).status, 201)
  const spareBinds = userBinds(spare).length
  t.ok(spareBinds > 0, 'the first server answered')
  spare.kill()
  t.equal((await token(k.url, 'carol', PEOPLE.carol)).status, 201, 'killed: the next one answers')
})

t.test('every server down: 503 directory_unavailable with Retry-After; a local password still works', async (t) => {
  const d = await gateway([directory({ id: 'down', urls: [deadUrl, hungUrl] })])
  const local = await makeUser(d, 'dora')
  const r = await token(d.url, 'carol', PEOPLE.carol)
  t.same([r.status, r.json.code], [503, 'directory_unavailable'])
  t.match(r.headers['retry-after'], /^\d+$/)
  const ok = await token(d.url, 'dora', 'dora-password')
  t.same([ok.status, ok.json.user?.id], [201, local.id], 'local_first: the local user signs in')
  const first = await gateway([directory({ id: 'down2', urls: [deadUrl] })], { sign_in: { password_order: 'directory_first', ldap: [directory({ id: 'down2', urls: [deadUrl] })] } })
  const dave = await makeUser(first, 'dave')
  t.same([(await token(first.url, 'dave', 'dave-password')).json.user?.id], [dave.id], 'directory_first: the directory down, the local password still checked')
})

t.test('TLS: ldaps:// and StartTLS verified against ca_file; no CA, another CA, another host: nothing bound', async (t) => {
  const ldaps = await gateway([directory({ id: 'tls', urls: [main.tlsUrl!.replace('127.0.0.1', 'localhost')], ca_file: ca.path('ca.pem') })])
  t.equal((await token(ldaps.url, 'carol', PEOPLE.carol)).status, 201, 'ldaps:// with the CA')
  const start = await gateway([directory({ id: 'stls', urls: [main.url.replace('127.0.0.1', 'localhost')], start_tls: true, ca_file: ca.path('ca.pem') })])
  t.equal((await token(start.url, 'carol', PEOPLE.carol)).status, 201, 'StartTLS with the CA')
  for (const [name, url, caFile] of [
    ['the system CAs only', main.tlsUrl!.replace('127.0.0.1', 'localhost'), null],
    ['a certificate of another CA', foreign.tlsUrl!.replace('127.0.0.1', 'localhost'), ca.path('ca.pem')],
    ['a certificate for another host', wrongHost.tlsUrl!.replace('127.0.0.1', 'localhost'), ca.path('ca.pem')]
  ] as const) {
    const bad = await gateway([directory({ id: 'bad', urls: [url], ca_file: caFile })])
    const before = [main, foreign, wrongHost].map((s) => s.binds().length)
    const r = await token(bad.url, 'carol', PEOPLE.carol)
    t.same([r.status, r.json.code], [503, 'directory_unavailable'], name)
    t.same([main, foreign, wrongHost].map((s) => s.binds().length), before, `${name}: nothing bound`)
  }
})

t.test('compat: jumpserver: JumpServer\'s login view takes a directory password', async (t) => {
  const j = await gateway([directory({ id: 'jms' })], { compat: 'jumpserver' })
  const r = await postForm(j.url, '/core/auth/login/', { username: 'carol', password: PEOPLE.carol })
  t.equal(r.status, 303, r.text.slice(0, 200))
  t.match(String(r.headers['set-cookie']), /jms_sessionid=/)
})

t.test('sidegate ldap test: each step, where it failed, never the password', async (t) => {
  const dir = tempDir('sidegate-ldap-cli-')
  writeFileSync(`${dir}/gateway.yml`, JSON.stringify({
    secret_key: 'a-secret-key-for-the-cli-test-0123456789',
    sign_in: { ldap: [directory({ orgs: [{ group: 'eng', org: eng.id, role: 'admin' }] }), directory({ id: 'gone', urls: [deadUrl] })] }
  }))
  const found = await cliIn(dir, ['ldap', 'test', 'corp', 'carol'])
  t.equal(found.code, 0, found.stderr)
  t.match(found.stdout, /found uid=carol,ou=people,dc=example,dc=com\n {2}id \(entryUUID\) [0-9a-f-]{36}; username carol; email carol@example.com/)
  t.match(found.stdout, /groups \(nested\): eng, staff, everyone\n {2}orgs: .* admin \(group eng\)/)
  const bound = await cliIn(dir, ['ldap', 'test', 'corp', 'carol', '--password-stdin'], { stdin: `${PEOPLE.carol}\n` })
  t.same([bound.code, /the password binds/.test(bound.stdout)], [0, true], bound.stdout)
  const wrong = await cliIn(dir, ['ldap', 'test', 'corp', 'carol', '--password-stdin'], { stdin: 'not-her-password\n' })
  t.same([wrong.code, /refused the password/.test(wrong.stdout)], [1, true])
  const none = await cliIn(dir, ['ldap', 'test', 'corp', 'nobody'])
  t.same([none.code, /no entry matches/.test(none.stdout)], [1, true])
  const down = await cliIn(dir, ['ldap', 'test', 'gone', 'carol'])
  t.same([down.code, /server ldap:\/\/127\.0\.0\.1:\d+: failed: .*\nno server answered/.test(down.stdout)], [1, true], down.stdout)
  const unknown = await cliIn(dir, ['ldap', 'test', 'nope', 'carol'])
  t.same([unknown.code, /no sign_in\.ldap entry with id "nope" \(known: corp, gone\)/.test(unknown.stderr)], [2, true])
  for (const r of [bound, wrong]) t.notOk(`${r.stdout}${r.stderr}`.includes(PEOPLE.carol) || `${r.stdout}${r.stderr}`.includes('not-her-password'), 'no password printed')
})

t.test('sidegate user link --ldap: the entry looked up by the username; --directory-only: the local password goes', async (t) => {
  const dir = tempDir('sidegate-ldap-link-')
  const signIn = { ldap: [directory()] }
  const own = await startGateway(`sqlite:${dir}`, { redis: { prefix: 'link' }, sign_in: signIn })
  opened.push(own)
  writeFileSync(`${dir}/gateway.yml`, JSON.stringify({ secret_key: SECRET, store: { backend: 'sqlite', path: `${dir}/link.db` }, sign_in: signIn }))
  const local = await makeUser(own, 'carol', { password: 'carol-local-password' })
  const entry = JSON.parse((await cliIn(dir, ['ldap', 'test', 'corp', 'carol', '--json'])).stdout).entry
  const linked = await cliIn(dir, ['user', 'link', 'carol', '--ldap', 'corp', '--directory-only'])
  t.same([linked.code, linked.stdout], [0, `linked ldap:corp ${entry.id as string}\n`], linked.stderr)
  t.equal((await token(own.url, 'carol', 'carol-local-password')).status, 401, 'the local password no longer signs in')
  const viaDir = await token(own.url, 'carol', PEOPLE.carol)
  t.same([viaDir.status, viaDir.json.user?.id], [201, local.id], 'the directory\'s password signs in the local carol, by the link')
  const none = await cliIn(dir, ['user', 'link', 'dora', '--ldap', 'corp'])
  t.equal(none.code, 1, 'no such user here')
  await makeUser(own, 'nobody')
  const noEntry = await cliIn(dir, ['user', 'link', 'nobody', '--ldap', 'corp'])
  t.same([noEntry.code, /the directory corp has no usable entry for "nobody": give --subject/.test(noEntry.stderr)], [2, true], noEntry.stderr)
})

t.test('sidegate ldap sync: groups and orgs refreshed for linked users; --dry-run lists and writes nothing; an entry gone loses what the directory gave', async (t) => {
  const dir = tempDir('sidegate-ldap-sync-')
  const withOrgs = directory({ orgs: [{ group: 'leads', org: eng.id, role: 'admin' }] })
  const own = await startGateway(`sqlite:${dir}`, { redis: { prefix: 'sync' }, sign_in: { ldap: [withOrgs] } })
  opened.push(own)
  writeFileSync(`${dir}/gateway.yml`, JSON.stringify({ secret_key: SECRET, store: { backend: 'sqlite', path: `${dir}/sync.db` }, sign_in: { ldap: [withOrgs] } }))
  await own.store.orgs.create('Engineering', eng.id)
  const carol = await makeUser(own, 'carol', { password: 'carol-local-password' })
  const ghost = await makeUser(own, 'ghost', { password: 'ghost-local-password' })
  const entry = JSON.parse((await cliIn(dir, ['ldap', 'test', 'corp', 'carol', '--json'])).stdout).entry
  t.equal((await cliIn(dir, ['user', 'link', 'carol', '--ldap', 'corp'])).code, 0)
  t.equal((await cliIn(dir, ['user', 'link', 'ghost', '--ldap', 'corp', '--subject', '00000000-dead-4000-8000-000000000000'])).code, 0)
  const stale = (await own.store.groups.ensure('old-team', null)).id
  await own.store.groups.replaceExternal(ghost.id, 'idp:ldap:corp', [stale])
  const dry = await cliIn(dir, ['ldap', 'sync', 'corp', '--dry-run'])
  t.equal(dry.code, 0, dry.stderr)
  t.match(dry.stdout, /^carol: \+groups eng, staff, everyone\nghost: entry gone or filtered out; -groups old-team\n2 users linked to corp would change \(dry run: nothing written\)\n$/)
  t.same((await own.store.users.forSignIn(carol.id))?.user.groups ?? [], [], 'dry run: nothing written')
  const real = await cliIn(dir, ['ldap', 'sync', 'corp', '--json'])
  t.equal(real.code, 0, real.stderr)
  t.match(JSON.parse(real.stdout), { dry_run: false, changes: [{ username: 'carol', gone: false }, { username: 'ghost', gone: true }] })
  t.same((await own.store.users.forSignIn(carol.id))?.user.groups?.map((g) => g.name).sort(), ['eng', 'everyone', 'staff'], 'carol\'s groups, as at a sign-in (read from the store: the CLI wrote them)')
  const g2 = (await own.store.users.forSignIn(ghost.id))?.user
  t.same(g2?.groups ?? [], [], 'ghost\'s entry is gone: the directory\'s groups go')
  t.equal(g2?.is_active, true, 'the user stays enabled')
  t.equal(entry.id.length, 36)
  const again = await cliIn(dir, ['ldap', 'sync', 'corp'])
  t.match(again.stdout, /^ghost: entry gone or filtered out\n1 user linked to corp changed\n$/, 'a second run: only the gone entry is named')
})

t.test('a directory user with a second factor: the directory password alone starts no session; the code does', async (t) => {
  t.equal((await token(g.url, 'carol', PEOPLE.carol)).status, 201, 'carol is provisioned')
  const carol = (await g.store.users.byUsername('carol'))!
  const e = (await g.store.mfa.begin(carol.id))!
  if (30_000 - Date.now() % 30_000 < 6000) await sleep(30_000 - Date.now() % 30_000 + 100)
  const t0 = Date.now()
  t.ok(await g.store.mfa.confirm(carol.id, oathtool(e.secret, t0)))
  const api = await token(g.url, 'carol', PEOPLE.carol)
  t.match([api.status, api.json], [200, { error: 'mfa_required' }], 'the token endpoint asks for the code')
  const UA = { 'user-agent': 'ldap-mfa' }
  const first = await postForm(g.url, '/login', { username: 'carol', password: PEOPLE.carol, next: '/account/keys' }, UA)
  t.match([first.status, first.text], [200, /Enter your code/])
  const c = setCookies(first)
  t.equal(c.svc_sessionid, undefined, 'no session after the directory password alone')
  const ok = await postForm(g.url, '/login/mfa', { code: oathtool(e.secret, stepTime(t0, 1)), next: '/account/keys' }, { cookie: `svc_mfa=${c.svc_mfa.value}`, ...UA })
  t.equal(ok.status, 303, ok.text.slice(0, 200))
  t.ok(setCookies(ok).svc_sessionid?.value, 'the code starts the session')
})

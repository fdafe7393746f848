/**
 * The audit trail. A real `sidegate start` (log.level
 * error: the audit lines come anyway) with audit.stream on, the CLI as
 * processes, the embedded store, real HTTP: each credential event is one JSON
 * line with the right fields (a command's: one stream entry, none on its
 * stderr); no password, token, secret, session id or CSRF token appears in
 * any log line or stream entry; `sidegate audit tail` prints the stream and
 * --follow streams new events until SIGINT; the stream is capped; with
 * audit.stream off nothing is appended. The stream in Redis itself (XADD
 * MAXLEN, a Redis that goes away or refuses the stream, the commands sent):
 * test/topology/audit-redis.test.ts.
 */
import t from 'tap'
import { createHash } from 'node:crypto'
import { Keyring } from '../../src/crypto.js'
import { ADMIN_PASSWORD, embeddedStore, openStoreAt, SECRET, startGateway, storeDoc } from '../fixtures/gateway.js'
import { request, post, startEcho } from '../fixtures/http.js'
import { signedHeaders } from '../fixtures/creds.js'
import { login } from '../fixtures/session.js'
import { auditOf, cliIn, followAudit, startIn, workdir, type CliRun } from '../fixtures/procs.js'
import { eventually } from '../fixtures/wait.js'

type Line = Record<string, any>
/** A credential's audit ref, as the gateway with this secret key computes it. */
const credentialRef = (v: string): string => new Keyring(SECRET).auditRef(v)

const db = embeddedStore()
const echo = await startEcho()
t.teardown(async () => { await echo.close(); await db.stop() })
const prefix = `audit${process.pid}:`
const MAX_LEN = 100
const wd = await workdir({
  ...storeDoc(db.url, prefix),
  upstream: { url: echo.url },
  log: { level: 'error' },
  auth: { lockout: { max_failures: 3, window: 600 } },
  audit: { stream: true, max_len: MAX_LEN }
})
const env = { SIDEGATE_SECRET_KEY: SECRET, SIDEGATE_ADMIN_PASSWORD: ADMIN_PASSWORD }
const gw = await startIn(wd.dir, wd.url, { env })
t.teardown(async () => { await gw.stop() })
// the audit stream as the processes left it, read through the store API
const stream = await openStoreAt(db.url, prefix)
t.teardown(async () => { await stream.close() })

/** Everything any process logged, and every stream entry printed: searched for secrets at the end. */
const logged: string[] = []
const cliRuns: CliRun[] = []
/** The events a command appended to the audit stream (a command's go there, not to its stderr). */
const cliEvents = new WeakMap<CliRun, Line[]>()
const cli = async (args: string[], stdin?: string): Promise<CliRun> => {
  const before = (await stream.audit.read({ last: 1 }))[0]?.id ?? '0-0'
  const r = await cliIn(wd.dir, args, { env, stdin })
  cliRuns.push(r)
  const after = (await stream.audit.read({ after: before })).map((e) => JSON.parse(e.json) as Line)
  cliEvents.set(r, after.filter((e) => e.actor === 'cli'))
  return r
}
const auditOfCli = (r: CliRun): Line[] => {
  if (auditOf(r.stderr).length > 0) throw new Error(`audit lines on the command's stderr: ${r.stderr}`)
  return cliEvents.get(r) ?? []
}
const gatewayAudit = (): Line[] => auditOf(gw.out())
/** The gateway's audit line matching `where` (deep subset), once it is there. */
async function line (where: Line): Promise<Line> {
  let found: Line | undefined
  const ok = await eventually(async () => (found = gatewayAudit().find((l) => matches(l, where))) !== undefined, 30_000)
  if (!ok) throw new Error(`no audit line ${JSON.stringify(where)} in:\n${gatewayAudit().map((l) => JSON.stringify(l)).join('\n')}`)
  return found!
}
const matches = (l: Line, where: Line): boolean => Object.entries(where).every(([k, v]) => l[k] === v)

const PASSWORDS = { alice: 'alice-password-1', aliceNew: 'alice-new-password-2', bob: 'bob-password-1', wrong: 'wrong-password-zz9' }
const secrets: Record<string, string> = { ...PASSWORDS, admin: ADMIN_PASSWORD }

const added = await cli(['user', 'add', 'alice', '--password-stdin', '--org', '00000000-0000-0000-0000-000000000002'], PASSWORDS.alice + '\n')
const bobAdded = await cli(['user', 'add', 'bob', '--password-stdin'], PASSWORDS.bob + '\n')
if (added.code !== 0 || bobAdded.code !== 0) throw new Error(added.stderr + bobAdded.stderr)
const aliceId = JSON.parse((await cli(['user', 'list', '--json'])).stdout).find((u: Line) => u.username === 'alice').id as string

t.test('the CLI: one audit event per command in the stream, none on stderr, actor cli, never the password', async (t) => {
  t.equal(added.stderr, '', 'nothing on stderr')
  const [created] = auditOfCli(added)
  t.match(created, { event: 'user.created', outcome: 'success', actor: 'cli', userId: aliceId, username: 'alice', authMethod: 'cli', superuser: false })
  t.type(created.actorName, 'string', 'the operator\'s login name')
  t.equal(auditOfCli(added).length, 1, 'one event')
})

t.test('log.level error: the audit lines come anyway; the first start\'s superuser is user.created by system', async (t) => {
  t.match(await line({ event: 'user.created', actor: 'system' }), { username: 'admin', superuser: true, authMethod: 'bootstrap', outcome: 'success' })
  t.notMatch(gw.out(), /"msg":"request"/, 'no access log line at level error')
})

t.test('a browser login: login.succeeded and session.created (ref, not the id); logout: session.revoked; a wrong password: login.failed', async (t) => {
  const s = await login(wd.url, 'alice', PASSWORDS.alice)
  secrets.session = s.session
  secrets.csrf = s.csrf
  const reqId = String(s.res.headers['x-request-id'])
  t.match(await line({ event: 'login.succeeded', reqId }), { outcome: 'success', actor: aliceId, actorName: 'alice', userId: aliceId, username: 'alice', authMethod: 'password', via: 'login', ip: '127.0.0.1' })
  t.match(await line({ event: 'session.created', reqId }), { userId: aliceId, ref: credentialRef(s.session) })
  const out = await request(wd.url, '/logout', { method: 'POST', headers: { cookie: s.cookie, 'x-csrftoken': s.csrf } })
  t.equal(out.status, 200)
  t.match(await line({ event: 'session.revoked', reqId: String(out.headers['x-request-id']) }), { via: 'logout', actor: aliceId, userId: aliceId, ref: credentialRef(s.session), ip: '127.0.0.1' })
  const bad = await request(wd.url, '/login', { method: 'POST', body: JSON.stringify({ username: 'alice', password: PASSWORDS.wrong }), headers: { 'content-type': 'application/json' } })
  t.equal(bad.status, 401)
  const failed = await line({ event: 'login.failed', reqId: String(bad.headers['x-request-id']) })
  t.match(failed, { outcome: 'failure', actor: 'anonymous', username: 'alice', reason: 'authentication_failed', via: 'login', ip: '127.0.0.1' })
  t.notOk('userId' in failed, 'no account is confirmed by a failure')
})

t.test('lockout: the failure that locks is login.locked_out, once; then each refused attempt is login.failed too_many_attempts', async (t) => {
  const tries = []
  for (let i = 0; i < 3; i++) tries.push(await post(wd.url, '/api/v1/authentication/auth/', { username: 'bob', password: PASSWORDS.wrong }))
  t.same(tries.map((r) => r.status), [401, 401, 401])
  const third = String(tries[2].headers['x-request-id'])
  t.match(await line({ event: 'login.locked_out', reqId: third }), { outcome: 'failure', username: 'bob', ip: '127.0.0.1', retryAfter: 600, via: 'token' })
  const locked = await post(wd.url, '/api/v1/authentication/auth/', { username: 'bob', password: PASSWORDS.bob })
  t.equal(locked.status, 429)
  t.match(await line({ event: 'login.failed', reqId: String(locked.headers['x-request-id']) }), { reason: 'too_many_attempts', username: 'bob' })
  t.equal(gatewayAudit().filter((l) => l.event === 'login.locked_out').length, 1, 'one lockout line')
})

t.test('bearer tokens: token.issued, token.used (same ref), token.refused when used again or unknown', async (t) => {
  const issued = await post(wd.url, '/api/v1/authentication/auth/', { username: 'alice', password: PASSWORDS.alice })
  t.equal(issued.status, 201)
  const token = issued.json.token as string
  secrets.bearer = token
  const reqId = String(issued.headers['x-request-id'])
  t.match(await line({ event: 'login.succeeded', reqId }), { via: 'token', userId: aliceId })
  const ev = await line({ event: 'token.issued', reqId })
  t.match(ev, { userId: aliceId, actor: aliceId, ref: credentialRef(token), authMethod: 'password' })
  t.ok(Math.abs(Date.parse(ev.expires) - Date.now() - 3600_000) < 600_000, 'expires in about an hour')
  const used = await request(wd.url, '/data', { headers: { authorization: `Bearer ${token}` } })
  t.equal(used.status, 200)
  t.match(await line({ event: 'token.used', reqId: String(used.headers['x-request-id']) }), { actor: aliceId, userId: aliceId, authMethod: 'bearer', ref: credentialRef(token), ip: '127.0.0.1' })
  const again = await request(wd.url, '/data', { headers: { authorization: `Bearer ${token}` } })
  t.equal(again.status, 401)
  t.match(await line({ event: 'token.refused', reqId: String(again.headers['x-request-id']) }), { outcome: 'failure', actor: 'anonymous', reason: 'invalid_token', authMethod: 'bearer', ref: credentialRef(token) })
})

t.test('a password mistyped as a bearer token: its ref is a keyed hash, not its plain SHA-256', async (t) => {
  const mistyped = 'Correct-Horse-9'
  const r = await request(wd.url, '/data', { headers: { authorization: `Bearer ${mistyped}` } })
  t.equal(r.status, 401)
  const ev = await line({ event: 'token.refused', reqId: String(r.headers['x-request-id']) })
  t.not(ev.ref, createHash('sha256').update(mistyped).digest('hex').slice(0, 16), 'not crackable from the log: no unsalted hash')
  t.match(ev.ref, /^[0-9a-f]{16}$/)
  t.equal(ev.ref, credentialRef(mistyped), 'an HMAC under the gateway\'s secret key: the same on every replica and restart')
  t.not(new Keyring('another-secret-key-for-the-audit-refs-0123456').auditRef(mistyped), ev.ref, 'another key, another ref')
})

t.test('access keys: key.created by the CLI (never the secret), key.first_used once, key.revoked', async (t) => {
  const r = await cli(['key', 'create', 'alice', '--json'])
  t.equal(r.code, 0, r.stderr)
  const key = JSON.parse(r.stdout) as { id: string, secret: string }
  secrets.keySecret = key.secret
  const [created] = auditOfCli(r)
  t.match(created, { event: 'key.created', actor: 'cli', keyId: key.id, userId: aliceId, username: 'alice' })
  t.notOk(r.stderr.includes(key.secret), 'the secret is on stdout only')
  const first = await request(wd.url, '/k', { headers: signedHeaders(key.id, key.secret, 'GET', '/k') })
  t.equal(first.status, 200)
  t.match(await line({ event: 'key.first_used', keyId: key.id }), { reqId: String(first.headers['x-request-id']), actor: aliceId, userId: aliceId, authMethod: 'access_key', ip: '127.0.0.1' })
  for (let i = 0; i < 3; i++) t.equal((await request(wd.url, '/k', { headers: signedHeaders(key.id, key.secret, 'GET', '/k') })).status, 200)
  // a later event as a marker: everything the uses above logged is logged by then
  const marker = await request(wd.url, '/k', { headers: { authorization: 'Bearer marker-after-key-uses' } })
  await line({ event: 'token.refused', reqId: String(marker.headers['x-request-id']) })
  t.equal(gatewayAudit().filter((l) => l.event === 'key.first_used' && l.keyId === key.id).length, 1, 'the first use only')
  const revoked = await cli(['key', 'revoke', key.id])
  t.equal(revoked.code, 0, revoked.stderr)
  t.match(auditOfCli(revoked), [{ event: 'key.revoked', keyId: key.id, actor: 'cli' }])
})

t.test('passwd, disable, enable, private tokens by the CLI: one event each', async (t) => {
  const cases: Array<[string[], string | undefined, Line]> = [
    [['user', 'passwd', 'alice', '--password-stdin'], PASSWORDS.aliceNew + '\n', { event: 'password.changed', userId: aliceId }],
    [['user', 'disable', 'alice'], undefined, { event: 'user.disabled', userId: aliceId }],
    [['user', 'enable', 'alice'], undefined, { event: 'user.enabled', userId: aliceId }],
    [['token', 'create', 'alice'], undefined, { event: 'private_token.created', userId: aliceId }],
    [['token', 'show', 'alice'], undefined, { event: 'private_token.read', userId: aliceId }],
    [['token', 'revoke', 'alice'], undefined, { event: 'private_token.revoked', userId: aliceId }]
  ]
  for (const [args, stdin, want] of cases) {
    const r = await cli(args, stdin)
    t.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
    if (args[1] === 'create') secrets.privateToken = r.stdout.trim()
    t.match(auditOfCli(r), [{ ...want, actor: 'cli', username: 'alice', authMethod: 'cli', outcome: 'success' }], args.join(' '))
  }
})

t.test('the API: a key created, disabled and deleted by its owner; the password confirmation is audited as a login', async (t) => {
  const s = await login(wd.url, 'alice', PASSWORDS.aliceNew)
  secrets.session2 = s.session
  const headers = { cookie: s.cookie, 'x-csrftoken': s.csrf, 'content-type': 'application/json' }
  const made = await request(wd.url, '/api/v1/authentication/access-keys/', { method: 'POST', headers, body: JSON.stringify({ password: PASSWORDS.aliceNew }) })
  t.equal(made.status, 201)
  secrets.keySecret2 = made.json.secret
  const reqId = String(made.headers['x-request-id'])
  t.match(await line({ event: 'login.succeeded', reqId }), { via: 'confirm', actor: aliceId, authMethod: 'password' })
  t.match(await line({ event: 'key.created', reqId }), { keyId: made.json.id, actor: aliceId, authMethod: 'session' })
  const off = await request(wd.url, `/api/v1/authentication/access-keys/${made.json.id as string}/`, { method: 'PATCH', headers, body: JSON.stringify({ is_active: false }) })
  t.equal(off.status, 200)
  await line({ event: 'key.disabled', reqId: String(off.headers['x-request-id']), keyId: made.json.id })
  const del = await request(wd.url, `/api/v1/authentication/access-keys/${made.json.id as string}/`, { method: 'DELETE', headers })
  t.equal(del.status, 204)
  await line({ event: 'key.revoked', reqId: String(del.headers['x-request-id']), keyId: made.json.id })
})

t.test('sidegate audit tail: the stream\'s events, as text and as JSON; --since', async (t) => {
  const text = await cli(['audit', 'tail', '--limit', '1000'])
  t.equal(text.code, 0, text.stderr)
  logged.push(text.stdout)
  for (const ev of ['user.created', 'login.succeeded', 'login.failed', 'login.locked_out', 'token.issued', 'token.used', 'token.refused', 'key.created', 'key.first_used', 'key.revoked', 'password.changed', 'user.disabled', 'session.revoked']) {
    t.match(text.stdout, new RegExp(`^\\S+Z  ${ev.replace('.', '\\.')}  (success|failure)  actor=`, 'm'), ev)
  }
  const json = await cli(['audit', 'tail', '--json', '--since', '1h'])
  t.equal(json.code, 0, json.stderr)
  const entries = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as Line)
  t.ok(entries.length >= 30, `every event since an hour ago: ${entries.length}`)
  t.ok(entries.every((e) => /^\d+-\d+$/.test(e.id) && typeof e.time === 'string' && typeof e.event === 'string'), 'each with its stream id and time')
  t.match(entries.find((e) => e.event === 'key.first_used'), { actor: aliceId, authMethod: 'access_key', outcome: 'success' })
  t.same(entries.map((e) => e.id), [...entries.map((e) => e.id)].sort((a, b) => { const [x, y] = [a, b].map((v) => v.split('-').map(Number)); return x[0] - y[0] || x[1] - y[1] }), 'oldest first')
  const last2 = await cli(['audit', 'tail', '--json', '--limit', '2'])
  t.same(last2.stdout.trim().split('\n').map((l) => JSON.parse(l).id), entries.slice(-2).map((e) => e.id), 'the last two')
  const future = await cli(['audit', 'tail', '--since', '2099-01-01'])
  t.same([future.code, future.stdout], [0, ''], 'nothing since a future date')
  const bad = await cli(['audit', 'tail', '--since', 'yesterday'])
  t.equal(bad.code, 2)
  t.match(bad.stderr, /--since: "yesterday" is neither/)
})

t.test('sidegate audit tail --follow: prints a new event as it happens; SIGINT ends it with 0', async (t) => {
  const { p, out, err, exited } = followAudit(t, wd.dir, ['--json'], env)
  // the last 10 first: then it is following
  t.ok(await eventually(async () => out().split('\n').length > 10, 60_000), `the last ten printed: ${out()}${err()}`)
  const r = await request(wd.url, '/f', { headers: { authorization: 'Bearer followed-while-tailing' } })
  const reqId = String(r.headers['x-request-id'])
  t.ok(await eventually(async () => out().includes(`"reqId":"${reqId}"`), 30_000), 'the new event is printed')
  const ev = out().split('\n').filter((l) => l.includes(reqId)).map((l) => JSON.parse(l) as Line)
  t.match(ev, [{ event: 'token.refused', reqId, ref: credentialRef('followed-while-tailing') }], 'once')
  logged.push(out())
  p.kill('SIGINT')
  t.equal(await exited, 0, `exit 0 on SIGINT: ${err()}`)
})

t.test('the stream is capped at audit.max_len (on Redis about as many: test/topology/audit-redis.test.ts)', async (t) => {
  for (let i = 0; i < 350; i++) await request(wd.url, '/c', { headers: { authorization: `Bearer cap${i}` } })
  await line({ event: 'token.refused', ref: credentialRef('cap349') })
  t.ok(await eventually(async () => (await stream.audit.read({ last: 1 }))[0]?.json.includes(credentialRef('cap349')) === true, 30_000), 'the last one is in')
  const len = (await stream.audit.read({ last: 10 * MAX_LEN })).length
  t.equal(len, MAX_LEN, `${MAX_LEN} kept`)
})

t.test('no password, token, secret, session id or CSRF token in any log line or stream entry', async (t) => {
  const all = [gw.out(), gw.err(), ...cliRuns.map((r) => r.stderr), ...logged].join('\n')
  t.ok(gatewayAudit().length > 20, 'there is something to search')
  t.same(Object.keys(secrets).sort(), ['admin', 'alice', 'aliceNew', 'bearer', 'bob', 'csrf', 'keySecret', 'keySecret2', 'privateToken', 'session', 'session2', 'wrong'])
  for (const [name, value] of Object.entries(secrets)) {
    t.ok(value.length >= 8, `${name} is a real value`)
    t.notOk(all.includes(value), `${name} appears nowhere`)
  }
  const entries = JSON.stringify(await stream.audit.read({ since: 0 }))
  for (const [name, value] of Object.entries(secrets)) t.notOk(entries.includes(value), `${name}: not in the stream`)
})

t.test('out of the box (no audit: section) the store keeps the trail: who signed in, from where, with what, and refusals', async (t) => {
  const g = await startGateway(db.url, { log: { level: 'silent' }, redis: { prefix: `auditon${process.pid}:` } })
  t.teardown(async () => { await g.close() })
  t.equal(g.config.audit.stream, true, 'the default')
  t.equal((await post(g.url, '/api/v1/authentication/auth/', { username: 'admin', password: 'not-the-password' })).status, 401)
  t.equal((await post(g.url, '/api/v1/authentication/auth/', { username: 'admin', password: ADMIN_PASSWORD })).status, 201)
  const kept = async (): Promise<Line[]> =>
    (await g.store.audit.read({ since: 0 })).map((e) => JSON.parse(e.json) as Line)
  t.ok(await eventually(async () => (await kept()).some((l) => l.event === 'token.issued'), 30_000), 'kept in the store')
  const events = await kept()
  const ok = events.find((l) => l.event === 'login.succeeded')
  t.match(ok, { username: 'admin', authMethod: 'password', ip: '127.0.0.1', via: 'token' }, 'who, with what, from where')
  t.match(events.find((l) => l.event === 'login.failed'), { username: 'admin', reason: 'authentication_failed' }, 'and the refusal')
})

t.test('audit.stream off: events logged, nothing appended to the store\'s stream', async (t) => {
  const g = await startGateway(db.url, { audit: { stream: false }, log: { level: 'silent' }, redis: { prefix: `auditoff${process.pid}:` } })
  t.teardown(async () => { await g.close() })
  for (let i = 0; i < 3; i++) t.equal((await request(g.url, '/api/v1/users/profile/', { headers: { authorization: `Bearer off${i}` } })).status, 401)
  const issued = await post(g.url, '/api/v1/authentication/auth/', { username: 'admin', password: ADMIN_PASSWORD })
  t.equal(issued.status, 201)
  const logged = (): Line[] => auditOf(g.logs.join(''))
  t.ok(await eventually(async () => logged().some((l) => l.event === 'token.issued') && logged().filter((l) => l.event === 'token.refused').length === 3, 30_000), 'logged with log.level silent')
  t.same(await g.store.audit.read({ since: 0 }), [], 'not one entry in the stream (the first start\'s user.created neither)')
})

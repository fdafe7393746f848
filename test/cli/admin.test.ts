/**
 * The admin API on the admin listener of a real
 * `sidegate start` process (admin.enabled), over real HTTP, on the embedded store.
 * Every operation family round-trips, and its effect shows on the public
 * port; bad input is 400 with catalogue codes; the CLI and the API share one
 * implementation (the same JSON); the OpenAPI document validates.
 */
import t from 'tap'
import { Validator } from '@seriousme/openapi-schema-validator'
import { freePort } from '../fixtures/redis.js'
import { request, startEcho, type Res } from '../fixtures/http.js'
import { ADMIN_PASSWORD, embeddedStore, SECRET, spawnGateway } from '../fixtures/gateway.js'
import { cliOf, errorCode } from '../fixtures/procs.js'
import { bearer, signAny, signedHeaders, signedWithBody } from '../fixtures/creds.js'
import { login } from '../fixtures/session.js'
import { eventually } from '../fixtures/wait.js'
import { buildConfig } from '../../src/config/index.js'
import { ADMIN_ROUTES } from '../../src/admin/api.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const db = embeddedStore()
const echo = await startEcho()
const gw = await spawnGateway(db.url, { upstream: { url: echo.url }, admin: { enabled: true }, rate_limit: { enabled: true } }, `adm${process.pid}:`)
t.teardown(async () => { await gw.stop(); await echo.close(); await db.stop() })

const { cli, cliJson } = cliOf(gw.configFile, SECRET)
const adminToken: string = (await cliJson('token', 'create', 'admin')).token

/** A call to the admin API: JSON body, the admin's private token unless `auth` says otherwise. */
async function api (method: string, path: string, body?: unknown, auth: Record<string, string> | null = { authorization: `Token ${adminToken}` }): Promise<Res> {
  return await request(gw.adminUrl, `/admin/v1/${path}`, {
    method,
    headers: { ...(auth ?? {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) })
  })
}
/** An authenticated request on the public port (through to the echo upstream). */
const pub = async (
  path: string, headers: Record<string, string>
): Promise<Res> => await request(gw.url, path, { headers })

t.test('off by default; on the public port the admin paths are not sidegate\'s', async (t) => {
  t.equal(buildConfig({}).admin.enabled, false, 'admin.enabled defaults to false')
  const off = await spawnGateway(db.url, { upstream: { url: echo.url } }, `adm${process.pid}:`)
  t.teardown(async () => { await off.stop() })
  for (const path of ['/admin/v1/users', '/admin/v1/openapi.json']) {
    const r = await request(off.metricsUrl, path, { headers: { authorization: `Token ${adminToken}` } })
    t.equal(r.status, 404, `${path}: 404 with admin.enabled false`)
    t.equal(r.json, undefined, 'the listener\'s plain 404, not an API answer')
  }
  await t.rejects(request(off.adminUrl, '/admin/v1/users'), 'and nothing listens on admin.port')
  t.equal((await request(off.metricsUrl, '/metrics')).status, 200, 'the listener still serves /metrics')
  // the admin API alone: its own listener, no metrics one
  const port = await freePort()
  const alone = await spawnGateway(db.url, { upstream: { url: echo.url }, admin: { enabled: true, port }, metrics: { enabled: false } }, `adm${process.pid}:`)
  t.teardown(async () => { await alone.stop() })
  const base = `http://127.0.0.1:${port}`
  t.ok(await eventually(async () => await request(base, '/admin/v1/users', { headers: { authorization: `Token ${adminToken}` } }).then((r) => r.status === 200, () => false), 60_000), 'metrics off, admin on: the API is served')
  t.equal((await request(base, '/metrics')).status, 404, 'but not /metrics')
  await t.rejects(request(alone.metricsUrl, '/metrics'), 'and nothing listens on metrics.port')
  // on the public port, /admin/v1/… is an upstream path like any
  // other: authenticated and forwarded, never answered by sidegate
  const before = echo.seen.length
  const r = await pub('/admin/v1/users', { authorization: `Token ${adminToken}` })
  t.equal(r.status, 200)
  t.equal(r.json.url, '/admin/v1/users', 'the upstream answered (the echo of the request)')
  t.equal(echo.seen.length, before + 1)
  t.equal((await pub('/admin/v1/users', {})).json.code, 'not_authenticated', 'and needs a credential there like any upstream path')
})

t.test('credentials: a superuser\'s private token or access key; others 401 or 403', async (t) => {
  t.equal((await api('GET', 'users')).status, 200, 'the superuser\'s private token')
  const key = await cliJson('key', 'create', 'admin')
  const signed = await api('GET', 'orgs', undefined, signedHeaders(key.id, key.secret, 'GET', '/admin/v1/orgs'))
  t.equal(signed.status, 200, 'the superuser\'s access-key signature')
  t.ok(signed.json.some((o: any) => o.id === DEFAULT_ORG))
  const made = await api('POST', 'orgs', JSON.stringify({ name: 'Signed' }), signedWithBody(key.id, key.secret, 'POST', '/admin/v1/orgs', JSON.stringify({ name: 'Signed' })))
  t.same([made.status, made.json.name], [201, 'Signed'], 'a signed change')
  // a key used only on the admin API is used all the same (auth.keys.disable_after reads its last use)
  t.ok(await eventually(async () => (await cliJson('key', 'list', 'admin')).find((k: any) => k.id === key.id)?.date_last_used != null, 30_000), 'its last use is recorded')
  t.ok(await eventually(async () => gw.output().split('\n').some((l) => l.includes('"event":"key.first_used"') && l.includes(key.id)), 30_000), 'and its first use audited')
  const forged = await api('GET', 'orgs', undefined, signedHeaders(key.id, key.secret + 'x', 'GET', '/admin/v1/orgs'))
  t.same([forged.status, forged.json.code], [401, 'invalid_signature'])
  const none = await api('GET', 'users', undefined, null)
  t.same([none.status, none.json.code], [401, 'not_authenticated'])
  t.same(none.headers['www-authenticate'], 'Token realm="sidegate", Signature realm="sidegate",headers="(request-target) date"', '401 names the credentials the admin API takes')
  const wrong = await api('GET', 'users', undefined, { authorization: 'Token not-a-token' })
  t.same([wrong.status, wrong.json.code], [401, 'invalid_token'])
  // a bearer token is refused before it is looked at: still usable once on the public port
  const b = await bearer(gw.url)
  const viaBearer = await api('GET', 'users', undefined, { authorization: `Bearer ${b}` })
  t.same([viaBearer.status, viaBearer.json.code], [401, 'unsupported_scheme'])
  t.equal((await pub('/x', { authorization: `Bearer ${b}` })).status, 200, 'the one-time bearer token was not used up')
  // a normal user: 403
  t.equal((await api('POST', 'users', { username: 'carol', password: 'carol-password', orgs: { [DEFAULT_ORG]: 'admin' } })).status, 201)
  const carol = (await api('POST', 'users/carol/private-token')).json.token
  const denied = await api('GET', 'users', undefined, { authorization: `Token ${carol}` })
  t.same([denied.status, denied.json], [403, { detail: 'The admin API is for superusers.', code: 'permission_denied' }])
  t.equal((await pub('/x', { authorization: `Token ${carol}` })).status, 200, 'carol\'s token is fine on the public port')
  // auth before routing: no path or method is revealed without a credential
  t.equal((await api('GET', 'nope', undefined, null)).status, 401)
  t.equal((await api('GET', 'nope')).json.code, 'not_found')
  const m = await api('DELETE', 'orgs')
  t.same([m.status, m.json.code, m.headers.allow], [405, 'method_not_allowed', 'GET, POST'])
})

t.test('a captured signed call cannot be replayed, nor sent again with another body, whatever auth.signature says', async (t) => {
  const config = buildConfig({})
  t.same([config.auth.signature.replay_cache, config.auth.signature.require_digest], [false, false], 'the public port\'s defaults: neither')
  const key = await cliJson('key', 'create', 'admin')
  const path = '/admin/v1/users'
  // the documented form: (request-target) date content-type, no digest
  const date = new Date().toUTCString()
  const captured = signAny(key.id, key.secret, 'POST', path, ['(request-target)', 'date', 'content-type'], { date, 'content-type': 'application/json' })
  const noDigest = await request(gw.adminUrl, path, { method: 'POST', headers: captured, body: JSON.stringify({ username: 'alice', password: 'alice-password-1' }) })
  t.same([noDigest.status, noDigest.json.code], [401, 'invalid_digest'], 'a signed call with a body must sign its digest')
  const mallory = JSON.stringify({ username: 'mallory', password: 'mallory-password-1', superuser: true })
  const forged = await request(gw.adminUrl, path, { method: 'POST', headers: captured, body: mallory })
  t.same([forged.status, forged.json.code], [401, 'invalid_digest'], 'so its headers sent with another body make no superuser')
  t.equal((await api('GET', 'users/mallory')).status, 404, 'mallory does not exist')
  // with a digest: accepted once; the same headers again, with the same or another body, are refused
  const alice = JSON.stringify({ username: 'alice', password: 'alice-password-1' })
  const headers = signedWithBody(key.id, key.secret, 'POST', path, alice)
  t.equal((await request(gw.adminUrl, path, { method: 'POST', headers, body: alice })).status, 201, 'a signed digest: created')
  for (const body of [alice, mallory]) {
    const again = await request(gw.adminUrl, path, { method: 'POST', headers, body })
    t.same([again.status, again.json.code], [401, 'signature_replayed'], 'sent again: refused')
  }
  t.equal((await api('GET', 'users/mallory')).status, 404, 'still no mallory')
  // a GET too is accepted once
  const get = signedHeaders(key.id, key.secret, 'GET', '/admin/v1/orgs')
  t.equal((await api('GET', 'orgs', undefined, get)).status, 200)
  t.same((await api('GET', 'orgs', undefined, get)).json.code, 'signature_replayed', 'a signed GET replayed')
  // a private token stays allowed, for any number of calls
  t.equal((await api('GET', 'orgs')).status, 200)
  t.equal((await api('GET', 'orgs')).status, 200)
})

t.test('its own listener: loopback by default, a warning on any other address', async (t) => {
  t.same([buildConfig({}).admin.host, buildConfig({}).admin.port], ['127.0.0.1', 7081])
  t.throws(() => buildConfig({ admin: { enabled: true, port: 7080 } }), /admin\.port: must differ from metrics\.port/)
  t.throws(() => buildConfig({ admin: { enabled: true, port: 8080 }, listen: { port: 8080 } }), /admin\.port: must differ from listen\.port/)
  t.equal((await request(gw.metricsUrl, '/admin/v1/users', { headers: { authorization: `Token ${adminToken}` } })).status, 404, 'not on the metrics listener')
  t.notMatch(gw.output(), /not a loopback address/, 'no warning on 127.0.0.1')
  const open = await spawnGateway(db.url, { upstream: { url: echo.url }, admin: { enabled: true, host: '0.0.0.0' }, log: { level: 'info' } }, `adm${process.pid}:`)
  t.teardown(async () => { await open.stop() })
  t.equal((await request(open.adminUrl, '/admin/v1/users', { headers: { authorization: `Token ${adminToken}` } })).status, 200)
  t.ok(await eventually(async () => open.output().split('\n').some((l) => l.includes('"level":40') && l.includes('the admin API listens on 0.0.0.0, not a loopback address')), 30_000), 'warned at start')
})

t.test('control characters in stored text: 400 naming the field, nothing created', async (t) => {
  const cases: Array<[string, string, unknown, RegExp]> = [
    ['POST', 'orgs', { name: 'Evil\u001b[2K\rOps' }, /^org name: control characters/],
    ['POST', 'users', { username: 'ctl', password: 'ctl-password-1', name: 'C\u0007tl' }, /^name: control characters/],
    ['POST', 'users', { username: 'ctl', password: 'ctl-password-1', email: 'c@x\u007f.org' }, /^email: control characters/],
    ['POST', 'users', { username: 'ct\nl', password: 'ctl-password-1' }, /^username: /],
    ['POST', 'users/admin/access-keys', { name: 'k\u001b]52;c;ZXZpbA==\u0007' }, /^name: control characters/]
  ]
  const keys = (await api('GET', 'users/admin/access-keys')).json.length
  for (const [method, path, body, detail] of cases) {
    const r = await api(method, path, body)
    t.same([r.status, r.json.code], [400, 'bad_request'], `${method} ${path} ${JSON.stringify(body)}`)
    t.match(r.json.detail, detail)
  }
  t.equal((await api('GET', 'users/ctl')).status, 404, 'no user')
  t.notOk((await api('GET', 'orgs')).json.some((o: any) => o.name.startsWith('Evil')), 'no org')
  t.equal((await api('GET', 'users/admin/access-keys')).json.length, keys, 'no key')
})

t.test('users: create, show, disable/enable, password; visible on the public port', async (t) => {
  const made = await api('POST', 'users', { username: 'bob', password: 'bob-password-1', email: 'bob@example.com', orgs: { [DEFAULT_ORG]: 'user' } })
  t.equal(made.status, 201)
  t.match(made.json, { username: 'bob', email: 'bob@example.com', is_active: true, is_superuser: false, orgs: { [DEFAULT_ORG]: 'user' } })
  t.notOk('password' in made.json || 'password_hash' in made.json, 'no password in the answer')
  t.same((await api('GET', 'users/bob')).json, made.json, 'show')
  t.ok((await api('GET', 'users')).json.some((u: any) => u.username === 'bob'), 'list')
  t.ok((await api('GET', `users?org=${DEFAULT_ORG}`)).json.some((u: any) => u.username === 'bob'), 'list by org')
  t.ok(await bearer(gw.url, 'bob', 'bob-password-1'), 'bob can get a token with his password')
  const token = (await api('POST', 'users/bob/private-token')).json.token
  const asBob = { authorization: `Token ${token}` }
  t.equal((await pub('/x', asBob)).status, 200)

  const off = await api('PATCH', 'users/bob', { is_active: false })
  t.same([off.status, off.json], [200, { id: made.json.id, username: 'bob', is_active: false }])
  t.ok(await eventually(async () => (await pub('/x', asBob)).json.code === 'user_inactive'), 'disabled: 401 user_inactive on the public port')
  t.equal((await api('PATCH', 'users/bob', { is_active: true })).json.is_active, true)
  t.ok(await eventually(async () => (await pub('/x', asBob)).status === 200), 'enabled again')

  const pw = await api('PUT', 'users/bob/password', { password: 'bob-password-2' })
  t.same([pw.status, pw.json], [200, { id: made.json.id, username: 'bob' }])
  t.ok(await bearer(gw.url, 'bob', 'bob-password-2'), 'the new password works')
  await t.rejects(bearer(gw.url, 'bob', 'bob-password-1'), 'the old one does not')
  const dup = await api('POST', 'users', { username: 'bob', password: 'whatever-long' })
  t.same([dup.status, dup.json], [409, { detail: 'A user named bob already exists.', code: 'user_exists' }])
  t.same((await api('GET', 'users/nobody')).json, { detail: 'no user named "nobody"', code: 'not_found' })
})

t.test('user reset-link: a link to set a new password once, from the CLI or the API; --url names the gateway as users reach it', async (t) => {
  t.equal((await api('POST', 'users', { username: 'rita', password: 'rita-password-1', orgs: { [DEFAULT_ORG]: 'user' } })).status, 201)
  const r = await cli('user', 'reset-link', 'rita', '--url', 'https://app.example.com/base/')
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /^reset link for rita \(once, until \d{4}-\d\d-\d\dT[\d:.]+Z\):\nhttps:\/\/app\.example\.com\/base\/login\/reset\?token=v1\.[\w.-]+\n$/)
  const path = new URL(r.stdout.split('\n')[1]).search
  const form = await request(gw.url, `/login/reset${path}`)
  t.match([form.status, form.text], [200, /Set a new password/], 'the link works on the gateway')
  const made = await api('POST', 'users/rita/reset-link', {})
  t.equal(made.status, 201)
  t.match(made.json, { username: 'rita', url: /^http:\/\/localhost:\d+\/login\/reset\?token=/, expires: /Z$/ })
  const token = new URL(made.json.url).searchParams.get('token')!
  const set = await request(gw.url, '/login/reset', { method: 'POST', body: new URLSearchParams({ token, password: 'rita-password-2', again: 'rita-password-2' }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(set.status, 200)
  t.ok(await bearer(gw.url, 'rita', 'rita-password-2'), 'the new password works')
  t.equal((await request(gw.url, `/login/reset${path}`)).status, 400, 'the first link is void too: a password was set')
  const unknown = await cli('user', 'reset-link', 'nobody', '--json')
  t.same([unknown.code, errorCode(unknown.stderr)], [1, 'not_found'])
  const bad = await cli('user', 'reset-link', 'rita', '--url', 'ftp://x/?q=1')
  t.equal(bad.code, 2, 'not an http(s) base: a usage error')
})

t.test('orgs and memberships: the role decides what the public port allows', async (t) => {
  const org = await api('POST', 'orgs', { name: 'Ops' })
  t.equal(org.status, 201)
  t.match(org.json, { name: 'Ops', id: /^[0-9a-f-]{36}$/ })
  t.ok((await api('GET', 'orgs')).json.some((o: any) => o.id === org.json.id))
  const dup = await api('POST', 'orgs', { name: 'Again', id: org.json.id })
  t.same([dup.status, dup.json.code], [409, 'org_exists'])
  const token = (await api('POST', 'users/bob/private-token')).json.token
  const inOps = { authorization: `Token ${token}`, 'x-svc-org': org.json.id }
  t.equal((await pub('/x', inOps)).json.code, 'org_forbidden', 'not a member yet')
  const granted = await api('PUT', `users/bob/orgs/${org.json.id}`, { role: 'admin' })
  t.same([granted.status, granted.json.orgs], [200, { [DEFAULT_ORG]: 'user', [org.json.id]: 'admin' }])
  t.ok(await eventually(async () => (await pub('/x', inOps)).status === 200), 'a member now')
  const removed = await api('DELETE', `users/bob/orgs/${org.json.id}`)
  t.same(removed.json.orgs, { [DEFAULT_ORG]: 'user' })
  t.ok(await eventually(async () => (await pub('/x', inOps)).json.code === 'org_forbidden'), 'not any more')
  const bad = await api('PUT', `users/bob/orgs/${org.json.id}`, { role: 'boss' })
  t.same([bad.status, bad.json], [400, { detail: 'orgs: role must be admin, user or none, got "boss"', code: 'bad_request' }])
  const missing = await api('PUT', 'users/bob/orgs/00000000-0000-0000-0000-00000000dead', { role: 'user' })
  t.same([missing.status, missing.json.code], [404, 'org_not_found'])
})

t.test('access keys: created with the CLI\'s options, the secret shown once, signs through the gateway, revoked', async (t) => {
  const k = await api('POST', 'users/bob/access-keys', { name: 'deploy', expires: '30d', allow_ips: ['127.0.0.1'] })
  t.equal(k.status, 201)
  t.match(k.json, { name: 'deploy', allow_ips: ['127.0.0.1'], is_active: true, secret: /\S{20,}/ })
  const days = (Date.parse(k.json.date_expired) - Date.now()) / 86_400_000
  t.ok(days > 29.9 && days <= 30, `expires in ${days} days`)
  const sign = async (): Promise<Res> => await pub('/k', signedHeaders(k.json.id, k.json.secret, 'GET', '/k'))
  t.equal((await sign()).status, 200, 'the new key signs a request through the gateway')
  const list = (await api('GET', 'users/bob/access-keys')).json
  const listed = list.find((x: any) => x.id === k.json.id)
  t.ok(listed, 'listed')
  t.notOk('secret' in listed, 'never the secret again')
  const away = await api('POST', 'users/bob/access-keys', { allow_ips: ['10.9.0.0/16'] })
  t.equal((await pub('/k', signedHeaders(away.json.id, away.json.secret, 'GET', '/k'))).json.code, 'ip_not_allowed', 'the allow-list applies')
  const off = await api('PATCH', `access-keys/${k.json.id}`, { is_active: false })
  t.same([off.status, off.json], [200, { id: k.json.id, is_active: false }], 'disabled (`key disable`)')
  t.ok(await eventually(async () => (await sign()).json.code === 'key_disabled'), 'disabled: 401 key_disabled on the public port')
  t.equal((await cliJson('key', 'list', 'bob')).find((x: any) => x.id === k.json.id).is_active, false, 'the CLI sees it disabled')
  t.same((await api('PATCH', `access-keys/${k.json.id}`, { is_active: true })).json, { id: k.json.id, is_active: true }, 'enabled again')
  t.ok(await eventually(async () => (await sign()).status === 200), 'signs again')
  t.equal((await api('PATCH', 'access-keys/00000000-0000-4000-8000-000000000000', { is_active: false })).json.code, 'not_found')
  const gone = await api('DELETE', `access-keys/${k.json.id}`)
  t.same([gone.status, gone.json], [200, { id: k.json.id, revoked: true }])
  t.ok(await eventually(async () => (await sign()).json.code === 'invalid_signature'), 'revoked: refused on the public port')
  t.same((await api('DELETE', `access-keys/${k.json.id}`)).json.code, 'not_found')
})

t.test('private tokens: create, replace, revoke', async (t) => {
  const first = await api('POST', 'users/bob/private-token')
  t.same([first.status, Object.keys(first.json).sort()], [201, ['token', 'username']])
  t.equal((await pub('/x', { authorization: `Token ${first.json.token}` })).status, 200)
  const second = (await api('POST', 'users/bob/private-token')).json.token
  t.not(second, first.json.token)
  t.ok(await eventually(async () => (await pub('/x', { authorization: `Token ${first.json.token}` })).status === 401), 'the replaced token is refused')
  t.equal((await pub('/x', { authorization: `Token ${second}` })).status, 200)
  t.same((await api('DELETE', 'users/bob/private-token')).json, { username: 'bob', revoked: true })
  t.ok(await eventually(async () => (await pub('/x', { authorization: `Token ${second}` })).json?.code === 'invalid_token'), 'revoked')
  t.equal((await api('DELETE', 'users/bob/private-token')).status, 404, 'no token to revoke')
  t.equal((await api('GET', 'users/bob/private-token')).status, 405, 'never read back over the API')
})

t.test('sessions: listed, one revoked, all revoked: 401 on the public port', async (t) => {
  const a = await login(gw.url, 'bob', 'bob-password-2')
  const b = await login(gw.url, 'bob', 'bob-password-2')
  const alive = async (s: { cookie: string }): Promise<number> => (await pub('/x', { cookie: s.cookie })).status
  t.same([await alive(a), await alive(b)], [200, 200])
  const list = await api('GET', 'users/bob/sessions')
  t.equal(list.status, 200)
  t.equal(list.json.length, 2)
  for (const s of list.json) {
    t.match(s, { id: /^[A-Za-z0-9_-]{43}$/, date_created: /^20/, date_expires: /^20/ })
    t.not(s.id, a.session)
    t.not(s.id, b.session, 'never the cookie value')
  }
  t.equal((await pub('/x', { cookie: `svc_sessionid=${list.json[0].id}` })).status, 401, 'a listed id is no cookie')
  const one = await api('DELETE', `users/bob/sessions/${list.json[0].id}`)
  t.same(one.json, { username: 'bob', id: list.json[0].id, revoked: true })
  t.ok(await eventually(async () => (await alive(a)) === 401), 'the oldest (a) is gone')
  t.equal(await alive(b), 200, 'the other stays')
  t.equal((await api('DELETE', `users/bob/sessions/${list.json[0].id}`)).status, 404, 'gone already')
  t.equal((await api('DELETE', 'users/bob/sessions/not-a-session-id')).status, 404)
  const c = await login(gw.url, 'bob', 'bob-password-2')
  const all = await api('DELETE', 'users/bob/sessions')
  t.same(all.json, { username: 'bob', revoked: 2 })
  t.ok(await eventually(async () => (await alive(b)) === 401 && (await alive(c)) === 401), 'every session ended')
  t.same((await api('GET', 'users/bob/sessions')).json, [])
})

t.test('rate limits: set, listed, applied on the public port, cleared', async (t) => {
  await api('POST', 'users', { username: 'dave', password: 'dave-password', orgs: { [DEFAULT_ORG]: 'user' } })
  const token = (await api('POST', 'users/dave/private-token')).json.token
  const set = await api('PUT', 'rate-limits/dave', { policy: '2/1h' })
  t.match(set.json, { user: 'dave', limit: 2, window: 3600 })
  t.match((await api('GET', 'rate-limits')).json, { configured: { enabled: true }, overrides: [{ kind: 'user', username: 'dave', limit: 2, window: 3600 }] })
  const asDave = { authorization: `Token ${token}` }
  const codes = [(await pub('/x', asDave)).status, (await pub('/x', asDave)).status, (await pub('/x', asDave)).status]
  t.same(codes, [200, 200, 429], 'the third request within the hour is refused')
  t.match((await api('DELETE', 'rate-limits/dave')).json, { user: 'dave', cleared: true })
  t.ok(await eventually(async () => (await pub('/x', asDave)).status === 200), 'back to gateway.yml\'s limit')
  t.same((await api('GET', 'rate-limits')).json.overrides, [])
  const bad = await api('PUT', 'rate-limits/dave', { policy: 'lots' })
  t.same([bad.status, bad.json.code], [400, 'bad_request'])
  t.equal((await api('PUT', 'rate-limits/nobody', { policy: '5/s' })).json.code, 'not_found')
})

t.test('bad input: 400 with catalogue codes, nothing changed', async (t) => {
  const cases: Array<[string, string, unknown, number, string, RegExp?]> = [
    ['POST', 'users', {}, 400, 'required', /^username: This field is required\.$/],
    ['POST', 'users', { username: 'eve' }, 400, 'required', /^password:/],
    ['POST', 'users', { username: 'eve', password: 'short' }, 400, 'bad_request', /at least 8 characters/],
    ['POST', 'users', { username: 'e v e', password: 'eve-password' }, 400, 'bad_request', /^username:/],
    ['POST', 'users', { username: 'eve', password: 'eve-password', admin: true }, 400, 'bad_request', /^admin: unknown field\.$/],
    ['POST', 'users', { username: 'eve', password: 'eve-password', superuser: 'yes' }, 400, 'bad_request', /^superuser:/],
    ['POST', 'users', { username: 'eve', password: 'eve-password', orgs: { 'not-a-uuid': 'user' } }, 400, 'bad_request', /not an org UUID/],
    ['POST', 'users', '{"username": ', 400, 'parse_error'],
    ['POST', 'users', '[1]', 400, 'parse_error'],
    ['PATCH', 'users/bob', { is_active: 'no' }, 400, 'bad_request', /^is_active:/],
    ['POST', 'users/bob/access-keys', { expires: 'soon' }, 400, 'bad_request', /^expires: "soon" is neither/],
    ['POST', 'users/bob/access-keys', { allow_ips: ['10.0.0.0/33'] }, 400, 'bad_request', /^allow_ips:/],
    ['POST', 'users/bob/access-keys', { allow_ips: '10.0.0.1' }, 400, 'bad_request', /^allow_ips:/],
    ['POST', 'orgs', { name: 'X', id: 'nope' }, 400, 'bad_request', /^id must be a UUID$/],
    ['POST', 'orgs', { name: ' ' }, 400, 'bad_request', /^org name: 1 to 128 characters$/],
    ['POST', 'users/bob/access-keys', { name: 'x'.repeat(129) }, 400, 'bad_request', /^name: at most 128 characters$/],
    ['PUT', 'rate-limits/bob', { policy: 5 }, 400, 'bad_request', /^policy:/],
    ['PUT', 'users/bob/password', {}, 400, 'required', /^password: This field is required\.$/],
    ['GET', 'users?org=nope', undefined, 400, 'bad_request'],
    ['GET', 'users/%E0%A4%A', undefined, 400, 'bad_request']
  ]
  const usersBefore = (await api('GET', 'users')).json.length
  for (const [method, path, body, status, code, detail] of cases) {
    const r = await api(method, path, body)
    t.same([r.status, r.json?.code], [status, code], `${method} ${path} ${JSON.stringify(body)}: ${r.json?.detail}`)
    if (detail !== undefined) t.match(r.json.detail, detail)
  }
  t.equal((await api('GET', 'users')).json.length, usersBefore, 'no user made')
  const form = await request(gw.adminUrl, '/admin/v1/orgs', { method: 'POST', body: 'name=x', headers: { authorization: `Token ${adminToken}`, 'content-type': 'application/x-www-form-urlencoded' } })
  t.same([form.status, form.json], [415, { detail: 'Content-Type must be application/json.', code: 'unsupported_media_type' }], 'JSON only, and the message says so')
})

t.test('one implementation: the CLI and the API answer the same JSON and see each other\'s changes', async (t) => {
  t.same(await cliJson('user', 'list'), (await api('GET', 'users')).json, 'user list --json = GET /admin/v1/users')
  t.same(await cliJson('org', 'list'), (await api('GET', 'orgs')).json, 'org list --json = GET /admin/v1/orgs')
  const viaCli = await cliJson('key', 'create', 'bob', '--name', 'from cli', '--allow-ip', '127.0.0.1')
  const viaApi = (await api('POST', 'users/bob/access-keys', { name: 'from api', allow_ips: ['127.0.0.1'] })).json
  t.same(Object.keys(viaCli).sort(), Object.keys(viaApi).sort(), 'key create: the same fields')
  t.same(await cliJson('key', 'list', 'bob'), (await api('GET', 'users/bob/access-keys')).json, 'key list --json = GET …/access-keys, keys of both')
  t.same(await cliJson('limit', 'set', 'bob', '7/60s'), (await api('PUT', 'rate-limits/bob', { policy: '7/60s' })).json, 'limit set')
  t.same(await cliJson('limit', 'list'), (await api('GET', 'rate-limits')).json, 'limit list')
  await login(gw.url, 'bob', 'bob-password-2')
  // date_expires moves with the clock
  const started = ({ id, date_created: c }: any): unknown => ({ id, date_created: c })
  t.same((await cliJson('session', 'list', 'bob')).map(started), (await api('GET', 'users/bob/sessions')).json.map(started), 'session list')
  const [one] = await cliJson('session', 'list', 'bob')
  t.same(await cliJson('session', 'revoke', 'bob', one.id), { username: 'bob', id: one.id, revoked: true }, 'session revoke <user> <id>')
  t.same((await api('GET', 'users/bob/sessions')).json, [], 'seen by the API')
  await login(gw.url, 'bob', 'bob-password-2')
  const ended = await cliJson('session', 'revoke', 'bob', '--all')
  t.same(ended, { username: 'bob', revoked: 1 })
  const gone = await cli('session', 'revoke', 'bob', one.id)
  t.same([gone.code, gone.stderr.trim()], [1, `sidegate: bob has no session ${one.id}`])
  // the same validation, the same words (the input named as each knows it)
  const c = await cli('key', 'create', 'bob', '--expires', 'soon', '--json')
  const a = await api('POST', 'users/bob/access-keys', { expires: 'soon' })
  t.equal(c.code, 2)
  t.equal(JSON.parse(c.stderr).detail.replace('--expires', 'expires'), a.json.detail)
})

t.test('the OpenAPI document on the admin port: valid, every operation, no credential needed', async (t) => {
  const r = await api('GET', 'openapi.json', undefined, null)
  t.equal(r.status, 200)
  const res = await new Validator().validate(r.json)
  t.ok(res.valid, String(JSON.stringify(res.errors)).slice(0, 2000))
  const documented = Object.entries(r.json.paths as Record<string, Record<string, any>>).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`))
  for (const route of ADMIN_ROUTES) t.ok(documented.includes(`${route.method} /admin/v1/${route.path}`), `${route.method} ${route.path} documented`)
  t.equal(documented.length, ADMIN_ROUTES.length + 1, 'and nothing else but the document itself')
  const createUser = r.json.paths['/admin/v1/users'].post
  t.same(createUser.security, [{ PrivateToken: [] }, { AccessKey: [] }])
  t.ok(createUser.responses['409'], 'user_exists documented')
  t.equal(createUser.requestBody.content['application/json'].schema.additionalProperties, false, 'the body schema the API validates with')
  t.equal((await request(gw.url, '/admin/v1/openapi.json')).json?.openapi, undefined, 'not on the public port')
})

t.test('audit: the operations record the CLI\'s events in the gateway\'s log, the calling superuser as actor, never a secret', async (t) => {
  const admin = (await cliJson('user', 'list')).find((u: any) => u.username === 'admin')
  const auditLines = (): any[] => gw.output().split('\n').filter((l) => l.includes('"log":"audit"')).map((l) => JSON.parse(l))
  const k = await api('POST', 'users/bob/access-keys', { name: 'audited' })
  t.equal(k.status, 201)
  const created = async (): Promise<any> => auditLines().find((e) => e.event === 'key.created' && e.keyId === k.json.id)
  t.ok(await eventually(async () => (await created()) !== undefined, 30_000), 'key.created logged')
  const e = await created()
  t.match(e, { outcome: 'success', actor: admin.id, actorName: 'admin', authMethod: 'private_token', username: 'bob', ip: /127\.0\.0\.1/, reqId: k.headers['x-request-id'] })
  t.equal((await api('DELETE', `access-keys/${k.json.id}`)).status, 200)
  t.ok(await eventually(async () => auditLines().some((x) => x.event === 'key.revoked' && x.keyId === k.json.id && x.actor === admin.id), 30_000), 'key.revoked logged, the superuser as actor')
  t.equal((await api('PUT', 'users/bob/password', { password: 'bob-password-audited' })).status, 200)
  t.ok(await eventually(async () => auditLines().some((x) => x.event === 'password.changed' && x.username === 'bob' && x.actor === admin.id), 30_000), 'password.changed logged')
  const log = gw.output()
  t.notOk(log.includes(k.json.secret), 'the key\'s secret is in no line')
  t.notOk(log.includes('bob-password-audited'), 'the password is in no line')
  t.notOk(log.includes(adminToken), 'the caller\'s token is in no line')
})

t.test('GET /admin/v1/audit: the trail kept by default, read back: who signed in, from where, with what', async (t) => {
  // a refused and an accepted sign-in on the public port, as any client makes them
  const form = (password: string) => request(gw.url, '/api/v1/authentication/auth/', {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password })
  })
  t.equal((await form('wrong-password-for-audit')).status, 401)
  const issued = await form(ADMIN_PASSWORD)
  t.equal(issued.status, 201, issued.text)
  const read = async (q = 'limit=1000&since=1h'): Promise<Res> => await api('GET', `audit?${q}`)
  t.ok(await eventually(async () => (await read()).json.some((e: any) => e.event === 'token.issued' && e.reqId === issued.headers['x-request-id']), 30_000), 'the token issued is in the trail')
  const all = (await read()).json as any[]
  t.match(all.find((e) => e.event === 'login.succeeded' && e.reqId === issued.headers['x-request-id']), { username: 'admin', authMethod: 'password', ip: '127.0.0.1', via: 'token', outcome: 'success' })
  t.match(all.find((e) => e.event === 'login.failed' && e.username === 'admin'), { reason: 'authentication_failed', outcome: 'failure' })
  t.ok(all.every((e) => /^\d+-\d+$/.test(e.id)), 'each with its id')
  t.notOk(JSON.stringify(all).includes(issued.json.token), 'never the token')
  // after: the entries after an id, oldest first; the last ones by default
  const after = (await read(`after=${all.at(-2).id}`)).json as any[]
  t.same(after.map((e) => e.id), [all.at(-1).id], 'after the second to last: the last')
  t.equal((await read('')).json.length, Math.min(10, all.length), 'the last 10 by default')
  for (const q of ['limit=0', 'limit=1001', 'since=yesterday', 'after=x', 'since=1h&after=1-0']) {
    const r = await read(q)
    t.same([r.status, r.json.code], [400, 'bad_request'], q)
  }
  t.equal((await api('GET', 'audit', undefined, null)).status, 401, 'a superuser\'s credential, as every call')
})

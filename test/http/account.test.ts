/**
 * Self-service endpoints for access keys and the private token:
 * every credential kind, own keys only, secrets not cached.
 */
import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { tempDir } from '../fixtures/cleanup.js'
import { request, startEcho, type Res } from '../fixtures/http.js'
import { embeddedStore, startGateway, SECRET, storeDoc } from '../fixtures/gateway.js'
import { bearer, makeUser, signedHeaders } from '../fixtures/creds.js'
import { login } from '../fixtures/session.js'
import { eventually } from '../fixtures/wait.js'
import { main } from '../../src/cli/index.js'

const db = embeddedStore()
const g = await startGateway(db.url)
t.teardown(async () => { await g.close(); await db.stop() })

const KEYS = '/api/v1/authentication/access-keys/'
const TOKEN = '/api/v1/authentication/private-token/'
const PROFILE = '/api/v1/users/profile/'
const json = (body: unknown): { body: string, headers: Record<string, string> } => ({ body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })

type Auth = (method: string, path: string) => Promise<Record<string, string>>

/** One way to authenticate per credential kind, all for the same user. */
async function credentialKinds (username: string): Promise<Array<[string, Auth]>> {
  const u = (await g.store.users.byUsername(username))!
  const pt = await g.store.privateTokens.create(u.id)
  const ak = await g.store.accessKeys.create(u.id)
  const s = await login(g.url, username, `${username}-password`)
  return [
    ['private token', async () => ({ authorization: `Token ${pt}` })],
    ['bearer', async () => ({ authorization: `Bearer ${await bearer(g.url, username, `${username}-password`)}` })],
    ['access key', async (method, path) => signedHeaders(ak.key.id, ak.secret, method, path)],
    ['session', async (method) => ({ cookie: s.cookie, ...(method === 'GET' ? {} : { 'x-csrftoken': s.csrf }) })]
  ]
}

async function call (auth: Auth, method: string, path: string, body?: unknown): Promise<Res> {
  const b = body === undefined ? undefined : json(body)
  return await request(
    g.url, path, { method, body: b?.body, headers: { ...(await auth(method, path)), ...b?.headers } }
  )
}

t.test('every credential kind lists, creates, disables and deletes its own access keys', async (t) => {
  const alice = await makeUser(g, 'alice')
  for (const [kind, auth] of await credentialKinds('alice')) {
    // a permanent credential: the password again (the session is fresh and needs none, see reauth.test.ts)
    const created = await call(auth, 'POST', KEYS, kind === 'session' ? undefined : { password: 'alice-password' })
    t.equal(created.status, 201, `${kind}: create`)
    t.equal(created.headers['cache-control'], 'no-store', `${kind}: the secret is not cached`)
    t.match(created.json, { id: String, secret: String, is_active: true, date_created: String, date_last_used: null })
    const { id, secret } = created.json

    const signed = await request(g.url, PROFILE, { headers: signedHeaders(id, secret, 'GET', PROFILE) })
    t.equal(signed.status, 200, `${kind}: the new secret signs requests`)
    t.equal(signed.json.username, 'alice')

    const list = await call(auth, 'GET', KEYS)
    t.equal(list.status, 200)
    const mine = list.json.find((k: any) => k.id === id)
    t.ok(mine, `${kind}: listed`)
    t.equal(mine.secret, undefined, 'never listed with its secret')
    t.same(Object.keys(mine).sort(), ['allow_ips', 'date_created', 'date_expired', 'date_last_used', 'id', 'is_active', 'name'])
    t.same([mine.name, mine.date_expired, mine.allow_ips], [null, null, []], 'no name, no expiry, anywhere')

    const off = await call(auth, 'PATCH', `${KEYS}${id}/`, { is_active: false })
    t.equal(off.status, 200, `${kind}: disable`)
    t.equal(off.json.is_active, false)
    const refused = await request(g.url, PROFILE, { headers: signedHeaders(id, secret, 'GET', PROFILE) })
    t.same([refused.status, refused.json], [401, { detail: 'This access key is disabled.', code: 'key_disabled' }], 'a disabled key is refused')
    t.equal((await request(g.url, PROFILE, { headers: signedHeaders(id, secret + 'x', 'GET', PROFILE) })).json.code, 'invalid_signature', 'only its holder learns that it is disabled')
    t.equal((await call(auth, 'PATCH', `${KEYS}${id}/`, { is_active: true })).json.is_active, true)
    t.equal((await request(g.url, PROFILE, { headers: signedHeaders(id, secret, 'GET', PROFILE) })).status, 200, 'enabled again')

    const del = await call(auth, 'DELETE', `${KEYS}${id}/`)
    t.equal(del.status, 204, `${kind}: delete`)
    t.equal((await request(g.url, PROFILE, { headers: signedHeaders(id, secret, 'GET', PROFILE) })).json.code, 'invalid_signature', 'a deleted key is refused')
    t.equal((await call(auth, 'GET', `${KEYS}${id}/`)).status, 404)
    t.equal((await call(auth, 'DELETE', `${KEYS}${id}/`)).status, 404, 'deleting twice: 404')
  }
  t.equal((await g.store.accessKeys.list(alice.id)).length, 1, 'only the key used for signing is left')
})

t.test('one key: GET shows it, last use is recorded, bad bodies are refused', async (t) => {
  const u = await makeUser(g, 'ivy')
  const pt = await g.store.privateTokens.create(u.id)
  const auth: Auth = async () => ({ authorization: `Token ${pt}` })
  const { json: k } = await call(auth, 'POST', KEYS, { password: 'ivy-password' })
  t.equal((await request(g.url, PROFILE, { headers: signedHeaders(k.id, k.secret, 'GET', PROFILE) })).status, 200)
  // the last use is written after the answer (not awaited by the request): wait until it is there
  let one = await call(auth, 'GET', `${KEYS}${k.id}/`)
  t.ok(await eventually(async () => typeof (one = await call(auth, 'GET', `${KEYS}${k.id}/`)).json.date_last_used === 'string'), 'the use is recorded')
  t.equal(one.status, 200)
  t.equal(one.json.id, k.id)
  t.equal(one.json.secret, undefined)
  t.type(one.json.date_last_used, 'string', 'last use recorded')
  t.equal((await call(auth, 'GET', `${KEYS}${k.id.toUpperCase()}/`)).json.id, k.id, 'id case does not matter')

  const missing = await call(auth, 'PATCH', `${KEYS}${k.id}/`, {})
  t.equal(missing.status, 400)
  t.equal(missing.json.code, 'required')
  t.equal((await call(auth, 'PATCH', `${KEYS}${k.id}/`, { is_active: 'maybe' })).json.code, 'bad_request')
  const form = await request(g.url, `${KEYS}${k.id}/`, { method: 'PATCH', body: 'is_active=false', headers: { authorization: `Token ${pt}`, 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(form.json.is_active, false, 'form bodies work too')
  const put = await call(auth, 'PUT', `${KEYS}${k.id}/`, { is_active: true })
  t.equal(put.status, 405)
  t.match(put.headers.allow, /PATCH/)
})

t.test('another user\'s key is 404, whatever the method; odd paths are 404', async (t) => {
  const a = await makeUser(g, 'jack')
  const b = await makeUser(g, 'kate')
  const theirs = await g.store.accessKeys.create(b.id)
  const pt = await g.store.privateTokens.create(a.id)
  const auth: Auth = async () => ({ authorization: `Token ${pt}` })
  for (const [method, body] of [['GET', undefined], ['PATCH', { is_active: false }], ['DELETE', undefined]] as const) {
    const r = await call(auth, method, `${KEYS}${theirs.key.id}/`, body)
    t.equal(r.status, 404, method)
    t.equal(r.json.code, 'not_found')
  }
  const still = await g.store.accessKeys.get(theirs.key.id)
  t.equal(still?.key.is_active, true, 'untouched')
  t.notOk((await call(auth, 'GET', KEYS)).json.some((k: any) => k.id === theirs.key.id), 'not listed')
  for (const p of ['not-a-uuid/', `${theirs.key.id}`, `${theirs.key.id}/x/`, '/', `${theirs.key.id}//`]) {
    t.equal((await call(auth, 'GET', KEYS + p)).status, 404, p)
  }
})

t.test('with an upstream, every path under the access keys is sidegate\'s: one no route names is 404, never forwarded', async (t) => {
  const echo = await startEcho()
  const proxied = await startGateway(db.url, { upstream: { url: echo.url } })
  t.teardown(async () => { await proxied.close(); await echo.close() })
  const u = await makeUser(proxied, 'nora')
  const auth = { authorization: `Token ${await proxied.store.privateTokens.create(u.id)}` }
  const { key } = await proxied.store.accessKeys.create(u.id)
  for (const p of ['not-a-uuid/', key.id, `${key.id}/x/`, `${key.id}//`, 'a/b/c']) {
    const r = await request(proxied.url, KEYS + p, { headers: auth })
    t.same([r.status, r.json?.code], [404, 'not_found'], p)
  }
  // the id in any case, as the store's ids are matched
  t.equal((await request(proxied.url, `${KEYS}${key.id.toUpperCase()}/`, { headers: auth })).json.id, key.id, 'upper case')
  const bad = await request(proxied.url, `${KEYS}%E0%A4%A/`, { headers: auth })
  t.same([bad.status, bad.json.code], [400, 'bad_request'], 'a segment that is not valid percent-encoding')
  const put = await request(proxied.url, `${KEYS}${key.id}/`, { method: 'PUT', headers: auth })
  t.same([put.status, put.headers.allow], [405, 'GET, HEAD, PATCH, DELETE'], 'another method: 405 with the methods')
  t.equal(echo.seen.filter((r) => r.url.startsWith(KEYS)).length, 0, 'the upstream saw none of them')
  t.equal((await request(proxied.url, '/api/v1/authentication/access-key/x/', { headers: auth })).status, 200, 'a path beside them is forwarded')
})

t.test('at most 10 access keys per user', async (t) => {
  const u = await makeUser(g, 'leo')
  // a fresh browser session creates keys without the password
  const s = await login(g.url, 'leo', 'leo-password')
  const auth: Auth = async (method) => ({ cookie: s.cookie, ...(method === 'GET' ? {} : { 'x-csrftoken': s.csrf }) })
  for (let i = 0; i < 10; i++) t.equal((await call(auth, 'POST', KEYS)).status, 201)
  const r = await call(auth, 'POST', KEYS)
  t.equal(r.status, 400)
  t.equal(r.json.code, 'too_many_keys')
  t.equal((await g.store.accessKeys.list(u.id)).length, 10)
})

t.test('the cap holds under concurrent creation', async (t) => {
  const u = await makeUser(g, 'lea')
  const s = await login(g.url, 'lea', 'lea-password')
  const auth: Auth = async (method) => ({ cookie: s.cookie, ...(method === 'GET' ? {} : { 'x-csrftoken': s.csrf }) })
  const statuses = (await Promise.all(Array.from({ length: 25 }, async () => (await call(auth, 'POST', KEYS)).status))).sort()
  t.same(statuses, [...Array(10).fill(201), ...Array(15).fill(400)], 'exactly 10 created')
  t.equal((await g.store.accessKeys.list(u.id)).length, 10)
})

t.test('private token: read, create, reset, revoke; never cached', async (t) => {
  const u = await makeUser(g, 'mia')
  const s = await login(g.url, 'mia', 'mia-password')
  const auth: Auth = async (method) => ({ cookie: s.cookie, ...(method === 'GET' ? {} : { 'x-csrftoken': s.csrf }) })
  const none = await call(auth, 'GET', TOKEN)
  t.equal(none.status, 200)
  t.same(none.json, { token: null })
  const created = await call(auth, 'POST', TOKEN)
  t.equal(created.status, 201)
  t.equal(created.headers['cache-control'], 'no-store')
  t.equal((await request(g.url, PROFILE, { headers: { authorization: `Token ${created.json.token}` } })).json.username, 'mia')
  const read = await call(auth, 'GET', TOKEN)
  t.equal(read.json.token, created.json.token)
  t.equal(read.headers['cache-control'], 'no-store')
  const reset = await call(auth, 'POST', TOKEN)
  t.not(reset.json.token, created.json.token)
  t.equal((await request(g.url, PROFILE, { headers: { authorization: `Token ${created.json.token}` } })).json.code, 'invalid_token', 'the old one stops working')
  t.equal((await request(g.url, PROFILE, { headers: { authorization: `PrivateToken ${reset.json.token}` } })).status, 200)
  t.equal(await g.store.privateTokens.get(u.id), reset.json.token, 'the store holds what the endpoint gave')
  t.equal((await call(auth, 'DELETE', TOKEN)).status, 204)
  t.equal((await request(g.url, PROFILE, { headers: { authorization: `Token ${reset.json.token}` } })).status, 401)
  t.equal((await call(auth, 'DELETE', TOKEN)).status, 404, 'nothing left to revoke')
})

t.test('no credential: 401; no organization needed for one\'s own credentials', async (t) => {
  for (const p of [KEYS, TOKEN, `${KEYS}00000000-0000-0000-0000-000000000001/`]) {
    const r = await request(g.url, p)
    t.equal(r.status, 401, p)
    t.equal(r.json.code, 'not_authenticated')
  }
  const loner = await g.store.users.create({ username: 'loner', password: 'loner-password', orgs: {} })
  const pt = await g.store.privateTokens.create(loner.id)
  t.equal((await request(g.url, '/api/v1/users/users/', { headers: { authorization: `Token ${pt}` } })).json.code, 'org_forbidden', 'in no organization')
  const own = await request(g.url, PROFILE, { headers: { authorization: `Token ${pt}` } })
  t.same([own.status, own.json.org_roles], [200, []], 'the profile needs none (as in JumpServer)')
  t.equal((await request(g.url, KEYS, { method: 'POST', body: '{"password":"loner-password"}', headers: { authorization: `Token ${pt}`, 'x-svc-org': 'not-an-org', 'content-type': 'application/json' } })).status, 201, 'still manages own keys')
})

t.test('the CLI and the endpoints share the store: each sees what the other did', async (t) => {
  const u = await makeUser(g, 'nina')
  const pt = await g.store.privateTokens.create(u.id)
  const dir = tempDir('sidegate-account-')
  const file = join(dir, 'gateway.yml')
  writeFileSync(file, stringify(storeDoc(db.url, g.config.redis.prefix)))
  // stdout only: stderr is empty or the command's error (its audit event goes to the store's audit stream)
  const cli = async (...args: string[]): Promise<{ code: number, out: string }> => {
    let out = ''
    let err = ''
    const code = await main([...args, '--config', file, '--json'], { out: (s) => { out += s }, err: (s) => { err += s }, stdin: async () => '' }, { SIDEGATE_SECRET_KEY: SECRET })
    return { code, out: code === 0 ? out : out + err }
  }
  const viaApi = await request(g.url, KEYS, { method: 'POST', body: '{"password":"nina-password"}', headers: { authorization: `Token ${pt}`, 'content-type': 'application/json' } })
  const listed = await cli('key', 'list', 'nina')
  t.equal(listed.code, 0, listed.out)
  t.same(JSON.parse(listed.out).map((k: any) => k.id), [viaApi.json.id], 'the CLI lists the key made through the API')

  const made = await cli('key', 'create', 'nina')
  const { id, secret } = JSON.parse(made.out)
  const list = await request(g.url, KEYS, { headers: { authorization: `Token ${pt}` } })
  t.same(list.json.map((k: any) => k.id).sort(), [viaApi.json.id, id].sort(), 'the API lists the key made by the CLI')
  t.equal((await request(g.url, PROFILE, { headers: signedHeaders(id, secret, 'GET', PROFILE) })).status, 200)

  const shown = await cli('token', 'show', 'nina')
  t.equal(JSON.parse(shown.out).token, (await request(g.url, TOKEN, { headers: { authorization: `Token ${pt}` } })).json.token)
})

t.test('a key an operator or auth.keys.disable_after disabled stays off for its owner: 403; the owner\'s own disable is theirs to undo', async (t) => {
  const u = await makeUser(g, 'olga')
  const dir = tempDir('sidegate-account-')
  const file = join(dir, 'gateway.yml')
  writeFileSync(file, stringify(storeDoc(db.url, g.config.redis.prefix)))
  const cli = async (...args: string[]): Promise<number> => await main([...args, '--config', file], { out: () => {}, err: () => {}, stdin: async () => '' }, { SIDEGATE_SECRET_KEY: SECRET })
  const asOwner: Auth = async () => ({ authorization: `Bearer ${await bearer(g.url, 'olga', 'olga-password')}` })
  const active = async (id: string): Promise<boolean | undefined> => (
    await g.store.accessKeys.list(u.id)
  ).find((k) => k.id === id)?.is_active

  const { key } = await g.store.accessKeys.create(u.id)
  t.equal(await cli('key', 'disable', key.id), 0, 'an operator disables it (the CLI)')
  const refused = await call(asOwner, 'PATCH', `${KEYS}${key.id}/`, { is_active: true })
  t.same([refused.status, refused.json.code], [403, 'key_disabled_by_operator'], 'a bearer token cannot enable it again')
  t.match(refused.json.detail, /only an operator can enable it again/)
  t.equal(await active(key.id), false, 'still disabled')
  t.equal((await call(asOwner, 'PATCH', `${KEYS}${key.id}/`, { is_active: false })).status, 200, 'disabling it again is harmless')
  t.equal((await call(asOwner, 'PATCH', `${KEYS}${key.id}/`, { is_active: true })).status, 403, 'and does not make the disable the owner\'s')
  t.equal(await cli('key', 'enable', key.id), 0, 'the operator enables it')
  t.equal(await active(key.id), true)

  // auth.keys.disable_after disables with the policy's name
  await g.store.accessKeys.setActive(key.id, false, 'policy')
  t.same((await call(asOwner, 'PATCH', `${KEYS}${key.id}/`, { is_active: true })).json.code, 'key_disabled_by_operator', 'an unused-key disable: refused too')
  await g.store.accessKeys.setActive(key.id, true)

  const off = await call(asOwner, 'PATCH', `${KEYS}${key.id}/`, { is_active: false })
  t.same([off.status, off.json.is_active], [200, false], 'the owner disables it')
  const on = await call(asOwner, 'PATCH', `${KEYS}${key.id}/`, { is_active: true })
  t.same([on.status, on.json.is_active], [200, true], 'and may enable it again')
})

/**
 * Making a permanent credential (an access key; creating or resetting the
 * private token) needs the password again, unless the caller is a browser
 * session signed in less than 5 minutes ago: a one-hour bearer token, an
 * access key or private token, or an old session cannot mint one that
 * outlives it. Over real HTTP against a real gateway on the embedded store.
 */
import t from 'tap'
import { request, type Res } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { bearer, makeUser, signedHeaders } from '../fixtures/creds.js'
import { ageSession, login } from '../fixtures/session.js'

const db = embeddedStore()
const g = await startGateway(db.url)
t.teardown(async () => { await g.close(); await db.stop() })

const KEYS = '/api/v1/authentication/access-keys/'
const TOKEN = '/api/v1/authentication/private-token/'
const SIX_MINUTES = 6 * 60_000

type Auth = (method: string, path: string) => Promise<Record<string, string>>

async function call (auth: Auth, method: string, path: string, body?: unknown, form = false): Promise<Res> {
  const headers = await auth(method, path)
  if (body === undefined) return await request(g.url, path, { method, headers })
  return await request(g.url, path, {
    method,
    body: form ? new URLSearchParams(body as Record<string, string>).toString() : JSON.stringify(body),
    headers: { ...headers, 'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json' }
  })
}

const sessionAuth = (s: { cookie: string, csrf: string }): Auth => async (method) => ({ cookie: s.cookie, ...(method === 'GET' ? {} : { 'x-csrftoken': s.csrf }) })

/** One caller per kind that needs the password, all for `username`. */
async function staleKinds (username: string): Promise<Array<[string, Auth]>> {
  const u = (await g.store.users.byUsername(username))!
  await g.store.privateTokens.create(u.id)
  const ak = await g.store.accessKeys.create(u.id)
  const old = await login(g.url, username, `${username}-password`)
  await ageSession(g, old.session, SIX_MINUTES)
  return [
    ['bearer token', async () => ({ authorization: `Bearer ${await bearer(g.url, username, `${username}-password`)}` })],
    ['access key', async (method, path) => signedHeaders(ak.key.id, ak.secret, method, path)],
    // the current one: an earlier caller may have reset it
    ['private token', async () => ({ authorization: `Token ${await g.store.privateTokens.get(u.id)}` })],
    ['session signed in 6 minutes ago', sessionAuth(old)]
  ]
}

t.test('without the password: 403 password_required, and nothing is made', async (t) => {
  const u = await makeUser(g, 'pia')
  for (const [kind, auth] of await staleKinds('pia')) {
    const keysBefore = (await g.store.accessKeys.list(u.id)).length
    const tokenBefore = await g.store.privateTokens.get(u.id)
    for (const body of [undefined, {}, { password: '' }]) {
      const k = await call(auth, 'POST', KEYS, body)
      t.equal(k.status, 403, `${kind}: create key, body ${JSON.stringify(body)}`)
      t.equal(k.json.code, 'password_required', kind)
      const p = await call(auth, 'POST', TOKEN, body)
      t.equal(p.status, 403, `${kind}: create or reset token, body ${JSON.stringify(body)}`)
      t.equal(p.json.code, 'password_required', kind)
    }
    t.equal((await g.store.accessKeys.list(u.id)).length, keysBefore, `${kind}: no key made`)
    t.equal(await g.store.privateTokens.get(u.id), tokenBefore, `${kind}: the token is unchanged`)
  }
})

t.test('with a wrong password: 403 password_incorrect; with the right one (JSON or form): 201', async (t) => {
  const u = await makeUser(g, 'quinn')
  for (const [kind, auth] of await staleKinds('quinn')) {
    const wrong = await call(auth, 'POST', KEYS, { password: 'not-the-password' })
    t.equal(wrong.status, 403, `${kind}: wrong password`)
    t.equal(wrong.json.code, 'password_incorrect')
    t.equal((await call(auth, 'POST', TOKEN, { password: 'not-the-password' })).json.code, 'password_incorrect')

    const key = await call(auth, 'POST', KEYS, { password: 'quinn-password' })
    t.equal(key.status, 201, `${kind}: key made with the password`)
    t.ok(key.json.secret)
    const form = await call(auth, 'POST', KEYS, { password: 'quinn-password' }, true)
    t.equal(form.status, 201, `${kind}: form body too`)
    const tok = await call(auth, 'POST', TOKEN, { password: 'quinn-password' })
    t.equal(tok.status, 201, `${kind}: token made with the password`)
    t.equal(await g.store.privateTokens.get(u.id), tok.json.token)
  }
  const odd = await call(sessionAuth(await login(g.url, 'quinn', 'quinn-password')), 'POST', KEYS, { password: 12345678 })
  t.equal(odd.status, 400, 'a password that is not a string')
  t.equal(odd.json.code, 'bad_request')
})

t.test('a session signed in less than 5 minutes ago needs no password; a wrong one sent is still refused', async (t) => {
  const u = await makeUser(g, 'rhea')
  const s = await login(g.url, 'rhea', 'rhea-password')
  const auth = sessionAuth(s)
  t.equal((await call(auth, 'POST', KEYS)).status, 201, 'fresh session: key')
  t.equal((await call(auth, 'POST', TOKEN)).status, 201, 'fresh session: token')
  t.equal((await call(auth, 'POST', KEYS, { password: 'wrong' })).json.code, 'password_incorrect', 'a password sent is checked')
  await ageSession(g, s.session, 4 * 60_000)
  t.equal((await call(auth, 'POST', KEYS)).status, 201, '4 minutes old: still fresh')
  await ageSession(g, s.session, 2 * 60_000)
  t.equal((await call(auth, 'POST', KEYS)).json.code, 'password_required', '6 minutes old: the password again')
  t.equal((await call(auth, 'GET', TOKEN)).status, 200, 'an old session still reads the token (the keys page shows it)')
  t.equal((await g.store.accessKeys.list(u.id)).length, 2)
})

t.test('bearer tokens and access keys cannot read the private token back; revoking, disabling and deleting need no password', async (t) => {
  const u = await makeUser(g, 'sven')
  const pt = await g.store.privateTokens.create(u.id)
  const ak = await g.store.accessKeys.create(u.id)
  const other = await g.store.accessKeys.create(u.id)
  const viaBearer = await request(g.url, TOKEN, { headers: { authorization: `Bearer ${await bearer(g.url, 'sven', 'sven-password')}` } })
  t.equal(viaBearer.status, 403, 'bearer: read')
  t.equal(viaBearer.json.code, 'permission_denied')
  t.equal(viaBearer.json.token, undefined)
  const viaKey = await request(g.url, TOKEN, { headers: signedHeaders(ak.key.id, ak.secret, 'GET', TOKEN) })
  t.equal(viaKey.status, 403, 'access key: read')
  t.equal((await request(g.url, TOKEN, { headers: { authorization: `Token ${pt}` } })).json.token, pt, 'the private token itself: read')

  const b = async (): Promise<Record<string, string>> => ({ authorization: `Bearer ${await bearer(g.url, 'sven', 'sven-password')}` })
  t.equal((await request(g.url, `${KEYS}${other.key.id}/`, { method: 'PATCH', body: '{"is_active":false}', headers: { ...(await b()), 'content-type': 'application/json' } })).status, 200, 'disable a key')
  t.equal((await request(g.url, `${KEYS}${other.key.id}/`, { method: 'DELETE', headers: await b() })).status, 204, 'delete a key')
  t.equal((await request(g.url, TOKEN, { method: 'DELETE', headers: await b() })).status, 204, 'revoke the token')
  t.equal((await request(g.url, KEYS, { headers: await b() })).status, 200, 'list keys')
})

t.test('wrong passwords here count towards the login lockout', async (t) => {
  await makeUser(g, 'tara')
  const s = await login(g.url, 'tara', 'tara-password')
  await ageSession(g, s.session, SIX_MINUTES)
  const auth = sessionAuth(s)
  for (let i = 1; i <= 7; i++) t.equal((await call(auth, 'POST', KEYS, { password: `guess-${i}` })).json.code, 'password_incorrect', `guess ${i}`)
  const locked = await call(auth, 'POST', KEYS, { password: 'tara-password' })
  t.equal(locked.status, 429, 'then locked, even with the right password')
  t.equal(locked.json.code, 'too_many_attempts')
  t.ok(Number(locked.headers['retry-after']) > 0)
  t.equal((await request(g.url, '/login', { method: 'POST', body: JSON.stringify({ username: 'tara', password: 'tara-password' }), headers: { 'content-type': 'application/json' } })).status, 429, 'and so is the login')
})

/**
 * What a sign-in was made with travels with what it produced: a session or
 * bearer token obtained with the password and a code (from oathtool) carries
 * `pwd,otp` to the upstream (X-SVC-Auth-Factors), to a forward-auth decision
 * and into the identity JWT (amr, acr: verified by jose); one obtained with
 * the password alone carries `pwd`; machine credentials carry none. A
 * client-sent copy of the header never reaches the upstream. On the embedded
 * store (every backend keeps factors: the store contract suite).
 */
import t from 'tap'
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose'
import { post, request, startEcho, type Res } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser, signedHeaders } from '../fixtures/creds.js'
import { login, postForm, setCookies } from '../fixtures/session.js'
import { oathtool, stepTime } from '../fixtures/oathtool.js'
import { sleep } from '../fixtures/wait.js'

const db = embeddedStore()
const echo = await startEcho()
const g = await startGateway(db.url, {
  server: { trusted_proxies: ['127.0.0.1'] },
  upstream: { url: echo.url },
  identity: { jwt: { enabled: true, audience: 'orders', ttl: 60 } }
})
t.teardown(async () => { await g.close(); await echo.close(); await db.stop() })
const jwks = createRemoteJWKSet(new URL('/.well-known/jwks.json', g.url))
// far enough from a step's end that the codes below stay in their windows
if (30_000 - Date.now() % 30_000 < 6000) await sleep(30_000 - Date.now() % 30_000 + 100)
const T0 = Date.now()
const UA = { 'user-agent': 'factors-test' }

const alice = await makeUser(g, 'alice')
const e = (await g.store.mfa.begin(alice.id))!
await g.store.mfa.confirm(alice.id, oathtool(e.secret, T0))
const bob = await makeUser(g, 'bob')
const bobToken = await g.store.privateTokens.create(bob.id)

/** What the upstream got: the factors header and the identity token's claims. */
async function upstream (headers: Record<string, string>): Promise<{
  factors: string | undefined,
  method: string,
  claims: JWTPayload
}> {
  const r = await request(g.url, '/api/v1/orders/', { headers: { ...headers, 'x-svc-auth-factors': 'pwd,otp,hwk', 'x-jms-auth-factors': 'hwk' } })
  if (r.status !== 200) throw new Error(`expected 200, got ${r.status}: ${r.text}`)
  const h = r.json.headers as Record<string, string>
  t.notOk('x-jms-auth-factors' in h, 'the other family\'s header, sent by the client, is stripped')
  const { payload } = await jwtVerify(h['x-svc-identity'], jwks, { audience: 'orders' })
  return { factors: h['x-svc-auth-factors'], method: h['x-svc-auth-method'], claims: payload }
}

async function decide (headers: Record<string, string>): Promise<Res> {
  return await request(g.url, '/_sidegate/auth', { headers: { ...headers, 'x-original-uri': '/api/v1/orders/', 'x-original-method': 'GET', 'x-svc-auth-factors': 'pwd,otp' } })
}

t.test('a session signed in with the password and a code: pwd,otp upstream, in the decision and in the JWT (two_factor)', async (t) => {
  const first = await postForm(g.url, '/login', { username: 'alice', password: 'alice-password' }, UA)
  t.equal(first.status, 200, 'the code page')
  const pending = `svc_mfa=${setCookies(first).svc_mfa.value}`
  const ok = await postForm(g.url, '/login/mfa', { code: oathtool(e.secret, stepTime(T0, 1)) }, { cookie: pending, ...UA })
  t.equal(ok.status, 303, ok.text.slice(0, 200))
  const cookie = `svc_sessionid=${setCookies(ok).svc_sessionid.value}`
  const got = await upstream({ cookie })
  t.equal(got.factors, 'pwd,otp', 'the upstream sees both factors, not what the client sent')
  t.match(got.claims, { sub: alice.id, auth_method: 'session', amr: ['pwd', 'otp'], acr: 'two_factor' })
  const d = await decide({ cookie })
  t.equal(d.status, 200)
  t.equal(d.headers['x-svc-auth-factors'], 'pwd,otp', 'the decision answers with them')

  // the same user signed in with the password alone (a session the store made so): its own token, not the cached one
  const s = await g.store.sessions.create(alice.id, 600, 600)
  const weak = await upstream({ cookie: `svc_sessionid=${s.id}` })
  t.equal(weak.factors, 'pwd')
  t.match(weak.claims, { sub: alice.id, amr: ['pwd'], acr: 'one_factor' }, 'one identity token per set of factors')
})

t.test('a bearer token from JumpServer\'s MFA challenge carries pwd,otp; one from the password alone pwd', async (t) => {
  const one = await post(g.url, '/api/v1/authentication/auth/', { username: 'alice', password: 'alice-password' }, UA)
  t.equal(one.json.error, 'mfa_required')
  const cookie = `svc_mfa=${setCookies(one).svc_mfa.value}`
  const challenge = await post(g.url, '/api/v1/authentication/mfa/challenge/', { type: 'otp', code: oathtool(e.secret, stepTime(T0, -1)) }, { cookie, ...UA })
  t.same(challenge.json, { msg: 'ok' })
  const passed = `svc_mfa=${setCookies(challenge).svc_mfa.value}`
  const issued = await post(g.url, '/api/v1/authentication/auth/', { username: 'alice', password: 'alice-password' }, { cookie: passed, ...UA })
  t.equal(issued.status, 201, issued.text)
  const got = await upstream({ authorization: `Bearer ${issued.json.token as string}` })
  t.equal(got.method, 'bearer')
  t.equal(got.factors, 'pwd,otp')
  t.match(got.claims, { auth_method: 'bearer', amr: ['pwd', 'otp'], acr: 'two_factor' })

  const plain = await post(g.url, '/api/v1/authentication/auth/', { username: 'bob', password: 'bob-password' })
  t.equal(plain.status, 201)
  const d = await decide({ authorization: `Bearer ${plain.json.token as string}` })
  t.equal(d.status, 200)
  t.equal(d.headers['x-svc-auth-factors'], 'pwd', 'the decision says what the token was obtained with')
})

t.test('a session from the password alone: pwd, one_factor', async (t) => {
  const s = await login(g.url, 'bob', 'bob-password')
  const got = await upstream({ cookie: s.cookie })
  t.equal(got.factors, 'pwd')
  t.match(got.claims, { auth_method: 'session', amr: ['pwd'], acr: 'one_factor' })
})

t.test('machine credentials: no factors header, no amr or acr', async (t) => {
  const got = await upstream({ authorization: `Token ${bobToken}` })
  t.equal(got.method, 'private_token')
  t.equal(got.factors, undefined, 'the client\'s copy stripped, none set')
  t.equal(got.claims.auth_method, 'private_token')
  t.notOk('amr' in got.claims || 'acr' in got.claims)
  const d = await decide({ authorization: `Token ${bobToken}` })
  t.equal(d.status, 200)
  t.equal(d.headers['x-svc-auth-factors'], undefined, 'nor in a decision')
})

t.test('an access key carries the factors of the sign-in that made it: two_factor naming method:access_key admits it only when they were two; an operator\'s key as before', async (t) => {
  const ag = await startGateway(db.url, {
    upstream: { url: echo.url },
    access: { default_policy: 'one_factor', rules: [{ paths: ['/machines/**'], subjects: ['method:access_key'], policy: 'two_factor' }] }
  })
  t.teardown(() => ag.close())
  const KEYS = '/api/v1/authentication/access-keys/'
  const dave = await makeUser(ag, 'dave')
  const erin = await makeUser(ag, 'erin')
  const en = (await ag.store.mfa.begin(erin.id))!
  const now = Date.now()
  await ag.store.mfa.confirm(erin.id, oathtool(en.secret, now))
  /** An access key made on the account API by the caller `auth` names (a fresh session needs no password). */
  const mint = async (
    auth: (method: string, path: string) => Record<string, string>, password?: string
  ): Promise<{ id: string, secret: string }> => {
    const body = JSON.stringify(password === undefined ? {} : { password })
    const r = await request(ag.url, KEYS, { method: 'POST', body, headers: { 'content-type': 'application/json', ...auth('POST', KEYS) } })
    t.equal(r.status, 201, r.status === 201 ? 'minted' : r.text.slice(0, 200))
    return { id: r.json.id as string, secret: r.json.secret as string }
  }
  const machines = async (k: { id: string, secret: string }): Promise<number> => (await request(ag.url, '/machines/deploy', { headers: signedHeaders(k.id, k.secret, 'GET', '/machines/deploy') })).status
  const sessionAuth = (s: { cookie: string, csrf: string }) => (method: string) => ({ cookie: s.cookie, ...(method === 'GET' ? {} : { 'x-csrftoken': s.csrf }) })

  // the review's case: a password-only session (fresh: no password asked) mints a key
  const one = await mint(sessionAuth(await login(ag.url, 'dave', 'dave-password')))
  t.same((await ag.store.accessKeys.get(one.id))?.key.factors, ['pwd'], 'the key records the sign-in\'s factors')
  t.equal(await machines(one), 403, 'a key minted by one factor does not pass two_factor')
  t.equal((await request(ag.url, '/other', { headers: signedHeaders(one.id, one.secret, 'GET', '/other') })).status, 200, 'it still passes one_factor')

  // a session signed in with the password and a code (oathtool) mints one that passes
  const first = await postForm(ag.url, '/login', { username: 'erin', password: 'erin-password' }, UA)
  t.equal(first.status, 200, 'the code page')
  const ok = await postForm(ag.url, '/login/mfa', { code: oathtool(en.secret, stepTime(now, 1)) }, { cookie: `svc_mfa=${setCookies(first).svc_mfa.value}`, ...UA })
  t.equal(ok.status, 303, ok.text.slice(0, 200))
  const c = setCookies(ok)
  const two = await mint(sessionAuth({ cookie: `svc_sessionid=${c.svc_sessionid.value}; svc_csrftoken=${c.svc_csrftoken.value}`, csrf: c.svc_csrftoken.value }))
  t.same((await ag.store.accessKeys.get(two.id))?.key.factors, ['pwd', 'otp'])
  t.equal(await machines(two), 200, 'a key minted by two factors passes')

  // a key minted by a key inherits what made that one: one factor never becomes two
  const child = await mint((m, p) => signedHeaders(one.id, one.secret, m, p), 'dave-password')
  t.equal(await machines(child), 403, 'a key made by a one-factor key: refused')
  const grandchild = await mint((m, p) => signedHeaders(two.id, two.secret, m, p), 'erin-password')
  t.equal(await machines(grandchild), 200, 'a key made by a two-factor key: admitted')

  // the operator's keys (CLI, admin API) are the operator's word, as documented before
  const op = await ag.store.accessKeys.create(dave.id)
  t.equal(op.key.factors, undefined)
  t.equal(await machines({ id: op.key.id, secret: op.secret }), 200, 'an operator\'s key passes where the rule names method:access_key')
  // but what a user makes with it records one factor: never more than a sign-in would give
  t.equal(await machines(await mint((m, p) => signedHeaders(op.key.id, op.secret, m, p), 'dave-password')), 403, 'a key the user made with the operator\'s key: refused')
})

/**
 * Organization resolution (`?oid=`, the org header, the user's default org),
 * the JumpServer names (`names.abbrev: JMS`) and the built-in demo API.
 */
import t from 'tap'
import { startEcho, request, type Res } from '../fixtures/http.js'
import { embeddedStore, startGateway, type TestGateway } from '../fixtures/gateway.js'
import { makeUser, signedHeaders } from '../fixtures/creds.js'
import { upgrade } from '../fixtures/raw.js'

/** A subtest's `t`. */
type T = Parameters<Parameters<typeof t.test>[0]>[0]

const ROOT_ORG = '00000000-0000-0000-0000-000000000000'
const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const ORG_A = 'aaaaaaaa-1111-4111-8111-aaaaaaaaaaaa'
const ORG_B = 'bbbbbbbb-2222-4222-8222-bbbbbbbbbbbb'
const ORG_C = 'cccccccc-3333-4333-8333-cccccccccccc'
const NO_ORG = 'dddddddd-4444-4444-8444-dddddddddddd'
const FORBIDDEN = { detail: 'You are not a member of this organization.', code: 'org_forbidden' }
const NOT_FOUND = { detail: 'No such organization.', code: 'org_not_found' }
const INVALID = { detail: 'Organization must be a UUID, "default", "root" or "system".', code: 'invalid_org' }

const db = embeddedStore()
const echo = await startEcho()
const g = await startGateway(db.url, { upstream: { url: echo.url } })
t.teardown(async () => { await g.close(); await echo.close(); await db.stop() })

await g.store.orgs.create('Org A', ORG_A)
await g.store.orgs.create('Org B', ORG_B)
await g.store.orgs.create('Org C', ORG_C)

// alice: a plain member of A only. bob: member of B then Default. su: superuser, member of Default only.
const alice = await makeUser(g, 'alice', { orgs: { [ORG_A]: 'user' } })
const bob = await makeUser(g, 'bob', { orgs: { [ORG_B]: 'user', [DEFAULT_ORG]: 'user' } })
const su = await makeUser(g, 'su', { superuser: true, orgs: { [DEFAULT_ORG]: 'user' } })
const orgless = await makeUser(g, 'orgless', { orgs: {} })

const tokens = new Map<string, string>()
for (const u of [alice, bob, su, orgless]) tokens.set(u.username, await g.store.privateTokens.create(u.id))

async function as (
  gw: TestGateway, username: string, path: string, headers: Record<string, string> = {}
): Promise<Res> {
  let tok = tokens.get(`${gw.url} ${username}`) ?? (gw === g ? tokens.get(username) : undefined)
  if (tok === undefined) {
    const u = await gw.store.users.byUsername(username)
    tok = await gw.store.privateTokens.create(u!.id)
    tokens.set(`${gw.url} ${username}`, tok)
  }
  return await request(gw.url, path, { headers: { authorization: `Token ${tok}`, ...headers } })
}

/** A request that must be refused before the upstream: nothing new in echo.seen. */
async function refused (t: T, r: Promise<Res>, status: number, body: unknown): Promise<void> {
  const n = echo.seen.length
  const res = await r
  t.equal(res.status, status)
  t.same(res.json, body)
  t.equal(echo.seen.length, n, 'not forwarded')
}

t.test('no org header: the user\'s default org goes upstream', async (t) => {
  const r = await as(g, 'alice', '/api/v1/assets/')
  t.equal(r.status, 200)
  t.equal(r.json.headers['x-svc-org'], ORG_A, 'alice\'s only org')
  const b = await as(g, 'bob', '/api/v1/assets/')
  t.equal(b.json.headers['x-svc-org'], ORG_B, 'bob\'s first org is his default')
  const s = await as(g, 'su', '/api/v1/assets/')
  t.equal(s.json.headers['x-svc-org'], DEFAULT_ORG)
  const empty = await as(g, 'alice', '/x', { 'x-svc-org': '' })
  t.equal(empty.status, 200, 'an empty header counts as absent')
  t.equal(empty.json.headers['x-svc-org'], ORG_A)
  await refused(t, as(g, 'orgless', '/x'), 403, FORBIDDEN)
})

t.test('a member\'s own org, by header', async (t) => {
  const r = await as(g, 'bob', '/x', { 'x-svc-org': DEFAULT_ORG })
  t.equal(r.status, 200)
  t.equal(r.json.headers['x-svc-org'], DEFAULT_ORG)
  const r2 = await as(g, 'bob', '/x', { 'x-svc-org': ORG_B })
  t.equal(r2.json.headers['x-svc-org'], ORG_B)
})

t.test('literal "default": the Default org, for its members', async (t) => {
  for (const v of ['default', 'DEFAULT', 'Default']) {
    const r = await as(g, 'bob', '/x', { 'x-svc-org': v })
    t.equal(r.status, 200, v)
    t.equal(r.json.headers['x-svc-org'], DEFAULT_ORG, v)
  }
  await refused(t, as(g, 'alice', '/x', { 'x-svc-org': 'default' }), 403, FORBIDDEN)
})

t.test('literal "root": superusers only', async (t) => {
  const r = await as(g, 'su', '/x', { 'x-svc-org': 'root' })
  t.equal(r.status, 200)
  t.equal(r.json.headers['x-svc-org'], ROOT_ORG)
  const byId = await as(g, 'su', '/x', { 'x-svc-org': ROOT_ORG })
  t.equal(byId.json.headers['x-svc-org'], ROOT_ORG, 'the root org by its id')
  await refused(t, as(g, 'alice', '/x', { 'x-svc-org': 'root' }), 403, FORBIDDEN)
  await refused(t, as(g, 'bob', '/x', { 'x-svc-org': ROOT_ORG }), 403, FORBIDDEN)
})

t.test('not a UUID: 400 invalid_org', async (t) => {
  for (const v of ['abc', 'systems', 'aaaaaaaa-1111-4111-8111-aaaaaaaaaaa', 'aaaaaaaa-1111-4111-8111-aaaaaaaaaaaaa', 'zzzzzzzz-1111-4111-8111-aaaaaaaaaaaa', `{${ORG_A}}`, `${ORG_A},${ORG_B}`]) {
    await refused(t, as(g, 'alice', '/x', { 'x-svc-org': v }), 400, INVALID)
  }
  // two copies of the header are joined by node ("A, B"): ambiguous, refused
  const n = echo.seen.length
  const r = await request(g.url, '/x', { rawHeaders: ['Host', new URL(g.url).host, 'Authorization', `Token ${tokens.get('alice')}`, 'X-SVC-ORG', ORG_A, 'x-svc-org', ORG_A] })
  t.equal(r.status, 400)
  t.equal(r.json.code, 'invalid_org')
  t.equal(echo.seen.length, n)
  await refused(t, as(g, 'alice', '/x?oid=nope'), 400, INVALID)
})

t.test('the literal system: JumpServer\'s system org, superusers only', async (t) => {
  await refused(t, as(g, 'alice', '/x', { 'x-svc-org': 'system' }), 403, FORBIDDEN)
  await refused(t, as(g, 'alice', '/x', { 'x-svc-org': 'SYSTEM' }), 403, FORBIDDEN)
})

t.test('a member of A asking for B: 403 org_forbidden', async (t) => {
  await refused(t, as(g, 'alice', '/x', { 'x-svc-org': ORG_B }), 403, FORBIDDEN)
  await refused(t, as(g, 'alice', `/x?oid=${ORG_B}`), 403, FORBIDDEN)
  // an org that does not exist is not one "you are not a member of"
  await refused(t, as(g, 'alice', '/x', { 'x-svc-org': NO_ORG }), 404, NOT_FOUND)
  // every credential kind goes through the same check
  const { key, secret } = await g.store.accessKeys.create(alice.id)
  const h = signedHeaders(key.id, secret, 'GET', '/x')
  await refused(t, request(g.url, '/x', { headers: { ...h, 'x-svc-org': ORG_B } }), 403, FORBIDDEN)
  const ok = await request(g.url, '/x', { headers: { ...signedHeaders(key.id, secret, 'GET', '/x'), 'x-svc-org': ORG_A } })
  t.equal(ok.status, 200)
  t.equal(ok.json.headers['x-svc-org'], ORG_A)
})

t.test('the profile needs no membership: an org the caller is not in, or no such org, sends the caller\'s own; a malformed one is 400', async (t) => {
  const PROFILE = '/api/v1/users/profile/'
  for (const oid of [ORG_B, NO_ORG]) {
    const r = await as(g, 'alice', `${PROFILE}?oid=${oid}`)
    t.equal(r.status, 200, oid)
    t.equal(r.json.headers['x-svc-org'], ORG_A, 'alice\'s own org goes upstream')
  }
  t.equal((await as(g, 'alice', PROFILE, { 'x-svc-org': ORG_B })).json.headers['x-svc-org'], ORG_A, 'by header too')
  t.equal((await as(g, 'bob', `${PROFILE}?oid=${DEFAULT_ORG}`)).json.headers['x-svc-org'], DEFAULT_ORG, 'an org the caller is in counts')
  await refused(t, as(g, 'alice', `${PROFILE}?oid=nope`), 400, INVALID)
})

t.test('superuser: any existing org, not a nonexistent one', async (t) => {
  const r = await as(g, 'su', '/x', { 'x-svc-org': ORG_C })
  t.equal(r.status, 200, 'an org nobody is a member of')
  t.equal(r.json.headers['x-svc-org'], ORG_C)
  await refused(t, as(g, 'su', '/x', { 'x-svc-org': NO_ORG }), 404, NOT_FOUND)
  await refused(t, as(g, 'su', `/x?oid=${NO_ORG}`), 404, NOT_FOUND)
})

t.test('?oid= wins over the header; an empty ?oid= falls back to the header', async (t) => {
  const r = await as(g, 'bob', `/x?a=1&oid=${ORG_B}`, { 'x-svc-org': DEFAULT_ORG })
  t.equal(r.status, 200)
  t.equal(r.json.headers['x-svc-org'], ORG_B)
  t.equal(r.json.url, `/x?a=1&oid=${ORG_B}`, 'the query goes upstream with oid=<the resolved org>, here as sent')
  const r2 = await as(g, 'bob', `/x?oid=${DEFAULT_ORG}`, { 'x-svc-org': ORG_B })
  t.equal(r2.json.headers['x-svc-org'], DEFAULT_ORG)
  await refused(t, as(g, 'alice', `/x?oid=${ORG_B}`, { 'x-svc-org': ORG_A }), 403, FORBIDDEN)
  const fallback = await as(g, 'bob', '/x?oid=', { 'x-svc-org': DEFAULT_ORG })
  t.equal(fallback.status, 200)
  t.equal(fallback.json.headers['x-svc-org'], DEFAULT_ORG, 'as JumpServer: an empty oid is no oid')
  const other = await as(g, 'bob', '/x?xoid=whatever', { 'x-svc-org': DEFAULT_ORG })
  t.equal(other.json.headers['x-svc-org'], DEFAULT_ORG, 'a parameter merely ending in "oid" is not oid')
})

t.test('?oid= in any spelling a framework reads as oid: one org decides, and the upstream sees only that one', async (t) => {
  // alice is a member of A only: every spelling of "oid=B" must be checked against B, not slip past to the upstream
  for (const q of [`oid=${ORG_A}&oid=${ORG_B}`, `oid=${ORG_A}&OID=${ORG_B}`, `oid=${ORG_A};oid=${ORG_B}`, `oid=${ORG_A}&%6fid=${ORG_B}`]) {
    await refused(t, as(g, 'alice', `/x?${q}`), 400, INVALID)
  }
  for (const q of [`oid=&oid=${ORG_B}`, `%6fid=${ORG_B}`, `%6FID=${ORG_B}`, `o%69d=${ORG_B}`, `OID=${ORG_B}`, `Oid=${ORG_B}`, `x=1;oid=${ORG_B}`, `x=1;%4fid=${ORG_B}`, `oid%5B%5D=${ORG_B}`, `oid[]=${ORG_B}`, `oid[x]=${ORG_B}`, `+oid=${ORG_B}`, `oid%00x=${ORG_B}`,
    `o%C4%B1d=${ORG_B}`, `O%C4%B0D=${ORG_B}`, `%6F%49%44=${ORG_B}`, `oid=${encodeURIComponent(ORG_B)}`.replace('-', '%2d')]) {
    await refused(t, as(g, 'alice', `/x?${q}`), 403, FORBIDDEN)
  }
  // bob is in B and Default: each spelling selects B, and the upstream sees exactly oid=<B>, the rest byte for byte
  const cases: Array<[string, string]> = [
    [`a=1&%6fid=${ORG_B}&b=%20x;c`, `a=1&oid=${ORG_B}&b=%20x;c`],
    [`OID=${ORG_B.toUpperCase()}&oid=${ORG_B}&z=oid`, `oid=${ORG_B}&z=oid`],
    [`oid=&x=1;oid=${ORG_B}`, `oid=${ORG_B}&x=1`],
    [`z=%ZZ&oid=${ORG_B}`, `z=%ZZ&oid=${ORG_B}`]
  ]
  for (const [sent, upstream] of cases) {
    const r = await as(g, 'bob', `/x?${sent}`, { 'x-svc-org': DEFAULT_ORG })
    t.equal(r.status, 200, sent)
    t.equal(r.json.headers['x-svc-org'], ORG_B)
    t.equal(r.json.url, `/x?${upstream}`, `${sent} → ${upstream}`)
  }
  // an empty oid is no oid: the header decides, and the upstream sees the org it decided
  const empty = await as(g, 'bob', '/x?oid=&a=1', { 'x-svc-org': ORG_B })
  t.equal(empty.json.headers['x-svc-org'], ORG_B)
  t.equal(empty.json.url, `/x?oid=${ORG_B}&a=1`)
  const lit = await as(g, 'bob', '/x?oid=default')
  t.equal(lit.json.url, `/x?oid=${DEFAULT_ORG}`, 'a literal goes upstream as the id it named')
  // no oid at all: the query is not touched
  for (const q of ['xoid=1&a=oid', 'a=%6f%69%64', 'oidx=1', 'q=a%20b&oid2=x', '']) {
    const r = await as(g, 'bob', `/x?${q}`)
    t.equal(r.json.url, `/x?${q}`, `?${q} untouched`)
  }
})

t.test('?oid= rewrite happens after the signature is checked over the URL as sent; WebSocket upgrades are rewritten too', async (t) => {
  const { key, secret } = await g.store.accessKeys.create(bob.id)
  const path = `/x?z=1&%6fid=${ORG_B.toUpperCase()}&oid=default;oid=`
  const signed = await request(g.url, path, { headers: signedHeaders(key.id, secret, 'GET', path) })
  t.equal(signed.status, 400, 'B and default are two orgs')
  const path2 = `/x?z=1&%6fid=${ORG_B.toUpperCase()}`
  const ok = await request(g.url, path2, { headers: signedHeaders(key.id, secret, 'GET', path2) })
  t.equal(ok.status, 200, 'signed over the URL as sent')
  t.equal(ok.json.url, `/x?z=1&oid=${ORG_B}`)
  t.equal(ok.json.headers['x-svc-org'], ORG_B)

  const n = echo.seen.length
  const ws = await upgrade(g.url, `/ws?room=1&OID=${ORG_B}`, { Authorization: `Token ${tokens.get('bob')}` })
  t.match(ws.head, /^HTTP\/1\.1 101 /)
  t.equal(echo.seen.length, n + 1)
  t.equal(echo.seen[n].url, `/ws?room=1&oid=${ORG_B}`)
  t.equal(echo.seen[n].headers['x-svc-org'], ORG_B)
  ws.socket.destroy()
  const denied = await upgrade(g.url, `/ws?oid=${ORG_A}&oid=${ORG_B}`, { Authorization: `Token ${tokens.get('bob')}` })
  t.match(denied.head, /^HTTP\/1\.1 400 /)
  denied.socket.destroy()
})

t.test('uppercase UUID accepted and sent upstream in lowercase', async (t) => {
  const r = await as(g, 'alice', '/x', { 'x-svc-org': ORG_A.toUpperCase() })
  t.equal(r.status, 200)
  t.equal(r.json.headers['x-svc-org'], ORG_A)
  const q = await as(g, 'alice', `/x?oid=${ORG_A.toUpperCase()}`)
  t.equal(q.json.headers['x-svc-org'], ORG_A)
  const su2 = await as(g, 'su', '/x', { 'x-svc-org': ORG_C.toUpperCase() })
  t.equal(su2.json.headers['x-svc-org'], ORG_C, 'superuser path too')
})

t.test('names.abbrev JMS: X-JMS-ORG read, X-JMS-* injected, jms_sessionid accepted', async (t) => {
  const gj = await startGateway(db.url, { upstream: { url: echo.url }, names: { abbrev: 'JMS' } })
  t.teardown(() => gj.close())
  await gj.store.orgs.create('Org A', ORG_A)
  await gj.store.orgs.create('Org B', ORG_B)
  const u = await makeUser(gj, 'jane', { orgs: { [DEFAULT_ORG]: 'user', [ORG_A]: 'admin' } })

  const r = await as(gj, 'jane', '/api/v1/assets/', { 'X-JMS-ORG': ORG_A, 'X-JMS-User-Id': 'forged', 'x-svc-org': 'not-ours', 'X-SVC-User-Id': 'forged', 'X-SVC-Username': 'admin', 'X-SVC-Auth-Method': 'session', X_SVC_User_Id: 'forged' })
  t.equal(r.status, 200)
  const h = r.json.headers
  t.equal(h['x-jms-org'], ORG_A, 'the JMS header selected the org')
  t.equal(h['x-jms-user-id'], u.id)
  t.equal(h['x-jms-username'], 'jane')
  t.equal(h['x-jms-auth-method'], 'private_token')
  t.equal(h['x-svc-user-id'], undefined, 'no SVC names are injected')
  for (const k of ['x-svc-org', 'x-svc-user-id', 'x-svc-username', 'x-svc-auth-method', 'x_svc_user_id']) t.equal(h[k], undefined, `${k}: the other family's identity headers are stripped too (a mixed fleet must not trust them)`)

  await refused(t, as(gj, 'jane', '/x', { 'X-JMS-ORG': ORG_B }), 403, FORBIDDEN)
  await refused(t, as(gj, 'jane', '/x', { 'X-JMS-ORG': 'nope' }), 400, INVALID)
  const ignored = await as(gj, 'jane', '/x', { 'X-SVC-ORG': ORG_A })
  t.equal(ignored.json.headers['x-jms-org'], DEFAULT_ORG, 'X-SVC-ORG does not select the org')

  const s = await gj.store.sessions.create(u.id, 60)
  const viaCookie = await request(gj.url, '/x', { headers: { cookie: `a=1; jms_sessionid=${s.id}; jms_csrftoken=${s.csrf}`, 'x-jms-org': ORG_A } })
  t.equal(viaCookie.status, 200)
  t.equal(viaCookie.json.headers['x-jms-auth-method'], 'session')
  t.equal(viaCookie.json.headers['x-jms-org'], ORG_A)
  t.equal(viaCookie.json.headers.cookie, 'a=1', 'jms_sessionid and jms_csrftoken not forwarded')
  const legacy = await request(gj.url, '/x', { headers: { cookie: `sessionid=${s.id}` } })
  t.equal(legacy.status, 200, 'legacy sessionid still accepted')
  const svc = await request(gj.url, '/x', { headers: { cookie: `svc_sessionid=${s.id}` } })
  t.equal(svc.status, 401, 'svc_sessionid is not a JMS gateway\'s cookie')
  t.equal(svc.json.code, 'not_authenticated')
})

t.test('built-in API (no upstream): profile and users', async (t) => {
  const gb = await startGateway(db.url, {})
  t.teardown(() => gb.close())
  await gb.store.orgs.create('Org A', ORG_A)
  await gb.store.orgs.create('Org B', ORG_B)
  const pat = await makeUser(gb, 'pat', { orgs: { [ORG_A]: 'user' } })
  const oa = await makeUser(gb, 'oadmin', { orgs: { [ORG_A]: 'admin', [ORG_B]: 'user' } })
  const ob = await makeUser(gb, 'bmember', { orgs: { [ORG_B]: 'user' } })
  const root = await makeUser(gb, 'rooty', { superuser: true, orgs: { [DEFAULT_ORG]: 'admin' } })
  const admin = await gb.store.users.byUsername('admin')

  t.test('profile: the caller, with JumpServer field names', async (t) => {
    const r = await as(gb, 'pat', '/api/v1/users/profile/')
    t.equal(r.status, 200)
    t.equal(r.headers['cache-control'], 'no-store')
    t.match(r.headers['content-type'], /^application\/json/)
    t.same(Object.keys(r.json).sort(), ['date_joined', 'email', 'id', 'is_active', 'is_superuser', 'is_valid', 'last_login', 'name', 'org_roles', 'source', 'system_roles', 'username'])
    t.match(r.json, {
      id: pat.id,
      username: 'pat',
      name: 'pat',
      email: '',
      source: 'local',
      is_active: true,
      is_valid: true,
      is_superuser: false,
      system_roles: [{ name: 'User' }],
      org_roles: [{ name: 'OrgUser' }]
    })
    t.notOk('password_hash' in r.json)
    const a = await as(gb, 'oadmin', '/api/v1/users/profile/', { 'x-svc-org': ORG_A })
    t.same(a.json.org_roles, [{ name: 'OrgAdmin' }], 'role in the resolved org')
    const b = await as(gb, 'oadmin', '/api/v1/users/profile/', { 'x-svc-org': ORG_B })
    t.same(b.json.org_roles, [{ name: 'OrgUser' }])
    const s = await as(gb, 'rooty', '/api/v1/users/profile/', { 'x-svc-org': 'root' })
    t.same(s.json.system_roles, [{ name: 'SystemAdmin' }])
    t.same(s.json.org_roles, [])
    t.equal(s.json.is_superuser, true)
    const none = await request(gb.url, '/api/v1/users/profile/')
    t.equal(none.status, 401)
    t.equal(none.json.code, 'not_authenticated')
    const forbidden = await as(gb, 'pat', '/api/v1/users/users/', { 'x-svc-org': ORG_B })
    t.same(forbidden.json, FORBIDDEN, 'org checks apply to built-in routes too')
    const elsewhere = await as(gb, 'pat', '/api/v1/users/profile/', { 'x-svc-org': ORG_B })
    t.same([elsewhere.status, elsewhere.json.id, elsewhere.json.org_roles], [200, pat.id, []], 'but the profile needs no membership (as JumpServer): no roles in an org the user is not in')
  })

  t.test('users: plain user 403 permission_denied', async (t) => {
    const r = await as(gb, 'pat', '/api/v1/users/users/')
    t.equal(r.status, 403)
    t.same(r.json, { detail: 'You do not have permission to perform this action.', code: 'permission_denied' })
    const b = await as(gb, 'oadmin', '/api/v1/users/users/', { 'x-svc-org': ORG_B })
    t.equal(b.status, 403, 'admin of A is a plain user in B')
    t.equal(b.json.code, 'permission_denied')
  })

  t.test('users: org admin sees the users of that org only', async (t) => {
    const r = await as(gb, 'oadmin', '/api/v1/users/users/', { 'x-svc-org': ORG_A })
    t.equal(r.status, 200)
    t.same(r.json.map((u: any) => u.username), ['oadmin', 'pat'])
    t.same(r.json.map((u: any) => u.id), [oa.id, pat.id])
    t.same(r.json.find((u: any) => u.username === 'oadmin').org_roles, [{ name: 'OrgAdmin' }])
    t.same(r.json.find((u: any) => u.username === 'pat').org_roles, [{ name: 'OrgUser' }])
    const d = await as(gb, 'oadmin', '/api/v1/users/users/')
    t.same(d.json.map((u: any) => u.username), ['oadmin', 'pat'], 'default org of oadmin is A')
  })

  t.test('users: superuser in root sees everyone; in an org, that org', async (t) => {
    const r = await as(gb, 'rooty', '/api/v1/users/users/', { 'x-svc-org': 'root' })
    t.equal(r.status, 200)
    t.same(r.json.map((u: any) => u.id).sort(), [admin!.id, ob.id, oa.id, pat.id, root.id].sort())
    const inB = await as(gb, 'rooty', '/api/v1/users/users/', { 'x-svc-org': ORG_B })
    t.equal(inB.status, 200, 'superuser in an org he is not a member of')
    t.same(inB.json.map((u: any) => u.username), ['bmember', 'oadmin'])
    const inDefault = await as(gb, 'rooty', '/api/v1/users/users/')
    t.same(inDefault.json.map((u: any) => u.username), ['admin', 'rooty'])
  })

  t.test('unknown paths: 404 not_found, wrong method: 405', async (t) => {
    const r = await as(gb, 'rooty', '/api/v1/assets/')
    t.equal(r.status, 404)
    t.same(r.json, { detail: 'Not found.', code: 'not_found' })
    const m = await request(gb.url, '/api/v1/users/users/', { method: 'POST', headers: { authorization: `Token ${tokens.get(`${gb.url} rooty`)}` } })
    t.equal(m.status, 405)
    t.equal(m.headers.allow, 'GET, HEAD')
  })
})

/**
 * Drop-in for JumpServer clients, over real HTTP against real
 * gateways on the embedded store: what JumpServer's clients send that a strict
 * sidegate refused, and the settings a migration turns on. Two gateways in
 * `names.abbrev: JMS` mode:
 * - `strict`: the defaults (single-use bearer tokens, ±300 s, sha256/sha512,
 *   unknown orgs rejected), in front of the echo upstream;
 * - `migrating`: JumpServer's behaviour turned on (reusable bearer tokens,
 *   no Date freshness, hmac-sha1, unknown orgs → the default org), serving
 *   the built-in API.
 */
import t from 'tap'
import { createHmac } from 'node:crypto'
import { startEcho, request, post, type Res } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const ROOT_ORG = '00000000-0000-0000-0000-000000000000'
const SYSTEM_ORG = '00000000-0000-0000-0000-000000000004'
const PROFILE = '/api/v1/users/profile/'
/** The date JumpServer's own documented example signs */
const DOC_DATE = 'Mon, 17 Feb 2014 06:11:05 GMT'

const db = embeddedStore()
const echo = await startEcho()
// all gateways here on one store: the same users, keys and tokens
const shared = { url: db.url, prefix: `jms${process.pid}:` }
const strict = await startGateway(db.url, { redis: shared, names: { abbrev: 'JMS' }, upstream: { url: echo.url } })
const migrating = await startGateway(db.url, {
  redis: shared,
  names: { abbrev: 'JMS' },
  auth: { bearer: { single_use: false, ttl: 600 }, signature: { clock_skew: 0, algorithms: ['hmac-sha1', 'hmac-sha256', 'hmac-sha512'], replay_cache: true } },
  org: { unknown: 'default' }
})
t.teardown(async () => { await strict.close(); await migrating.close(); await echo.close(); await db.stop() })

const alice = await makeUser(strict, 'alice')
const boss = await makeUser(strict, 'boss', { superuser: true })
const team = await strict.store.orgs.create('team')
await strict.store.users.setMembership(alice.id, team.id, 'user')
const key = await strict.store.accessKeys.create(alice.id)

type Alg = 'sha1' | 'sha256' | 'sha512'
/** Signs as JumpServer's documented Python client does (httpsig's HeaderSigner): (request-target) accept date. */
function signed (
  path: string,
  o: { date?: string, alg?: Alg, keyId?: string, method?: string, mac?: string } = {}
): Record<string, string> {
  const date = o.date ?? new Date().toUTCString()
  const alg = o.alg ?? 'sha256'
  const text = [`(request-target): ${(o.method ?? 'get')} ${path}`, 'accept: application/json', `date: ${date}`].join('\n')
  const signature = o.mac ?? createHmac(alg, key.secret).update(text).digest('base64')
  return {
    accept: 'application/json',
    date,
    authorization: `Signature keyId="${o.keyId ?? key.key.id}",algorithm="hmac-${alg}",headers="(request-target) accept date",signature="${signature}"`
  }
}
const get = async (
  base: string, path: string, headers: Record<string, string>
): Promise<Res> => await request(base, path, { headers })
const lastSeen = (): (typeof echo.seen)[number] => echo.seen[echo.seen.length - 1]

t.test('the token endpoint at /api/v1/authentication/tokens/ too: the same 201, the same token rules', async (t) => {
  for (const path of ['/api/v1/authentication/tokens/', '/api/v1/authentication/auth/']) {
    const r = await post(strict.url, path, { username: 'alice', password: 'alice-password' })
    t.equal(r.status, 201, `${path}: ${r.text}`)
    t.same(Object.keys(r.json).sort(), ['date_expired', 'keyword', 'token', 'user'])
    const auth = { authorization: `Bearer ${r.json.token}` }
    t.equal((await get(strict.url, '/api/v1/some/', auth)).status, 200, 'the token works')
    t.equal((await get(strict.url, '/api/v1/some/', auth)).status, 401, 'once (single_use, the default)')
  }
  const doc = (await request(strict.url, '/api/docs/openapi.json')).json
  t.ok(doc.paths['/api/v1/authentication/tokens/']?.post, 'documented')
})

t.test('bearer tokens: single use by default; with single_use: false reusable until date_expired, and a password change revokes them', async (t) => {
  const r = await post(migrating.url, '/api/v1/authentication/tokens/', { username: 'alice', password: 'alice-password' })
  t.equal(r.status, 201, r.text)
  const m = /^(\d{4})\/(\d{2})\/(\d{2}) (\d{2}):(\d{2}):(\d{2}) \+0000$/.exec(r.json.date_expired)!
  const expires = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6])
  t.ok(Math.abs(expires - (Date.now() + 600_000)) < 5000, `date_expired tells the truth: ttl 600 s ahead (${r.json.date_expired})`)
  const auth = { authorization: `Bearer ${r.json.token}` }
  for (let i = 1; i <= 3; i++) t.equal((await get(migrating.url, PROFILE, auth)).status, 200, `use ${i}`)
  const changed = auth.authorization.slice(0, -1) + (auth.authorization.endsWith('A') ? 'B' : 'A')
  t.equal((await get(migrating.url, PROFILE, { authorization: changed })).status, 401, 'one character changed: 401')
  await migrating.store.passwords.set(alice.id, 'alice-password-2')
  t.equal((await get(migrating.url, PROFILE, auth)).status, 401, 'revoked by a password change')
  await migrating.store.passwords.set(alice.id, 'alice-password')
  const doc = (await request(migrating.url, '/api/docs/openapi.json')).json
  t.match(doc.paths['/api/v1/authentication/auth/'].post.description, /for any number of requests/, 'the documentation says so')
})

t.test('signature Date: ±300 s by default, any date form and zone converted first; clock_skew 0 checks none (with a warning)', async (t) => {
  const now = new Date()
  const p = (n: number): string => String(n).padStart(2, '0')
  const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat']
  const longDays = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday']
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
  /** email.utils.formatdate(localtime=True) in a zone `offset` minutes east */
  const rfc5322 = (d: Date, offset: number, zone: string): string => {
    const l = new Date(d.getTime() + offset * 60_000)
    return `${days[l.getUTCDay()]}, ${p(l.getUTCDate())} ${months[l.getUTCMonth()]} ${l.getUTCFullYear()} ${p(l.getUTCHours())}:${p(l.getUTCMinutes())}:${p(l.getUTCSeconds())} ${zone}`
  }
  const forms: Record<string, string> = {
    'IMF-fixdate': now.toUTCString(),
    'formatdate() -0000': rfc5322(now, 0, '-0000'),
    'formatdate(localtime) +0800': rfc5322(now, 480, '+0800'),
    'formatdate(localtime) -0530': rfc5322(now, -330, '-0530'),
    'named zone EST': rfc5322(now, -300, 'EST'),
    'RFC 850': `${longDays[now.getUTCDay()]}, ${p(now.getUTCDate())}-${months[now.getUTCMonth()]}-${p(now.getUTCFullYear() % 100)} ${p(now.getUTCHours())}:${p(now.getUTCMinutes())}:${p(now.getUTCSeconds())} GMT`,
    asctime: `${days[now.getUTCDay()]} ${months[now.getUTCMonth()]} ${String(now.getUTCDate()).padStart(2, ' ')} ${p(now.getUTCHours())}:${p(now.getUTCMinutes())}:${p(now.getUTCSeconds())} ${now.getUTCFullYear()}`
  }
  for (const [name, date] of Object.entries(forms)) {
    const r = await get(strict.url, PROFILE, signed(PROFILE, { date }))
    t.equal(r.status, 200, `${name} (${date}): accepted ${r.text}`)
  }
  // the same wall-clock time in the wrong zone is 8 hours off: converted, not read as UTC
  const wrongZone = rfc5322(now, 0, '+0800')
  t.equal((await get(strict.url, PROFILE, signed(PROFILE, { date: wrongZone }))).json.code, 'signature_expired', `${wrongZone}: 8 h off`)
  for (const bad of ['Tue, 17 Feb 2014 06:11:05 GMT', 'Mon, 31 Feb 2014 06:11:05 GMT', 'Mon, 17 Feb 2014 06:11:05 +9999', 'yesterday']) {
    t.equal((await get(strict.url, PROFILE, signed(PROFILE, { date: bad }))).json.code, 'signature_expired', `${bad}: refused`)
  }
  t.equal((await get(strict.url, PROFILE, signed(PROFILE, { date: DOC_DATE }))).json.code, 'signature_expired', 'the 2014 date: outside ±300 s by default')

  const r = await get(migrating.url, PROFILE, signed(PROFILE, { date: DOC_DATE }))
  t.equal(r.status, 200, `clock_skew 0: JumpServer's documented fixed date is accepted ${r.text}`)
  t.equal((await get(migrating.url, PROFILE, signed(PROFILE, { date: DOC_DATE }))).json.code, 'signature_replayed', 'and, with replay_cache, only once')
  t.equal((await get(migrating.url, PROFILE, signed(PROFILE, { date: DOC_DATE, mac: createHmac('sha256', 'wrong').update('x').digest('base64') }))).json.code, 'invalid_signature', 'the MAC is still checked')
  const ready = await request(migrating.url, '/readyz')
  t.same(ready.json, { status: 'ready', warnings: ['signature_freshness_off', 'signature_sha1_accepted'] }, '/readyz names the weakened settings')
  t.same((await request(strict.url, '/readyz')).json, { status: 'ready' }, 'none on the defaults')
  const logged = migrating.logs.flatMap((l) => l.trim().split('\n')).map((l) => JSON.parse(l)).filter((l) => l.warning !== undefined).map((l) => l.warning)
  t.same(logged, ['demo_mode', 'signature_freshness_off', 'signature_sha1_accepted'], 'and the start logged both (and the demo mode: no upstream here)')
})

t.test('algorithms: hmac-sha256 and hmac-sha512 by default, hmac-sha1 only when listed; key ids in any case, with or without hyphens', async (t) => {
  t.equal((await get(strict.url, PROFILE, signed(PROFILE, { alg: 'sha512' }))).status, 200, 'hmac-sha512')
  const sha1 = await get(strict.url, PROFILE, signed(PROFILE, { alg: 'sha1' }))
  t.equal(sha1.status, 401)
  t.equal(sha1.json.code, 'malformed_authorization', `hmac-sha1 not listed: ${sha1.json.detail}`)
  t.equal((await get(migrating.url, PROFILE, signed(PROFILE, { alg: 'sha1' }))).status, 200, 'hmac-sha1 where listed')
  // a MAC of another algorithm's length under this name: refused before any lookup
  const short = createHmac('sha256', key.secret).update('x').digest('base64')
  t.equal((await get(strict.url, PROFILE, signed(PROFILE, { alg: 'sha512', mac: short }))).json.code, 'invalid_signature', 'a 32-byte MAC named hmac-sha512')
  const id = key.key.id
  for (const spelled of [id.toUpperCase(), id.replace(/-/g, ''), id.replace(/-/g, '').toUpperCase()]) {
    t.equal((await get(strict.url, PROFILE, signed(PROFILE, { keyId: spelled }))).status, 200, `keyId ${spelled}`)
  }
  for (const bad of [id.replace(/-/g, '').slice(1), `${id}0`, id.replace(/-/g, ' ')]) {
    t.equal((await get(strict.url, PROFILE, signed(PROFILE, { keyId: bad }))).json.code, 'invalid_signature', `keyId ${bad}: refused`)
  }
})

t.test('organizations: ?oid=, then the header, then the X-JMS-ORG cookie; SYSTEM and GLOBAL; unknown orgs; the profile needs no membership', async (t) => {
  const pt = await strict.store.privateTokens.create(alice.id)
  const auth = { authorization: `Token ${pt}` }
  const bossPt = await strict.store.privateTokens.create(boss.id)
  const asBoss = { authorization: `Token ${bossPt}` }
  const org = async (g: typeof strict, path: string, headers: Record<string, string>): Promise<string | undefined> => {
    const r = await get(g.url, path, headers)
    if (r.status !== 200) return `${r.status} ${r.json?.code}`
    return lastSeen().headers['x-jms-org'] as string
  }
  t.equal(await org(strict, '/api/v1/x/', { ...auth, cookie: `X-JMS-ORG=${team.id}` }), team.id, 'the cookie names the org')
  t.equal(await org(strict, '/api/v1/x/', { ...auth, cookie: `a=b; X-JMS-ORG=${team.id}`, 'x-jms-org': DEFAULT_ORG }), DEFAULT_ORG, 'the header wins over the cookie')
  t.equal(await org(strict, `/api/v1/x/?oid=${team.id}`, { ...auth, cookie: `X-JMS-ORG=${DEFAULT_ORG}` }), team.id, '?oid= wins over the cookie')
  t.equal(await org(strict, '/api/v1/x/', { ...auth, cookie: `X-JMS-ORG=${team.id}; X-JMS-ORG=${DEFAULT_ORG}` }), '400 invalid_org', 'two different org cookies: ambiguous, 400')
  t.equal(await org(strict, '/api/v1/x/', { ...auth, cookie: 'x-jms-org=nonsense' }), DEFAULT_ORG, 'cookie names are case-sensitive: another cookie')
  t.equal(await org(strict, '/api/v1/x/', { ...auth, 'x-jms-org': 'SYSTEM' }), '403 org_forbidden', 'SYSTEM: superusers only')
  t.equal(await org(strict, '/api/v1/x/', { ...asBoss, 'x-jms-org': 'SYSTEM' }), SYSTEM_ORG, 'SYSTEM for a superuser')
  t.equal(await org(strict, '/api/v1/x/', { ...asBoss, 'x-jms-org': 'GLOBAL' }), ROOT_ORG, 'GLOBAL is root')
  const ghost = '11111111-2222-3333-4444-555555555555'
  t.equal(await org(strict, '/api/v1/x/', { ...auth, 'x-jms-org': ghost }), '404 org_not_found', 'org.unknown: reject (the default)')

  // the profile: any org, as JumpServer; upstream it gets the user's own org
  t.equal(await org(strict, PROFILE, { ...auth, 'x-jms-org': ghost }), DEFAULT_ORG, 'profile with an unknown org: forwarded, in the user\'s own org')
  const other = await strict.store.orgs.create('other')
  t.equal(await org(strict, PROFILE, { ...auth, 'x-jms-org': other.id }), DEFAULT_ORG, 'profile in an org the user is not in: forwarded, in the user\'s own org')
  t.equal(await org(strict, '/api/v1/x/', { ...auth, 'x-jms-org': other.id }), '403 org_forbidden', 'any other path: 403')
  t.equal(await org(strict, PROFILE, { ...auth, 'x-jms-org': 'not-an-org' }), '400 invalid_org', 'a malformed org is still 400')

  // built-in profile, org.unknown: default
  const mpt = await migrating.store.privateTokens.create(alice.id)
  const p1 = await get(migrating.url, PROFILE, { authorization: `Token ${mpt}`, 'x-jms-org': ghost })
  t.equal(p1.status, 200, 'unknown org → the default org')
  t.same(p1.json.org_roles, [{ id: '00000000-0000-0000-0000-000000000007', display_name: 'OrgUser' }], 'acting in the default org')
  const p2 = await get(migrating.url, PROFILE, { authorization: `Token ${mpt}`, 'x-jms-org': other.id })
  t.equal(p2.status, 200, 'built-in profile in an org the user is not in: 200')
  t.same(p2.json.org_roles, [], 'with no org roles there')
  t.equal((await get(migrating.url, '/api/v1/users/users/', { authorization: `Token ${mpt}`, 'x-jms-org': other.id })).json.code, 'org_forbidden', 'the user list still needs membership')
})

t.test('JMS mode: a wrong password is JumpServer\'s 400 {error, msg} (with code); the lockout stays 429; multipart bodies', async (t) => {
  const wrong = await post(strict.url, '/api/v1/authentication/auth/', { username: 'alice', password: 'nope' })
  t.equal(wrong.status, 400)
  t.same(wrong.json, { error: 'password_failed', msg: 'The username or password you entered is incorrect, please enter it again.', code: 'authentication_failed' })
  const unknown = await post(strict.url, '/api/v1/authentication/tokens/', { username: 'nobody', password: 'nope' })
  t.same([unknown.status, unknown.json], [wrong.status, wrong.json], 'an unknown user: the same answer')
  for (let i = 0; i < 8; i++) await post(strict.url, '/api/v1/authentication/auth/', { username: 'locked', password: 'nope' })
  const locked = await post(strict.url, '/api/v1/authentication/auth/', { username: 'locked', password: 'nope' })
  t.equal(locked.status, 429, 'the lockout')
  t.equal(locked.json.code, 'too_many_attempts')

  const boundary = '----sidegate-test'
  const multipart = (fields: Record<string, string>): string => Object.entries(fields)
    .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('') + `--${boundary}--\r\n`
  const r = await request(strict.url, '/api/v1/authentication/auth/', {
    method: 'POST', body: multipart({ username: 'alice', password: 'alice-password' }), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }
  })
  t.equal(r.status, 201, `multipart/form-data ${r.text}`)
  const broken = await request(strict.url, '/api/v1/authentication/auth/', {
    method: 'POST', body: `--${boundary}\r\nnonsense`, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }
  })
  t.equal(broken.status, 400, 'a multipart body that does not parse: 400')
  t.equal(broken.json.code, 'bad_request')
  const missing = await request(strict.url, '/api/v1/authentication/auth/', {
    method: 'POST', body: multipart({ username: 'alice' }), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }
  })
  t.same([missing.status, missing.json.code], [400, 'required'], 'a missing field: 400 required')

  // SVC mode keeps sidegate's 401
  const svc = await startGateway(db.url, { redis: shared })
  t.teardown(async () => { await svc.close() })
  const r401 = await post(svc.url, '/api/v1/authentication/auth/', { username: 'alice', password: 'nope' })
  t.same([r401.status, r401.json.code], [401, 'authentication_failed'], 'SVC mode: 401 {detail, code}')
})

t.test('JMS mode: profile fields in JumpServer\'s shapes (source, roles, dates)', async (t) => {
  const pt = await migrating.store.privateTokens.create(boss.id)
  await post(migrating.url, '/api/v1/authentication/auth/', { username: 'boss', password: 'boss-password' })
  const r = await get(migrating.url, PROFILE, { authorization: `Token ${pt}` })
  t.equal(r.status, 200)
  t.same(r.json.source, { value: 'local', label: 'Local' })
  t.same(r.json.system_roles, [{ id: '00000000-0000-0000-0000-000000000001', display_name: 'SystemAdmin' }])
  t.match(r.json.date_joined, /^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2} \+0000$/)
  t.match(r.json.last_login, /^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2} \+0000$/, 'last_login too')
  const svc = await startGateway(db.url, { redis: shared })
  t.teardown(async () => { await svc.close() })
  const s = await get(svc.url, PROFILE, { authorization: `Token ${pt}` })
  t.equal(s.json.source, 'local', 'SVC mode: sidegate\'s own shapes')
  t.same(s.json.system_roles, [{ name: 'SystemAdmin' }])
})

/**
 * The trusted_token kind without a network: an issuer whose keys are read
 * from a jwks_file, tokens signed here by jose, decided by
 * TrustedTokenAuthenticator on a real SQLite store. What the process tests
 * (test/process/trusted-issuers.test.ts) do not reach over HTTP: `as: user`,
 * the bounds to the byte and the second, kid and typ, the subject's claim and
 * mapping, the identity a service gets, and the cache's own rules (a
 * remembered token's end, the oldest and the expired evicted first).
 */
import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildConfig } from '../../src/config/index.js'
import { GatewayError } from '../../src/errors.js'
import type { IssuerSettings } from '../../src/auth/jwks.js'
import { MAX_TOKEN_BYTES, TrustedTokenAuthenticator } from '../../src/auth/trusted-token.js'
import type { Credentials } from '../../src/auth/types.js'
import { tempDir } from '../fixtures/cleanup.js'
import { SECRET } from '../fixtures/gateway.js'
import { kubeClaims, rsaKey, signed } from '../fixtures/issuers.js'
import { sqliteStore } from '../fixtures/sqlite-store.js'

const ISS = 'https://issuer.sidegate.test'
const ORG = '6F1A1C7E-1111-4222-8333-944455556666'
const key = rsaKey()
const jwks = join(tempDir('sidegate-trusted-'), 'jwks.json')
writeFileSync(jwks, JSON.stringify({ keys: [key.jwk] }))

const store = await sqliteStore()
t.teardown(async () => await store.close())
const bob = await store.users.create({ username: 'bob', password: null })
const dora = await store.users.create({ username: 'dora', password: null })
await store.users.setActive(dora.id, false)

function authenticator (o: Record<string, unknown> = {}, cacheMax?: number): TrustedTokenAuthenticator {
  const config = buildConfig({
    secret_key: SECRET,
    auth: { trusted_issuers: [{ id: 'test', issuer: ISS, jwks_file: jwks, audiences: ['sidegate'], ...o }] }
  })
  return new TrustedTokenAuthenticator(store, config.auth.trusted_issuers as IssuerSettings[], { cacheMax })
}

const now = (): number => Math.floor(Date.now() / 1000)
const claims = (o: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ iss: ISS, aud: 'sidegate', sub: 'svc-a', iat: now(), exp: now() + 600, ...o })
const token = async (o: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> =>
  await signed(key, claims(o), header)

/** The claim, or the refusal as { code, detail }. */
async function decide (a: TrustedTokenAuthenticator, jwt: string): Promise<Record<string, unknown>> {
  const c: Credentials = { method: 'GET', url: '/', headers: {}, authorization: { scheme: 'bearer', credentials: jwt }, cookies: {} }
  const r = await a.check(c)
  return r instanceof GatewayError ? { code: r.code, detail: r.message } : { ...r }
}
const refused = (why: string): Record<string, unknown> => ({ code: 'invalid_token', detail: `Invalid token: ${why}.` })

/** A token of exactly `bytes` characters: its payload padded (RS256 signatures are all 342 characters). */
async function sized (bytes: number): Promise<string> {
  const probe = await token({ pad: '' })
  // each 3 characters of pad add 4 to the payload's base64url
  const pad = 'x'.repeat(Math.floor((bytes - probe.length) * 3 / 4))
  let jwt = await token({ pad })
  for (let extra = 1; jwt.length < bytes; extra++) jwt = await token({ pad: pad + 'x'.repeat(extra) })
  return jwt
}

t.test('the bounds: 8192 bytes, exp - iat within max_lifetime, iat no later than clock_skew ahead', async (t) => {
  const a = authenticator()
  const at = await sized(MAX_TOKEN_BYTES)
  t.equal(at.length, MAX_TOKEN_BYTES)
  t.match(await decide(a, at), { method: 'trusted_token' }, `${at.length} bytes: read`)
  const over = await sized(MAX_TOKEN_BYTES + 1)
  t.same(await decide(a, over), refused(`larger than ${MAX_TOKEN_BYTES} bytes`), `${over.length} bytes: refused unread`)

  const iat = now()
  t.match(await decide(a, await token({ iat, exp: iat + 3600 })), { method: 'trusted_token' }, 'exp - iat = max_lifetime (3600)')
  t.same(await decide(a, await token({ iat, exp: iat + 3601 })), refused('its lifetime (exp - iat: 3601 s) is over 3600 s'))
  t.match(await decide(a, await token({ iat: now() + 25 })), { method: 'trusted_token' }, 'iat 25 s ahead: within clock_skew (30)')
  t.same(await decide(a, await token({ iat: now() + 40 })), refused('issued in the future'), 'iat 40 s ahead')
})

t.test('kid and typ: require_kid refuses a token without one; typ must be the one set', async (t) => {
  t.match(await decide(authenticator(), await token({}, { kid: undefined })), { method: 'trusted_token' }, 'no kid: tried against the keys')
  t.same(await decide(authenticator({ require_kid: true }), await token({}, { kid: undefined })), refused('it names no kid'))
  t.match(await decide(authenticator({ require_kid: true }), await token()), { method: 'trusted_token' })
  const typed = authenticator({ typ: 'at+jwt' })
  t.match(await decide(typed, await token({}, { typ: 'at+jwt' })), { method: 'trusted_token' })
  t.same(await decide(typed, await token({}, { typ: 'JWT' })), refused('wrong typ'))
  t.same(await decide(authenticator(), 'bm90.YSBKV1Q.eA'), refused('not a JWT'))
})

t.test('the subject: its claim, present and not empty, and subject.map', async (t) => {
  const byClient = authenticator({ subject: { claim: 'client_id' } })
  t.match(await decide(byClient, await token({ client_id: 'ci-runner' })), { subject: 'ci-runner' })
  t.same(await decide(byClient, await token()), refused('no client_id claim'))
  t.same(await decide(byClient, await token({ client_id: '' })), refused('no client_id claim'), 'empty')
  t.same(await decide(byClient, await token({ client_id: 7 })), refused('no client_id claim'), 'not a string')
  const kube = authenticator({ subject: { map: '{namespace}/{name}' } })
  t.same(await decide(kube, await token()), refused('its subject cannot be mapped (subject.map)'), 'no Kubernetes claims to map')
  const k = kubeClaims(ISS, 'prod', 'web')
  t.match(await decide(kube, await token({ ...k, aud: 'sidegate' })), { subject: 'prod/web', workload: { namespace: 'prod' } })
})

t.test('as: service: a non-person identity of the issuer, in its orgs (lowercase) or the Default org', async (t) => {
  const first = await decide(authenticator(), await token())
  t.strictSame(first.service, {
    id: 'issuer:test:svc-a',
    username: 'svc-a',
    name: 'svc-a',
    email: '',
    is_active: true,
    is_superuser: false,
    orgs: { '00000000-0000-0000-0000-000000000002': 'user' },
    default_org: '00000000-0000-0000-0000-000000000002',
    date_joined: '',
    last_login: null,
    rate_limit: null,
    groups: []
  })
  t.match(first, { userId: 'issuer:test:svc-a', method: 'trusted_token', issuer: 'test', subject: 'svc-a', tokenGroups: null })
  const inOrg = await decide(authenticator({ orgs: [ORG] }), await token())
  t.match(inOrg.service, { orgs: { [ORG.toLowerCase()]: 'user' }, default_org: ORG.toLowerCase() })
  t.same(Object.keys((inOrg.service as { orgs: object }).orgs), [ORG.toLowerCase()], 'its orgs only')
  const grouped = await decide(authenticator({ groups_claim: 'groups' }), await token({ groups: ['deployers'] }))
  t.match(grouped.service, { groups: [{ name: 'deployers' }] }, 'the groups the token names')
})

t.test('as: user: the local user its subject names, active; the token\'s groups beside the user\'s', async (t) => {
  const asUser = authenticator({ as: 'user', groups_claim: 'groups' })
  t.match(await decide(asUser, await token({ sub: 'bob' })), { userId: bob.id, service: null, tokenGroups: null, subject: 'bob' })
  t.match(await decide(asUser, await token({ sub: 'bob', groups: ['ops'] })), { userId: bob.id, tokenGroups: [{ name: 'ops' }] })
  t.same(await decide(asUser, await token({ sub: 'nobody' })), refused('no local user has its subject'))
  t.match(await decide(asUser, await token({ sub: 'dora' })), { code: 'user_inactive' }, 'a disabled user')
})

t.test('the cache: first sight once; a remembered token ends with its exp; the expired, then the oldest, make room', async (t) => {
  const exp = now() + 2
  const a = authenticator({ clock_skew: 0 })
  const short = await token({ exp })
  t.match(await decide(a, short), { firstSight: true })
  t.match(await decide(a, short), { firstSight: false }, 'from memory')
  const small = authenticator({ clock_skew: 0 }, 2)
  const b = await token({ sub: 'b' })
  const brief = await token({ sub: 'brief', exp })
  t.match(await decide(small, b), { firstSight: true })
  t.match(await decide(small, brief), { firstSight: true })
  await new Promise((resolve) => setTimeout(resolve, exp * 1000 - Date.now() + 50))

  t.same(await decide(a, short), refused('expired'), 'past its exp: refused from memory')
  t.same(await decide(a, short), refused('expired'), 'and verified again: expired')
  t.match(await decide(small, await token({ sub: 'c' })), { firstSight: true })
  t.match(await decide(small, b), { firstSight: false }, 'the cache was full: the expired entry made room, not the oldest')
  t.match(await decide(small, await token({ sub: 'd' })), { firstSight: true })
  t.match(await decide(small, b), { firstSight: true }, 'full of live entries: the oldest (b) made room')
})

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
import http from 'node:http'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { buildConfig } from '../../src/config/index.js'
import { GatewayError } from '../../src/errors.js'
import { createLogger } from '../../src/observability/log.js'
import { createSign, generateKeyPairSync } from 'node:crypto'
import { SignJWT } from 'jose'
import type { IssuerSettings } from '../../src/auth/jwks.js'
import { MAX_TOKEN_BYTES, TrustedTokenAuthenticator } from '../../src/auth/trusted-token.js'
import type { Credentials } from '../../src/auth/types.js'
import { tempDir } from '../fixtures/cleanup.js'
import { SECRET } from '../fixtures/gateway.js'
import { b64, kubeClaims, rsaKey, signed } from '../fixtures/issuers.js'
import { sqliteStore } from '../fixtures/sqlite-store.js'

const ISS = 'https://issuer.sidegate.test'
const ORG = '6F1A1C7E-1111-4222-8333-944455556666'
const key = rsaKey()
const dir = tempDir('sidegate-trusted-')
const jwks = join(dir, 'jwks.json')
writeFileSync(jwks, JSON.stringify({ keys: [key.jwk] }))
writeFileSync(join(dir, 'token'), 'reviewer\n')

const store = await sqliteStore()
t.teardown(async () => await store.close())
const bob = await store.users.create({ username: 'bob', password: null })
const dora = await store.users.create({ username: 'dora', password: null })
await store.users.setActive(dora.id, false)

const logs: Array<Record<string, any>> = []
const log = createLogger('info', new Writable({ write (c, _e, cb) { logs.push(JSON.parse(c.toString())); cb() } }) as any)

function authenticator (o: Record<string, unknown> = {}, cacheMax?: number): TrustedTokenAuthenticator {
  const config = buildConfig({
    secret_key: SECRET,
    auth: { trusted_issuers: [{ id: 'test', issuer: ISS, jwks_file: jwks, audiences: ['sidegate'], ...o }] }
  })
  return new TrustedTokenAuthenticator(store, config.auth.trusted_issuers as IssuerSettings[], { cacheMax, log })
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
  const tiny = authenticator({}, 2)
  const [x, y, z] = await Promise.all(['x', 'y', 'z'].map(async (sub) => await token({ sub })))
  for (const jwt of [x, y, z]) t.match(await decide(tiny, jwt), { firstSight: true })
  t.match(await decide(tiny, z), { firstSight: false })
  t.match(await decide(tiny, x), { firstSight: true }, 'never more than cacheMax: the third made room')
})

t.test('exp and iat are required; a token just past its exp is remembered until exp + clock_skew', async (t) => {
  const a = authenticator()
  t.same(await decide(a, await token({ exp: undefined })), refused('its exp is missing'))
  t.same(await decide(a, await token({ iat: undefined })), refused('its iat is missing'))
  const late = await token({ iat: now() - 60, exp: now() - 5 })
  t.match(await decide(a, late), { firstSight: true }, '5 s past exp: within clock_skew (30)')
  t.match(await decide(a, late), { firstSight: false }, 'and remembered, not verified again')
  const asUser = authenticator({ as: 'user' })
  const bobs = await token({ sub: 'bob' })
  t.match(await decide(asUser, bobs), { userId: bob.id, firstSight: true })
  t.match(await decide(asUser, bobs), { userId: bob.id, service: null, firstSight: false }, 'as: user from memory')
})

t.test('a claim that is not a number, or another audience, is named as such', async (t) => {
  const a = authenticator()
  t.same(await decide(a, await token({ iat: 'yesterday' })), refused('its iat does not verify'))
  t.same(await decide(a, await token({ nbf: 'soon' })), refused('its nbf does not verify'))
  t.same(await decide(a, await token({ nbf: now() + 600 })), refused('not yet valid'))
  t.same(await decide(a, await token({ aud: 'elsewhere' })), refused('not for this audience'))
  t.same(await decide(a, await token({ aud: undefined })), refused('its aud is missing'))
})

t.test('review: tokenreview: one question per token at a time; a fault logged as it begins and as it ends', async (t) => {
  // a TokenReview endpoint that answers after 50 ms (200: authenticated; else that status)
  let status = 200
  let asked = 0
  const api = http.createServer((req, res) => {
    asked++
    req.resume().on('end', () => setTimeout(() => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ status: { authenticated: true, audiences: ['sidegate'] } }))
    }, 50))
  })
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { api.closeAllConnections(); api.close() })
  const a = authenticator({
    review: 'tokenreview', review_url: `http://127.0.0.1:${(api.address() as AddressInfo).port}`, token_file: join(dir, 'token'), timeout: 1
  })
  const jwt = await token({ sub: 'burst' })
  logs.length = 0
  const five = await Promise.all(Array.from({ length: 5 }, async () => await decide(a, jwt)))
  t.same(five.map((c) => c.subject), ['burst', 'burst', 'burst', 'burst', 'burst'])
  t.equal(asked, 1, 'five checks at once: one review')
  t.match(await decide(a, jwt), { firstSight: false })
  t.equal(asked, 1, 'then from memory')
  t.same(logs, [], 'an issuer that answers from the start: nothing logged')
  status = 500
  t.match(await decide(a, await token({ sub: 'down-1' })), { code: 'issuer_unavailable' })
  t.match(await decide(a, await token({ sub: 'down-2' })), { code: 'issuer_unavailable' })
  t.match(logs, [{ level: 40, issuer: 'test', msg: /^trusted issuer test: the TokenReview .*500.*; its tokens get 503 issuer_unavailable$/ }])
  t.equal(logs.length, 1, 'once for the fault, not once per token')
  status = 200
  t.match(await decide(a, await token({ sub: 'back' })), { subject: 'back' })
  t.match(logs[1], { level: 30, issuer: 'test', msg: 'trusted issuer test: the TokenReview answers again' })
  t.match(await decide(a, await token({ sub: 'back-2' })), { subject: 'back-2' })
  t.equal(logs.length, 2, 'and its end once')
})

t.test('the keys: a token at the start waits for the first read; an unknown kid reads them again, at most once per jwks_min_interval', async (t) => {
  const file = join(dir, 'rotating.json')
  writeFileSync(file, JSON.stringify({ keys: [key.jwk] }))
  const jwt = await token({ sub: 'early' })
  t.match(await decide(authenticator({ id: 'early', jwks_file: file }), jwt), { subject: 'early' }, 'checked as the keys are first read')

  const next = rsaKey()
  const rotated = await signed(next, claims({ sub: 'rotated' }))
  const a = authenticator({ id: 'rotating', jwks_file: file, jwks_min_interval: 1 })
  t.same(await decide(a, rotated), refused('unknown key'), 'a kid the keys do not name')
  writeFileSync(file, JSON.stringify({ keys: [key.jwk, next.jwk] }))
  t.same(await decide(a, rotated), refused('unknown key'), 'within jwks_min_interval: not read again')
  await new Promise((resolve) => setTimeout(resolve, 1050))
  t.match(await decide(a, rotated), { subject: 'rotated' }, 'after it: read again, the new key found')
})

t.test('jose\'s refusals, named: expired, a bad signature, no key or several, an unsupported header; an algorithm before any key', async (t) => {
  const a = authenticator()
  t.same(await decide(a, await token({ iat: now() - 120, exp: now() - 60 })), refused('expired'), '60 s past exp, clock_skew 30')
  const other = rsaKey()
  t.same(await decide(a, await signed(other, claims(), { kid: key.kid })), refused('its signature does not verify'))
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey
  const es = await new SignJWT(claims()).setProtectedHeader({ alg: 'ES256' }).sign(ec)
  t.same(await decide(a, es), refused('no key of its issuer matches'), 'ES256 allowed, the issuer has RSA keys only')
  const two = join(dir, 'two.json')
  writeFileSync(two, JSON.stringify({ keys: [key.jwk, other.jwk] }))
  t.same(await decide(authenticator({ id: 'two', jwks_file: two }), await signed(rsaKey(), claims(), { kid: undefined })),
    refused('several keys of its issuer match and it names no kid'))
  const input = `${b64({ alg: 'RS256', kid: key.kid, crit: ['x-ext'], 'x-ext': 1 })}.${b64(claims())}`
  const crit = `${input}.${createSign('RSA-SHA256').update(input).sign(key.privateKey).toString('base64url')}`
  t.same(await decide(a, crit), refused('does not verify'), 'crit names an extension jose does not know')
  t.same(await decide(a, `${(await token()).split('.').slice(0, 2).join('.')}.!!!`), refused('not a valid JWS'), 'a signature that is not base64url')
  // an algorithm not accepted is refused before its kid is looked up (no read of the keys for it)
  const hs = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256', kid: 'not-a-kid' }).sign(Buffer.alloc(32, 1))
  t.same(await decide(a, hs), refused('its algorithm is not accepted'))
})

t.test('a JWKS read over HTTP: once while its issuer fails, not again for each token; not again once read', async (t) => {
  let fetches = 0
  let up = false
  const jwksServer = http.createServer((req, res) => {
    fetches++
    if (!up) { res.writeHead(500).end(); return }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [key.jwk] }))
  })
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { jwksServer.closeAllConnections(); jwksServer.close() })
  const url = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}`
  const tokens = await Promise.all([1, 2, 3].map(async (i) => await token({ sub: `t${i}` })))
  const down = authenticator({ id: 'down', jwks_file: null, jwks_uri: `${url}/jwks` })
  for (const jwt of tokens) t.match(await decide(down, jwt), { code: 'issuer_unavailable' })
  t.equal(fetches, 1, 'the first read, waited for; within jwks_min_interval no token asks again')
  up = true
  const ready = authenticator({ id: 'ready', jwks_file: null, jwks_uri: `${url}/keys` })
  for (const jwt of tokens) t.match(await decide(ready, jwt), { method: 'trusted_token' })
  t.equal(fetches, 2, 'keys read once, then used for every token')
})

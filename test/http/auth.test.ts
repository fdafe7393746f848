/**
 * Every credential kind over real HTTP: bearer and private tokens, access-key
 * signatures and the replay cache, browser sessions and CSRF, forged and
 * malformed credentials, disabled users. On the embedded store (forged
 * credentials counted as Redis commands: test/topology/redis-http.test.ts).
 */
import t from 'tap'
import httpSignature from 'http-signature'
import http from 'node:http'
import { startEcho, request, post } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { SqliteStore } from '../../src/store/sqlite/index.js'
import { bearer, forgedCredentials, makeUser, signedHeaders } from '../fixtures/creds.js'

const db = embeddedStore()
const echo = await startEcho()
const g = await startGateway(db.url, { upstream: { url: echo.url } })
t.teardown(async () => { await g.close(); await echo.close(); await db.stop() })

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const alice = await makeUser(g, 'alice')
const last = (): any => echo.seen[echo.seen.length - 1]

t.test('no credential on a protected path: 401 with challenges', async (t) => {
  const r = await request(g.url, '/api/v1/assets/')
  t.equal(r.status, 401)
  t.same(r.json, { detail: 'Authentication credentials were not provided.', code: 'not_authenticated' })
  t.match(r.headers['www-authenticate'], /Bearer/)
})

t.test('bearer token: works once, then refused, even for the same client', async (t) => {
  const tok = await bearer(g.url, 'alice', 'alice-password')
  const before = echo.seen.length
  const r1 = await request(g.url, '/api/v1/assets/?x=1', { headers: { authorization: `Bearer ${tok}` } })
  t.equal(r1.status, 200)
  t.equal(echo.seen.length, before + 1, 'forwarded once')
  t.equal(last().headers['x-svc-user-id'], alice.id)
  t.equal(last().headers['x-svc-username'], 'alice')
  t.equal(last().headers['x-svc-org'], DEFAULT_ORG)
  t.equal(last().headers['x-svc-auth-method'], 'bearer')
  t.equal(last().headers.authorization, undefined, 'Authorization not forwarded')
  t.equal(last().url, '/api/v1/assets/?x=1')
  const r2 = await request(g.url, '/api/v1/assets/', { headers: { authorization: `Bearer ${tok}` } })
  t.equal(r2.status, 401)
  t.equal(r2.json.code, 'invalid_token')
  t.equal(echo.seen.length, before + 1, 'refused request never reached the upstream')
})

t.test('bearer token expires after auth.bearer.ttl', async (t) => {
  const g2 = await startGateway(db.url, { upstream: { url: echo.url }, auth: { bearer: { ttl: 1 } } })
  t.teardown(() => g2.close())
  const r = await post(g2.url, '/api/v1/authentication/auth/', { username: 'admin', password: 'admin-password-1' })
  await new Promise((resolve) => setTimeout(resolve, 2100))
  const used = await request(g2.url, '/x', { headers: { authorization: `Bearer ${r.json.token}` } })
  t.equal(used.status, 401)
  t.equal(used.json.code, 'invalid_token')
})

t.test('private token: Token and PrivateToken, any case; revoked token refused', async (t) => {
  const tok = await g.store.privateTokens.create(alice.id)
  for (const scheme of ['Token', 'PrivateToken', 'token', 'PRIVATETOKEN']) {
    const r = await request(g.url, '/api/v1/x/', { headers: { authorization: `${scheme} ${tok}` } })
    t.equal(r.status, 200, scheme)
    t.equal(r.json.headers['x-svc-auth-method'], 'private_token')
    t.equal(r.json.headers['x-svc-user-id'], alice.id)
  }
  t.equal((await request(g.url, '/x', { headers: { authorization: `Token ${tok}x` } })).json.code, 'invalid_token')
  await g.store.privateTokens.revoke(alice.id)
  const r = await request(g.url, '/x', { headers: { authorization: `Token ${tok}` } })
  t.equal(r.status, 401)
  t.equal(r.json.code, 'invalid_token')
})

t.test('forged credentials: the normal 401, without a single store statement; genuine ones of every kind work', async (t) => {
  // a gateway of its own, whose store statements are counted: each goes through its storage's run()
  // (src/store/sqlite/storage.ts), all but the invalidation log's poll, which no request makes.
  // On Redis the same, counted as commands the server ran: test/topology/redis-http.test.ts
  // the audit trail off: with it on (the default) a refused bearer token is one append besides (a write,
  // never a read: the same for a forged and an unknown token), which is not what is counted here
  const gw = await startGateway(db.url, { upstream: { url: echo.url }, audit: { stream: false } })
  // another deployment (another secret key): what it issues must mean nothing to gw
  const other = await startGateway(db.url, { upstream: { url: echo.url }, secret_key: 'another-secret-key-that-is-long-enough-987' })
  t.teardown(async () => { await other.close(); await gw.close() })
  const storage = (gw.store as SqliteStore).sqlite
  let statements = 0
  const run = storage.run.bind(storage)
  storage.run = <T>(fn: () => T): T => { statements++; return run(fn) }
  await forgedCredentials(t, gw, other, () => statements, 'store statement', (kind, what) =>
    // it may be an imported token (the old shape, untagged): one indexed statement tells that none was imported,
    // where RedisStore holds the imported set in process (src/store/sqlite/private-tokens.ts findImported)
    kind === 'private token' && what === 'old untagged shape' ? 1 : 0)
})

t.test('access-key signature as in the spec (request-target, accept, date)', async (t) => {
  const { key, secret } = await g.store.accessKeys.create(alice.id)
  const path = '/api/v1/users/profile/?a=b%20c'
  const h = signedHeaders(key.id, secret, 'GET', path)
  const r = await request(g.url, path, { headers: { ...h, 'x-svc-org': DEFAULT_ORG } })
  t.equal(r.status, 200)
  t.equal(r.json.headers['x-svc-auth-method'], 'access_key')
  t.equal(r.json.headers['x-svc-user-id'], alice.id)

  const only = signedHeaders(key.id, secret, 'GET', '/p', { headers: ['(request-target)', 'date'] })
  t.equal((await request(g.url, '/p', { headers: only })).status, 200, 'the shorter header list one client uses')

  const wrongPath = await request(g.url, '/p2', { headers: only })
  t.equal(wrongPath.status, 401)
  t.equal(wrongPath.json.code, 'invalid_signature')

  const wrongSecret = signedHeaders(key.id, secret + 'x', 'GET', '/p')
  t.equal((await request(g.url, '/p', { headers: wrongSecret })).json.code, 'invalid_signature')

  const unknown = signedHeaders('6f1a1c7e-1111-4222-8333-944455556666', secret, 'GET', '/p')
  t.equal((await request(g.url, '/p', { headers: unknown })).json.code, 'invalid_signature')

  const noTarget = signedHeaders(key.id, secret, 'GET', '/p', { headers: ['date'] })
  const r2 = await request(g.url, '/p', { headers: noTarget })
  t.equal(r2.status, 401)
  t.equal(r2.json.code, 'malformed_authorization')

  const old = signedHeaders(key.id, secret, 'GET', '/p', { date: new Date(Date.now() - 302_000).toUTCString() })
  t.equal((await request(g.url, '/p', { headers: old })).json.code, 'signature_expired')
  const future = signedHeaders(key.id, secret, 'GET', '/p', { date: new Date(Date.now() + 302_000).toUTCString() })
  t.equal((await request(g.url, '/p', { headers: future })).json.code, 'signature_expired')
  const within = signedHeaders(key.id, secret, 'GET', '/p', { date: new Date(Date.now() - 200_000).toUTCString() })
  t.equal((await request(g.url, '/p', { headers: within })).status, 200)

  await g.store.accessKeys.setActive(key.id, false)
  t.equal((await request(g.url, '/p', { headers: signedHeaders(key.id, secret, 'GET', '/p') })).json.code, 'key_disabled', 'inactive key')
  t.equal((await request(g.url, '/p', { headers: signedHeaders(key.id, 'not-the-secret', 'GET', '/p') })).json.code, 'invalid_signature', 'inactive key, wrong secret')
})

t.test('signature parameters: spaces after commas, unknown params, any order; duplicates rejected', async (t) => {
  const { key, secret } = await g.store.accessKeys.create(alice.id)
  const h = signedHeaders(key.id, secret, 'GET', '/p')
  const sig = /signature="([^"]+)"/.exec(h.authorization)![1]
  const loose = `Signature signature="${sig}", headers="(request-target) accept date",  keyId="${key.id}", algorithm="hmac-sha256", extra="ignored"`
  t.equal((await request(g.url, '/p', { headers: { ...h, authorization: loose } })).status, 200)
  const dup = `Signature keyId="${key.id}",keyId="${key.id}",algorithm="hmac-sha256",headers="(request-target) accept date",signature="${sig}"`
  const r = await request(g.url, '/p', { headers: { ...h, authorization: dup } })
  t.equal(r.status, 401)
  t.equal(r.json.code, 'malformed_authorization')
  const rsa = h.authorization.replace('hmac-sha256', 'rsa-sha256')
  t.equal((await request(g.url, '/p', { headers: { ...h, authorization: rsa } })).json.code, 'malformed_authorization')
})

t.test('a signature made by the http-signature package is accepted; one byte changed is not', async (t) => {
  const { key, secret } = await g.store.accessKeys.create(alice.id)
  const u = new URL(g.url)
  const send = (path: string, tamper: boolean): Promise<number> => new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path, method: 'GET', headers: { accept: 'application/json', date: new Date().toUTCString() } }, (res) => {
      res.resume(); resolve(res.statusCode!)
    })
    httpSignature.sign(req, { keyId: key.id, key: secret, algorithm: 'hmac-sha256', headers: ['(request-target)', 'accept', 'date'] })
    if (tamper) req.setHeader('accept', 'application/jsoN')
    req.on('error', reject)
    req.end()
  })
  t.equal(await send('/api/v1/users/users/?limit=10', false), 200)
  t.equal(await send('/api/v1/users/users/?limit=10', true), 401)
})

t.test('replay cache rejects a signature seen before', async (t) => {
  const g2 = await startGateway(db.url, { upstream: { url: echo.url }, auth: { signature: { replay_cache: true } } })
  t.teardown(() => g2.close())
  const u = await g2.store.users.create({ username: 'replayer', password: 'replayer-pw', orgs: { [DEFAULT_ORG]: 'user' } })
  const { key, secret } = await g2.store.accessKeys.create(u.id)
  const h = signedHeaders(key.id, secret, 'GET', '/p')
  t.equal((await request(g2.url, '/p', { headers: h })).status, 200)
  const again = await request(g2.url, '/p', { headers: h })
  t.equal(again.status, 401)
  t.equal(again.json.code, 'signature_replayed')
  t.equal((await request(g.url, '/p', { headers: signedHeaders(key.id, secret, 'GET', '/p') })).status, 401, 'other prefix: key unknown there')
})

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
const sigOf = (h: Record<string, string>): string => /signature="([^"]+)"/.exec(h.authorization)![1]
const withSig = (h: Record<string, string>, sig: string): Record<string, string> => ({ ...h, authorization: h.authorization.replace(/signature="[^"]+"/, `signature="${sig}"`) })
/** The same 32 bytes spelled otherwise: the last character before "=" carries 2 spare bits that decoding ignores. */
const respelled = (sig: string, spare: number): string => sig.slice(0, 42) + B64[(B64.indexOf(sig[42]) & ~3) | spare] + '='

t.test('replay cache: one signature is one use, whatever the keyId\'s case or the Base64 spelling, and whatever the body', async (t) => {
  const g2 = await startGateway(db.url, { upstream: { url: echo.url }, auth: { signature: { replay_cache: true } } })
  t.teardown(() => g2.close())
  const u = await g2.store.users.create({ username: 'replayer2', password: 'replayer2-pw', orgs: { [DEFAULT_ORG]: 'user' } })
  const { key, secret } = await g2.store.accessKeys.create(u.id)
  const h: Record<string, string> = { ...signedHeaders(key.id, secret, 'POST', '/p'), 'content-type': 'application/json' }
  const sig = sigOf(h)
  const others = [0, 1, 2, 3].map((spare) => respelled(sig, spare)).filter((s) => s !== sig)
  t.equal(others.length, 3, 'three other spellings of the same MAC')
  for (const s of others) t.same(Buffer.from(s, 'base64'), Buffer.from(sig, 'base64'), `${s} decodes to the same bytes`)
  const n = echo.seen.length
  const first = await request(g2.url, '/p', { method: 'POST', headers: h, body: '{"n":1}' })
  t.equal(first.status, 200, 'the captured request itself')
  const upper = await request(g2.url, '/p', { method: 'POST', headers: { ...h, authorization: h.authorization.replace(key.id, key.id.toUpperCase()) }, body: '{"n":2}' })
  t.equal(upper.status, 401, 'an upper-cased keyId is the same key: replayed')
  t.equal(upper.json.code, 'signature_replayed')
  for (const s of others) {
    const r = await request(g2.url, '/p', { method: 'POST', headers: withSig(h, s), body: '{"n":3}' })
    t.equal(r.status, 401, `respelled ${s}: refused`)
    t.equal(r.json.code, 'invalid_signature', 'non-canonical Base64 is not a signature')
  }
  t.equal(echo.seen.length, n + 1, 'the upstream saw the request once, not once per spelling')
})

t.test('non-canonical Base64 is refused without the replay cache too; an upper-cased keyId is the same key', async (t) => {
  const { key, secret } = await g.store.accessKeys.create(alice.id)
  const h = signedHeaders(key.id, secret, 'GET', '/p')
  for (const spare of [0, 1, 2, 3]) {
    const s = respelled(sigOf(h), spare)
    const r = await request(g.url, '/p', { headers: withSig(h, s) })
    if (s === sigOf(h)) t.equal(r.status, 200, 'the canonical spelling')
    else t.same([r.status, r.json.code], [401, 'invalid_signature'], `non-canonical ${s}`)
  }
  t.equal((await request(g.url, '/p', { headers: { ...h, authorization: h.authorization.replace(key.id, key.id.toUpperCase()) } })).status, 200)
})

t.test('near misses: a valid signature with one byte or one Base64 character changed is 401', async (t) => {
  const { key, secret } = await g.store.accessKeys.create(alice.id)
  const h = signedHeaders(key.id, secret, 'GET', '/p')
  const sig = sigOf(h)
  t.equal((await request(g.url, '/p', { headers: h })).status, 200, 'the genuine one')
  const flip = (i: number): string => { const b = Buffer.from(sig, 'base64'); b[i] ^= 1; return b.toString('base64') }
  const misses: Array<[string, string]> = [
    ['last byte changed', flip(31)],
    ['first byte changed', flip(0)],
    ['a middle byte changed', flip(16)],
    ['one Base64 character in the middle changed', sig.slice(0, 21) + (sig[21] === 'A' ? 'B' : 'A') + sig.slice(22)]
  ]
  for (const [what, s] of misses) {
    t.not(s, sig)
    const r = await request(g.url, '/p', { headers: withSig(h, s) })
    t.same([r.status, r.json.code], [401, 'invalid_signature'], what)
  }
})

t.test('malformed or unknown Authorization is 401, never 500', async (t) => {
  for (const a of ['', 'Bearer', 'Bearer a b', 'Basic YWJjOmRlZg==', 'Signature', 'Signature keyId=', 'Signature keyId="x', 'Token \u00e9', 'Negotiate x', 'Signature keyId="a",signature="b"']) {
    const r = await request(g.url, '/p', { headers: { authorization: a } })
    t.equal(r.status, 401, JSON.stringify(a))
    t.type(r.json.code, 'string')
    t.ok(r.headers['www-authenticate'])
  }
  t.equal((await request(g.url, '/p', { headers: { authorization: 'Basic YWJjOmRlZg==' } })).json.code, 'unsupported_scheme')
})

t.test('Authorization decides even when a session cookie is present', async (t) => {
  const s = await g.store.sessions.create(alice.id, 60)
  const r = await request(g.url, '/p', { headers: { authorization: 'Token nope', cookie: `svc_sessionid=${s.id}` } })
  t.equal(r.status, 401)
  t.equal(r.json.code, 'invalid_token')
})

t.test('session cookie, legacy cookie, CSRF on unsafe methods', async (t) => {
  const s = await g.store.sessions.create(alice.id, 60)
  const r = await request(g.url, '/p', { headers: { cookie: `theme=dark; svc_sessionid=${s.id}; svc_csrftoken=${s.csrf}` } })
  t.equal(r.status, 200)
  t.equal(r.json.headers['x-svc-auth-method'], 'session')
  t.equal(r.json.headers.cookie, 'theme=dark', 'credential cookies not forwarded, others kept')
  t.equal((await request(g.url, '/p', { headers: { cookie: `sessionid=${s.id}` } })).status, 200, 'legacy name')
  t.equal((await request(g.url, '/p', { headers: { cookie: 'svc_sessionid=nope' } })).json.code, 'invalid_session')

  const noCsrf = await request(g.url, '/p', { method: 'POST', headers: { cookie: `svc_sessionid=${s.id}` } })
  t.equal(noCsrf.status, 403)
  t.equal(noCsrf.json.code, 'csrf_failed')
  const bad = await request(g.url, '/p', { method: 'DELETE', headers: { cookie: `svc_sessionid=${s.id}`, 'x-csrftoken': 'x' } })
  t.equal(bad.json.code, 'csrf_failed')
  const ok = await request(g.url, '/p', { method: 'POST', headers: { cookie: `svc_sessionid=${s.id}`, 'x-csrftoken': s.csrf }, body: '{}' })
  t.equal(ok.status, 200)
  // Django's (JumpServer's) safe methods: no token asked
  for (const method of ['HEAD', 'OPTIONS', 'TRACE']) {
    t.equal((await request(g.url, '/p', { method, headers: { cookie: `svc_sessionid=${s.id}` } })).status, 200, `${method} needs no CSRF token`)
  }

  const g2 = await startGateway(db.url, { upstream: { url: echo.url }, session: { accept_legacy_cookie: false } })
  t.teardown(() => g2.close())
  const s2 = await g2.store.sessions.create((await makeUser(g2, 'bob')).id, 60)
  t.equal((await request(g2.url, '/p', { headers: { cookie: `sessionid=${s2.id}` } })).status, 401, 'legacy name off')
  await g2.store.sessions.delete(s2.id)
  t.equal((await request(g2.url, '/p', { headers: { cookie: `svc_sessionid=${s2.id}` } })).status, 401, 'deleted session')
})

t.test('disabled user: every credential kind refused', async (t) => {
  const u = await makeUser(g, 'carol')
  const tok = await g.store.privateTokens.create(u.id)
  const { key, secret } = await g.store.accessKeys.create(u.id)
  const s = await g.store.sessions.create(u.id, 60)
  const b = await bearer(g.url, 'carol', 'carol-password')
  t.equal((await request(g.url, '/p', { headers: { authorization: `Token ${tok}` } })).status, 200)
  t.equal((await request(g.url, '/p', { headers: signedHeaders(key.id, secret, 'GET', '/p') })).status, 200)
  await g.store.users.setActive(u.id, false)
  t.equal((await request(g.url, '/p', { headers: { authorization: `Token ${tok}` } })).json.code, 'user_inactive')
  t.equal((await request(g.url, '/p', { headers: signedHeaders(key.id, secret, 'GET', '/p') })).json.code, 'user_inactive')
  t.equal((await request(g.url, '/p', { headers: { authorization: `Bearer ${b}` } })).json.code, 'user_inactive')
  t.equal((await request(g.url, '/p', { headers: { cookie: `svc_sessionid=${s.id}` } })).json.code, 'invalid_session', 'sessions ended')
})

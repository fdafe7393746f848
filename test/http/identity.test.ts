/**
 * identity.jwt: the signed identity (X-SVC-Identity) a real upstream receives,
 * verified with `jose` (createRemoteJWKSet + jwtVerify) against the gateway's
 * own JWKS URL; its claims per credential kind (akid only for signatures);
 * client-sent copies stripped whether the feature is on or off; disabled: no
 * header and no JWKS; ES256; the key set in the store (encrypted, created once
 * by concurrent starters, re-encrypted by `secret rotate`); the published and
 * retired keys of a rotation. On the embedded store (the key set as Redis
 * holds it: test/topology/redis-http.test.ts). Rotation under load across two
 * replicas is test/topology/identity-replicas.test.ts.
 */
import t from 'tap'
import { Validator } from '@seriousme/openapi-schema-validator'
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose'
import { startEcho, request, type Res } from '../fixtures/http.js'
import { checkSealedKeySet, embeddedStore, openStoreAt, SECRET, sqliteOf, startGateway, storeDoc, type TestGateway } from '../fixtures/gateway.js'
import { bearer, makeUser, signedHeaders } from '../fixtures/creds.js'
import { login } from '../fixtures/session.js'
import { upgrade } from '../fixtures/raw.js'
import { cliIn, workdir } from '../fixtures/procs.js'
import { removeDir } from '../fixtures/cleanup.js'
import { sqliteStore } from '../fixtures/sqlite-store.js'
import { eventually } from '../fixtures/wait.js'
import { Keyring } from '../../src/crypto.js'
import { buildConfig, defaultIssuer } from '../../src/config/index.js'
import { ensureKeySet, keyStates, keyView, newSigningKey, RETIRE_MARGIN_MS, rotateKeySet } from '../../src/forward/identity.js'
import { JWKS_KEY } from '../../src/store/keyset.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const OTHER_ORG = '7d0c4f1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f'

const db = embeddedStore()
const echo = await startEcho()
const JWT = { enabled: true, audience: 'orders-service', ttl: 60 }
const g = await startGateway(db.url, { upstream: { url: echo.url }, identity: { jwt: JWT } })
const gPublic = await startGateway(db.url, { upstream: { url: echo.url, public_paths: ['/public/'] }, identity: { jwt: { enabled: true } } })
const off = await startGateway(db.url, { upstream: { url: echo.url } })
const offBare = await startGateway(db.url, {})
const jms = await startGateway(db.url, { upstream: { url: echo.url }, names: { abbrev: 'JMS' }, identity: { jwt: { enabled: true } } })
const es = await startGateway(db.url, { upstream: { url: echo.url }, identity: { jwt: { enabled: true, algorithm: 'ES256', issuer: 'https://gw.example.test' } } })
t.teardown(async () => {
  for (const x of [g, gPublic, off, offBare, es, jms]) await x.close()
  await echo.close()
  await db.stop()
})

const jwksOf = (gw: TestGateway): ReturnType<typeof createRemoteJWKSet> => createRemoteJWKSet(new URL('/.well-known/jwks.json', gw.url))
const gJwks = jwksOf(g)

const alice = await makeUser(g, 'alice')
await g.store.orgs.create('Other', OTHER_ORG)
await g.store.users.setMembership(alice.id, OTHER_ORG, 'user')
const aliceToken = await g.store.privateTokens.create(alice.id)

/** The identity token the upstream received (the echo answers with what it got). */
function received (r: Res): string | undefined {
  if (r.status !== 200) throw new Error(`expected 200, got ${r.status}: ${r.text}`)
  const v = r.json.headers['x-svc-identity']
  return v
}

t.test('every forwarded request carries a token jose verifies against the JWKS URL; its claims', async (t) => {
  const r = await request(g.url, '/api/v1/orders/', { headers: { authorization: `Token ${aliceToken}`, 'x-request-id': 'req-claims-1' } })
  const token = received(r)
  t.type(token, 'string')
  const { payload, protectedHeader } = await jwtVerify(token!, gJwks, { issuer: g.config.identity.jwt.issuer, audience: 'orders-service', algorithms: ['EdDSA'] })
  t.equal(protectedHeader.alg, 'EdDSA')
  t.equal(protectedHeader.typ, 'JWT')
  t.type(protectedHeader.kid, 'string')
  t.equal(payload.iss, 'http://127.0.0.1:0', 'the default issuer: listen.host and listen.port (127.0.0.1:0 in this test)')
  t.equal(payload.aud, 'orders-service')
  t.equal(payload.sub, alice.id)
  t.equal(payload.preferred_username, 'alice')
  t.equal(payload.org, DEFAULT_ORG)
  t.equal(payload.auth_method, 'private_token')
  t.notOk('amr' in payload || 'acr' in payload, 'a machine credential has no sign-in: no amr, no acr')
  t.notOk('akid' in payload, 'no akid without a signature')
  t.match(payload.jti, /^[0-9a-f-]{36}$/, 'jti identifies the token')
  t.equal(payload.exp! - payload.iat!, 60, 'exp = iat + ttl')
  t.ok(Math.abs(payload.iat! - Date.now() / 1000) < 30)
  t.equal(r.json.headers['x-request-id'], 'req-claims-1', 'the request id travels in X-Request-Id')
  // the same caller again: the cached token (documented: jti is the token's, not the request's)
  const again = received(await request(g.url, '/api/v1/orders/', { headers: { authorization: `Token ${aliceToken}` } }))
  t.equal(again, token, 'reused within a quarter of its ttl')
  // another org: another token, naming that org
  const other = received(await request(g.url, `/api/v1/orders/?oid=${OTHER_ORG}`, { headers: { authorization: `Token ${aliceToken}` } }))
  t.not(other, token)
  t.equal((await jwtVerify(other!, gJwks)).payload.org, OTHER_ORG)
})

t.test('the default issuer, derived from listen', async (t) => {
  t.equal(defaultIssuer({ host: '0.0.0.0', port: 8080 }), 'http://localhost:8080', 'every interface: localhost, where a sidecar\'s service reaches it')
  t.equal(defaultIssuer({ host: '::', port: 8080 }), 'http://localhost:8080')
  t.equal(defaultIssuer({ host: '10.0.0.7', port: 80 }), 'http://10.0.0.7:80')
  t.equal(defaultIssuer({ host: 'fd00::7', port: 8080 }), 'http://[fd00::7]:8080')
  t.equal(buildConfig({}).identity.jwt.issuer, 'http://localhost:8080', 'the defaults')
  t.equal(buildConfig({ identity: { jwt: { issuer: 'https://auth.example.com' } } }).identity.jwt.issuer, 'https://auth.example.com')
})

t.test('auth_method per credential kind, amr and acr for sign-ins; akid = the access key id only for signatures', async (t) => {
  const bob = await makeUser(g, 'bob', { password: 'bob-password-1' })
  const { key, secret } = await g.store.accessKeys.create(bob.id)
  const signed = received(await request(g.url, '/api/v1/x/', { headers: signedHeaders(key.id, secret, 'GET', '/api/v1/x/') }))
  const p1 = (await jwtVerify(signed!, gJwks)).payload
  t.equal(p1.auth_method, 'access_key')
  t.notOk('amr' in p1)
  t.equal(p1.akid, key.id)
  t.equal(p1.sub, bob.id)

  const bt = await bearer(g.url, 'bob', 'bob-password-1')
  const p2 = (await jwtVerify(received(await request(g.url, '/api/v1/x/', { headers: { authorization: `Bearer ${bt}` } }))!, gJwks)).payload
  t.match(p2, { auth_method: 'bearer', amr: ['pwd'], acr: 'one_factor' })
  t.notOk('akid' in p2)

  const s = await login(g.url, 'bob', 'bob-password-1')
  const p3 = (await jwtVerify(received(await request(g.url, '/api/v1/x/', { headers: { cookie: s.cookie } }))!, gJwks)).payload
  t.match(p3, { auth_method: 'session', amr: ['pwd'], acr: 'one_factor' })
  t.notOk('akid' in p3)
})

t.test('a client-sent X-SVC-Identity (any case, _ spelling, the JMS family) never reaches the upstream', async (t) => {
  const forged = ['X-SVC-Identity', 'eyJforged.one.sig', 'x-svc-identity', 'forged-two', 'X_SVC_Identity', 'forged-three', 'X-JMS-Identity', 'forged-four']
  // enabled: exactly sidegate's own token, which verifies
  const r = await request(g.url, '/api/v1/x/', { rawHeaders: ['Host', 'gw', 'Authorization', `Token ${aliceToken}`, ...forged] })
  const mine = received(r)
  await jwtVerify(mine!, gJwks)
  t.equal(JSON.stringify(r.json.headers).includes('forged'), false)
  // enabled, public path: no identity at all
  const p = await request(gPublic.url, '/public/a', { rawHeaders: ['Host', 'gw', ...forged] })
  t.equal(p.status, 200)
  t.equal(p.json.headers['x-svc-identity'], undefined)
  t.equal(JSON.stringify(p.json.headers).includes('forged'), false)
  // disabled: stripped all the same, and none added
  const offToken = await off.store.privateTokens.create((await makeUser(off, 'carol')).id)
  const d = await request(off.url, '/api/v1/x/', { rawHeaders: ['Host', 'gw', 'Authorization', `Token ${offToken}`, ...forged] })
  t.equal(d.status, 200)
  t.equal(d.json.headers['x-svc-identity'], undefined, 'disabled: no identity token')
  t.equal(d.json.headers['x-svc-user-id'] !== undefined, true, 'the plain identity headers are still set')
  t.equal(JSON.stringify(d.json.headers).includes('forged'), false)
})

t.test('the JWKS: public keys only, kid and alg, short Cache-Control; in the OpenAPI document', async (t) => {
  const r = await request(g.url, '/.well-known/jwks.json')
  t.equal(r.status, 200)
  t.match(r.headers['content-type'], /^application\/json/)
  t.equal(r.headers['cache-control'], 'public, max-age=60')
  t.equal(r.json.keys.length, 1)
  const k = r.json.keys[0]
  t.same(Object.keys(k).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x'])
  t.match(k, { kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' })
  const token = received(await request(g.url, '/api/v1/x/', { headers: { authorization: `Token ${aliceToken}` } }))
  t.equal(decodeProtectedHeader(token!).kid, k.kid)
  t.equal((await request(g.url, '/.well-known/jwks.json', { method: 'HEAD' })).status, 200)
  t.equal((await request(g.url, '/.well-known/jwks.json', { method: 'POST' })).status, 405)
  const doc = (await request(g.url, '/api/docs/openapi.json')).json
  t.ok(doc.paths['/.well-known/jwks.json']?.get, 'documented when enabled')
  const valid = await new Validator().validate(doc)
  t.same(valid.errors, undefined, 'still a valid OpenAPI 3.1 document')
  t.notOk((await request(offBare.url, '/api/docs/openapi.json')).json.paths['/.well-known/jwks.json'], 'not when disabled')
})

t.test('disabled: no JWKS (404 without an upstream; with one the path is the upstream\'s, behind authentication)', async (t) => {
  const r = await request(offBare.url, '/.well-known/jwks.json')
  t.equal(r.status, 404)
  t.equal(r.json.code, 'not_found')
  t.equal((await request(off.url, '/.well-known/jwks.json')).status, 401)
  t.equal(off.gw.identity, null)
})

t.test('names.abbrev JMS: X-JMS-Identity; a client\'s X-SVC-Identity is stripped there too', async (t) => {
  const u = await makeUser(jms, 'erin')
  const tok = await jms.store.privateTokens.create(u.id)
  const r = await request(jms.url, '/x', { headers: { authorization: `Token ${tok}`, 'x-svc-identity': 'forged', 'x-jms-identity': 'forged' } })
  t.equal(r.status, 200)
  t.equal(r.json.headers['x-svc-identity'], undefined)
  const { payload } = await jwtVerify(r.json.headers['x-jms-identity'], jwksOf(jms))
  t.equal(payload.sub, u.id)
  t.equal(JSON.stringify(r.json.headers).includes('forged'), false)
})

t.test('`sidegate jwk list` and `jwk rotate` (text): the new key is published at once, the old one goes on signing', async (t) => {
  const { dir } = await workdir({ ...storeDoc(db.url, g.config.redis.prefix), identity: { jwt: { enabled: true } } }, 'sidegate-jwk-')
  t.teardown(() => removeDir(dir))
  const env = { SIDEGATE_SECRET_KEY: SECRET }
  const before = (await request(g.url, '/.well-known/jwks.json')).json.keys[0].kid
  const list = await cliIn(dir, ['jwk', 'list'], { env })
  t.equal(list.code, 0, list.stderr)
  t.match(list.stdout, new RegExp(`^${before.replace(/[-]/g, '\\-')}  EdDSA  signing\\s*\\n$`))
  const rot = await cliIn(dir, ['jwk', 'rotate'], { env })
  t.equal(rot.code, 0, rot.stderr)
  const kid = /^added key (\S+) \(EdDSA\): published now, signs from (\S+)$/m.exec(rot.stdout)
  t.ok(kid, rot.stdout)
  const listed = await cliIn(dir, ['jwk', 'list'], { env })
  t.match(listed.stdout, `${kid![1]}  EdDSA  next      signs from ${kid![2]}`)
  // the running gateway reads the set within its poll interval (10 s here): published, not yet signing
  t.ok(await eventually(async () => (await request(g.url, '/.well-known/jwks.json')).json.keys.length === 2, 60_000), 'published by the running gateway')
  const token = received(await request(g.url, '/api/v1/x/', { headers: { authorization: `Token ${aliceToken}` } }))
  t.equal(decodeProtectedHeader(token!).kid, before, 'still signed with the old key: publish_ahead (300 s) has not passed')
  await jwtVerify(token!, gJwks)
  const help = await cliIn(dir, ['jwk', '--help'])
  t.equal(help.code, 0)
  t.match(help.stdout, 'sidegate jwk rotate')
  const bad = await cliIn(dir, ['jwk', 'rotate', 'extra'], { env })
  t.equal(bad.code, 2)
})

t.test('ES256 (identity.jwt.algorithm) and a configured issuer', async (t) => {
  const u = await makeUser(es, 'dora')
  const tok = await es.store.privateTokens.create(u.id)
  const token = received(await request(es.url, '/x', { headers: { authorization: `Token ${tok}` } }))
  const { payload, protectedHeader } = await jwtVerify(token!, jwksOf(es), { issuer: 'https://gw.example.test', algorithms: ['ES256'] })
  t.equal(protectedHeader.alg, 'ES256')
  t.equal(payload.sub, u.id)
  t.notOk('aud' in payload, 'no audience configured: no aud claim')
  const k = (await request(es.url, '/.well-known/jwks.json')).json.keys[0]
  t.match(k, { kty: 'EC', crv: 'P-256', alg: 'ES256' })
  // the token does not verify against another gateway's keys
  await t.rejects(jwtVerify(token!, gJwks))
})

t.test('a tampered token does not verify', async (t) => {
  const token = received(await request(g.url, '/api/v1/x/', { headers: { authorization: `Token ${aliceToken}` } }))!
  const [h, p, s] = token.split('.')
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as JWTPayload
  const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString('base64url')}.${s}`
  await t.rejects(jwtVerify(forged, gJwks), { code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' })
})

t.test('the WebSocket upgrade carries the token too', async (t) => {
  const n = echo.seen.length
  const ws = await upgrade(g.url, '/ws', { authorization: `Token ${aliceToken}` })
  ws.socket.destroy()
  t.match(ws.head, /^HTTP\/1\.1 101/)
  const seen = echo.seen.slice(n).find((e) => e.url === '/ws')
  t.ok(seen)
  await jwtVerify(seen!.headers['x-svc-identity'] as string, gJwks)
})

t.test('the key set in the store: private halves encrypted with the secret key, never in the clear', async (t) => {
  // as the file holds it (in Redis: test/topology/redis-http.test.ts)
  await checkSealedKeySet(t, sqliteOf(g).prepare('SELECT value FROM meta WHERE name = ?').pluck().get(JWKS_KEY) as string | undefined, g.store)
})

t.test('first start: concurrent creators, one key set (compare-and-set)', async (t) => {
  // five stores on one file, each with its own connection, as five
  // starting processes have (on Redis: test/topology/redis-http.test.ts)
  const prefix = `ks${process.pid}:`
  const stores = await Promise.all([0, 1, 2, 3, 4].map(async () => await openStoreAt(db.url, prefix)))
  t.teardown(async () => { for (const s of stores) await s.close() })
  const sets = await Promise.all(stores.map(async (s) => await ensureKeySet(s, 'EdDSA')))
  t.equal(sets.filter((s) => s.created).length, 1, 'exactly one created it')
  t.equal(new Set(sets.map((s) => s.keys.map((k) => k.kid).join())).size, 1, 'all see the same key')
})

t.test('`secret rotate` re-encrypts the signing keys; a store with another key reads them as unreadable', async (t) => {
  // (on Redis: test/topology/redis-http.test.ts)
  const prefix = `sr${process.pid}:`
  const s = await openStoreAt(db.url, prefix)
  t.teardown(async () => { await s.close() })
  // the key's check value, as `sidegate start` records it
  await s.verifyKey({ mode: 'start', where: 'test', source: 'test', db: 0 })
  const before = await ensureKeySet(s, 'EdDSA')
  const NEW = 'the-new-secret-key-that-is-long-enough-9876543210'
  const r = await s.rotateKey(new Keyring(NEW), { dryRun: false, limit: null, where: 'test', db: 0, progress: () => {} })
  t.equal(r.done, true)
  t.equal(r.converted, 1, 'the one signing key')
  const after = await openStoreAt(db.url, prefix, { secret: NEW })
  t.teardown(async () => { await after.close() })
  const set = await after.signingKeys.get()
  t.equal(set.keys[0].kid, before.keys[0].kid)
  t.same(set.keys[0].private, before.keys[0].private, 'the same private key, readable under the new secret')
  t.equal((await s.signingKeys.get()).keys[0].private, null, 'the old secret cannot read it any more')
})

t.test('rotation in the store: published ahead, signs later, the old key kept until its tokens expired, then removed (a stepped clock)', async (t) => {
  const clock = { now: Date.UTC(2026, 0, 1) }
  const store = await sqliteStore({ now: () => clock.now })
  t.teardown(() => store.close())
  const c = { algorithm: 'EdDSA' as const, publish_ahead: 300, ttl: 60 }
  const ttlMs = c.ttl * 1000
  const first = await ensureKeySet(store, 'EdDSA', clock.now)
  const k1 = first.keys[0].kid
  clock.now += 1000
  const { key: k2 } = await rotateKeySet(store, c, clock.now)
  let keys = (await store.signingKeys.get()).keys
  let v = keyView(keys, clock.now, ttlMs)
  t.equal(v.signing?.kid, k1, 'the old key still signs')
  t.same(v.published.map((k) => k.kid), [k1, k2.kid], 'the new key is published at once')
  t.same(keyStates(keys, clock.now, ttlMs).map((s) => s.state), ['signing', 'next'])
  v = keyView(keys, k2.active_from - 1, ttlMs)
  t.equal(v.signing?.kid, k1, 'until publish_ahead has passed')
  v = keyView(keys, k2.active_from, ttlMs)
  t.equal(v.signing?.kid, k2.kid, 'then the new key signs')
  t.same(v.published.map((k) => k.kid), [k1, k2.kid], 'and the old one is still published')
  const lastOld = k2.active_from + ttlMs + RETIRE_MARGIN_MS
  t.same(keyView(keys, lastOld - 1, ttlMs).published.map((k) => k.kid), [k1, k2.kid], 'until ttl + margin after the switch')
  t.same(keyView(keys, lastOld, ttlMs).published.map((k) => k.kid), [k2.kid], 'then retired')
  t.same(keyStates(keys, lastOld, ttlMs).map((s) => s.state), ['retired', 'signing'])
  // the next rotation removes it
  clock.now = lastOld
  const r3 = await rotateKeySet(store, c, clock.now)
  t.same(r3.removed, [k1])
  keys = (await store.signingKeys.get()).keys
  t.same(keys.map((k) => k.kid), [k2.kid, r3.key.kid])
  // a rotation on an empty set signs at once
  const empty = await sqliteStore({ now: () => clock.now })
  t.teardown(() => empty.close())
  const r0 = await rotateKeySet(empty, c, clock.now)
  t.equal(r0.key.active_from, clock.now)
  t.ok(newSigningKey('ES256', 0, 0).public.y, 'an EC key has y')
})

t.test('cached tokens (the default) are shared by requests; identity.jwt.per_request: one per request, jti = X-Request-Id, verified by jose', async (t) => {
  const ids = ['req-one-1', 'req-two-2']
  const cached = []
  for (const id of ids) cached.push((await jwtVerify(received(await request(g.url, '/api/x', { headers: { authorization: `Token ${aliceToken}`, 'x-request-id': id } }))!, gJwks, { audience: 'orders-service' })).payload)
  t.equal(cached[0].jti, cached[1].jti, 'the default: one cached token for both requests (it names the caller, not the request)')
  t.not(cached[0].jti, ids[0])

  const per = await startGateway(
    db.url,
    {
      redis: { url: db.url, prefix: g.config.redis.prefix },
      upstream: { url: echo.url },
      identity: { jwt: { ...JWT, per_request: true } }
    }
  )
  t.teardown(async () => { await per.close() })
  const perJwks = jwksOf(per)
  const seen: JWTPayload[] = []
  for (const id of ids) {
    const r = await request(per.url, '/api/x', { headers: { authorization: `Token ${aliceToken}`, 'x-request-id': id } })
    t.equal(r.json.headers['x-request-id'], id, 'the upstream gets the request id')
    const { payload } = await jwtVerify(received(r)!, perJwks, { audience: 'orders-service', issuer: per.config.identity.jwt.issuer })
    t.equal(payload.jti, id, 'jti is the request id')
    t.match(payload, { sub: alice.id, auth_method: 'private_token' })
    seen.push(payload)
  }
  t.not(seen[0].jti, seen[1].jti, 'two requests, two tokens')
  // without X-Request-Id: the id sidegate made (a UUID) is both the header and the jti
  const r = await request(per.url, '/api/x', { headers: { authorization: `Token ${aliceToken}` } })
  const { payload } = await jwtVerify(received(r)!, perJwks, { audience: 'orders-service' })
  t.equal(payload.jti, r.json.headers['x-request-id'])
})

t.test('identity.jwt without an audience: a warning at start', async (t) => {
  const warned = (gw: TestGateway): boolean => gw.logs.some((l) => l.includes('"jwt_no_audience"') && l.includes('"level":40'))
  t.ok(warned(gPublic), 'no audience: warned')
  t.notOk(warned(g), 'with an audience: not warned')
  t.notOk(warned(off), 'identity.jwt off: not warned')
})

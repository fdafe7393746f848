/**
 * identity.jwt across two replicas (`sidegate start` processes on one Redis)
 * and a key rotation under load: both sign with the same key, a token from
 * either verifies against either's JWKS, `sidegate jwk rotate` is seen by
 * both, and not one token fails verification while the signing key changes.
 * Verified by `jose` (createRemoteJWKSet + jwtVerify) against the replicas'
 * JWKS URLs, as a service would, with a JWKS cache shorter than publish_ahead
 * and jose's default 30 s cooldown: an unknown kid is not refetched, so a key
 * that signed before it was published would fail.
 * ttl and publish_ahead are a few seconds, so the rotation takes seconds;
 * every wait is a deadline, never a delay.
 */
import t from 'tap'
import { dirname } from 'node:path'
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose'
import { startRedis } from '../fixtures/redis.js'
import { startEcho, request } from '../fixtures/http.js'
import { SECRET, spawnGateway } from '../fixtures/gateway.js'
import { cliIn } from '../fixtures/procs.js'
import { openTestStore } from '../fixtures/store-contract.js'

const PREFIX = 'idrep:'
const JWT = { enabled: true, ttl: 3, publish_ahead: 3, issuer: 'https://sidegate.test', audience: 'svc' }

const redis = await startRedis()
const echo = await startEcho()
t.teardown(async () => { await echo.close(); await redis.stop() })
const overrides = { upstream: { url: echo.url }, identity: { jwt: JWT } }
const [a, b] = await Promise.all([
  spawnGateway(redis.url, overrides, PREFIX), spawnGateway(redis.url, overrides, PREFIX)
])
t.teardown(async () => { await a.stop(); await b.stop() })

const store = await openTestStore({ url: redis.url }, PREFIX)
t.teardown(async () => { await store.close() })
const admin = await store.users.byUsername('admin')
const token = await store.privateTokens.create(admin!.id)

const replicas = [a, b]
// a verifier per replica's JWKS URL: cached for 1 s (less than publish_ahead), jose's default 30 s cooldown
const verifiers = replicas.map((r) => createRemoteJWKSet(new URL('/.well-known/jwks.json', r.url), { cacheMaxAge: 1000 }))
const verifyOpts = { issuer: JWT.issuer, audience: JWT.audience }

async function kids (url: string): Promise<string[]> {
  const r = await request(url, '/.well-known/jwks.json')
  return (r.json?.keys ?? []).map((k: { kid: string }) => k.kid)
}

/** One request through replica i; the token the upstream received, verified against both replicas' JWKS. */
async function once (i: number, failures: string[], iats?: Map<string, number>): Promise<string | null> {
  const r = await request(replicas[i].url, '/api/v1/orders/', { headers: { authorization: `Token ${token}` } })
  if (r.status !== 200) { failures.push(`replica ${i}: ${r.status} ${r.text}`); return null }
  const jwt = r.json.headers['x-svc-identity'] as string
  for (const [j, v] of verifiers.entries()) {
    try {
      await jwtVerify(jwt, v, verifyOpts)
    } catch (err) {
      failures.push(`token of replica ${i} (kid ${decodeProtectedHeader(jwt).kid}) against replica ${j}'s JWKS: ${(err as Error).message}`)
    }
  }
  const kid = decodeProtectedHeader(jwt).kid ?? ''
  const iat = (JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString()) as { iat: number }).iat
  if (iats !== undefined) iats.set(kid, Math.min(iats.get(kid) ?? Infinity, iat))
  return kid
}

t.test('two replicas: one key set, created once; a token from either verifies against either', async (t) => {
  const [ka, kb] = await Promise.all([kids(a.url), kids(b.url)])
  t.equal(ka.length, 1)
  t.same(ka, kb, 'the same published key')
  const failures: string[] = []
  const kidA = await once(0, failures)
  const kidB = await once(1, failures)
  t.same(failures, [])
  t.equal(kidA, ka[0])
  t.equal(kidB, ka[0], 'both sign with it')
})

t.test('`sidegate jwk rotate` under load: published by both before it signs, both switch, zero failed verifications', async (t) => {
  const before = (await kids(a.url))[0]
  const failures: string[] = []
  const firstIat = new Map<string, number>()
  const seen = [new Map<string, number>(), new Map<string, number>()]
  let stop = false
  let requests = 0
  // 4 clients, alternating replicas, until stopped
  const clients = [0, 1, 2, 3].map(async (c) => {
    for (let n = c; !stop; n++) {
      const i = n % 2
      const kid = await once(i, failures, firstIat)
      requests++
      if (kid !== null) seen[i].set(kid, (seen[i].get(kid) ?? 0) + 1)
    }
  })
  // some load on the old key first
  const end0 = Date.now() + 60_000
  while (requests < 40 && Date.now() < end0) await new Promise((resolve) => setTimeout(resolve, 20))
  const cli = await cliIn(dirname(a.configFile), ['jwk', 'rotate', '--config', a.configFile, '--json'], { env: { SIDEGATE_SECRET_KEY: SECRET }, timeout: 60_000 })
  t.equal(cli.code, 0, cli.stderr)
  const rotated = JSON.parse(cli.stdout) as { kid: string, signs_from: string }
  const next = rotated.kid
  t.not(next, before)
  // both replicas publish it (they read the set every 750 ms here)
  const published = await Promise.all(replicas.map(async (r) => {
    const end = Date.now() + 60_000
    while (Date.now() < end) {
      if ((await kids(r.url)).includes(next)) return Date.now()
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    return null
  }))
  t.ok(published.every((p) => p !== null), 'both replicas publish the new key')
  // the load goes on until both replicas have signed 30 tokens with the new key (a deadline, not a delay)
  const end = Date.now() + 120_000
  while (Date.now() < end && !((seen[0].get(next) ?? 0) >= 30 && (seen[1].get(next) ?? 0) >= 30)) {
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  stop = true
  await Promise.all(clients)
  t.same(failures, [], `zero failed verifications over ${requests} requests`)
  for (const i of [0, 1]) {
    t.ok((seen[i].get(before) ?? 0) > 0, `replica ${i} signed with the old key before`)
    t.ok((seen[i].get(next) ?? 0) >= 30, `replica ${i} signs with the new key after`)
  }
  // the old key is still published: its tokens may still be valid
  t.same((await kids(a.url)).sort(), [before, next].sort())
  t.same((await kids(b.url)).sort(), [before, next].sort())
  // no token was signed with the new key before the time the rotation announced (iat is in whole seconds)
  t.ok(firstIat.get(next)! >= Math.floor(Date.parse(rotated.signs_from) / 1000), 'signed with only after publish_ahead')

  const list = await cliIn(dirname(a.configFile), ['jwk', 'list', '--config', a.configFile, '--json'], { env: { SIDEGATE_SECRET_KEY: SECRET }, timeout: 60_000 })
  t.equal(list.code, 0, list.stderr)
  const states = JSON.parse(list.stdout) as Array<{ kid: string, state: string, until: string | null }>
  t.same(states.map((s) => [s.kid, s.state]), [[before, 'replaced'], [next, 'signing']])
  t.ok(Date.parse(states[0].until!) >= Date.parse(rotated.signs_from) + (JWT.ttl + 60) * 1000, 'the old key stays published ttl + 60 s past the switch')
})

/**
 * Three `sidegate start` processes sharing one Redis, as three pods of one
 * Deployment would: single-use tokens, revocation and sessions hold across them.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startRedis } from '../fixtures/redis.js'
import { ROOT, SECRET, spawnGateway, startGateway, redisOf } from '../fixtures/gateway.js'
import { openTestStore } from '../fixtures/store-contract.js'
import { request } from '../fixtures/http.js'
import { bearer, signedHeaders } from '../fixtures/creds.js'
import { buildConfig } from '../../src/config/index.js'
import { REFRESH_SHARE } from '../../src/store/policy/caches.js'
import { ANNOUNCED_WITHIN, eventually, bootstrappedAdmin } from '../fixtures/wait.js'

const run = promisify(execFile)
const PROFILE = '/api/v1/users/profile/'
/** auth.cache.ttl, the default: without the invalidation message a change would show only after this */
const CACHE_TTL = 300_000
/** a third of it: a change seen within this was announced, not expired */
const INVALIDATION_DEADLINE = ANNOUNCED_WITHIN

const redis = await startRedis()
t.teardown(async () => { await redis.stop() })
const prefix = 'r3:'
// started together: three replicas bootstrapping one empty store at once
const started = await Promise.allSettled([0, 1, 2].map(async () => await spawnGateway(redis.url, {}, prefix)))
const gws = started.flatMap((s) => s.status === 'fulfilled' ? [s.value] : [])
t.teardown(async () => { await Promise.all(gws.map(async (g) => await g.stop())) })
for (const s of started) if (s.status === 'rejected') throw s.reason
const store = await openTestStore({ url: redis.url }, prefix)
t.teardown(async () => { await store.close() })

const admin = await bootstrappedAdmin(store)
const adminId = admin!.id

t.test('three replicas bootstrapped one admin between them', async (t) => {
  t.equal((await store.users.list()).filter((u) => u.username === 'admin').length, 1)
})

t.test('100 concurrent uses of one bearer token spread over three replicas: exactly one 200', async (t) => {
  const tok = await bearer(gws[1].url)
  const res = await Promise.all(Array.from({ length: 100 }, async (_, i) =>
    await request(gws[i % 3].url, PROFILE, { headers: { authorization: `Bearer ${tok}` } })))
  t.equal(res.filter((r) => r.status === 200).length, 1, 'one success')
  t.equal(res.filter((r) => r.status === 401 && r.json?.code === 'invalid_token').length, 99, 'every other use refused')
})

t.test('an access key revoked through one replica (CLI) is refused by all long before the cache TTL', async (t) => {
  const { key, secret } = await store.accessKeys.create(adminId)
  const signed = (): Record<string, string> => signedHeaders(key.id, secret, 'GET', PROFILE)
  // warm every replica's in-process cache first, so only the invalidation can make it refuse
  for (const g of gws) t.equal((await request(g.url, PROFILE, { headers: signed() })).status, 200, 'accepted and cached')

  const { stdout } = await run(process.execPath, [join(ROOT, 'bin', 'sidegate.js'), 'key', 'revoke', key.id, '--config', gws[0].configFile], {
    env: { PATH: process.env.PATH, SIDEGATE_SECRET_KEY: SECRET }
  })
  t.match(stdout, /revoked access key/)
  const revokedAt = Date.now()
  // polled with a deadline a third of the 30 s cache TTL: a refusal within it is the invalidation message's doing
  const refusedAfter = await Promise.all(gws.map(async (g) => {
    const refused = await eventually(
      async () => (await request(g.url, PROFILE, { headers: signed() })).status === 401, INVALIDATION_DEADLINE
    )
    return refused ? Date.now() - revokedAt : Infinity
  }))
  for (const [i, ms] of refusedAfter.entries()) t.ok(ms < INVALIDATION_DEADLINE, `replica ${i} refused it after ${ms} ms (cache TTL ${CACHE_TTL / 1000} s)`)
})

t.test('a session works on every replica; deleting it (logout) ends it everywhere', async (t) => {
  const s = await store.sessions.create(adminId, 600)
  const cookie = `svc_sessionid=${s.id}`
  for (const g of gws) t.equal((await request(g.url, PROFILE, { headers: { cookie } })).status, 200)
  // unsafe methods need the CSRF token, which every replica derives the same way
  const post = await request(gws[2].url, '/api/v1/authentication/auth/', { method: 'POST', headers: { cookie, 'x-csrftoken': s.csrf, 'content-type': 'application/json' }, body: '{}' })
  t.not(post.json?.code, 'csrf_failed')
  await store.sessions.delete(s.id)
  const deletedAt = Date.now()
  // each replica may still hold the session in its cache until the invalidation message arrives: wait for it
  for (const [i, g] of gws.entries()) {
    let r = await request(g.url, PROFILE, { headers: { cookie } })
    const refused = await eventually(
      async () => (r = await request(g.url, PROFILE, { headers: { cookie } })).status === 401, INVALIDATION_DEADLINE
    )
    t.ok(refused, `replica ${i} refuses the deleted session (after ${Date.now() - deletedAt} ms; cache TTL ${CACHE_TTL / 1000} s)`)
    t.equal(r.status, 401)
    t.equal(r.json.code, 'invalid_session')
  }
})

t.test('cache TTL (refresh ahead within it) is the fallback when an invalidation message is lost', async (t) => {
  // bounds: a stale entry can never live longer than auth.cache.ttl (1 s to 1 h)
  t.equal(buildConfig({}).auth.cache.ttl, CACHE_TTL / 1000)
  t.throws(() => buildConfig({ auth: { cache: { ttl: 0 } } }), /auth\.cache\.ttl/)
  t.throws(() => buildConfig({ auth: { cache: { ttl: 3601 } } }), /auth\.cache\.ttl/)

  // 5 s: room for the two requests below to come while the entry is fresh, on a busy machine too
  const ttl = 5
  const g = await startGateway(redis.url, { auth: { cache: { ttl } } })
  t.teardown(async () => { await g.close() })
  const u = await g.store.users.byUsername('admin')
  const { key, secret } = await g.store.accessKeys.create(u!.id)
  const signed = (): Record<string, string> => signedHeaders(key.id, secret, 'GET', PROFILE)
  const cachedAt = Date.now()
  t.equal((await request(g.url, PROFILE, { headers: signed() })).status, 200, 'cached')
  // delete behind the store's back: no PUBLISH, as if the message were lost
  await redisOf(g).del(`${g.config.redis.prefix}ak:${key.id}`)
  t.equal((await request(g.url, PROFILE, { headers: signed() })).status, 200, 'still served from the cache: only the message makes revocation instant')
  let status = 200
  const refused = await eventually(
    async () => (status = (await request(g.url, PROFILE, { headers: signed() })).status) !== 200,
    ttl * 1000 + 15_000,
    100
  )
  const after = Date.now() - cachedAt
  t.ok(refused, `refused once the entry expired (after ${after} ms; ttl ${ttl} s)`)
  t.equal(status, 401)
  // the entry was made during the first request; a hit in the last quarter of its life reads it again in the
  // background (refresh ahead), which finds the change: not before that window, not after the ttl
  t.ok(after >= ttl * 1000 * (1 - REFRESH_SHARE), `not before the refresh window (${ttl * (1 - REFRESH_SHARE)} s): the cache held it until then`)
})

import t from 'tap'
import { startCluster, replicasCaughtUp } from '../fixtures/topologies.js'
import { spawnGateway } from '../fixtures/gateway.js'
import { request } from '../fixtures/http.js'
import { bearer, signedHeaders } from '../fixtures/creds.js'
import { openTestStore, redisStores, storeContract } from '../fixtures/store-contract.js'
import { eventually, bootstrappedAdmin } from '../fixtures/wait.js'
import { failoverRounds, describeFailures, describeRecovery } from '../fixtures/failover.js'

const cluster = await startCluster()
t.teardown(async () => { await cluster.stop() })
// seed with one node only: the client discovers the rest
const redis = { mode: 'cluster', nodes: [`127.0.0.1:${cluster.nodes[0].port}`] }

t.test('store contract on a six-node Redis Cluster', async (t) => { storeContract(t, redisStores(redis)) })

t.test('a gateway in cluster mode: every credential kind, readiness, keys spread over the slots', async (t) => {
  const prefix = 'gw-cluster:'
  const gw = await spawnGateway('redis://unused:6379', { redis: { ...redis, prefix } })
  t.teardown(async () => { await gw.stop() })
  const store = await openTestStore(redis, prefix)
  t.teardown(async () => { await store.close() })

  t.equal((await request(gw.url, '/readyz')).status, 200)
  const admin = await bootstrappedAdmin(store)
  t.ok(admin, 'bootstrap ran against the cluster')

  for (let i = 0; i < 5; i++) {
    const tok = await bearer(gw.url)
    const r1 = await request(gw.url, '/api/v1/users/profile/', { headers: { authorization: `Bearer ${tok}` } })
    t.equal(r1.status, 200, 'bearer')
    t.equal((await request(gw.url, '/api/v1/users/profile/', { headers: { authorization: `Bearer ${tok}` } })).status, 401, 'single use')
  }
  const { key, secret } = await store.accessKeys.create(admin!.id)
  const path = '/api/v1/users/profile/'
  t.equal((await request(gw.url, path, { headers: signedHeaders(key.id, secret, 'GET', path) })).status, 200, 'signature')
  await store.accessKeys.delete(key.id)
  const deletedAt = Date.now()
  const refused = await eventually(async () => (await request(gw.url, path, { headers: signedHeaders(key.id, secret, 'GET', path) })).status === 401)
  t.ok(refused, `revocation published through the cluster reached the gateway (after ${Date.now() - deletedAt} ms; the cache TTL is 30 s)`)

  const pt = await store.privateTokens.create(admin!.id)
  t.equal((await request(gw.url, path, { headers: { authorization: `Token ${pt}` } })).status, 200, 'private token')
  const s = await store.sessions.create(admin!.id, 60)
  t.equal((await request(gw.url, path, { headers: { cookie: `svc_sessionid=${s.id}` } })).status, 200, 'session')

  // the data really is spread: the gateway's fixed keys hash to slots of more than one primary
  const thirds = new Set<number>()
  for (const k of ['orgs', 'users', 'uname:admin', 'org:00000000-0000-0000-0000-000000000002']) {
    const slot = Number(await (store.redis as any).cluster('KEYSLOT', prefix + k))
    thirds.add(slot < 5461 ? 0 : slot < 10923 ? 1 : 2)
  }
  t.ok(thirds.size > 1, 'keys on more than one primary')
})

t.test('a primary dies mid-run: its replica takes over and the gateway recovers without restart', async (t) => {
  const prefix = 'gw-cluster-failover:'
  const gw = await spawnGateway('redis://unused:6379', { redis: { ...redis, prefix, command_timeout: 1000 } })
  t.teardown(async () => { await gw.stop() })
  const store = await openTestStore(redis, prefix)
  t.teardown(async () => { await store.close() })
  const admin = await bootstrappedAdmin(store)
  const pt = await store.privateTokens.create(admin!.id)

  const { results, round, untilRecovered, failures } = failoverRounds(gw.url)
  for (let i = 0; i < 5; i++) await round()
  t.ok(results.every((r) => r.ok), 'all good before the failover')

  // kill the primary holding the admin's record: every login needs it
  const slot = Number(await (store.redis as any).cluster('KEYSLOT', `${prefix}user:${admin!.id}`))
  const before = await cluster.primaries()
  for (const p of before) await replicasCaughtUp(p)
  const killedAt = Date.now()
  const killed = await cluster.killPrimaryOf(slot)
  t.ok(before.includes(killed), `killed the primary on ${killed}`)

  const rec = await untilRecovered(killedAt)
  const failed = failures()
  t.comment(`failover: ${describeRecovery(rec)}; ${describeFailures(failed)}`)
  t.equal(rec.streak, 15, `recovered: ${describeRecovery(rec)} (${describeFailures(failed)})`)
  t.ok(failed.every((f) => f.at >= killedAt), 'no failure before the primary died')
  t.ok(failed.every((f) => f.status === 503 || f.status === 401), 'failures are 503, or 401 for a write lost with the primary')
  const after = await cluster.primaries()
  t.equal(after.length, 3, 'three primaries again: a replica was promoted')
  t.notOk(after.includes(killed))
  t.equal(gw.proc.exitCode, null, 'the gateway never exited')

  t.equal((await request(gw.url, '/api/v1/users/profile/', { headers: { authorization: `Token ${pt}` } })).status, 200)
  await store.privateTokens.revoke(admin!.id)
  const refused = await eventually(async () => (await request(gw.url, '/api/v1/users/profile/', { headers: { authorization: `Token ${pt}` } })).status === 401)
  t.ok(refused, 'invalidation still reaches the gateway after the failover')
})

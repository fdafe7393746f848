import t from 'tap'
import { startSentinel, replicasCaughtUp } from '../fixtures/topologies.js'
import { openTestStore, redisStores, storeContract } from '../fixtures/store-contract.js'
import { spawnGateway } from '../fixtures/gateway.js'
import { request } from '../fixtures/http.js'
import { eventually, bootstrappedAdmin } from '../fixtures/wait.js'
import { failoverRounds, describeFailures, describeRecovery } from '../fixtures/failover.js'

const sentinel = await startSentinel()
t.teardown(async () => { await sentinel.stop() })
const redis = { mode: 'sentinel', name: sentinel.name, sentinels: sentinel.sentinels.map((s) => `${s.host}:${s.port}`), command_timeout: 1000, connect_timeout: 1000 }

t.test('store contract through Sentinel (primary + replica + three sentinels)', async (t) => { storeContract(t, redisStores(redis)) })

t.test('the primary dies mid-run: the gateway keeps serving, fails only during the failover, recovers without restart', async (t) => {
  const prefix = 'gw-sentinel:'
  const gw = await spawnGateway('redis://unused:6379', { redis: { ...redis, prefix } })
  t.teardown(async () => { await gw.stop() })
  const store = await openTestStore(redis, prefix)
  t.teardown(async () => { await store.close() })
  const admin = await bootstrappedAdmin(store)
  t.ok(admin, 'bootstrap ran through the sentinels')
  const pt = await store.privateTokens.create(admin!.id)
  // let the replica catch up before anything is killed: async replication loses the last writes otherwise
  await replicasCaughtUp(sentinel.primaryPort)

  const pid = gw.proc.pid
  const { results, round, untilRecovered, failures } = failoverRounds(gw.url)

  for (let i = 0; i < 5; i++) await round()
  t.ok(results.every((r) => r.ok), 'all good before the failover')

  const killedAt = Date.now()
  const killed = await sentinel.killPrimary()
  t.equal(killed, sentinel.primaryPort)

  // run on until 15 rounds in a row succeed (bounded: an explicit deadline from the kill)
  const rec = await untilRecovered(killedAt)
  const failed = failures()
  t.comment(`failover: ${describeRecovery(rec)}; ${describeFailures(failed)}`)
  t.equal(rec.streak, 15, `recovered: ${describeRecovery(rec)} (${describeFailures(failed)})`)
  t.ok(failed.every((f) => f.at >= killedAt), 'no failure before the primary died')
  const lastFailure = failed.length === 0 ? killedAt : Math.max(...failed.map((f) => f.at))
  t.ok(lastFailure - killedAt < 30_000, `errors only during the failover window (${lastFailure - killedAt} ms)`)
  t.ok(failed.every((f) => f.status === 503 || f.status === 401), 'failures are 503 store_unavailable, or 401 for a token whose write the dead primary took with it')
  t.ok(results.every((r) => r.live === 200), 'liveness stayed 200 throughout: Kubernetes would not restart the pod')
  t.equal(await sentinel.currentPrimary(), sentinel.replicaPort, 'the replica was promoted')
  t.equal(gw.proc.exitCode, null, 'the gateway never exited')
  t.equal(gw.proc.pid, pid)
  t.equal((await request(gw.url, '/readyz')).status, 200, 'ready again')

  // pub/sub resubscribed to the new primary: a revocation still reaches the gateway's cache
  t.equal((await request(gw.url, '/api/v1/users/profile/', { headers: { authorization: `Token ${pt}` } })).status, 200, 'private token cached')
  await store.privateTokens.revoke(admin!.id)
  const refused = await eventually(async () => (await request(gw.url, '/api/v1/users/profile/', { headers: { authorization: `Token ${pt}` } })).status === 401)
  t.ok(refused, 'revocation after the failover reached the gateway long before the 30 s cache TTL')
})

import t from 'tap'
import { startSentinel, replicasCaughtUp } from './fixtures/topologies.js'
import { openTestStore, storeContract } from './fixtures/store-contract.js'
import { spawnGateway } from './fixtures/gateway.js'
import { request } from './fixtures/http.js'
import { bearer } from './fixtures/creds.js'

const sentinel = await startSentinel()
t.teardown(async () => { await sentinel.stop() })
const redis = { mode: 'sentinel', name: sentinel.name, sentinels: sentinel.sentinels.map((s) => `${s.host}:${s.port}`), command_timeout: 1000, connect_timeout: 1000 }
const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

t.test('store contract through Sentinel (primary + replica + three sentinels)', async (t) => { storeContract(t, redis) })

t.test('the primary dies mid-run: the gateway keeps serving, fails only during the failover, recovers without restart', async (t) => {
  const prefix = 'gw-sentinel:'
  const gw = await spawnGateway('redis://unused:6379', { redis: { ...redis, prefix } })
  t.teardown(async () => { await gw.stop() })
  const store = await openTestStore(redis, prefix)
  t.teardown(async () => { await store.close() })
  let admin = await store.getUserByUsername('admin')
  for (let i = 0; i < 100 && admin === null; i++) { await sleep(50); admin = await store.getUserByUsername('admin') }
  t.ok(admin, 'bootstrap ran through the sentinels')
  const pt = await store.createPrivateToken(admin!.id)
  // let the replica catch up before anything is killed: async replication loses the last writes otherwise
  await replicasCaughtUp(sentinel.primaryPort)

  const pid = gw.proc.pid
  const results: Array<{ at: number, ok: boolean, status: number, live: number }> = []
  // one round: a fresh bearer token (a write: SET NX EX) used once (GETDEL) on the built-in API
  const round = async (): Promise<void> => {
    const at = Date.now()
    let status = 0
    try {
      const tok = await bearer(gw.url)
      status = (await request(gw.url, '/api/v1/users/profile/', { headers: { authorization: `Bearer ${tok}` } })).status
    } catch (err) {
      const m = /said (\d+)/.exec((err as Error).message)
      status = m === null ? -1 : Number(m[1])
    }
    const live = (await request(gw.url, '/healthz')).status
    results.push({ at, ok: status === 200, status, live })
  }

  for (let i = 0; i < 5; i++) await round()
  t.ok(results.every((r) => r.ok), 'all good before the failover')

  const killedAt = Date.now()
  const killed = await sentinel.killPrimary()
  t.equal(killed, sentinel.primaryPort)

  // run on until 15 rounds in a row succeed (bounded: 40 s)
  const deadline = Date.now() + 40_000
  let streak = 0
  while (streak < 15 && Date.now() < deadline) {
    await round()
    streak = results[results.length - 1].ok ? streak + 1 : 0
    await sleep(25)
  }
  const failures = results.filter((r) => !r.ok)
  t.equal(streak, 15, `recovered: 15 good rounds in a row (failures: ${failures.length}, statuses ${[...new Set(failures.map((f) => f.status))].join(',')})`)
  t.ok(failures.every((f) => f.at >= killedAt), 'no failure before the primary died')
  const lastFailure = failures.length === 0 ? killedAt : Math.max(...failures.map((f) => f.at))
  t.ok(lastFailure - killedAt < 30_000, `errors only during the failover window (${lastFailure - killedAt} ms)`)
  t.ok(failures.every((f) => f.status === 503 || f.status === 401), 'failures are 503 store_unavailable, or 401 for a token whose write the dead primary took with it')
  t.ok(results.every((r) => r.live === 200), 'liveness stayed 200 throughout: Kubernetes would not restart the pod')
  t.equal(await sentinel.currentPrimary(), sentinel.replicaPort, 'the replica was promoted')
  t.equal(gw.proc.exitCode, null, 'the gateway never exited')
  t.equal(gw.proc.pid, pid)
  t.equal((await request(gw.url, '/readyz')).status, 200, 'ready again')

  // pub/sub resubscribed to the new primary: a revocation still reaches the gateway's cache
  t.equal((await request(gw.url, '/api/v1/users/profile/', { headers: { authorization: `Token ${pt}` } })).status, 200, 'private token cached')
  await store.revokePrivateToken(admin!.id)
  let refused = false
  for (let i = 0; i < 50 && !refused; i++) {
    refused = (await request(gw.url, '/api/v1/users/profile/', { headers: { authorization: `Token ${pt}` } })).status === 401
    if (!refused) await sleep(20)
  }
  t.ok(refused, 'revocation after the failover reached the gateway within 1 s')
})

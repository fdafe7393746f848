/**
 * SIGTERM on a real `sidegate start`: readiness turns false first while
 * requests are still served (server.drain_delay), then the listener closes,
 * in-flight requests finish within server.shutdown_grace, and it exits 0.
 */
import t from 'tap'
import { startRedis } from '../fixtures/redis.js'
import { spawnGateway } from '../fixtures/gateway.js'
import { openTestStore } from '../fixtures/store-contract.js'
import { request, startEcho, type Res } from '../fixtures/http.js'
import { eventually, sleep, bootstrappedAdmin } from '../fixtures/wait.js'

const redis = await startRedis()
t.teardown(async () => { await redis.stop() })
const echo = await startEcho()
t.teardown(async () => { await echo.close() })

async function tokenFor (prefix: string): Promise<string> {
  const store = await openTestStore({ url: redis.url }, prefix)
  try {
    const admin = await bootstrappedAdmin(store)
    return await store.privateTokens.create(admin!.id)
  } finally { await store.close() }
}

t.test('in-flight requests complete, readiness false first, then new connections refused, exit 0 within the grace', async (t) => {
  const prefix = 'shutdown-1:'
  // phase 1 must fit in the drain delay on a loaded machine: 5 s; the in-flight requests outlast
  // it by 2 s, so they are still running when the listener closes, and end well within the grace
  const drain = 5
  const grace = 8
  const gw = await spawnGateway(
    redis.url, { upstream: { url: echo.url }, server: { drain_delay: drain, shutdown_grace: grace } }, prefix
  )
  t.teardown(async () => { await gw.stop('SIGKILL') })
  const auth = { authorization: `Token ${await tokenFor(prefix)}` }

  const seenBefore = echo.seen.length
  const inflight: Array<Promise<Res>> = Array.from({ length: 5 }, async () => await request(gw.url, `/slow/${drain * 1000 + 2000}`, { headers: auth }))
  await eventually(async () => echo.seen.length >= seenBefore + 5)
  t.equal(echo.seen.length, seenBefore + 5, 'five requests are at the upstream')

  const exited = new Promise<{ code: number | null, at: number }>((resolve) => gw.proc.once('exit', (code) => resolve({ code, at: Date.now() })))
  const termAt = Date.now()
  gw.proc.kill('SIGTERM')

  // phase 1: not ready, still serving (new connections accepted)
  const events: string[] = []
  let ready = await request(gw.url, '/readyz')
  await eventually(async () => (ready = await request(gw.url, '/readyz')).status !== 200, drain * 1000, 10)
  t.equal(ready.status, 503, `readiness false after SIGTERM (${Date.now() - termAt} ms)`)
  t.equal(ready.json.code, 'shutting_down')
  events.push('not-ready')
  const during = await request(gw.url, '/api/v1/x/', { headers: auth })
  t.equal(during.status, 200, `a new request is still served during the drain delay (${Date.now() - termAt} ms after SIGTERM)`)
  t.equal(during.headers.connection, 'close', 'and told not to keep the connection')
  t.equal((await request(gw.url, '/healthz')).status, 200, 'liveness stays 200 while draining')
  events.push('served')

  // phase 2: the listener closes; new connections are refused
  let refused = false
  while (!refused && Date.now() - termAt < drain * 1000 + 10_000) {
    try { await request(gw.url, '/healthz') } catch (err) { refused = (err as NodeJS.ErrnoException).code === 'ECONNREFUSED' }
    if (!refused) await sleep(50)
  }
  t.ok(refused, 'new connections refused once the listener closed')
  events.push('refused')
  t.same(events, ['not-ready', 'served', 'refused'], 'in that order')

  // phase 3: every in-flight request completes, then exit 0 within drain + grace
  const done = await Promise.all(inflight)
  t.same(done.map((r) => r.status), [200, 200, 200, 200, 200], 'all in-flight requests completed')
  const { code, at } = await exited
  t.equal(code, 0, 'exit 0')
  t.ok(at - termAt < (drain + grace) * 1000, `exited within drain delay + grace (${at - termAt} ms)`)
})

t.test('a request longer than the grace is cut and the process still exits 0', async (t) => {
  const prefix = 'shutdown-2:'
  const gw = await spawnGateway(
    redis.url, { upstream: { url: echo.url }, server: { drain_delay: 0, shutdown_grace: 1 } }, prefix
  )
  t.teardown(async () => { await gw.stop('SIGKILL') })
  const auth = { authorization: `Token ${await tokenFor(prefix)}` }
  const seenBefore = echo.seen.length
  const slow = request(gw.url, '/slow/30000', { headers: auth }).then(() => 'answered', () => 'cut')
  t.ok(await eventually(async () => echo.seen.length > seenBefore), 'the request is at the upstream')
  const termAt = Date.now()
  const code = await gw.stop('SIGTERM')
  t.equal(code, 0)
  t.ok(Date.now() - termAt < 10_000, 'no hang')
  t.equal(await slow, 'cut')
})

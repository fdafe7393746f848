/**
 * Faults, short run (test/fixtures/faults.ts): Redis killed and frozen under
 * load, upstream refused / slow / resetting, clients aborting, slowloris.
 * `npm run test:hard` runs the same with more load, longer and more often.
 */
import t from 'tap'
import { assertUpstreamFaults, clientAborts, redisOutage, slowloris, upstreamFaults } from '../fixtures/faults.js'

t.test('Redis killed, then frozen, under load', async (t) => {
  // a 1 s command timeout against 4 s outages: "at once" and "after the command timeout" and "held until
  // Redis is back" stay seconds apart, far more than a loaded machine adds to a request
  const r = await redisOutage(t, { workers: 6, outageMs: 4000, commandTimeout: 1000 })
  t.comment(JSON.stringify(r))
  t.equal(r.stuck, 0, 'no request left in flight')
  t.ok(r.killed.n > 20, `requests during the kill (${r.killed.n})`)
  t.equal(r.killed.otherThan503, 0, 'every protected request while Redis is down: 503 store_unavailable')
  t.ok(r.killed.max < r.commandTimeoutMs, `answered at once, no offline queue: none waited the ${r.commandTimeoutMs} ms command timeout (p50 ${r.killed.p50} ms, max ${r.killed.max} ms)`)
  t.ok(r.frozen.n > 5, `requests needing Redis while it hangs (${r.frozen.n})`)
  t.equal(r.frozen.otherThan503, 0, 'while frozen: 503 store_unavailable')
  t.ok(r.frozen.max < r.commandTimeoutMs + 700, `bounded by redis.command_timeout ${r.commandTimeoutMs} ms (p50 ${r.frozen.p50} ms, max ${r.frozen.max} ms)`)
  t.comment(`while frozen, ${r.frozenServedFromCache} requests were served from credentials cached before the freeze`)
  t.same(r.publicDuringOutage, [200, 200, 200, 200], 'public paths and /healthz answer throughout')
  t.same(r.readyzDuringOutage, [503, 503], '/readyz fails while killed and while frozen')
  t.ok(r.recoverAfterRestartMs !== null && r.recoverAfterRestartMs < 5000, `recovers by itself after a restart (${r.recoverAfterRestartMs} ms)`)
  t.ok(r.recoverAfterResumeMs !== null && r.recoverAfterResumeMs < 5000, `and after a freeze (${r.recoverAfterResumeMs} ms)`)
  t.ok(r.maxLatencyMs < r.commandTimeoutMs + 1500, `no request stuck: slowest ${r.maxLatencyMs} ms`)
})

t.test('upstream refused 502, slow 504, reset mid-response: broken for that client, the gateway serves on', async (t) => {
  assertUpstreamFaults(t, await upstreamFaults(t, { resets: 20 }), 5000)
})

t.test('clients aborting mid-request: sockets back to baseline', async (t) => {
  const r = await clientAborts(t, { n: 40 })
  t.comment(JSON.stringify(r))
  t.equal(r.upstreamConnectionsAfter, 0, 'no upstream connection left')
  t.ok(r.socketsAfter <= r.socketsBefore, `gateway sockets ${r.socketsBefore} before, ${r.socketsAfter} after`)
})

t.test('slowloris: trickling and idle sockets are cut off at server.headers_timeout; others are served meanwhile', async (t) => {
  const r = await slowloris(t, { sockets: 100 })
  t.comment(JSON.stringify(r))
  t.ok(r.closedAll, 'every slow socket was closed by the gateway')
  // checked every second: closed 1–2 s after the timeout, plus what a loaded machine adds; the default would be 10 s
  t.ok(r.closedAfterMs.max < r.headersTimeoutS * 1000 + 4000, `closed ${r.closedAfterMs.p50} ms (p50), ${r.closedAfterMs.max} ms (max) after connecting; headers_timeout ${r.headersTimeoutS} s`)
  t.ok(r.answered408 > 0, `trickling clients got 408 (${r.answered408})`)
  t.ok(r.idleClosedAfterMs !== null, 'sockets that never sent a byte were closed too')
  t.equal(r.legitDuring.ok, r.legitDuring.n, `a normal client was served throughout (${r.legitDuring.n} requests, max ${r.legitDuring.max} ms)`)
  t.equal(r.slowBody.status, 408, `a body trickled past request_timeout (${r.slowBody.requestTimeoutS} s): 408 after ${r.slowBody.ms} ms`)
  t.ok(r.socketsAfter <= r.socketsBefore, `gateway sockets back to ${r.socketsAfter} (from ${r.socketsBefore})`)
})

/** Faults, long run (test/fixtures/faults.ts): more load, longer outages, more resets, aborts and slow sockets. */
import t from 'tap'
import { assertUpstreamFaults, clientAborts, redisOutage, slowloris, upstreamFaults } from '../fixtures/faults.js'

for (let round = 1; round <= 2; round++) {
  t.test(`Redis killed, then frozen, under load (round ${round})`, async (t) => {
    const r = await redisOutage(t, { workers: 24, outageMs: 4000, commandTimeout: 500 })
    t.comment(JSON.stringify(r))
    t.equal(r.stuck, 0, 'no request left in flight')
    t.equal(r.killed.otherThan503, 0, `every protected request while Redis is down (${r.killed.n}): 503 store_unavailable`)
    t.ok(r.killed.max < 500, `answered at once, no offline queue (p50 ${r.killed.p50} ms, max ${r.killed.max} ms)`)
    t.ok(r.frozen.n > 50, `requests needing Redis while it hangs (${r.frozen.n})`)
    t.equal(r.frozen.otherThan503, 0, 'while frozen: 503 store_unavailable')
    t.ok(r.frozen.max < r.commandTimeoutMs + 1000, `bounded by redis.command_timeout ${r.commandTimeoutMs} ms (p50 ${r.frozen.p50} ms, max ${r.frozen.max} ms)`)
    t.same(r.publicDuringOutage, [200, 200, 200, 200], 'public paths and /healthz answer throughout')
    t.same(r.readyzDuringOutage, [503, 503], '/readyz fails while killed and while frozen')
    t.ok(r.recoverAfterRestartMs !== null && r.recoverAfterRestartMs < 5000, `recovers by itself after a restart (${r.recoverAfterRestartMs} ms)`)
    t.ok(r.recoverAfterResumeMs !== null && r.recoverAfterResumeMs < 5000, `and after a freeze (${r.recoverAfterResumeMs} ms)`)
    t.ok(r.maxLatencyMs < r.commandTimeoutMs + 2000, `no request stuck: slowest ${r.maxLatencyMs} ms of ${r.requests}`)
  })
}

t.test('upstream refused, slow, and 500 resets mid-response', async (t) => {
  assertUpstreamFaults(t, await upstreamFaults(t, { resets: 500 }), 3000)
})

t.test('2,000 clients aborting mid-request: sockets and memory back to baseline', async (t) => {
  const r = await clientAborts(t, { n: 2000 })
  t.comment(JSON.stringify(r))
  t.equal(r.upstreamConnectionsAfter, 0, 'no upstream connection left')
  t.ok(r.socketsAfter <= r.socketsBefore, `gateway sockets ${r.socketsBefore} before, ${r.socketsAfter} after`)
  t.ok(r.rssAfterMB - r.rssBeforeMB < 48, `RSS ${r.rssBeforeMB.toFixed(1)} → ${r.rssAfterMB.toFixed(1)} MB`)
})

t.test('slowloris with 1,000 sockets', async (t) => {
  const r = await slowloris(t, { sockets: 1000, headersTimeout: 2 })
  t.comment(JSON.stringify(r))
  t.ok(r.closedAll, 'every slow socket was closed by the gateway')
  t.ok(r.closedAfterMs.max < r.headersTimeoutS * 1000 + 2000, `closed by ${r.closedAfterMs.max} ms (p50 ${r.closedAfterMs.p50} ms); headers_timeout ${r.headersTimeoutS} s`)
  t.equal(r.legitDuring.ok, r.legitDuring.n, `a normal client was served throughout (${r.legitDuring.n} requests, p50 ${r.legitDuring.p50} ms, max ${r.legitDuring.max} ms)`)
  t.equal(r.slowBody.status, 408, `slow body: 408 after ${r.slowBody.ms} ms`)
  t.ok(r.socketsAfter <= r.socketsBefore, `gateway sockets back to ${r.socketsAfter}`)
})

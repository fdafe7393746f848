/** Fuzz through a live gateway (test/fixtures/fuzz.ts), long run: 10,000 requests per seed, two seeds. */
import t from 'tap'
import { fuzzGateway } from '../fixtures/fuzz.js'

const count = Number(process.env.SIDEGATE_FUZZ_COUNT ?? 10_000)
const base = Number(process.env.SIDEGATE_FUZZ_SEED ?? Date.now() % 1_000_000)

for (const seed of [base, base + 1]) {
  t.test(`${count} hostile requests (seed ${seed}): no 5xx, every answer JSON with a known code, RSS bounded`, async (t) => {
    const r = await fuzzGateway(t, count, seed)
    t.comment(`fuzz seed ${seed}: ${JSON.stringify(r)}`)
    t.equal(r.requests, count)
    t.equal(r.fiveXx, 0, 'no 5xx')
    t.equal(r.noAnswer, 0, 'every request answered')
    t.equal(r.notJson, 0, 'every answer JSON')
    t.equal(r.unknownCode, 0, 'every error with a known code')
    t.same(r.examples, [], 'no bad example')
    t.ok(r.rssMaxMB < 256, `RSS bounded: ${r.rssStartMB.toFixed(1)} MB after warm-up, ${r.rssMaxMB.toFixed(1)} MB at most`)
    t.ok(r.rssEndMB - r.rssMidMB < 32, `no growth in the second half: ${r.rssMidMB.toFixed(1)} → ${r.rssEndMB.toFixed(1)} MB`)
  })
}

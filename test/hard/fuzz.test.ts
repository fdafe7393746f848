/**
 * Fuzz through a live gateway (test/fixtures/fuzz.ts), long run: 40,000 requests per
 * seed, two seeds (FUZZ_SEED and the next one, to replay). The memory check is the
 * short run's (growth of live memory after a full GC over the second half), finer:
 * over 18,000+ requests a half, 4 MB is under 250 bytes a request.
 */
import t from 'tap'
import { assertFuzz, fuzzGateway, fuzzSeed } from '../fixtures/fuzz.js'

const count = Number(process.env.SIDEGATE_FUZZ_COUNT ?? 40_000)
const base = fuzzSeed()

for (const seed of [base, base + 1]) {
  t.test(`${count} hostile requests (seed ${seed}): no 5xx, every answer JSON with a known code, mutated credentials 401, memory bounded`, async (t) => {
    assertFuzz(t, await fuzzGateway(t, count, seed), count, { maxMB: 384, growthMB: 4 })
  })
}

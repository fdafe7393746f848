/**
 * Fuzz through a live gateway (test/fixtures/fuzz.ts), long run: 40,000 requests per
 * seed, two seeds; long enough for the gateway's memory to level off, so that a leak shows.
 */
import t from 'tap'
import { assertFuzz, fuzzGateway } from '../fixtures/fuzz.js'

const count = Number(process.env.SIDEGATE_FUZZ_COUNT ?? 40_000)
const base = Number(process.env.SIDEGATE_FUZZ_SEED ?? Date.now() % 1_000_000)

for (const seed of [base, base + 1]) {
  t.test(`${count} hostile requests (seed ${seed}): no 5xx, every answer JSON with a known code, RSS bounded`, async (t) => {
    assertFuzz(t, await fuzzGateway(t, count, seed), count, seed, { maxMB: 384, growthMB: 32 })
  })
}

/** Fuzz through a live gateway (test/fixtures/fuzz.ts), long run: 10,000 requests per seed, two seeds. */
import t from 'tap'
import { assertFuzz, fuzzGateway } from '../fixtures/fuzz.js'

const count = Number(process.env.SIDEGATE_FUZZ_COUNT ?? 10_000)
const base = Number(process.env.SIDEGATE_FUZZ_SEED ?? Date.now() % 1_000_000)

for (const seed of [base, base + 1]) {
  t.test(`${count} hostile requests (seed ${seed}): no 5xx, every answer JSON with a known code, RSS bounded`, async (t) => {
    assertFuzz(t, await fuzzGateway(t, count, seed), count, seed)
  })
}

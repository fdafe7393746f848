/**
 * Fuzz through a live gateway (test/fixtures/fuzz.ts), short run; `npm run test:hard` sends 10,000+.
 * The seed is printed; FUZZ_SEED=<seed> npx tap test/process/fuzz.test.ts replays a run.
 */
import t from 'tap'
import { assertFuzz, describeGrowth, fuzzGateway, fuzzSeed, FUZZ_LIMITS, growthMB, leakArgs } from '../fixtures/fuzz.js'

const count = Number(process.env.SIDEGATE_FUZZ_COUNT ?? 1500)
const seed = fuzzSeed()

t.test(`${count} hostile requests through a live gateway (seed ${seed}): no 5xx, every answer JSON with a known code, mutated credentials 401, memory bounded`, async (t) => {
  assertFuzz(t, await fuzzGateway(t, count, seed), count)
})

t.test('the memory check catches a leak: the same gateway keeping 16 KB per connection fails it', async (t) => {
  const r = await fuzzGateway(t, 600, seed, { nodeArgs: leakArgs(16 * 1024) })
  t.ok(growthMB(r) >= FUZZ_LIMITS.growthMB, `grown past the ${FUZZ_LIMITS.growthMB} MB limit: ${describeGrowth(r)}`)
})

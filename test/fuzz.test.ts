/** Fuzz through a live gateway (test/fixtures/fuzz.ts), short run; `npm run test:hard` sends 10,000+. */
import t from 'tap'
import { assertFuzz, fuzzGateway } from './fixtures/fuzz.js'

const count = Number(process.env.SIDEGATE_FUZZ_COUNT ?? 1500)
const seed = Number(process.env.SIDEGATE_FUZZ_SEED ?? Date.now() % 1_000_000)

t.test(`${count} hostile requests through a live gateway: no 5xx, every answer JSON with a known code, RSS bounded`, async (t) => {
  assertFuzz(t, await fuzzGateway(t, count, seed), count, seed)
})

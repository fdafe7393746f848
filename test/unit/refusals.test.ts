/** log.refusals_per_second (src/observability/refusals.ts) on a stepped clock. */
import t from 'tap'
import { RefusalLines } from '../../src/observability/refusals.js'
import { sleep } from '../fixtures/wait.js'

t.test('at most N refusal lines a second; the rest counted and reported once; other answers always written', async (t) => {
  const clock = { now: 10_000_500 }
  const reports: number[] = []
  const r = new RefusalLines(3, (n) => reports.push(n), () => clock.now)
  t.same([401, 403, 429, 401, 401].map((s) => r.admit(s)), [true, true, true, false, false], 'three written, then left out')
  t.ok(r.admit(200) && r.admit(302) && r.admit(500), 'not a refusal: always written')
  clock.now += 499
  t.equal(r.admit(401), false, 'the same second')
  clock.now += 1
  t.equal(r.admit(401), true, 'a new second: written again')
  t.same(reports, [], 'reported a second after the first left out, not at once')
  await sleep(1100)
  t.same(reports, [3], 'how many were left out')
  await sleep(1100)
  t.same(reports, [3], 'nothing more left out: no further report')
})

t.test('0: every refusal written', async (t) => {
  const r = new RefusalLines(0, () => t.fail('nothing is left out'))
  t.ok(Array.from({ length: 1000 }, () => r.admit(401)).every(Boolean))
})

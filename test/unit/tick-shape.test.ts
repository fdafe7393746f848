/**
 * src/app/tick-shape.ts keeps one process.nextTick queue entry alive, so that
 * V8 keeps the maps of nextTick's entries through major GCs (the instruction
 * budget, bench/budget.json, measures what that saves). What this checks: the
 * object kept is such an entry (the callback and args of a nextTick, keyed by
 * the async id symbols), which a Node whose executionAsyncResource returned
 * something else would silently stop keeping.
 */
import t from 'tap'
import { keepTickShape, keptTick } from '../../src/app/tick-shape.js'

t.test('the object kept is a nextTick queue entry', async (t) => {
  t.equal(keptTick(), null)
  keepTickShape()
  await new Promise((resolve) => process.nextTick(resolve))
  const kept = keptTick() as Record<string | symbol, unknown> | null
  t.not(kept, null)
  t.same(Object.getOwnPropertySymbols(kept).map(String), ['Symbol(async_id_symbol)', 'Symbol(trigger_async_id_symbol)'])
  t.same(Object.keys(kept!), ['callback', 'args'])
  t.type(kept!.callback, 'function')
  keepTickShape()
  await new Promise((resolve) => process.nextTick(resolve))
  t.equal(keptTick(), kept, 'once per process: a second call keeps the same one')
})

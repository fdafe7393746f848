/**
 * src/app/shapes.ts: the V8 shapes a serving process keeps on their fast path
 * (the instruction budget, bench/budget.json, measures what that saves).
 * - The nextTick entry kept is one (the callback and args of a nextTick, keyed
 *   by the async id symbols): a Node whose executionAsyncResource returned
 *   something else would silently stop keeping it.
 * - String.prototype, made a dictionary by loading ioredis (a class extending
 *   String), has fast properties again: asked of V8 itself, in a child process
 *   with --allow-natives-syntax.
 */
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { keepFastShapes, keptTick } from '../../src/app/shapes.js'

t.test('the nextTick entry kept is a nextTick queue entry', async (t) => {
  t.equal(keptTick(), null)
  keepFastShapes()
  await new Promise((resolve) => process.nextTick(resolve))
  const kept = keptTick() as Record<string | symbol, unknown> | null
  t.not(kept, null)
  t.same(Object.getOwnPropertySymbols(kept).map(String), ['Symbol(async_id_symbol)', 'Symbol(trigger_async_id_symbol)'])
  t.same(Object.keys(kept!), ['callback', 'args'])
  t.type(kept!.callback, 'function')
  keepFastShapes()
  await new Promise((resolve) => process.nextTick(resolve))
  t.equal(keptTick(), kept, 'once per process: a second call keeps the same one')
})

t.test('String.prototype: a dictionary once ioredis is loaded, fast again after fastStringPrototype', async (t) => {
  const shapes = new URL('../../src/app/shapes.ts', import.meta.url).href
  const script = `
    const fast = () => %HasFastProperties(String.prototype)
    const before = fast()
    await import('ioredis')
    const loaded = fast()
    const { fastStringPrototype } = await import(${JSON.stringify(shapes)})
    fastStringPrototype()
    console.log(JSON.stringify({ before, loaded, after: fast() }))`
  const out = execFileSync(process.execPath, [...process.execArgv, '--allow-natives-syntax', '--input-type=module', '-e', script], { encoding: 'utf8' })
  t.same(JSON.parse(out.trim().split('\n').pop()!), { before: true, loaded: false, after: true })
})

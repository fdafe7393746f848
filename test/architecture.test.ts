/**
 * The shape of src/: no import circles (madge over the TypeScript sources,
 * type-only imports included), so every module can be read and tested from
 * the bottom up.
 */
import t from 'tap'
import { join } from 'node:path'
import madge from 'madge'
import { ROOT } from './fixtures/gateway.js'

t.test('no circular imports in src/', async (t) => {
  const graph = await madge(join(ROOT, 'src'), { fileExtensions: ['ts'], tsConfig: join(ROOT, 'tsconfig.json') })
  const modules = Object.keys(graph.obj())
  t.ok(modules.length > 30, `madge read the sources (${modules.length} modules)`)
  t.ok(Object.values(graph.obj()).some((deps) => deps.length > 5), 'and resolved their imports (.js specifiers to .ts files)')
  t.same(graph.circular(), [], 'no circles')
})

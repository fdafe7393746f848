/**
 * The shape of src/: no import circles (madge over the TypeScript sources,
 * type-only imports included), so every module can be read and tested from
 * the bottom up; src/http/ is generic HTTP (it imports nothing else of
 * sidegate's); and every error a client can get comes from the one catalogue
 * in src/errors.ts: a GatewayError is constructed nowhere else (found in the
 * syntax tree, so comments and strings do not count).
 */
import t from 'tap'
import { readFileSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import madge from 'madge'
import ts from 'typescript'
import { ROOT } from '../fixtures/gateway.js'

const SRC = join(ROOT, 'src')
const sources = (dir: string): string[] => readdirSync(dir, { withFileTypes: true })
  .flatMap((d) => d.isDirectory() ? sources(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : [])

t.test('no circular imports in src/', async (t) => {
  const graph = await madge(SRC, { fileExtensions: ['ts'], tsConfig: join(ROOT, 'tsconfig.json') })
  const modules = Object.keys(graph.obj())
  t.ok(modules.length > 30, `madge read the sources (${modules.length} modules)`)
  t.ok(Object.values(graph.obj()).some((deps) => deps.length > 5), 'and resolved their imports (.js specifiers to .ts files)')
  t.same(graph.circular(), [], 'no circles')
  const http = Object.entries(graph.obj()).filter(([m]) => m.startsWith('http/'))
  t.ok(http.length >= 5, `${http.length} modules in src/http/`)
  for (const [m, deps] of http) t.same(deps.filter((d) => !d.startsWith('http/')), [], `${m} imports nothing of sidegate's outside src/http/`)
})

t.test('GatewayErrors are made only in src/errors.ts (the E factories over the catalogue)', async (t) => {
  const found: string[] = []
  let files = 0
  for (const file of sources(SRC)) {
    files++
    const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true)
    const visit = (n: ts.Node): void => {
      if (ts.isNewExpression(n) && n.expression.getText(sf) === 'GatewayError') {
        found.push(`${relative(SRC, file)}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1}`)
      }
      ts.forEachChild(n, visit)
    }
    visit(sf)
  }
  t.ok(files > 30, `${files} source files read`)
  const outside = found.filter((f) => !f.startsWith('errors.ts:'))
  t.same(outside, [], 'no `new GatewayError(` outside src/errors.ts')
  t.ok(found.length >= 30, `${found.length} in src/errors.ts: the check sees them`)
})

t.test('src/ is folders by part; only what every part uses lies at its top level', async (t) => {
  const top = readdirSync(SRC, { withFileTypes: true })
  t.same(top.filter((d) => d.isFile()).map((d) => d.name).sort(), ['body.ts', 'crypto.ts', 'errors.ts', 'limits.ts', 'respond.ts', 'text.ts'], 'the shared foundation')
  t.same(top.filter((d) => d.isDirectory()).map((d) => d.name).sort(), ['access', 'admin', 'app', 'auth', 'cli', 'config', 'forward', 'http', 'observability', 'pipeline', 'routes', 'store'], 'the folders docs/architecture.md describes')
})

t.test('small modules: no source file over 430 lines', async (t) => {
  const sizes = sources(SRC).map((f) => [relative(SRC, f), readFileSync(f, 'utf8').split('\n').length] as const)
  t.ok(sizes.length > 80, `${sizes.length} files measured`)
  for (const [f, n] of sizes) if (n > 430) t.fail(`${f}: ${n} lines`)
  t.ok(sizes.some(([, n]) => n > 300), 'the check sees long files')
})

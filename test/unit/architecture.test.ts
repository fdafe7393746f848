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

t.test('secrets are compared in one place, in constant time: src/crypto.ts (equalBytes, safeEqual)', async (t) => {
  // a name that says MAC, hash, digest, secret, CSRF, signature or recovery code (eslint.config.js has the same list)
  const SECRET = /(?:[mM]ac|MAC|[hH]ash|[dD]igest|[sS]ecret|[cC]srf|CSRF|[sS]ignature|[rR]ecovery[A-Za-z]*)$/
  const nameOf = (e: ts.Expression): string | undefined => ts.isIdentifier(e)
    ? e.text
    : ts.isPropertyAccessExpression(e)
      ? e.name.text
      : undefined
  const harmless = (e: ts.Expression): boolean => ts.isLiteralExpression(e) ||
    ts.isNoSubstitutionTemplateLiteral(e) ||
    ts.isPrefixUnaryExpression(e) ||
    ts.isTypeOfExpression(e) ||
    e.kind === ts.SyntaxKind.NullKeyword ||
      e.kind === ts.SyntaxKind.TrueKeyword ||
      e.kind === ts.SyntaxKind.FalseKeyword ||
    (ts.isIdentifier(e) && e.text === 'undefined') || (ts.isPropertyAccessExpression(e) && e.name.text === 'length')
  const EQUALITY = new Set([
    ts.SyntaxKind.EqualsEqualsEqualsToken,
    ts.SyntaxKind.ExclamationEqualsEqualsToken,
    ts.SyntaxKind.EqualsEqualsToken,
    ts.SyntaxKind.ExclamationEqualsToken
  ])
  const bad: string[] = []
  const helpers = new Map<string, number>()
  for (const file of sources(SRC)) {
    const rel = relative(SRC, file)
    const text = readFileSync(file, 'utf8')
    const lines = text.split('\n')
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true)
    const at = (n: ts.Node): string => `${rel}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1}: ${n.getText(sf).slice(0, 80)}`
    const excused = (n: ts.Node): boolean => /not a secret:/.test(lines[sf.getLineAndCharacterOfPosition(n.getStart(sf)).line - 1] ?? '')
    const visit = (n: ts.Node): void => {
      if (ts.isIdentifier(n) && n.text === 'timingSafeEqual' && rel !== 'crypto.ts') bad.push(`${at(n)} (timingSafeEqual outside src/crypto.ts)`)
      if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression)) {
        const m = n.expression.name.text
        if (m === 'equals' || (m === 'compare' && n.expression.expression.getText(sf) === 'Buffer')) bad.push(`${at(n)} (.${m}: not constant-time)`)
      }
      if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && (n.expression.text === 'equalBytes' || n.expression.text === 'safeEqual')) helpers.set(rel, (helpers.get(rel) ?? 0) + 1)
      if (ts.isBinaryExpression(n) && EQUALITY.has(n.operatorToken.kind)) {
        for (const [side, other] of [[n.left, n.right], [n.right, n.left]]) {
          const name = nameOf(side)
          if (name !== undefined && SECRET.test(name) && !harmless(other) && !excused(n)) bad.push(`${at(n)} (=== on a secret)`)
        }
      }
      ts.forEachChild(n, visit)
    }
    visit(sf)
  }
  t.same(bad, [], 'no secret compared any other way')
  // the check sees the comparisons it guards: the signature's MAC, body digests, CSRF tokens, password hashes
  for (const f of ['auth/signature.ts', 'auth/digest.ts', 'auth/session.ts', 'store/policy/passwords.ts', 'routes/login.ts', 'observability/metrics.ts']) t.ok((helpers.get(f) ?? 0) > 0, `${f} compares through the helper`)
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

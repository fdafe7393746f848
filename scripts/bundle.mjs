#!/usr/bin/env node
/**
 * `npm run build`'s second step: dist/ (tsc's output) bundled into
 * dist/bundle/, which bin/sidegate.js runs. One file per lazily loaded part
 * (esbuild's splitting keeps every `import()` a chunk of its own: the Redis
 * store, WebAuthn, OpenTelemetry, the commands --help does not need), so a
 * start reads a few files instead of some 700 modules: about 14 MB less
 * resident memory (docs/performance.md, "Memory"). better-sqlite3 stays
 * outside (a native addon). dist/bundle/meta.json says which modules each
 * chunk holds (the tests that check what a start loads read it).
 */
import { build } from 'esbuild'
import { rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const out = join(ROOT, 'dist', 'bundle')
rmSync(out, { recursive: true, force: true })
const r = await build({
  absWorkingDir: ROOT,
  entryPoints: ['dist/cli/index.js'],
  outdir: out,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: ['better-sqlite3'],
  // CommonJS dependencies call require(): an ES module has none of its own
  banner: { js: 'import { createRequire as __sidegateRequire } from \'node:module\'; const require = __sidegateRequire(import.meta.url);' },
  // identifiers keep their names (errors, logs and stack traces read as the sources do; some
  // dependencies read constructor names): whitespace and syntax only
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  metafile: true,
  logLevel: 'warning'
})
writeFileSync(join(out, 'meta.json'), JSON.stringify(r.metafile))

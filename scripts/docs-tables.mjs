#!/usr/bin/env node
/**
 * `npm run docs:tables`: writes the tables generated from the code's own
 * catalogues into docs/: the error codes of src/errors.ts (docs/errors.md,
 * between `<!-- errors:begin -->` and `<!-- errors:end -->`), the audit events
 * of src/observability/audit.ts (docs/observability.md, `audit`) and every configuration key
 * of src/config/schema.ts (docs/configuration.md, `config`), and the request
 * chains of src/pipeline/chains.ts (docs/architecture.md, `chains`).
 * test/unit/docs.test.ts and test/unit/chains.test.ts fail while any differs. Reads the built dist/.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const { errorTable } = await import(join(ROOT, 'dist', 'routes', 'openapi.js'))
const { auditTable } = await import(join(ROOT, 'dist', 'observability', 'audit.js'))
const { configTable } = await import(join(ROOT, 'dist', 'config', 'reference.js'))
const { chainTable } = await import(join(ROOT, 'dist', 'pipeline', 'chains.js'))

const TABLES = [
  ['docs/errors.md', 'errors', errorTable()],
  ['docs/observability.md', 'audit', auditTable()],
  ['docs/configuration.md', 'config', configTable()],
  ['docs/architecture.md', 'chains', chainTable()]
]
let changed = 0
for (const [rel, name, table] of TABLES) {
  const file = join(ROOT, rel)
  const text = readFileSync(file, 'utf8')
  const BEGIN = `<!-- ${name}:begin -->`
  const END = `<!-- ${name}:end -->`
  const a = text.indexOf(BEGIN)
  const b = text.indexOf(END)
  if (a === -1 || b < a) throw new Error(`${rel}: no ${BEGIN} … ${END} section`)
  const next = `${text.slice(0, a + BEGIN.length)}\n${table}\n${text.slice(b)}`
  if (next !== text) { writeFileSync(file, next); changed++; console.log(`${rel}: ${name} table written`) }
}
if (changed === 0) console.log('docs: the generated tables are up to date')

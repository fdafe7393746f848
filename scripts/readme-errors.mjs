#!/usr/bin/env node
/**
 * `npm run docs:errors`: writes the tables of the two catalogues into
 * README.md: the error codes of src/errors.ts between `<!-- errors:begin -->`
 * and `<!-- errors:end -->`, the audit events of src/audit.ts between
 * `<!-- audit:begin -->` and `<!-- audit:end -->` (test/docs.test.ts fails
 * while either differs). Reads the built dist/.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const { errorTable } = await import(join(ROOT, 'dist', 'routes', 'openapi.js'))
const { auditTable } = await import(join(ROOT, 'dist', 'audit.js'))
const file = join(ROOT, 'README.md')
const readme = readFileSync(file, 'utf8')
let next = readme
for (const [name, table] of [['errors', errorTable()], ['audit', auditTable()]]) {
  const BEGIN = `<!-- ${name}:begin -->`
  const END = `<!-- ${name}:end -->`
  const a = next.indexOf(BEGIN)
  const b = next.indexOf(END)
  if (a === -1 || b < a) throw new Error(`README.md: no ${BEGIN} … ${END} section`)
  next = `${next.slice(0, a + BEGIN.length)}\n${table}\n${next.slice(b)}`
}
if (next === readme) console.log('README.md: the error and audit tables are up to date')
else { writeFileSync(file, next); console.log('README.md: error and audit tables written') }

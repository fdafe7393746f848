#!/usr/bin/env node
/**
 * `npm run docs:errors`: writes the error table of src/errors.ts's catalogue
 * into README.md, between `<!-- errors:begin -->` and `<!-- errors:end -->`
 * (test/docs.test.ts fails while the two differ). Reads the built dist/.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const { errorTable } = await import(join(ROOT, 'dist', 'routes', 'openapi.js'))
const file = join(ROOT, 'README.md')
const readme = readFileSync(file, 'utf8')
const BEGIN = '<!-- errors:begin -->'
const END = '<!-- errors:end -->'
const a = readme.indexOf(BEGIN)
const b = readme.indexOf(END)
if (a === -1 || b < a) throw new Error(`README.md: no ${BEGIN} … ${END} section`)
const next = `${readme.slice(0, a + BEGIN.length)}\n${errorTable()}\n${readme.slice(b)}`
if (next === readme) console.log('README.md: the error table is up to date')
else { writeFileSync(file, next); console.log('README.md: error table written') }

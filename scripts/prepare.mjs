#!/usr/bin/env node
/**
 * npm's `prepare` (after `npm ci` / `npm install` in a clone, and before `npm pack`):
 * builds dist/ with the TypeScript compiler, a dev dependency, then bundles it
 * (scripts/bundle.mjs, esbuild: also a dev dependency) into dist/bundle/, which bin/ runs.
 *
 * - TypeScript installed (`npm ci`, `npm install`): `tsc -p tsconfig.json`, always, so a
 *   packed tarball never carries a stale dist/.
 * - TypeScript absent (`npm ci --omit=dev`): nothing is compiled and the install succeeds;
 *   the dist/ already there is used as it is (a line says when there is none, since
 *   `npm start` then cannot run). `npm pack` / `npm publish` without it fail: a tarball
 *   must carry a dist/ built from these sources.
 *
 * An installed tarball never runs this (npm prepares only a clone or a directory, and
 * scripts/ is not in the package): it ships dist/ built.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')

let tsc
try { tsc = join(dirname(createRequire(join(ROOT, 'package.json')).resolve('typescript/package.json')), 'bin', 'tsc') } catch {}

if (tsc === undefined) {
  const packing = ['pack', 'publish'].includes(process.env.npm_command ?? '')
  if (packing) {
    console.error('sidegate: npm pack needs the TypeScript compiler to build dist/ (a dev dependency): run `npm ci` first')
    process.exit(1)
  }
  const built = existsSync(join(ROOT, 'dist', 'bundle', 'index.js'))
  console.error(built
    ? 'sidegate: TypeScript is not installed (--omit=dev): dist/ is used as built'
    : 'sidegate: TypeScript is not installed (--omit=dev) and there is no dist/: `npm start` cannot run; ' +
      'build it with `npm ci && npm run build`, or install the packed package (npm pack) instead')
  process.exit(0)
}

const r = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.json')], { cwd: ROOT, stdio: 'inherit' })
if (r.status !== 0) process.exit(r.status ?? 1)
const b = spawnSync(process.execPath, [join(ROOT, 'scripts', 'bundle.mjs')], { cwd: ROOT, stdio: 'inherit' })
process.exit(b.status ?? 1)

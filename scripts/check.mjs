#!/usr/bin/env node
/**
 * npm test's first step: the linter beside the type checks (the build that
 * spawned gateways run, then the tests' own), on two cores at once; each
 * one's output is printed whole when it ends. Exit 1 if either fails.
 */
import { spawn } from 'node:child_process'

const bin = (name) => new URL(`../node_modules/.bin/${name}`, import.meta.url).pathname

function run (steps) {
  return new Promise((resolve) => {
    const [[cmd, ...args], ...rest] = steps
    const p = spawn(bin(cmd), args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    p.stdout.on('data', (c) => { out += c })
    p.stderr.on('data', (c) => { out += c })
    p.on('close', (code) => {
      process.stdout.write(out)
      if (code !== 0) { console.error(`${cmd} ${args.join(' ')}: exit ${code}`); resolve(false) } else if (rest.length > 0) resolve(run(rest))
      else resolve(true)
    })
  })
}

const ok = await Promise.all([
  run([['eslint', '.']]),
  run([['tsc', '-p', 'tsconfig.json'], ['tsc', '-p', 'tsconfig.test.json']])
])
process.exit(ok.every(Boolean) ? 0 : 1)

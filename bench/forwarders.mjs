#!/usr/bin/env node
/**
 * The forwarder behind the same gateway, four ways, in one run: the undici
 * forwarder of src/forward/proxy.ts (dist/ as built) and the variants in
 * bench/forwarders/ (node:http, http-proxy, http-proxy-3), each compiled in place
 * of dist/forward/proxy.js in a copy of the build under bench/.variants/. One sidegate
 * per variant, all started at once; the rounds are interleaved with the order
 * rotated every round, so drift on a noisy machine hits every variant alike.
 *
 *   npm run bench:forwarders
 *   npm run bench:forwarders -- --rounds 8 --duration 5 --scenario public
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import os from 'node:os'
import ts from 'typescript'
import { BENCH, ROOT, parseFlags, runJson } from './lib.mjs'
import { API_PATH, PUBLIC_PATH, openStore, seedCredentials, startSidegate, startStack } from './stack.mjs'

const f = parseFlags(process.argv.slice(2), { scenario: 'private_token', rounds: 6, duration: 4, warmup: 1, connections: 50, only: '' })
const kinds = { public: ['plain', PUBLIC_PATH], private_token: ['token', API_PATH] }
const [kind, path] = kinds[f.scenario] ?? (() => { throw new Error(`scenario: one of ${Object.keys(kinds).join(', ')}`) })()

const VARIANTS = [
  { name: 'undici Pool.dispatch (src/forward/proxy.ts)', id: 'undici', file: null },
  { name: 'lean node:http', id: 'node-http', file: 'node-http.ts' },
  { name: 'http-proxy', id: 'http-proxy', file: 'http-proxy.ts', helpers: ['http-proxy-family.ts'] },
  { name: 'http-proxy-3', id: 'http-proxy-3', file: 'http-proxy-3.ts', helpers: ['http-proxy-family.ts'] }
].filter((v) => f.only === '' || f.only.split(',').includes(v.id))

/**
 * a copy of bin/, dist/ and static/ with the variant compiled over
 * dist/forward/proxy.js; node_modules resolve from the checkout
 */
function buildVariant (v) {
  if (v.file === null) return ROOT
  const dir = join(BENCH, '.variants', v.id)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  for (const p of ['bin', 'dist', 'static', 'package.json']) cpSync(join(ROOT, p), join(dir, p), { recursive: true })
  // the variant becomes dist/forward/proxy.js; a helper it imports (http-proxy-family.ts) goes beside it
  for (const file of [v.file, ...v.helpers ?? []]) {
    const src = readFileSync(join(BENCH, 'forwarders', file), 'utf8')
    const out = ts.transpileModule(
      src,
      {
        compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, esModuleInterop: true },
        fileName: file
      }
    )
    writeFileSync(join(dir, 'dist', 'forward', file === v.file ? 'proxy.js' : file.replace(/\.ts$/, '.js')), out.outputText)
  }
  rmSync(join(dir, 'dist', 'forward', 'proxy.js.map'), { force: true })
  return dir
}

const cpu = (pid) => { const s = readFileSync(`/proc/${pid}/stat`, 'utf8'); const x = s.slice(s.lastIndexOf(')') + 2).split(' '); return (Number(x[11]) + Number(x[12])) / 100 }
const med = (xs) => {
  const s = [...xs].sort((a, b) => a - b); return s.length % 2
    ? s[(s.length - 1) / 2]
    : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

const stack = await startStack({ logLevel: 'info' })
const store = await openStore(stack.redis.url)
const gws = []
let failed = false
try {
  const creds = await seedCredentials(store, 10)
  for (const v of VARIANTS) {
    gws.push({ v, g: await startSidegate({ dir: stack.dir, redisUrl: stack.redis.url, upstreamUrl: stack.upstreamUrl, logLevel: 'info', root: buildVariant(v), name: v.id }), runs: [] })
  }
  const load0 = os.loadavg()[0]
  for (let i = 0; i < f.rounds; i++) {
    const order = gws.map((_, j) => gws[(i + j) % gws.length])
    if (i % 2 === 1) order.reverse()
    for (const x of order) {
      const c0 = cpu(x.g.pid)
      const r = await runJson(join(BENCH, 'load.mjs'), { url: x.g.url + path, path, connections: f.connections, duration: f.duration, warmup: f.warmup, kind, creds: { tokens: creds.tokens, sessions: creds.sessions, keys: creds.keys } })
      const us = (cpu(x.g.pid) - c0) * 1e6 / (r.requests + r.warmup.requests)
      const bad = r.errors + r.non2xx
      if (bad > 0) failed = true
      x.runs.push({ rps: r.rps, p99: r.p99, us, bad })
      process.stderr.write(`  round ${i + 1} ${x.v.id.padEnd(13)} ${r.rps.toFixed(0).padStart(6)} req/s  ${us.toFixed(0).padStart(4)} µs CPU/req  p99 ${r.p99.toFixed(1)} ms${bad ? `  ${bad} ERRORS/non-2xx` : ''}\n`)
    }
  }
  const load1 = os.loadavg()[0]
  const rows = gws.map((x) => ({
    forwarder: x.v.name,
    rps: med(x.runs.map((r) => r.rps)),
    rpsMin: Math.min(...x.runs.map((r) => r.rps)),
    rpsMax: Math.max(...x.runs.map((r) => r.rps)),
    p99: med(x.runs.map((r) => r.p99)),
    us: med(x.runs.map((r) => r.us)),
    bad: x.runs.reduce((a, r) => a + r.bad, 0),
    runs: x.runs
  }))
  const lean = rows.find((r) => r.forwarder.startsWith('lean'))
  console.log(`\nforwarders, scenario ${f.scenario}, ${f.rounds} interleaved rounds × ${f.duration} s, ${f.connections} connections; medians; load average ${load0.toFixed(1)} → ${load1.toFixed(1)}\n`)
  console.log('| forwarder | req/s (median) | min–max | p99 ms | CPU µs/req | vs node:http | errors + non-2xx |')
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const r of rows) console.log(`| ${r.forwarder} | ${r.rps.toFixed(0)} | ${r.rpsMin.toFixed(0)}–${r.rpsMax.toFixed(0)} | ${r.p99.toFixed(2)} | ${r.us.toFixed(0)} | ${lean ? (r.rps / lean.rps).toFixed(2) + '×' : ''} | ${r.bad} |`)
  mkdirSync(join(BENCH, 'results'), { recursive: true })
  writeFileSync(join(BENCH, 'results', 'forwarders-latest.json'), JSON.stringify({
    date: new Date()
      .toISOString(),
    node: process.version,
    cpus: os.cpus()
      .length,
    cpu: os.cpus()[0]?.model,
    loadavg: [load0, load1],
    flags: f,
    rows
  }, null, 2) + '\n')
} finally {
  for (const x of gws) await x.g.stop()
  await store.close()
  await stack.stop()
}
if (failed) { console.error('errors or non-2xx answers: these figures are not throughput'); process.exitCode = 1 }

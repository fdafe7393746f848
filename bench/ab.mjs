#!/usr/bin/env node
/**
 * A/B of two sidegate builds (or log levels) on one scenario, interleaved
 * A B B A A B … so that drift on a noisy machine hits both alike. For work on
 * the hot path, not part of `npm run bench`.
 *
 *   node bench/ab.mjs --a /path/to/checkout-a --b . --scenario private_token --rounds 6
 *   node bench/ab.mjs --a-log info --b-log warn --scenario public
 *   node bench/ab.mjs --b-tracing --scenario private_token     (tracing off vs on: B exports every span to a sink)
 *
 * A checkout is any directory with bin/sidegate.js and a built dist/ (and node_modules).
 */
import { join, resolve } from 'node:path'
import { readFileSync } from 'node:fs'
import { BENCH, ROOT, parseFlags, runJson } from './lib.mjs'
import { API_PATH, PUBLIC_PATH, openStore, seedCredentials, startSidegate, startSpanSink, startStack } from './stack.mjs'

const f = parseFlags(process.argv.slice(2), { a: ROOT, b: ROOT, aLog: 'info', bLog: 'info', aTracing: false, bTracing: false, scenario: 'private_token', rounds: 6, duration: 3, warmup: 1, connections: 50 })
const kinds = { public: ['plain', PUBLIC_PATH], private_token: ['token', API_PATH], access_key: ['signature', API_PATH], session: ['session', API_PATH], rejected: ['rejected', API_PATH], bare: ['plain', API_PATH] }
const [kind, path] = kinds[f.scenario] ?? (() => { throw new Error(`scenario: one of ${Object.keys(kinds).join(', ')}`) })()

const cpu = (pid) => { const s = readFileSync(`/proc/${pid}/stat`, 'utf8'); const x = s.slice(s.lastIndexOf(')') + 2).split(' '); return (Number(x[11]) + Number(x[12])) / 100 }
const stack = await startStack({ logLevel: 'warn' })
const store = await openStore(stack.redis.url)
const gws = {}
const sink = f.aTracing || f.bTracing ? await startSpanSink() : null
const tracing = (on) => on ? { tracing: { endpoint: sink.url } } : {}
try {
  const creds = await seedCredentials(store, 10)
  gws.A = await startSidegate({ dir: stack.dir, redisUrl: stack.redis.url, upstreamUrl: stack.upstreamUrl, logLevel: f.aLog, root: resolve(f.a), name: 'a', extra: tracing(f.aTracing) })
  gws.B = await startSidegate({ dir: stack.dir, redisUrl: stack.redis.url, upstreamUrl: stack.upstreamUrl, logLevel: f.bLog, root: resolve(f.b), name: 'b', extra: tracing(f.bTracing) })
  if (f.scenario === 'bare') { gws.A = { url: stack.bareUrl, pid: stack.pids.bare, stop: async () => {} } }
  const out = { A: [], B: [] }
  for (let i = 0; i < f.rounds; i++) {
    for (const which of (i % 2 === 0 ? ['A', 'B'] : ['B', 'A'])) {
      const g = gws[which]
      const c0 = cpu(g.pid)
      const r = await runJson(join(BENCH, 'load.mjs'), { url: g.url + path, path, connections: f.connections, duration: f.duration, warmup: f.warmup, kind, creds: { tokens: creds.tokens, sessions: creds.sessions, keys: creds.keys } })
      const us = (cpu(g.pid) - c0) * 1e6 / (r.requests + r.warmup.requests)
      out[which].push({ rps: r.rps, us, p99: r.p99, bad: r.errors + (f.scenario === 'rejected' ? 0 : r.non2xx) })
      process.stderr.write(`  ${which} ${r.rps.toFixed(0).padStart(6)} req/s  ${us.toFixed(0).padStart(4)} µs CPU/req  p99 ${r.p99.toFixed(1)} ms${out[which].at(-1).bad ? '  ERRORS' : ''}\n`)
    }
  }
  const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] }
  for (const w of ['A', 'B']) console.log(`${w}: median ${med(out[w].map((x) => x.rps)).toFixed(0)} req/s, ${med(out[w].map((x) => x.us)).toFixed(0)} µs CPU/req, p99 ${med(out[w].map((x) => x.p99)).toFixed(1)} ms`)
} finally {
  for (const g of Object.values(gws)) await g.stop()
  await store.close()
  await stack.stop()
  await sink?.stop()
}

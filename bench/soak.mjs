#!/usr/bin/env node
/**
 * `npm run bench:soak`: private-token requests at a fixed moderate rate for a
 * minute, sidegate's RSS sampled every second. Passes when the RSS grew by
 * less than --max-growth MB between the end of the warm-up and the end.
 *
 *   --duration S      total seconds under load (60)
 *   --warmup S        seconds at the start not counted for growth (15)
 *   --rate N          requests per second over all connections (1000)
 *   --connections N   (20)
 *   --max-growth MB   (10)
 *   --node-args 'A B'  flags for sidegate's node, e.g. --max-semi-space-size=2 ('')
 */
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { BENCH, parseFlags, runJson } from './lib.mjs'
import { API_PATH, openStore, seedCredentials, startStack } from './stack.mjs'

const flags = parseFlags(process.argv.slice(2), { duration: 60, warmup: 15, rate: 1000, connections: 20, maxGrowth: 10, nodeArgs: '', out: join(BENCH, 'results') })
const log = (s) => process.stderr.write(s + '\n')

/** Resident set size in MB, from /proc (Linux) or ps. */
function rssMB (pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    if (m !== null) return Number(m[1]) / 1024
  } catch {}
  return null
}

const stack = await startStack({ nodeArgs: flags.nodeArgs.split(' ').filter(Boolean) })
const store = await openStore(stack.redis.url)
let result
const samples = []
try {
  const creds = await seedCredentials(store, 10)
  log(`soak: ${flags.rate} req/s with private tokens for ${flags.duration} s, ${flags.connections} connections; RSS of sidegate (pid ${stack.gatewayPid}) every second`)
  const t0 = Date.now()
  const timer = setInterval(() => {
    const t = (Date.now() - t0) / 1000
    const rss = rssMB(stack.gatewayPid)
    samples.push({ t: Math.round(t * 10) / 10, rss })
    if (Math.round(t) % 10 === 0) log(`  t=${t.toFixed(0).padStart(3)} s  rss ${rss?.toFixed(1)} MB`)
  }, 1000)
  try {
    result = await runJson(join(BENCH, 'load.mjs'), {
      url: stack.gatewayUrl + API_PATH, path: API_PATH, connections: flags.connections, duration: flags.duration, warmup: 0, rate: flags.rate, kind: 'token', creds: { tokens: creds.tokens }
    })
  } finally {
    clearInterval(timer)
  }
} finally {
  await store.close()
  await stack.stop()
}

// growth: median of the last 5 samples minus the median of the 5 around the end of the warm-up (one GC does not decide)
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] }
const valid = samples.filter((s) => s.rss !== null)
const afterWarm = valid.filter((s) => s.t >= flags.warmup)
const base = median(afterWarm.slice(0, 5).map((s) => s.rss))
const end = median(valid.slice(-5).map((s) => s.rss))
const growth = end - base
const okLoad = result.errors === 0 && result.non2xx === 0
const ok = okLoad && growth < flags.maxGrowth
const report = {
  date: new Date().toISOString(),
  options: flags,
  machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version },
  load: {
    requests: result.requests,
    rps: result.rps,
    p50: result.p50,
    p99: result.p99,
    errors: result.errors,
    non2xx: result.non2xx
  },
  rss: { afterWarmupMB: base, endMB: end, growthMB: growth, maxMB: Math.max(...valid.map((s) => s.rss)) },
  pass: ok,
  samples
}
mkdirSync(flags.out, { recursive: true })
writeFileSync(join(flags.out, 'soak-latest.json'), JSON.stringify(report, null, 2) + '\n')
process.stdout.write(`soak: ${result.requests} requests (${result.rps.toFixed(0)}/s), p50 ${result.p50?.toFixed(2)} ms, p99 ${result.p99?.toFixed(2)} ms, errors ${result.errors}, non-2xx ${result.non2xx}\n`)
process.stdout.write(`RSS after ${flags.warmup} s warm-up ${base.toFixed(1)} MB, at the end ${end.toFixed(1)} MB: growth ${growth.toFixed(1)} MB (max ${report.rss.maxMB.toFixed(1)} MB) → ${growth < flags.maxGrowth ? 'pass' : 'FAIL'} (< ${flags.maxGrowth} MB)\n`)
if (!okLoad) process.stdout.write('soak FAILED: errors or non-2xx answers under load\n')
process.exit(ok ? 0 : 1)

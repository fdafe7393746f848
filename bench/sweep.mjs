/**
 * `npm run bench -- --sweep`: CPU per request (from /proc, as bench/run.mjs)
 * and throughput as the number of active credentials grows, with sidegate's
 * default cache settings. Seeds N users, each with a private token and an
 * access key, through the store API, then for each N rotates through the
 * first N credentials, one after another on every request (every connection),
 * so each one comes back only after all the others: the cyclic access that
 * defeats an LRU smaller than N. Ratios are to N = 1.
 *
 *   --sizes 1,1000,10000,50000,100000   numbers of active credentials
 *   --kinds token,signature             private tokens, access-key signatures
 *   --duration S   timed seconds per point (10); --connections N (50)
 *   --warmup S     warm-up seconds per point (2), plus one second per 5,000
 *                  credentials so every one was seen once before timing
 *   --out DIR      where the JSON goes (bench/results)
 */
import { loadavg } from 'node:os'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BENCH, cpuSeconds, parseFlags, runJson } from './lib.mjs'
import { API_PATH, openStore, startStack } from './stack.mjs'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const log = (s) => process.stderr.write(s + '\n')

/** N users with a token and a key each, `batch` at a time. */
async function seed (store, n, batch = 200) {
  const tokens = new Array(n)
  const keys = new Array(n)
  for (let i = 0; i < n; i += batch) {
    await Promise.all(Array.from({ length: Math.min(batch, n - i) }, async (_, j) => {
      const u = await store.users.create({ username: `sweep-${i + j}`, password: null, orgs: { [DEFAULT_ORG]: 'user' } })
      tokens[i + j] = await store.privateTokens.create(u.id)
      const k = await store.accessKeys.create(u.id)
      keys[i + j] = { id: k.key.id, secret: k.secret }
    }))
  }
  return { tokens, keys }
}

/** Runs the sweep; resolves with the exit status. */
export async function sweep (argv) {
  const flags = parseFlags(argv, { sizes: '1,1000,10000,50000,100000', kinds: 'token,signature', duration: 10, warmup: 2, connections: 50, out: join(BENCH, 'results'), logLevel: 'info' })
  const sizes = flags.sizes.split(',').map(Number)
  const kinds = flags.kinds.split(',')
  const max = Math.max(...sizes)
  const stack = await startStack({ logLevel: flags.logLevel })
  const store = await openStore(stack.redis.url)
  const rows = []
  let status = 0
  try {
    const t0 = Date.now()
    const creds = await seed(store, max)
    log(`sweep: seeded ${max} users with a private token and an access key each in ${((Date.now() - t0) / 1000).toFixed(1)} s; load ${loadavg()[0].toFixed(2)}`)
    for (const kind of kinds) {
      for (const n of sizes) {
        const job = {
          url: stack.gatewayUrl + API_PATH,
          path: API_PATH,
          connections: flags.connections,
          duration: flags.duration,
          warmup: flags.warmup + Math.ceil(n / 5000),
          kind: kind === 'token' ? 'token_rotate' : 'signature_rotate',
          creds: kind === 'token' ? { tokens: creds.tokens.slice(0, n) } : { keys: creds.keys.slice(0, n) }
        }
        const pids = [stack.pids.sidegate]
        const cpu0 = cpuSeconds(pids)
        const r = await runJson(join(BENCH, 'load.mjs'), job)
        const cpu1 = cpuSeconds(pids)
        const cpuUsPerReq = cpu0 === null || cpu1 === null
          ? null
          : (cpu1 - cpu0) * 1e6 / (r.requests + (r.warmup?.requests ?? 0))
        const bad = (r.errors ?? 0) + (r.non2xx ?? 0)
        if (bad > 0) status = 1
        const base = rows.find((x) => x.kind === kind && x.n === sizes[0])
        const row = { kind, n, rps: r.rps, p99: r.p99, cpuUsPerReq, errors: bad }
        row.cpuRatio = base?.cpuUsPerReq != null && cpuUsPerReq !== null ? cpuUsPerReq / base.cpuUsPerReq : 1
        row.rpsRatio = base === undefined ? 1 : r.rps / base.rps
        rows.push(row)
        log(`  ${kind.padEnd(9)} N=${String(n).padStart(6)}  ${r.rps.toFixed(0).padStart(6)} req/s  p99 ${r.p99.toFixed(2)} ms  ${cpuUsPerReq?.toFixed(0) ?? '?'} µs CPU/req  ×${row.cpuRatio.toFixed(2)} CPU  ×${row.rpsRatio.toFixed(2)} req/s${bad ? `  ✗ ${bad} errors or non-2xx` : ''}`)
      }
    }
  } finally {
    await store.close()
    await stack.stop()
  }
  // targets (issue 30): at the largest N, CPU ≤ 1.25× N = 1 for tokens, ≤ 1.5× for access keys
  const limits = { token: 1.25, signature: 1.5 }
  const last = (kind) => rows.filter((r) => r.kind === kind).at(-1)
  const lines = ['| credentials | N | req/s | p99 ms | CPU µs/req | CPU × N=1 | req/s × N=1 |', '|---|---:|---:|---:|---:|---:|---:|']
  for (const r of rows) lines.push(`| ${r.kind} | ${r.n} | ${r.rps.toFixed(0)} | ${r.p99.toFixed(2)} | ${r.cpuUsPerReq?.toFixed(0) ?? '?'} | ${r.cpuRatio.toFixed(2)} | ${r.rpsRatio.toFixed(2)} |`)
  for (const kind of kinds) {
    const r = last(kind)
    if (r !== undefined && limits[kind] !== undefined) lines.push(`\n${kind} at N=${r.n}: CPU ×${r.cpuRatio.toFixed(2)} of N=${sizes[0]} (target ≤ ${limits[kind]}): ${r.cpuRatio <= limits[kind] ? 'met' : 'NOT met'}`)
  }
  process.stdout.write(lines.join('\n') + '\n')
  mkdirSync(flags.out, { recursive: true })
  const file = join(flags.out, `sweep-${new Date().toISOString().replace(/[:.]/g, '-')}.json`)
  writeFileSync(file, JSON.stringify({ date: new Date().toISOString(), options: flags, loadavg: loadavg(), rows }, null, 2) + '\n')
  log(`sweep: ${file}`)
  return status
}

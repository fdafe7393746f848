#!/usr/bin/env node
/**
 * `npm run bench`: every credential path of sidegate under autocannon, side by
 * side with a bare Node proxy, all in one run so the figures are ratios taken
 * on the same machine in the same minute.
 *
 *   --duration S     timed seconds per scenario (10)
 *   --warmup S       warm-up seconds per scenario, same connections (2)
 *   --connections N  concurrent connections (50)
 *   --rounds N       every scenario N times, interleaved (3): each figure is the median of its
 *                    rounds, each ratio the median of the ratios taken within a round
 *   --quick          1 s per scenario: a smoke test (every path answers as it must); no target is judged
 *   --only a,b       run only these scenarios (the bare proxy always runs: it is the baseline)
 *   --out DIR        where the JSON and SVG go (bench/results)
 *   --no-latest      do not overwrite latest.json / latest.svg
 *   --log-level L    sidegate's log level (info: the shipped default, what production runs)
 *   --profile DIR    run sidegate with --cpu-prof, the profile written to DIR when it stops
 *   --node-args 'A B'  flags for sidegate's node (e.g. --max-semi-space-size=2), to compare V8 settings
 *   --sweep          instead: CPU per request over N active credentials (bench/sweep.mjs; its own flags)
 *
 * Exit status: 1 when an authenticated scenario had an error or a non-2xx
 * response, or the rejected one answered anything but 401 (a bench that counts
 * errors as throughput is wrong); the speed targets are printed, not enforced.
 */
import { cpus, loadavg, release, totalmem, arch, platform } from 'node:os'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createHash, createHmac } from 'node:crypto'
import { join } from 'node:path'
import { BENCH, cpuSeconds, parseFlags, runJson } from './lib.mjs'
import { API_PATH, PUBLIC_PATH, issueBearerTokens, openSqliteStore, openStore, seedCredentials, startSidegate, startSpanSink, startStack } from './stack.mjs'
import { renderChart } from './chart.mjs'
import { findNginx, startNginxPeer } from './peers/nginx.mjs'
import { startNginxDecision } from './peers/nginx-decision.mjs'

// `--sweep`: CPU per request as the number of active credentials grows (./sweep.mjs), instead of the scenarios below
if (process.argv.includes('--sweep')) {
  const { sweep } = await import('./sweep.mjs')
  process.exit(await sweep(process.argv.slice(2).filter((a) => a !== '--sweep')))
}

const flags = parseFlags(process.argv.slice(2), {
  duration: 10, warmup: 2, connections: 50, rounds: 3, quick: false, only: '', out: join(BENCH, 'results'), latest: true, noLatest: false, profile: '', logLevel: 'info', nodeArgs: ''
})
if (flags.quick) { flags.duration = 1; flags.warmup = 0; flags.rounds = 1 }
const writeLatest = flags.latest && !flags.noLatest

/**
 * Scenarios, in the order they run in each round; ratios are to the mean of the round's two
 * bare-proxy runs. `auth`: the zero-error rule applies; `expect: 401`: every answer must be 401.
 * Targets (docs/performance.md): `minRatio` req/s and `maxCpuRatio` CPU to the bare proxy,
 * p99 at most P99_MAX_RATIO times its (auth), `vsPeer` against nginx + the token service,
 * `maxCpuUs` CPU per request, `maxPairRatio` / `maxOwnUs` a decision's CPU (nginx and sidegate
 * summed) to the peer's and sidegate's own share, `vsToken` CPU within that many times the
 * private-token path's.
 */
const SCENARIOS = [
  { name: 'direct', label: 'direct to upstream', target: 'upstream', kind: 'plain', path: API_PATH },
  { name: 'bare', label: 'bare node:http proxy', target: 'bare', kind: 'plain', path: API_PATH },
  { name: 'public', label: 'sidegate, public path', target: 'gateway', kind: 'plain', path: PUBLIC_PATH, expect: 200, maxCpuRatio: 1.0 },
  { name: 'private_token', label: 'sidegate, private token', target: 'gateway', kind: 'token', path: API_PATH, auth: true, minRatio: 0.95, vsPeer: 1.0, maxCpuRatio: 1.0 },
  // the peer: nginx (1 worker) + auth_request to a minimal in-memory token service, both counted
  { name: 'nginx_auth', label: 'nginx + auth_request (peer), token', target: 'nginx', kind: 'token', path: API_PATH, peer: true },
  // sidegate in decision mode: nginx (1 worker, deploy/forward-auth/nginx.conf)
  // + auth_request to /_sidegate/auth, both counted
  { name: 'nginx_decision', label: 'nginx + auth_request → sidegate decision, token', target: 'nginx_decision', kind: 'token', path: API_PATH, maxPairRatio: 1.15, maxOwnUs: 30 },
  { name: 'access_key', label: 'sidegate, access-key signature', target: 'gateway', kind: 'signature', path: API_PATH, auth: true, minRatio: 0.95, vsPeer: 1.0, vsToken: 1.15 },
  { name: 'digest', label: 'sidegate, signature + body digest (1 KiB POST)', target: 'gateway', kind: 'signature_digest', path: API_PATH, auth: true },
  // a second gateway with tracing on, every request sampled (a server
  // span, its Redis and upstream spans), exported to a sink that discards
  { name: 'traced', label: 'sidegate, private token, tracing on (all sampled)', target: 'gateway_traced', kind: 'token', path: API_PATH, auth: true },
  { name: 'rate_limited', label: 'sidegate, private token + rate limit (counted, never reached)', target: 'gateway_rl', kind: 'token', path: API_PATH, auth: true },
  // the same gateway config as private_token, as `sidegate start
  // --workers 2`: CPU summed over the primary and both workers
  { name: 'workers2', label: 'sidegate --workers 2, private token', target: 'gateway_w2', kind: 'token', path: API_PATH, auth: true },
  // a Kubernetes-shaped token of a trusted issuer, seen before: decided from memory (goal: 1.2× a private token's CPU)
  { name: 'trusted_token', label: 'sidegate, trusted issuer\'s JWT (seen before)', target: 'gateway', kind: 'jwt', path: API_PATH, auth: true, minRatio: 0.95, vsToken: 1.2 },
  { name: 'session', label: 'sidegate, session cookie', target: 'gateway', kind: 'session', path: API_PATH, auth: true, minRatio: 0.95, vsPeer: 1.0, vsToken: 1.15 },
  { name: 'bearer', label: 'sidegate, single-use bearer', target: 'gateway', kind: 'bearer', path: API_PATH, auth: true, minRatio: 0.75 },
  { name: 'rejected', label: 'sidegate, invalid token (401)', target: 'gateway', kind: 'rejected', path: API_PATH, expect: 401, minRatio: 2.0, maxCpuUs: 30 },
  // the same paths on the embedded store (store.backend sqlite):
  // the cached ones must cost no more CPU than on Redis (`vsRedis`)
  { name: 'sqlite_private_token', label: 'sidegate on SQLite, private token', target: 'gateway_sqlite', kind: 'token', path: API_PATH, auth: true, vsRedis: 'private_token' },
  { name: 'sqlite_access_key', label: 'sidegate on SQLite, access-key signature', target: 'gateway_sqlite', kind: 'signature', path: API_PATH, auth: true, vsRedis: 'access_key' },
  { name: 'sqlite_session', label: 'sidegate on SQLite, session cookie', target: 'gateway_sqlite', kind: 'session', path: API_PATH, auth: true, vsRedis: 'session' },
  // one write (a DELETE … RETURNING) per request: reported as it is
  { name: 'sqlite_bearer', label: 'sidegate on SQLite, single-use bearer', target: 'gateway_sqlite', kind: 'bearer', path: API_PATH, auth: true },
  { name: 'sqlite_rejected', label: 'sidegate on SQLite, invalid token (401)', target: 'gateway_sqlite', kind: 'rejected', path: API_PATH, expect: 401 },
  // the baseline again: the machine's drift during the run shows, and the ratios use the mean of both
  { name: 'bare_end', label: 'bare node:http proxy, again at the end', target: 'bare', kind: 'plain', path: API_PATH }
]
const P99_MAX_RATIO = 1.2
/** How far the baseline may move between its two runs before the targets are not judged. */
const NOISE_MAX = 0.1

const only = flags.only ? new Set(flags.only.split(',').map((s) => s.trim())) : null
if (only !== null) {
  for (const n of only) if (!SCENARIOS.some((s) => s.name === n)) throw new Error(`unknown scenario ${n}; known: ${SCENARIOS.map((s) => s.name).join(', ')}`)
  only.add('bare')
  only.add('bare_end')
}
const scenarios = SCENARIOS.filter((s) => only === null || only.has(s.name))

const machine = {
  cpus: cpus().length,
  cpu: cpus()[0]?.model ?? 'unknown',
  memGB: Math.round(totalmem() / 2 ** 30),
  node: process.version,
  os: `${platform()} ${release()} ${arch()}`,
  loadavgBefore: loadavg().map((x) => Math.round(x * 100) / 100)
}

const log = (s) => process.stderr.write(s + '\n')
log(`sidegate bench: ${scenarios.length} scenarios × ${flags.rounds} rounds, ${flags.warmup} s warm-up + ${flags.duration} s each, ${flags.connections} connections; ${machine.cpus} cores, node ${machine.node}, load ${machine.loadavgBefore.join(' ')}`)

const stack = await startStack({ logLevel: flags.logLevel, nodeArgs: [...(flags.profile ? ['--cpu-prof', '--cpu-prof-dir', flags.profile] : []), ...flags.nodeArgs.split(' ').filter(Boolean)] })
const store = await openStore(stack.redis.url)
/** rows[name]: the scenario's row of each round */
const rows = {}
/** the load average at the start of each round */
const roundLoad = []
/** scenarios that could not run here, with the reason */
const skipped = []
let nginx = null
let nginxDecision = null
/**
 * a second gateway with rate_limit on (a limit no scenario reaches: the cost of counting, one Redis script per request)
 */
let limited = null
/** the gateway as `sidegate start --workers 2` */
let multi = null
/** a gateway on the embedded store, and that store opened here for its credentials */
let onSqlite = null
let sqliteStore = null
/** a gateway with tracing on, and where its spans go */
let traced = null
let sink = null
let exitCode = 0
try {
  const creds = await seedCredentials(store, 10)
  const credsFor = { gateway_sqlite: null }
  const urls = { upstream: stack.upstreamUrl, bare: stack.bareUrl, gateway: stack.gatewayUrl }
  const pids = {
    upstream: () => [stack.pids.upstream],
    bare: () => [stack.pids.bare],
    gateway: () => [stack.pids.sidegate]
  }
  /** of a peer (two processes): the one that decides (the token service, sidegate), its own share */
  const ownPids = {}
  if (scenarios.some((s) => s.target === 'gateway_rl')) {
    limited = await startSidegate({ dir: stack.dir, redisUrl: stack.redis.url, upstreamUrl: stack.upstreamUrl, logLevel: flags.logLevel, name: 'sidegate-rl', extra: { rate_limit: { enabled: true, limit: 100000, window: 1 } } })
    urls.gateway_rl = limited.url
    pids.gateway_rl = () => [limited.pid]
  }
  if (scenarios.some((s) => s.target === 'gateway_w2')) {
    multi = await startSidegate({ dir: stack.dir, redisUrl: stack.redis.url, upstreamUrl: stack.upstreamUrl, logLevel: flags.logLevel, name: 'sidegate-w2', args: ['--workers', '2'] })
    urls.gateway_w2 = multi.url
    // the primary and its workers (a worker restarted meanwhile is counted from its start only)
    pids.gateway_w2 = () => [multi.pid, ...childPids(multi.pid)]
  }
  if (scenarios.some((s) => s.target === 'gateway_sqlite')) {
    onSqlite = await startSidegate({ dir: stack.dir, upstreamUrl: stack.upstreamUrl, logLevel: flags.logLevel, name: 'sidegate-sqlite', sqlite: true })
    sqliteStore = await openSqliteStore(join(stack.dir, 'sidegate-sqlite.db'))
    credsFor.gateway_sqlite = await seedCredentials(sqliteStore, 10)
    urls.gateway_sqlite = onSqlite.url
    pids.gateway_sqlite = () => [onSqlite.pid]
  }
  if (scenarios.some((s) => s.target === 'gateway_traced')) {
    sink = await startSpanSink()
    traced = await startSidegate({ dir: stack.dir, redisUrl: stack.redis.url, upstreamUrl: stack.upstreamUrl, logLevel: flags.logLevel, name: 'sidegate-traced', extra: { tracing: { endpoint: sink.url } } })
    urls.gateway_traced = traced.url
    pids.gateway_traced = () => [traced.pid]
  }
  if (scenarios.some((s) => s.target === 'nginx')) {
    const found = findNginx()
    if (found.bin === null) {
      skipped.push({ name: 'nginx_auth', why: found.why })
      log(`  nginx_auth     skipped: ${found.why}`)
    } else {
      nginx = await startNginxPeer({
        dir: stack.dir,
        upstreamUrl: stack.upstreamUrl,
        tokens: creds.tokens.map((token, i) => ({ token, userId: creds.users[i] }))
      })
      urls.nginx = nginx.url
      pids.nginx = nginx.pids
      ownPids.nginx = () => [nginx.authPid]
      machine.nginx = nginx.version
    }
  }
  if (scenarios.some((s) => s.target === 'nginx_decision')) {
    const found = findNginx()
    if (found.bin === null) {
      skipped.push({ name: 'nginx_decision', why: found.why })
      log(`  nginx_decision skipped: ${found.why}`)
    } else {
      nginxDecision = await startNginxDecision({
        dir: stack.dir,
        sidegateUrl: stack.gatewayUrl,
        sidegatePid: stack.pids.sidegate,
        upstreamUrl: stack.upstreamUrl
      })
      urls.nginx_decision = nginxDecision.url
      pids.nginx_decision = nginxDecision.pids
      ownPids.nginx_decision = () => [stack.pids.sidegate]
      machine.nginx ??= nginxDecision.version
    }
  }

  for (let round = 1; round <= flags.rounds; round++) {
    roundLoad.push(loadavg()[0])
    if (flags.rounds > 1) log(`round ${round} of ${flags.rounds} (load ${loadavg()[0].toFixed(2)})`)
    for (const s of scenarios) {
      if (urls[s.target] === undefined) continue
      const c = credsFor[s.target] ?? creds
      const job = {
        url: urls[s.target] + s.path,
        path: s.path,
        connections: flags.connections,
        duration: flags.duration,
        warmup: flags.warmup,
        kind: s.kind,
        creds: {}
      }
      if (s.kind === 'token') job.creds.tokens = c.tokens
      if (s.kind === 'session') job.creds.sessions = c.sessions
      if (s.kind === 'jwt') job.creds.jwts = stack.jwts
      if (s.kind === 'signature' || s.kind === 'signature_digest') job.creds.keys = c.keys
      if (s.kind === 'bearer') {
      // enough for the fastest authenticated rate seen so far, plus a margin; each used once
        const fastest = Math.max(1000, ...Object.values(rows).flat().filter((r) => r.auth || r.name === 'bare').map((r) => r.rps))
        const n = Math.ceil(fastest * (flags.duration + flags.warmup) * 1.3) + flags.connections * 4
        const t0 = Date.now()
        job.creds.tokensFile = await issueBearerTokens(s.target === 'gateway_sqlite' ? sqliteStore : store, c.users, n, join(stack.dir, `bearer-tokens-${s.name}-${round}.txt`))
        log(`  issued ${n} bearer tokens in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
      }
      await probe(s, job, c)
      const procs = pids[s.target]()
      const own = ownPids[s.target]?.() ?? null
      const cpu0 = cpuSeconds(procs)
      const own0 = own === null ? null : cpuSeconds(own)
      const r = await runJson(join(BENCH, 'load.mjs'), job)
      const cpu1 = cpuSeconds(procs)
      const own1 = own === null ? null : cpuSeconds(own)
      // CPU time the processes that answered spent per request (warm-up
      // included), in µs; of a peer, also the deciding process's own
      const n = r.requests + (r.warmup?.requests ?? 0)
      r.cpuUsPerReq = cpu0 === null || cpu1 === null ? null : (cpu1 - cpu0) * 1e6 / n
      r.cpuOwnUs = own0 === null || own1 === null ? null : (own1 - own0) * 1e6 / n
      const row = { name: s.name, label: s.label, auth: s.auth === true, round, ...r }
      row.problems = problems(s, r)
      if (row.problems.length > 0) exitCode = 1
      ;(rows[s.name] ??= []).push(row)
      log(`  ${s.name.padEnd(14)} ${fmt(r.rps, 0).padStart(7)} req/s  p50 ${fmt(r.p50, 2)} ms  p99 ${fmt(r.p99, 2)} ms  ${fmt(r.cpuUsPerReq, 0)} µs CPU/req${r.cpuOwnUs === null ? '' : ` (${fmt(r.cpuOwnUs, 0)} its decider)`}${row.problems.length ? '  ✗ ' + row.problems.join('; ') : ''}`)
    }
  }
} finally {
  await store.close()
  await nginx?.stop()
  await nginxDecision?.stop()
  await limited?.stop()
  await multi?.stop()
  await sqliteStore?.close()
  await onSqlite?.stop()
  await traced?.stop()
  if (sink !== null) log(`  span sink: ${sink.exports} exports, ${(sink.bytes / 1e6).toFixed(1)} MB of OTLP JSON`)
  await sink?.stop()
  await stack.stop()
}

// ---- ratios and targets

// Within each round: ratios to that round's baseline (the mean of its two bare-proxy runs)
// and to the paths they are compared with; then each figure and each ratio is the median over the rounds.
const RATIOS = { ratio: ['rps', 'bare'], p99Ratio: ['p99', 'bare'], cpuRatio: ['cpuUsPerReq', 'bare'] }
const drifts = []
for (let round = 1; round <= flags.rounds; round++) {
  const of = (name) => rows[name]?.find((r) => r.round === round) ?? null
  const bares = [of('bare'), of('bare_end')].filter((r) => r !== null)
  const base = {
    rps: mean(bares.map((r) => r.rps)),
    p99: mean(bares.map((r) => r.p99)),
    cpuUsPerReq: mean(bares.map((r) => r.cpuUsPerReq ?? NaN))
  }
  if (bares.length === 2) drifts.push(bares[1].rps / bares[0].rps - 1)
  for (const r of Object.values(rows).flat().filter((x) => x.round === round)) {
    for (const [k, [field]] of Object.entries(RATIOS)) r[k] = r[field] === null ? null : r[field] / base[field]
    const s = SCENARIOS.find((x) => x.name === r.name)
    const cpuTo = (name) => {
      const o = of(name); return o?.cpuUsPerReq == null || r.cpuUsPerReq === null ? null : r.cpuUsPerReq / o.cpuUsPerReq
    }
    r.vsPrivateToken = cpuTo('private_token')
    r.vsPeerCpu = cpuTo('nginx_auth')
    r.vsPeerRps = of('nginx_auth') === null ? null : r.rps / of('nginx_auth').rps
    r.vsRedisCpu = s.vsRedis === undefined ? null : cpuTo(s.vsRedis)
  }
}
const median = (xs) => {
  const v = xs.filter((x) => x !== null && x !== undefined && !Number.isNaN(x)).sort((a, b) => a - b)
  if (v.length === 0) return null
  const m = Math.floor(v.length / 2)
  return v.length % 2 === 1 ? v[m] : (v[m - 1] + v[m]) / 2
}
const MEDIANS = ['rps', 'p50', 'p99', 'max', 'cpuUsPerReq', 'cpuOwnUs', 'ratio', 'p99Ratio', 'cpuRatio', 'vsPrivateToken', 'vsPeerCpu', 'vsPeerRps', 'vsRedisCpu']
const results = scenarios.filter((s) => rows[s.name] !== undefined).map((s) => {
  const list = rows[s.name]
  const r = { ...list[0] }
  delete r.round
  for (const k of MEDIANS) r[k] = median(list.map((x) => x[k]))
  for (const k of ['requests', 'errors', 'timeouts', 'non2xx']) r[k] = list.reduce((a, x) => a + (x[k] ?? 0), 0)
  r.problems = list.flatMap((x) => x.problems.map((p) => flags.rounds > 1 ? `round ${x.round}: ${p}` : p))
  r.rounds = list.map(({ label, auth, problems, warmup, ...x }) => x)
  return r
})
const bares = results.filter((r) => r.name === 'bare' || r.name === 'bare_end')
const baseline = {
  rps: mean(bares.map((r) => r.rps)),
  p99: mean(bares.map((r) => r.p99)),
  cpuUsPerReq: mean(bares.map((r) => r.cpuUsPerReq ?? NaN)),
  // the median over the rounds of how far the bare proxy moved from its first run to its last
  drift: median(drifts) ?? 0
}
for (const r of results) {
  const s = SCENARIOS.find((x) => x.name === r.name)
  r.targets = []
  // the rejected path is compared with the proxied one (it does less), the others with the bare proxy
  if (s.minRatio !== undefined && s.name === 'rejected') {
    const proxied = results.find((x) => x.name === 'private_token')
    if (proxied !== undefined) r.targets.push({ what: `req/s ≥ ${s.minRatio.toFixed(2)}× private token`, pass: r.rps >= s.minRatio * proxied.rps })
  } else if (s.minRatio !== undefined) r.targets.push({ what: `req/s ≥ ${s.minRatio.toFixed(2)}× bare`, pass: r.ratio >= s.minRatio })
  if (s.vsPeer !== undefined && r.vsPeerRps !== null) {
    r.targets.push({ what: `req/s ≥ ${s.vsPeer.toFixed(2)}× nginx`, pass: r.vsPeerRps >= s.vsPeer })
    if (r.vsPeerCpu !== null) r.targets.push({ what: 'CPU ≤ nginx', pass: r.vsPeerCpu <= 1 })
  }
  if (r.vsRedisCpu !== null) r.targets.push({ what: 'CPU ≤ 1.05× on Redis', pass: r.vsRedisCpu <= 1.05 })
  if (s.maxCpuRatio !== undefined && r.cpuRatio !== null) r.targets.push({ what: `CPU ≤ ${s.maxCpuRatio.toFixed(2)}× bare`, pass: r.cpuRatio <= s.maxCpuRatio })
  if (s.maxCpuUs !== undefined && r.cpuUsPerReq !== null) r.targets.push({ what: `CPU ≤ ${s.maxCpuUs} µs`, pass: r.cpuUsPerReq <= s.maxCpuUs })
  if (s.vsToken !== undefined && r.vsPrivateToken !== null) r.targets.push({ what: `CPU ≤ ${s.vsToken.toFixed(2)}× private token`, pass: r.vsPrivateToken <= s.vsToken })
  if (s.maxPairRatio !== undefined && r.vsPeerCpu !== null) r.targets.push({ what: `CPU ≤ ${s.maxPairRatio.toFixed(2)}× nginx + token service`, pass: r.vsPeerCpu <= s.maxPairRatio })
  if (s.maxOwnUs !== undefined && r.cpuOwnUs !== null) r.targets.push({ what: `sidegate's own CPU ≤ ${s.maxOwnUs} µs`, pass: r.cpuOwnUs <= s.maxOwnUs })
  if (s.auth) r.targets.push({ what: `p99 ≤ ${P99_MAX_RATIO}× bare`, pass: r.p99Ratio <= P99_MAX_RATIO })
  // a 1 s smoke run measures nothing: no verdicts
  if (flags.quick) r.targets = []
}
machine.loadavgAfter = loadavg().map((x) => Math.round(x * 100) / 100)

const report = {
  date: new Date().toISOString(),
  options: {
    duration: flags.duration,
    warmup: flags.warmup,
    connections: flags.connections,
    rounds: flags.rounds,
    quick: flags.quick
  },
  machine: { ...machine, loadavgRounds: roundLoad.map((x) => Math.round(x * 100) / 100) },
  baseline,
  skipped,
  results: results.map(({ warmup, ...r }) => ({ ...r, warmup }))
}

// ---- output: table on stdout, JSON and SVG in bench/results/

process.stdout.write('\n' + table(results, flags.quick) + '\n')
mkdirSync(flags.out, { recursive: true })
const stamp = report.date.replace(/[:.]/g, '-')
const jsonName = `${flags.quick ? 'quick-' : ''}${stamp}.json`
writeFileSync(join(flags.out, jsonName), JSON.stringify(report, null, 2) + '\n')
if (writeLatest && !flags.quick) {
  writeFileSync(join(flags.out, 'latest.json'), JSON.stringify(report, null, 2) + '\n')
  writeFileSync(join(flags.out, 'latest.svg'), renderChart(report))
  writeFileSync(join(flags.out, 'latest.md'), table(results) + '\n')
}
for (const x of skipped) process.stdout.write(`skipped ${x.name}: ${x.why}\n`)
if (flags.quick) {
  process.stdout.write('\nsmoke test (--quick): 1 s per scenario checks that every path answers as it must; it measures nothing, so no target is judged\n')
} else {
  process.stdout.write(`\nbaseline: the bare proxy's median, ${baseline.rps.toFixed(0)} req/s and p99 ${baseline.p99.toFixed(2)} ms; noise: it moved ${(baseline.drift * 100).toFixed(0)}% between its first and last run of a round (median of ${drifts.length} round${drifts.length === 1 ? '' : 's'}: ${drifts.map((d) => `${(d * 100).toFixed(0)}%`).join(', ')})\n`)
  const noisy = Math.abs(baseline.drift) > NOISE_MAX
  const verdicts = results.flatMap((r) => r.targets.map((t) => `${noisy ? 'inconclusive' : t.pass ? 'PASS' : 'FAIL'}  ${r.label}: ${t.what}`))
  if (verdicts.length > 0) process.stdout.write(`targets${noisy ? ` (the baseline moved more than ${NOISE_MAX * 100}%: run again on a quieter machine)` : ''}:\n  ${verdicts.join('\n  ')}\n`)
}
process.stdout.write(`${machine.cpus} × ${machine.cpu}, node ${machine.node}; load ${machine.loadavgBefore.join(' ')} → ${machine.loadavgAfter.join(' ')}${roundLoad.length > 1 ? `; at each round's start ${roundLoad.map((x) => x.toFixed(2)).join(', ')}` : ''}\n`)
process.stdout.write(`results: ${join(flags.out, jsonName)}${writeLatest && !flags.quick ? ', latest.json, latest.svg' : ''}\n`)
if (exitCode !== 0) process.stdout.write('bench FAILED: ' + results.filter((r) => r.problems.length).map((r) => `${r.name}: ${r.problems.join('; ')}`).join(' | ') + '\n')
else process.stdout.write('bench ok: no errors, every authenticated request 2xx, every rejected one 401\n')
process.exit(exitCode)

// ---- helpers

/** What makes a scenario's figures meaningless: errors, or answers other than the expected ones. */
function problems (s, r) {
  const p = []
  const check = (phase, x) => {
    if (x === null || x === undefined) return
    if (x.errors > 0) p.push(`${phase}${x.errors} errors (${x.timeouts} timeouts)`)
    const want = String(s.expect ?? 200)
    const other = Object.entries(x.statusCodes).filter(([c]) => (s.expect === undefined ? !c.startsWith('2') : c !== want))
    if (other.length > 0) p.push(`${phase}unexpected status ${other.map(([c, n]) => `${c}×${n}`).join(', ')}`)
    if (x.requests === 0) p.push(`${phase}no requests completed`)
  }
  check('', r)
  check('warm-up: ', r.warmup)
  if (r.bearer && r.bearer.exhausted > 0) p.push(`ran out of bearer tokens (${r.bearer.issued} issued)`)
  return p
}

/** One request before the load, checked in full: the right status and, when proxied, the upstream's body. */
async function probe (s, job, creds) {
  const headers = {}
  if (s.kind === 'token') headers.authorization = `Token ${creds.tokens[0]}`
  if (s.kind === 'session') headers.cookie = `svc_sessionid=${creds.sessions[0]}`
  if (s.kind === 'jwt') headers.authorization = `Bearer ${stack.jwts[0]}`
  if (s.kind === 'rejected') headers.authorization = `Token ${'probe'.padEnd(32, '0')}${'not-a-tag'.padEnd(12, '0')}` // a real token's shape
  if (s.kind === 'signature') {
    const date = new Date().toUTCString()
    const sig = createHmac('sha256', creds.keys[0].secret).update(`(request-target): get ${s.path}\naccept: application/json\ndate: ${date}`).digest('base64')
    Object.assign(headers, { accept: 'application/json', date, authorization: `Signature keyId="${creds.keys[0].id}",algorithm="hmac-sha256",headers="(request-target) accept date",signature="${sig}"` })
  }
  let body
  if (s.kind === 'signature_digest') {
    const date = new Date().toUTCString()
    body = '{"probe":true}'
    const digest = `SHA-256=${createHash('sha256').update(body).digest('base64')}`
    const sig = createHmac('sha256', creds.keys[0].secret).update(`(request-target): post ${s.path}\ndate: ${date}\ndigest: ${digest}`).digest('base64')
    Object.assign(headers, { 'content-type': 'application/json', date, digest, authorization: `Signature keyId="${creds.keys[0].id}",algorithm="hmac-sha256",headers="(request-target) date digest",signature="${sig}"` })
  }
  if (s.kind === 'bearer') return // every issued token is for the load; the zero-error rule covers it
  const res = await fetch(job.url, { headers, method: body === undefined ? 'GET' : 'POST', body })
  const text = await res.text()
  const want = s.expect ?? 200
  if (res.status !== want || (want === 200 && !text.includes('"bench-item"'))) {
    throw new Error(`probe of ${s.name} answered ${res.status}: ${text.slice(0, 200)}`)
  }
}

/** user + system CPU seconds of processes (all of a peer's), from /proc (Linux); null elsewhere. */
/** The processes whose parent is `pid` (Linux /proc; none elsewhere): the workers of `sidegate start --workers N`. */
function childPids (pid) {
  const out = []
  let entries = []
  try { entries = readdirSync('/proc') } catch { return out }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(e))
    } catch {}
  }
  return out
}

function mean (xs) { return xs.reduce((a, b) => a + b, 0) / xs.length }

function fmt (v, digits) { return v === null || v === undefined ? '-' : v.toFixed(digits) }

function table (rows, quick = false) {
  if (quick) {
    const head = ['scenario', 'requests', 'errors', 'non-2xx']
    const lines = rows.map(
      (r) => [r.label, String(Math.round(r.rps * flags.duration)), String(r.errors), String(r.non2xx)]
    )
    return [head, ['---', '---:', '---:', '---:'], ...lines].map((cells) => `| ${cells.join(' | ')} |`).join('\n')
  }
  const head = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'vs bare', 'p99 vs bare', 'CPU µs/req', 'CPU vs bare', 'errors', 'non-2xx', 'targets']
  const base = (r, v) => r.name === 'bare' || r.name === 'bare_end' ? 'baseline' : v
  const lines = rows.map((r) => [
    r.label,
    fmt(r.rps, 0),
    fmt(r.p50, 2),
    fmt(r.p99, 2),
    base(r, fmt(r.ratio, 2) + '×'),
    base(r, fmt(r.p99Ratio, 2) + '×'),
    fmt(r.cpuUsPerReq, 0) + (r.cpuOwnUs == null ? '' : ` (${r.name === 'nginx_auth' ? 'token service' : 'sidegate'} ${fmt(r.cpuOwnUs, 0)})`),
    base(r, r.cpuRatio === null || r.cpuRatio === undefined ? '-' : fmt(r.cpuRatio, 2) + '×'),
    String(r.errors),
    String(r.non2xx),
    r.targets.length === 0 ? '' : r.targets.map((t) => `${t.pass ? 'pass' : 'FAIL'} ${t.what}`).join(', ')
  ])
  const md = [head, head.map((h, i) => (i === 0 || i === head.length - 1 ? '---' : '---:')), ...lines]
  return md.map((cells) => `| ${cells.join(' | ')} |`).join('\n')
}

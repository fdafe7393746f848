#!/usr/bin/env node
/**
 * Instructions per request under valgrind's callgrind: counts that do not depend on how busy
 * the machine is (CPU µs/request from /proc does). User-space instructions of the process
 * under test only: the kernel's share (the socket writes) is not counted, so this shows what
 * the JavaScript and Node do per request. Not part of `npm run bench`.
 *
 *   node bench/callgrind.mjs --budget check      # every path of this build against bench/budget.json
 *   node bench/callgrind.mjs --budget write      # the same, written to bench/budget.json
 *   node bench/callgrind.mjs --budget show       # the same, printed only
 *   node bench/callgrind.mjs --a ../other-checkout --b . --scenario private_token   # A/B of two builds
 *   node bench/callgrind.mjs --budget show --paths decision --log-level warn   # without the access line
 *
 * Steady state, the same count for the same build run after run (within 0.1%):
 * - valgrind starts with instrumentation off (--instr-atstart=no: 5–10 times faster), and the
 *   process gets `--warmup` requests, all its paths in turn, as a gateway serving a mix sees
 *   them, until V8 has optimised what is hot (about 10,000: outside valgrind, --trace-opt shows
 *   the last compiles near 10,000 private-token requests);
 * - then, for each path: SIGUSR2 makes it run a full GC (bench/callgrind-gc.cjs, preloaded with
 *   --expose-gc), so no major GC is due in the counted window; `--settle` requests of the path,
 *   not counted (the full GC drops maps and V8 deoptimises and recompiles some code: a few
 *   thousand requests); instrumentation on, counters zeroed, `--requests` requests over
 *   `--connections` keep-alive connections, counters dumped, instrumentation off;
 * - V8 runs with --single-threaded-gc (every GC step on the main thread, none shared with helper
 *   threads in a proportion that varies run to run) and callgrind with --separate-threads=yes.
 *   Counted: the main thread, minus its garbage collection (the inclusive cost of
 *   v8::internal::Heap::CollectGarbage: a window holds 3 or 4 scavenges, each ~10M instructions,
 *   which alone would move the figure by 3%). Printed beside, never budgeted: that GC, and the
 *   other threads (V8's background compilers, libuv's pool writing the access log).
 *
 * Paths: sidegate's public, private_token, session, access_key (a fresh Date and HMAC per
 * request), bearer (single use: warm-up + requests tokens issued first), trusted_token (a
 * service-account JWT of the one issuer every run trusts, from a jwks_file), decision (the
 * forward-auth endpoint asked as nginx's auth_request asks: X-Original-Method/-URI), rejected
 * (a new unknown token each request, 401); and, as references, never budgeted: token_service
 * (bench/peers/token-service.mjs asked the decision's requests: the hand-written peer) and
 * bare_proxy (bench/bare-proxy.mjs: the node:http baseline). One process per target under
 * valgrind, its paths one after another in this order. Store: the bench's Redis (its own
 * redis-server on a random port), as `npm run bench`; `--stores` puts A/B on SQLite.
 *
 * The budget (bench/budget.json): instructions per request per sidegate path. `check` exits 1
 * when a path costs more than budget × (1 + tolerance), and says which path by how much; a path
 * more than the tolerance below its budget is reported (update the budget: `--budget write`),
 * not failed. The counts belong to a Node version (its V8, its OpenSSL): the file says which,
 * and `check` warns when it runs on another.
 */
import http from 'node:http'
import { spawn, execFileSync } from 'node:child_process'
import { createHmac } from 'node:crypto'
import { createWriteStream, readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { stringify } from 'yaml'
import { BENCH, ROOT, freePort, parseFlags, sleep, spawnNode, startRedis, stopProc, track } from './lib.mjs'
import { API_PATH, PREFIX, PUBLIC_PATH, PUBLIC_PREFIX, SECRET, issueBearerTokens, openSqliteStore, openStore, seedCredentials, trustedIssuerAuth, trustedTokens } from './stack.mjs'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'

const f = parseFlags(process.argv.slice(2), {
  budget: '',
  file: join(BENCH, 'budget.json'),
  paths: '',
  warmup: 10000,
  settle: 3000,
  requests: 1000,
  connections: 4,
  nodeFlags: '--single-threaded-gc',
  a: ROOT,
  b: ROOT,
  scenario: 'private_token',
  stores: 'redis,redis',
  windows: 1,
  verbose: false,
  keep: false,
  logLevel: 'info'
})

const SIDEGATE_PATHS = ['public', 'private_token', 'session', 'access_key', 'bearer', 'trusted_token', 'decision', 'rejected']
const REFERENCES = ['token_service', 'bare_proxy']
const TARGET = { token_service: 'token_service', bare_proxy: 'bare_proxy' }
const STATUS = {
  public: 200,
  private_token: 200,
  session: 200,
  access_key: 200,
  bearer: 200,
  trusted_token: 200,
  decision: 200,
  rejected: 401,
  token_service: 204,
  bare_proxy: 200
}

/** [url path, headers] of request `i` of a path. */
function requestFor (path, i, creds) {
  const pick = (list) => list[i % list.length]
  switch (path) {
    case 'readyz': return ['/readyz', {}]
    case 'public': return [PUBLIC_PATH, {}]
    case 'bare_proxy': return [API_PATH, {}]
    case 'private_token': return [API_PATH, { authorization: `Token ${pick(creds.tokens)}` }]
    // a Kubernetes service-account token of a trusted issuer (auth.trusted_issuers): decided from memory once seen
    case 'trusted_token': return [API_PATH, { authorization: `Bearer ${pick(creds.jwts)}` }]
    case 'session': return [API_PATH, { cookie: `svc_sessionid=${pick(creds.sessions)}; theme=dark` }]
    case 'access_key': {
      // as bench/load.mjs signs: a fresh Date and HMAC for every request
      const key = pick(creds.keys)
      const date = new Date().toUTCString()
      const sig = createHmac('sha256', key.secret).update(`(request-target): get ${API_PATH}\naccept: application/json\ndate: ${date}`).digest('base64')
      return [API_PATH, { accept: 'application/json', date, authorization: `Signature keyId="${key.id}",algorithm="hmac-sha256",headers="(request-target) accept date",signature="${sig}"` }]
    }
    case 'bearer': {
      const t = creds.bearer[creds.bearerNext]
      if (t === undefined) throw new Error('out of bearer tokens')
      creds.bearer[creds.bearerNext++] = undefined
      return [API_PATH, { authorization: `Bearer ${t}` }]
    }
    // what nginx's auth_request sends (deploy/forward-auth/nginx.conf): 127.0.0.1 is a trusted proxy
    case 'decision':
    case 'token_service':
      return ['/_sidegate/auth', { 'x-original-method': 'GET', 'x-original-uri': API_PATH, 'x-forwarded-for': '127.0.0.1', 'x-forwarded-host': 'app.example', authorization: `Token ${pick(creds.tokens)}` }]
    // a well-formed token with a wrong check tag: a new guess each time
    case 'rejected': {
      const t = creds.tokens[0]
      return [API_PATH, { authorization: `Token ${t.slice(0, 20)}${String(i).padStart(12, '0')}${t.slice(32, -1)}${t.endsWith('A') ? 'B' : 'A'}` }]
    }
    default: throw new Error(`unknown path ${path}: ${[...SIDEGATE_PATHS, ...REFERENCES].join(', ')}`)
  }
}

const log = (s) => process.stderr.write(s + '\n')
const fmt = (n) => n.toLocaleString('en-US')

/** V8's garbage collection on the main thread (scavenges and mark-compact): counted apart. */
const GC_FUNCTION = 'v8::internal::Heap::CollectGarbage('

/** The inclusive cost (Ir) of the function whose name starts with `fn` in a callgrind file. */
function inclusive (file, fn) {
  const text = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', file], { encoding: 'utf8', maxBuffer: 256 << 20 })
  for (const line of text.split('\n')) {
    const m = /^\s*([\d,]+) \([^)]*\)\s+[^:]*:(.*)$/.exec(line)
    if (m && m[2].startsWith(fn)) return Number(m[1].replaceAll(',', ''))
  }
  return 0
}

/** The window whose main-thread count is the median. */
const median = (list) => [...list].sort((x, y) => x.ir - y.ir)[Math.floor((list.length - 1) / 2)]

/** Redis, the upstream, credentials: what every target needs. */
async function startBase () {
  const dir = mkdtempSync(join(tmpdir(), 'sidegate-callgrind-'))
  const redis = await startRedis()
  const upstream = await spawnNode(join(BENCH, 'upstream.mjs'))
  const store = await openStore(redis.url)
  const creds = { ...(await seedCredentials(store, 10)), ...(await trustedTokens(dir, 10)) }
  return {
    dir,
    redisUrl: redis.url,
    upstreamUrl: `http://127.0.0.1:${upstream.info.port}`,
    store,
    creds,
    async stop () {
      await store.close().catch(() => {})
      await upstream.stop().catch(() => {})
      await redis.stop().catch(() => {})
      if (f.keep) log(`callgrind files kept in ${dir}`)
      else rmSync(dir, { recursive: true, force: true })
    }
  }
}

/**
 * Runs `target` (sidegate from `root`, or a reference) under callgrind and measures each of
 * `paths` in turn. Returns { path: { ir, other, statuses } }: ir = the main thread's
 * instructions per request, other = the other threads' (compilers, libuv pool).
 */
async function measure ({ base, target, root = ROOT, paths, kind = 'redis', name = target }) {
  const dir = base.dir
  let creds = base.creds
  let bearerStore = base.store
  let args
  if (target === 'sidegate') {
    const port = await freePort()
    const file = join(dir, `cg-${name}.yml`)
    const dbPath = join(dir, `cg-${name}.db`)
    if (kind === 'sqlite') {
      // credentials of its own in its own file, seeded before it starts
      bearerStore = await openSqliteStore(dbPath)
      creds = { ...base.creds, ...(await seedCredentials(bearerStore, 10)) }
    }
    writeFileSync(file, stringify({
      listen: { host: '127.0.0.1', port },
      upstream: { url: base.upstreamUrl, public_paths: [PUBLIC_PREFIX] },
      ...(kind === 'sqlite' ? { store: { backend: 'sqlite', path: dbPath } } : { store: { backend: 'redis' }, redis: { url: base.redisUrl, prefix: PREFIX } }),
      metrics: { host: '127.0.0.1', port: await freePort() },
      server: { drain_delay: 0, trusted_proxies: ['127.0.0.1'] },
      // one issuer for every path: the Bearer path tells sidegate's own tokens from JWTs by shape
      auth: trustedIssuerAuth(creds.jwksFile),
      log: { level: f.logLevel }
    }))
    args = [join(root, 'bin', 'sidegate.js'), 'start', '--config', file]
    creds = { ...creds, port }
  } else if (target === 'token_service') {
    const file = join(dir, 'tokens.txt')
    writeFileSync(file, creds.tokens.map((t, i) => `${t} ${creds.users[i]}`).join('\n') + '\n')
    args = [join(BENCH, 'peers', 'token-service.mjs'), file]
  } else {
    args = [join(BENCH, 'bare-proxy.mjs'), base.upstreamUrl]
  }
  const out = join(dir, `callgrind.${name}`)
  const proc = track(spawn('valgrind', [
    '--tool=callgrind', '--smc-check=all-non-file', '--separate-threads=yes', `--callgrind-out-file=${out}`, '--instr-atstart=no',
    process.execPath, ...f.nodeFlags.split(' ').filter(Boolean), '--expose-gc', '--require', join(BENCH, 'callgrind-gc.cjs'), ...args
  ], {
    cwd: dir,
    env: { PATH: process.env.PATH, NODE_ENV: 'production', SIDEGATE_SECRET_KEY: SECRET, SIDEGATE_ADMIN_PASSWORD: 'bench-admin-password' },
    stdio: ['ignore', 'pipe', 'pipe']
  }))
  let err = ''
  let gcDone = 0
  proc.stderr.setEncoding('utf8')
  proc.stderr.on('data', (c) => {
    gcDone += c.split('callgrind-gc: done').length - 1
    err = (err + c).slice(-5000)
  })
  // the references print {"port"} on stdout; sidegate logs there (discarded)
  let port = creds.port
  if (port === undefined) {
    port = await new Promise((resolve, reject) => {
      let buf = ''
      proc.stdout.setEncoding('utf8')
      proc.stdout.on('data', (c) => { buf += c; const nl = buf.indexOf('\n'); if (nl !== -1) resolve(JSON.parse(buf.slice(0, nl)).port) })
      proc.once('exit', (code) => reject(new Error(`${target} under valgrind exited ${code}: ${err}`)))
    })
  }
  if (f.keep) proc.stdout.pipe(createWriteStream(join(dir, `${name}.stdout`)))
  else proc.stdout.resume()
  const agent = new http.Agent({ keepAlive: true, maxSockets: f.connections })
  let seq = 0
  const get1 = (path) => new Promise((resolve, reject) => {
    const [url, headers] = requestFor(path, seq++, creds)
    http.get({ host: '127.0.0.1', port, path: url, headers, agent }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)) }).on('error', reject)
  })
  // a keep-alive connection the server closed while idle (a GC, a dump): once more on a new one
  const get = (path) => get1(path).catch((err) => { if (err.code === 'ECONNRESET') return get1(path); throw err })
  /** `n` requests over `f.connections` connections, round-robin over `list`; throws on any unexpected status. */
  const burst = async (list, n) => {
    const statuses = {}
    let next = 0
    await Promise.all(Array.from({ length: f.connections }, async () => {
      while (next < n) {
        const path = list[next++ % list.length]
        const s = await get(path)
        if (s !== STATUS[path]) statuses[`${path} ${s}`] = (statuses[`${path} ${s}`] ?? 0) + 1
      }
    }))
    if (Object.keys(statuses).length > 0) throw new Error(`${name}: unexpected answers ${JSON.stringify(statuses)} (expected ${list.map((p) => `${p} ${STATUS[p]}`).join(', ')})`)
  }
  const t0 = Date.now()
  const results = {}
  const windows = {}
  try {
    const end = Date.now() + 600_000
    for (;;) {
      // sidegate: ready once its store is (/readyz 200)
      try { if (await get(target === 'sidegate' ? 'readyz' : paths[0]) === (target === 'sidegate' ? 200 : STATUS[paths[0]])) break } catch {}
      if (proc.exitCode !== null || Date.now() > end) throw new Error(`${target} under valgrind did not start: ${err}`)
      await sleep(500)
    }
    if (f.verbose) log(`  ${name}: started under valgrind in ${((Date.now() - t0) / 1000).toFixed(0)} s`)
    if (paths.includes('bearer')) {
      const file = await issueBearerTokens(bearerStore, creds.users, Math.ceil(f.warmup / paths.length) + f.settle + f.windows * f.requests + 10, join(dir, 'bearer.txt'))
      creds.bearer = readFileSync(file, 'utf8').split('\n').filter(Boolean)
      creds.bearerNext = 0
    }
    // the warm-up: every path of this process in turn, as a gateway serving a mix sees them
    let t1 = Date.now()
    await burst(paths, f.warmup)
    if (f.verbose) log(`  ${name}: ${f.warmup} warm-up requests in ${((Date.now() - t1) / 1000).toFixed(0)} s`)
    let dumps = 0
    for (const path of paths) {
      t1 = Date.now()
      for (let w = 0; w < f.windows; w++) {
        const gcBefore = gcDone
        process.kill(proc.pid, 'SIGUSR2')
        const stop = Date.now() + 60_000
        // eslint-disable-next-line no-unmodified-loop-condition -- set by the stderr listener
        while (gcDone === gcBefore && Date.now() < stop) await sleep(50)
        if (gcDone === gcBefore) throw new Error(`${target}: no full GC after SIGUSR2: ${err}`)
        await burst([path], f.settle)
        execFileSync('callgrind_control', ['-i', 'on', String(proc.pid)], { stdio: 'ignore' })
        execFileSync('callgrind_control', ['-z', String(proc.pid)], { stdio: 'ignore' })
        await burst([path], f.requests)
        execFileSync('callgrind_control', ['-d', String(proc.pid)], { stdio: 'ignore' })
        execFileSync('callgrind_control', ['-i', 'off', String(proc.pid)], { stdio: 'ignore' })
        dumps++
        // one file per thread: callgrind.<name>.<dump>-<thread>; the main thread's GC taken out
        const prefix = `callgrind.${name}.${dumps}-`
        let main = 0
        let gc = 0
        let other = 0
        for (const file of readdirSync(dir).filter((x) => x.startsWith(prefix))) {
          const text = readFileSync(join(dir, file), 'utf8')
          const ir = Number(/^(?:summary|totals): (\d+)/m.exec(text)?.[1] ?? 0)
          if (Number(file.slice(prefix.length)) !== 1) { other += ir; continue }
          main += ir
          gc += inclusive(join(dir, file), GC_FUNCTION)
        }
        if (main === 0) throw new Error(`${target}: no dump of the main thread (${prefix}01)`)
        ;(windows[path] ??= []).push({
          ir: Math.round((main - gc) / f.requests),
          gc: Math.round(gc / f.requests),
          other: Math.round(other / f.requests)
        })
        const r = results[path] = median(windows[path])
        log(`  ${name} ${path}: ${fmt(r.ir)} instructions/request (GC ${fmt(r.gc)}, other threads ${fmt(r.other)}) in ${((Date.now() - t1) / 1000).toFixed(0)} s`)
      }
    }
  } finally {
    agent.destroy()
    await stopProc(proc, 'SIGINT')
    if (bearerStore !== base.store) await bearerStore.close()
  }
  return results
}

/** Every path of this build and the references, in order. */
async function measureAll (base, only) {
  const want = (p) => only.length === 0 || only.includes(p)
  const paths = {}
  const gw = SIDEGATE_PATHS.filter(want)
  if (gw.length > 0) Object.assign(paths, await measure({ base, target: 'sidegate', paths: gw }))
  for (const r of REFERENCES.filter(want)) Object.assign(paths, await measure({ base, target: TARGET[r], paths: [r] }))
  return paths
}

const nodeVersion = process.version

async function budget (mode) {
  const only = f.paths ? f.paths.split(',') : []
  for (const p of only) if (![...SIDEGATE_PATHS, ...REFERENCES].includes(p)) throw new Error(`--paths: unknown path ${p}`)
  if (mode !== 'show' && f.logLevel !== 'info') throw new Error('--log-level: the budget is measured at the shipped level, info')
  const previous = existsSync(f.file) ? JSON.parse(readFileSync(f.file, 'utf8')) : null
  if (mode === 'check' && previous === null) throw new Error(`${f.file}: no budget (write one with --budget write)`)
  // a check measures as the budget was measured
  if (mode === 'check') {
    f.warmup = previous.method.warmup
    f.settle = previous.method.settle
    f.requests = previous.method.requests
    f.connections = previous.method.connections
    f.nodeFlags = previous.method.nodeFlags
  }
  const t0 = Date.now()
  const base = await startBase()
  let measured
  try {
    measured = await measureAll(base, only)
  } finally {
    await base.stop()
  }
  const seconds = Math.round((Date.now() - t0) / 1000)
  const bare = measured.bare_proxy?.ir
  const rows = Object.entries(measured).map(([p, r]) => `${p.padEnd(14)} ${fmt(r.ir).padStart(9)}${bare ? `  ${(r.ir / bare).toFixed(2)}× bare` : ''}  (GC ${fmt(r.gc)}, other threads ${fmt(r.other)})`)
  if (mode === 'show') { console.log(rows.join('\n')); console.log(`${seconds} s`); return 0 }
  if (mode === 'write') {
    const paths = { ...(previous?.paths ?? {}) }
    const references = { ...(previous?.references ?? {}) }
    for (const [p, r] of Object.entries(measured)) (REFERENCES.includes(p) ? references : paths)[p] = r.ir
    writeFileSync(f.file, JSON.stringify({
      comment: 'Instructions per request per path, main thread, under callgrind (bench/callgrind.mjs; docs/performance.md, "Instruction budget"). Regenerate with: node bench/callgrind.mjs --budget write',
      tolerance: previous?.tolerance ?? 0.05,
      node: nodeVersion,
      method: { warmup: f.warmup, settle: f.settle, requests: f.requests, connections: f.connections, store: 'redis', nodeFlags: f.nodeFlags },
      paths,
      // measured and printed, not checked: their count still moves with the machine's load (docs/performance.md)
      unsettled: previous?.unsettled ?? [],
      references
    }, null, 2) + '\n')
    console.log(rows.join('\n'))
    console.log(`written to ${f.file} (${seconds} s)`)
    return 0
  }
  // check
  const tol = previous.tolerance
  if (previous.node !== nodeVersion) log(`note: the budget was measured on Node ${previous.node}, this is ${nodeVersion}: counts move with V8 and OpenSSL`)
  const over = []
  const under = []
  const lines = []
  const unsettled = previous.unsettled ?? []
  for (const [p, r] of Object.entries(measured)) {
    const isRef = REFERENCES.includes(p)
    const ref = isRef || unsettled.includes(p)
    const b = isRef ? previous.references?.[p] : previous.paths[p]
    if (b === undefined) { lines.push(`${p}: ${fmt(r.ir)} instructions/request, no budget${ref ? ' (reference)' : ''}`); if (!ref) over.push(p); continue }
    const ratio = r.ir / b
    const line = `${p}: ${fmt(r.ir)} instructions/request, budget ${fmt(b)}, ${ratio.toFixed(3)}×${isRef ? ' (reference, not checked)' : ref ? ' (unsettled, not checked)' : ''}`
    if (!ref && ratio > 1 + tol) { over.push(p); lines.push(`${line}: OVER BUDGET by ${((ratio - 1) * 100).toFixed(1)}% (tolerance ${tol * 100}%)`) } else if (!ref && ratio < 1 - tol) { under.push(p); lines.push(`${line}: ${((1 - ratio) * 100).toFixed(1)}% below budget: lower it (node bench/callgrind.mjs --budget write)`) } else lines.push(line)
  }
  console.log(lines.join('\n'))
  console.log(over.length > 0
    ? `instruction budget exceeded: ${over.join(', ')} (${seconds} s)`
    : `instruction budget met: ${Object.keys(measured).filter((p) => !REFERENCES.includes(p) && !unsettled.includes(p)).length} paths within ${tol * 100}%${under.length ? `; ${under.join(', ')} well below, the budget can be lowered` : ''} (${seconds} s)`)
  return over.length > 0 ? 1 : 0
}

async function ab () {
  const stores = f.stores.split(',')
  if (stores.length !== 2 || stores.some((s) => s !== 'redis' && s !== 'sqlite')) throw new Error('--stores: two of redis, sqlite')
  if (!SIDEGATE_PATHS.includes(f.scenario)) throw new Error(`--scenario: one of ${SIDEGATE_PATHS.join(', ')}`)
  const base = await startBase()
  const results = {}
  try {
    for (const [name, root, kind] of [['A', resolve(f.a), stores[0]], ['B', resolve(f.b), stores[1]]]) {
      const r = (await measure({ base, target: 'sidegate', root, paths: [f.scenario], kind, name }))[f.scenario]
      results[name] = { store: kind, irPerRequest: r.ir, otherThreads: r.other }
    }
  } finally {
    await base.stop()
  }
  console.log(
    JSON.stringify({
      scenario: f.scenario,
      warmup: f.warmup,
      requests: f.requests,
      ...results,
      ratio: Math.round(1000 * results.B.irPerRequest / results.A.irPerRequest) / 1000
    })
  )
  return 0
}

if (f.budget !== '' && !['check', 'write', 'show'].includes(f.budget)) throw new Error('--budget: check, write or show')
process.exitCode = f.budget ? await budget(f.budget) : await ab()

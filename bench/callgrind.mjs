#!/usr/bin/env node
/**
 * Instructions per request under valgrind's callgrind: a deterministic A/B of
 * two sidegate builds that does not depend on how busy the machine is (CPU
 * µs/request from /proc does). For work on the hot path, not part of
 * `npm run bench`. User-space instructions only: the kernel's share (the
 * socket writes) is not counted, so this shows exactly what the JavaScript
 * and Node do per request.
 *
 *   node bench/callgrind.mjs --a /path/to/checkout-a --b . --scenario private_token --requests 2000
 *
 * Each build runs `sidegate start` under callgrind (log level info, metrics
 * on, as `npm run bench`), gets `--warmup` requests (caches filled, code
 * optimised), then its counters are zeroed, `--requests` requests are sent
 * over 4 keep-alive connections, and the counters dumped: Ir / requests.
 *
 *   --stores redis,sqlite   A on the first store, B on the second (default redis,redis): the same
 *                           build on Redis and on the embedded store (credentials seeded in each)
 */
import http from 'node:http'
import { spawn, execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { stringify } from 'yaml'
import { ROOT, freePort, parseFlags, sleep, stopProc, track } from './lib.mjs'
import { API_PATH, PREFIX, PUBLIC_PATH, PUBLIC_PREFIX, SECRET, openSqliteStore, openStore, seedCredentials, startStack } from './stack.mjs'

const f = parseFlags(process.argv.slice(2), { a: ROOT, b: ROOT, scenario: 'private_token', requests: 2000, warmup: 3000, stores: 'redis,redis' })
const stores = f.stores.split(',')
if (stores.length !== 2 || stores.some((s) => s !== 'redis' && s !== 'sqlite')) throw new Error('--stores: two of redis, sqlite')

const stack = await startStack({ logLevel: 'warn' })
const store = await openStore(stack.redis.url)
const results = {}
try {
  const redisCreds = await seedCredentials(store, 10)
  let creds = redisCreds
  const headersFor = (i) => {
    switch (f.scenario) {
      case 'public': return [PUBLIC_PATH, {}]
      case 'private_token': return [API_PATH, { authorization: `Token ${creds.tokens[i % creds.tokens.length]}` }]
      case 'session': return [API_PATH, { cookie: `svc_sessionid=${creds.sessions[i % creds.sessions.length]}` }]
      // the forward-auth decision about a private-token request (127.0.0.1 is a trusted proxy below)
      case 'decision': return ['/_sidegate/auth', { 'x-forwarded-method': 'GET', 'x-forwarded-uri': API_PATH, authorization: `Token ${creds.tokens[i % creds.tokens.length]}` }]
      // a well-formed token with a wrong check tag: a new guess each time
      case 'rejected': return [API_PATH, { authorization: `Token ${creds.tokens[0].slice(0, 20)}${String(i).padStart(12, '0')}${creds.tokens[0].slice(32, -1)}${creds.tokens[0].endsWith('A') ? 'B' : 'A'}` }]
      default: throw new Error('scenario: public, private_token, session, decision or rejected')
    }
  }
  for (const [name, root, kind] of [['A', resolve(f.a), stores[0]], ['B', resolve(f.b), stores[1]]]) {
    const port = await freePort()
    const file = join(stack.dir, `cg-${name}.yml`)
    const dbPath = join(stack.dir, `cg-${name}.db`)
    creds = redisCreds
    if (kind === 'sqlite') {
      // credentials of its own in its own file, seeded before it starts
      const s = await openSqliteStore(dbPath)
      creds = await seedCredentials(s, 10)
      await s.close()
    }
    writeFileSync(file, stringify({
      listen: { host: '127.0.0.1', port },
      upstream: { url: stack.upstreamUrl, public_paths: [PUBLIC_PREFIX] },
      ...(kind === 'sqlite' ? { store: { backend: 'sqlite', path: dbPath } } : { store: { backend: 'redis' }, redis: { url: stack.redis.url, prefix: PREFIX } }),
      metrics: { host: '127.0.0.1', port: await freePort() },
      server: { drain_delay: 0, trusted_proxies: ['127.0.0.1'] },
      log: { level: 'info' }
    }))
    const out = join(stack.dir, `callgrind.${name}`)
    const proc = track(spawn('valgrind', ['--tool=callgrind', '--smc-check=all-non-file', `--callgrind-out-file=${out}`, process.execPath, join(root, 'bin', 'sidegate.js'), 'start', '--config', file], {
      cwd: stack.dir,
      env: { PATH: process.env.PATH, NODE_ENV: 'production', SIDEGATE_SECRET_KEY: SECRET, SIDEGATE_ADMIN_PASSWORD: 'bench-admin-password' },
      stdio: ['ignore', 'ignore', 'pipe']
    }))
    let err = ''
    proc.stderr.on('data', (c) => { err = (err + c).slice(-5000) })
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 })
    const get = (i) => new Promise((resolve, reject) => {
      const [path, headers] = headersFor(i)
      http.get({ host: '127.0.0.1', port, path, headers, agent }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)) }).on('error', reject)
    })
    const end = Date.now() + 600_000
    for (;;) {
      try { if (await get(0) > 0) break } catch {}
      if (proc.exitCode !== null || Date.now() > end) throw new Error(`sidegate under valgrind did not start: ${err}`)
      await sleep(500)
    }
    const burst = async (n, from) => {
      const statuses = {}
      let next = from
      await Promise.all(Array.from({ length: 4 }, async () => {
        while (next < from + n) { const s = await get(next++); statuses[s] = (statuses[s] ?? 0) + 1 }
      }))
      return statuses
    }
    await burst(f.warmup, 1)
    execFileSync('callgrind_control', ['-z', String(proc.pid)], { stdio: 'ignore' })
    const statuses = await burst(f.requests, 1 + f.warmup)
    execFileSync('callgrind_control', ['-d', String(proc.pid)], { stdio: 'ignore' })
    const dump = readdirSync(stack.dir).filter((x) => x.startsWith(`callgrind.${name}.`)).sort().pop()
    const text = readFileSync(join(stack.dir, dump), 'utf8')
    const ir = Number(/^(?:summary|totals): (\d+)/m.exec(text)[1])
    results[name] = { store: kind, irPerRequest: Math.round(ir / f.requests), statuses }
    process.stderr.write(`  ${name}: ${results[name].irPerRequest} instructions/request ${JSON.stringify(statuses)}\n`)
    agent.destroy()
    await stopProc(proc, 'SIGINT')
  }
  console.log(JSON.stringify({ scenario: f.scenario, requests: f.requests, ...results, ratio: Math.round(1000 * results.B.irPerRequest / results.A.irPerRequest) / 1000 }))
} finally {
  await store.close()
  await stack.stop()
}

/**
 * Keep-alive behind a proxy: real nginx (Debian's) proxies to sidegate in
 * proxy mode with upstream keepalive (keepalive_timeout 60 s, as the shipped
 * configs), in bursts of concurrent POSTs separated by idle gaps around the
 * moment Node's default keep-alive timeout (5 s) closes a connection: 6 s
 * (Node 20 tells clients `Keep-Alive: timeout=5` and closes a second later;
 * nginx does not read that header). sidegate's listener keeps idle
 * connections longer (server.keep_alive_timeout, 65 s), so nginx never sends
 * a request on a connection sidegate is closing: no 502, nothing in nginx's
 * error log. headers_timeout is short here (2 s): the idle time before a
 * request does not count against it. Skipped without nginx, saying why.
 */
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { join } from 'node:path'
import { tempDir, track } from '../fixtures/cleanup.js'
import { startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { startEcho } from '../fixtures/http.js'
import { freePort, listenOn, startRedis } from '../fixtures/redis.js'
import { sleep } from '../fixtures/wait.js'

const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((b) => existsSync(b))
/** a burst: this many POSTs at once, each held 200 ms by the upstream (nginx opens as many upstream connections) */
const BURST = 64
/** rounds of a burst, an idle gap, then a sweep */
const ROUNDS = 3
/**
 * the sweep: a POST every STEP_MS from SWEEP_FROM to SWEEP_TO ms after the burst ended, each on another idle connection
 */
const SWEEP_FROM = 5_940
const SWEEP_TO = 6_060
const STEP_MS = 2

if (NGINX === undefined) {
  t.test('bursts through nginx', { skip: 'nginx is not installed (Debian: apt-get install nginx-light)' }, async () => {})
} else {
  const redis = await startRedis()
  const echo = await startEcho()
  const overrides: Record<string, any> = { upstream: { url: echo.url }, server: { headers_timeout: 2 } }
  // KEEPALIVE_TEST_OLD=1: sidegate closes idle connections after 5 s, as before server.keep_alive_timeout
  if (process.env.KEEPALIVE_TEST_OLD === '1') overrides.server.keep_alive_timeout = 5
  const g = await startGateway(redis.url, overrides)
  t.teardown(async () => { await g.close(); await echo.close(); await redis.stop() })
  const alice = await makeUser(g, 'alice')
  const token = await g.store.privateTokens.create(alice.id)

  const home = tempDir('sidegate-nginx-ka-')
  mkdirSync(join(home, 'tmp'))
  const port = await freePort()
  const sg = new URL(g.url)
  writeFileSync(join(home, 'nginx.conf'), [
    'worker_processes 1;', 'user root;', `pid ${home}/nginx.pid;`, `error_log ${home}/error.log warn;`, 'events { worker_connections 512; }',
    'http {', `  access_log ${home}/access.log;`,
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((k) => `  ${k}_temp_path ${home}/tmp/${k};`),
    // as deploy/forward-auth/nginx.conf: idle upstream connections kept 60 s
    `  upstream sidegate { server ${sg.hostname}:${sg.port}; keepalive 64; keepalive_timeout 60s; }`,
    `  server { listen 127.0.0.1:${port}; location / { proxy_pass http://sidegate; proxy_http_version 1.1; proxy_set_header Connection ""; } }`,
    '}'
  ].join('\n'))
  const proc: ChildProcess = track(spawn(NGINX, ['-c', join(home, 'nginx.conf'), '-p', home, '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] }))
  t.teardown(async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return
    await new Promise<void>((resolve) => { proc.once('exit', () => resolve()); proc.kill('SIGQUIT') })
  })
  if (!(await listenOn(proc, port, 60_000))) throw new Error('nginx did not listen')

  /** A POST through nginx on a fresh client connection (only nginx's upstream connections are reused). */
  const agent = new http.Agent({ keepAlive: false })
  const post = async (i: number): Promise<number> => await new Promise((resolve) => {
    const body = JSON.stringify({ i })
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: `/slow/200?i=${i}`, agent, headers: { authorization: `Token ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', () => resolve(0))
    req.end(body)
  })

  t.test(`${ROUNDS} rounds through nginx: ${BURST} POSTs at once, then after ${SWEEP_FROM} to ${SWEEP_TO} ms idle a POST every ${STEP_MS} ms: no 502, no upstream error in nginx's log`, async (t) => {
    const statuses: number[] = []
    let n = 0
    let opened = 0
    g.gw.server.on('connection', () => { opened++ })
    let warm = 0
    for (let r = 0; r < ROUNDS; r++) {
      statuses.push(...await Promise.all(Array.from({ length: BURST }, async () => await post(++n))))
      if (r === 0) warm = opened
      const ended = Date.now()
      await sleep(SWEEP_FROM)
      const sweep: Array<Promise<number>> = []
      for (let at = SWEEP_FROM; at <= SWEEP_TO; at += STEP_MS) {
        const wait = ended + at - Date.now()
        if (wait > 0) await sleep(wait)
        sweep.push(post(++n))
      }
      statuses.push(...await Promise.all(sweep))
    }
    t.same([...new Set(statuses)], [200], `${statuses.length} POSTs, all answered 200 (${statuses.filter((s) => s !== 200).length} not)`)
    const log = readFileSync(join(home, 'error.log'), 'utf8')
    t.notMatch(log, /upstream prematurely closed|reset by peer|upstream|\[error\]/, 'nginx logged no upstream error')
    t.equal(echo.seen.filter((e) => e.method === 'POST').length, statuses.length, 'every POST reached the upstream once')
    // the race itself is rare; what causes it is not: sidegate closing connections nginx still holds
    t.ok(warm > 0 && warm <= BURST, `nginx opened ${warm} connections for the first burst`)
    t.equal(opened, warm, 'and no more after: sidegate kept every idle connection through the gaps')
    // a stop still closes the idle ones at once, not after keep_alive_timeout
    const stopping = Date.now()
    await g.gw.shutdown(30)
    t.ok(Date.now() - stopping < 3000, `shutdown with ${warm} idle keep-alive connections took ${Date.now() - stopping} ms`)
  })
}

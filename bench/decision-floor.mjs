#!/usr/bin/env node
/**
 * `npm run bench:decision`: sidegate's forward-auth decision endpoint against
 * the minimal token service (bench/peers/token-service.mjs) and the same
 * service writing sidegate's answer head (`--same-answer`), each asked
 * directly by autocannon with the headers nginx's `auth_request` sends
 * (deploy/forward-auth/nginx.conf), interleaved; CPU µs per request of each
 * server process, the median over the rounds. What it separates: the part of
 * a decision's cost node:http pays to write its answer, and sidegate's own.
 * `--nginx`: also each behind nginx as `npm run bench` runs them, the
 * decider's own CPU only.
 *
 *   --rounds N (3)  --duration S (8)  --connections N (50)  --nginx
 */
import autocannon from 'autocannon'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BENCH, cpuSeconds, parseFlags, spawnNode } from './lib.mjs'
import { API_PATH, openStore, seedCredentials, startStack } from './stack.mjs'
import { startNginxDecision } from './peers/nginx-decision.mjs'
import { startNginxPeer } from './peers/nginx.mjs'

const f = parseFlags(process.argv.slice(2), { rounds: 3, duration: 8, connections: 50, nginx: false })
const stack = await startStack()
const stops = [() => stack.stop()]
try {
  const store = await openStore(stack.redis.url)
  stops.unshift(() => store.close())
  const creds = await seedCredentials(store, 10)
  const tokensFile = join(stack.dir, 'tokens.txt')
  writeFileSync(tokensFile, creds.tokens.map((t, i) => `${t} ${creds.users[i]}`).join('\n') + '\n')
  const ts = await spawnNode(join(BENCH, 'peers', 'token-service.mjs'), [tokensFile])
  const same = await spawnNode(join(BENCH, 'peers', 'token-service.mjs'), [tokensFile, '--same-answer'])
  stops.unshift(() => ts.stop(), () => same.stop())
  const targets = [
    { name: 'token service (204, X-User-Id)', url: `http://127.0.0.1:${ts.info.port}/check`, pid: ts.proc.pid },
    { name: 'token service, sidegate\'s answer head', url: `http://127.0.0.1:${same.info.port}/check`, pid: same.proc.pid },
    { name: 'sidegate /_sidegate/auth', url: stack.gatewayUrl + '/_sidegate/auth', pid: stack.gatewayPid }
  ]
  if (f.nginx) {
    const nd = await startNginxDecision({
      dir: stack.dir,
      sidegateUrl: stack.gatewayUrl,
      sidegatePid: stack.gatewayPid,
      upstreamUrl: stack.upstreamUrl
    })
    const np = await startNginxPeer({
      dir: stack.dir,
      upstreamUrl: stack.upstreamUrl,
      tokens: creds.tokens.map((token, i) => ({ token, userId: creds.users[i] }))
    })
    stops.unshift(() => nd.stop(), () => np.stop())
    targets.push({ name: 'behind nginx: token service\'s own', url: np.url + API_PATH, pid: np.authPid, direct: false })
    targets.push({ name: 'behind nginx: sidegate\'s own', url: nd.url + API_PATH, pid: stack.gatewayPid, direct: false })
  }
  let n = 0
  // what nginx's auth_request subrequest carries (the shipped configuration), the client's own headers among them
  const headers = (token) => ({ host: 'app.example', authorization: `Token ${token}`, 'x-original-method': 'GET', 'x-original-uri': API_PATH, 'x-forwarded-host': 'app.example', 'x-forwarded-for': '10.1.2.3', 'user-agent': 'autocannon', accept: '*/*' })
  const run = (t, seconds) => new Promise((resolve, reject) => {
    const before = cpuSeconds([t.pid])
    autocannon({
      url: t.url,
      connections: f.connections,
      duration: seconds,
      requests: [{ method: 'GET', setupRequest: (r) => ({ ...r, headers: t.direct === false ? { authorization: `Token ${creds.tokens[n++ % creds.tokens.length]}` } : headers(creds.tokens[n++ % creds.tokens.length]) }) }]
    }, (err, res) => {
      if (err) return reject(err)
      if (res.errors > 0 || res.non2xx > 0) return reject(new Error(`${t.name}: ${res.errors} errors, ${res.non2xx} non-2xx`))
      resolve({ rps: res.requests.average, us: (cpuSeconds([t.pid]) - before) * 1e6 / res.requests.total })
    })
  })
  for (const t of targets) await run(t, 2)
  const got = new Map(targets.map((t) => [t, []]))
  for (let r = 1; r <= f.rounds; r++) {
    for (const t of targets) {
      const x = await run(t, f.duration)
      got.get(t).push(x)
      process.stderr.write(`round ${r}: ${t.name}: ${Math.round(x.rps)} req/s, ${x.us.toFixed(1)} µs CPU/req\n`)
    }
  }
  const median = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)]
  console.log('| decider | req/s | CPU µs/req |\n| --- | ---: | ---: |')
  for (const [t, xs] of got) console.log(`| ${t.name} | ${Math.round(median(xs.map((x) => x.rps)))} | ${median(xs.map((x) => x.us)).toFixed(1)} |`)
} finally {
  for (const stop of stops) await stop().catch(() => {})
}
process.exit(0)

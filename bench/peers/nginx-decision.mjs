/**
 * sidegate in decision mode: nginx (Debian nginx-light, one worker) runs
 * deploy/forward-auth/nginx.conf as shipped (its placeholders filled), asking
 * the bench's sidegate `/_sidegate/auth` about every request with
 * `auth_request` and proxying to the upstream itself. The CPU of every process
 * of the pair counts (nginx master and worker, sidegate).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, freePort, stopProc } from '../lib.mjs'
import { childPids, findNginx, runNginx } from './nginx.mjs'

/** deploy/forward-auth/nginx.conf with its ${NAME} placeholders filled. */
export function decisionConf (vars) {
  return readFileSync(join(ROOT, 'deploy', 'forward-auth', 'nginx.conf'), 'utf8')
    .replace(/\$\{([A-Z_]+)\}/g, (m, name) => vars[name] === undefined ? m : String(vars[name]))
}

/** Returns { url, version, pids(), stop() }; `sidegatePid`: counted with nginx's processes. */
export async function startNginxDecision ({ dir, sidegateUrl, sidegatePid, upstreamUrl }) {
  const found = findNginx()
  if (found.bin === null) throw new Error(found.why)
  const home = join(dir, 'nginx-decision')
  mkdirSync(join(home, 'tmp'), { recursive: true })
  const port = await freePort()
  const sg = new URL(sidegateUrl)
  const up = new URL(upstreamUrl)
  writeFileSync(join(home, 'sidegate.conf'), decisionConf({
    LISTEN_PORT: `127.0.0.1:${port}`, SIDEGATE_HOST: sg.hostname, SIDEGATE_PORT: sg.port, UPSTREAM_HOST: up.hostname, UPSTREAM_PORT: up.port
  }))
  // as bench/peers/nginx.mjs: one worker, the access log buffered to a file
  const { proc } = await runNginx(found.bin, home, port, `  include ${home}/sidegate.conf;`)
  return {
    url: `http://127.0.0.1:${port}`,
    version: found.version,
    pids: () => [proc.pid, ...childPids(proc.pid), sidegatePid],
    async stop () { await stopProc(proc, 'SIGQUIT') }
  }
}

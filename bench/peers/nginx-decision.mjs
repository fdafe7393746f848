/**
 * sidegate in decision mode: nginx (Debian nginx-light, one worker) runs
 * deploy/forward-auth/nginx.conf as shipped (its placeholders filled), asking
 * the bench's sidegate `/_sidegate/auth` about every request with
 * `auth_request` and proxying to the upstream itself. The CPU of every process
 * of the pair counts (nginx master and worker, sidegate).
 */
import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, freePort, stopProc, track, waitForPort } from '../lib.mjs'
import { findNginx } from './nginx.mjs'

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
  const conf = join(home, 'nginx.conf')
  // as bench/peers/nginx.mjs: one worker, the access log buffered to a file
  writeFileSync(conf, `
worker_processes 1;
user root;
pid ${home}/nginx.pid;
error_log ${home}/error.log warn;
events { worker_connections 4096; }
http {
  access_log ${home}/access.log combined buffer=64k flush=1s;
  client_body_temp_path ${home}/tmp/body;
  proxy_temp_path ${home}/tmp/proxy;
  fastcgi_temp_path ${home}/tmp/fastcgi;
  uwsgi_temp_path ${home}/tmp/uwsgi;
  scgi_temp_path ${home}/tmp/scgi;
  keepalive_requests 100000;
  include ${home}/sidegate.conf;
}
`)
  const proc = track(spawn(found.bin, ['-c', conf, '-p', home, '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] }))
  let err = ''
  proc.stderr.setEncoding('utf8')
  proc.stderr.on('data', (c) => { err += c })
  proc.once('exit', (code) => { if (code !== 0 && code !== null) err += `\nnginx exited ${code}` })
  try {
    await waitForPort(port)
  } catch (e) {
    await stopProc(proc, 'SIGKILL')
    throw new Error(`nginx (decision) did not start: ${err || e.message}`)
  }
  return {
    url: `http://127.0.0.1:${port}`,
    version: found.version,
    pids: () => [proc.pid, ...childPids(proc.pid), sidegatePid],
    async stop () { await stopProc(proc, 'SIGQUIT') }
  }
}

function childPids (pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch { return [] }
}

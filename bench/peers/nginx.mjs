/**
 * The peer a team would otherwise deploy: nginx (Debian nginx-light) with one
 * worker, keep-alive upstreams, `auth_request` to a minimal in-memory token
 * service (bench/peers/token-service.mjs), its access log buffered to a file
 * as sidegate's is. The CPU of every process of the pair counts (master,
 * worker, token service).
 */
import { spawn, execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BENCH, freePort, spawnNode, stopProc, track, waitForPort } from '../lib.mjs'

/** The nginx binary, or null with the reason (the bench then skips the row and says why). */
export function findNginx () {
  for (const bin of ['/usr/sbin/nginx', '/usr/bin/nginx']) {
    try {
      const v = execFileSync(bin, ['-V'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
      return { bin, version: v.trim().split('\n')[0] }
    } catch (err) {
      const out = String(err.stderr ?? '')
      if (err.code === 'ENOENT') continue
      if (!out.includes('http_auth_request_module')) return { bin: null, why: `${bin} has no auth_request module` }
      return { bin, version: out.trim().split('\n')[0] }
    }
  }
  return { bin: null, why: 'nginx is not installed (Debian: apt-get install nginx-light)' }
}

/** `tokens`: [{ token, userId }]. Returns { url, pids(), authPid, stop() }. */
export async function startNginxPeer ({ dir, upstreamUrl, tokens }) {
  const found = findNginx()
  if (found.bin === null) throw new Error(found.why)
  const home = join(dir, 'nginx')
  mkdirSync(join(home, 'tmp'), { recursive: true })
  const tokensFile = join(home, 'tokens.txt')
  writeFileSync(tokensFile, tokens.map((t) => `${t.token} ${t.userId}`).join('\n') + '\n')
  const auth = await spawnNode(join(BENCH, 'peers', 'token-service.mjs'), [tokensFile])
  const port = await freePort()
  const up = new URL(upstreamUrl)
  let n
  try {
    n = await runNginx(found.bin, home, port, `
  upstream app { server ${up.hostname}:${up.port}; keepalive 128; }
  upstream authsvc { server 127.0.0.1:${auth.info.port}; keepalive 128; }
  server {
    listen 127.0.0.1:${port};
    location = /_auth {
      internal;
      proxy_pass http://authsvc/check;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-URI $request_uri;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
    location / {
      auth_request /_auth;
      auth_request_set $sg_user $upstream_http_x_user_id;
      proxy_set_header X-SVC-User-Id $sg_user;
      proxy_set_header Authorization "";
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_pass http://app;
    }
  }
`)
  } catch (e) {
    await auth.stop()
    throw e
  }
  const proc = n.proc
  return {
    url: `http://127.0.0.1:${port}`,
    version: found.version,
    /** master, its workers and the token service */
    pids: () => [proc.pid, ...childPids(proc.pid), auth.proc.pid],
    /** the token service: the peer's decider */
    authPid: auth.proc.pid,
    async stop () {
      await stopProc(proc, 'SIGQUIT')
      await auth.stop()
    }
  }
}

/**
 * nginx with one worker, its access log buffered to a file, and `http`: the
 * server-specific lines of its http block; waits for it to listen on `port`.
 * Shared by the auth_request peer and the decision row (./nginx-decision.mjs).
 */
export async function runNginx (bin, home, port, http) {
  mkdirSync(join(home, 'tmp'), { recursive: true })
  const conf = join(home, 'nginx.conf')
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
${http}
}
`)
  const proc = track(spawn(bin, ['-c', conf, '-p', home, '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] }))
  let err = ''
  proc.stderr.setEncoding('utf8')
  proc.stderr.on('data', (c) => { err += c })
  proc.once('exit', (code) => { if (code !== 0 && code !== null) err += `\nnginx exited ${code}` })
  try {
    await waitForPort(port)
  } catch (e) {
    await stopProc(proc, 'SIGKILL')
    throw new Error(`nginx did not start: ${err || e.message}`)
  }
  return { proc }
}

/** The processes nginx's master started (its workers). */
export function childPids (pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch { return [] }
}

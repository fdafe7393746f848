/**
 * The README's quick start, run as written: its `sh` block extracted and run
 * by bash in a copy of this checkout, on a machine where Prometheus holds 9090
 * and something else holds 9000 (this test takes both first, when free). It
 * must need no port edits, wait for /readyz itself, and print what the README
 * says it prints: the identity headers the upstream got, then the one-time
 * token refused. It uses the ports the README names (8080, 8070, 7080), so it
 * skips when one of them is taken.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { cpSync, readFileSync, symlinkSync } from 'node:fs'
import net from 'node:net'
import { join } from 'node:path'
import { ROOT } from '../fixtures/gateway.js'
import { tempDir, track } from '../fixtures/cleanup.js'
import { childEnv } from '../fixtures/procs.js'

t.setTimeout(180_000)

/** The block under "## Quick start". */
function quickStart (): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const m = /## Quick start\n+```sh\n([\s\S]*?)\n```/.exec(readme)
  if (m === null) throw new Error('README.md: no sh block under "## Quick start"')
  return m[1]
}

/** Listens on `port` (all interfaces) until closed; null when something else has it already. */
async function hold (port: number): Promise<net.Server | null> {
  const s = net.createServer((c) => c.destroy())
  return await new Promise((resolve) => {
    s.once('error', () => resolve(null))
    s.listen(port, '0.0.0.0', () => resolve(s))
  })
}

const held = await Promise.all([9090, 9000].map(hold))
const free = await Promise.all([8080, 8070, 7080].map(async (p) => {
  const s = await hold(p)
  await new Promise((resolve) => s === null ? resolve(null) : s.close(resolve))
  return s !== null
}))
t.teardown(() => { for (const s of held) s?.close() })

t.test('the README quick start runs as written, beside Prometheus on 9090 and something on 9000', {
  skip: free.every(Boolean) ? false : 'a port the quick start uses (8080, 8070, 7080) is taken here'
}, async (t) => {
  // a copy of the checkout after `npm ci` (its dist/ built, the dependencies linked): the quick start writes there
  const dir = tempDir('sidegate-readme-')
  for (const f of ['package.json', 'package-lock.json', 'bin', 'dist', 'static', 'gateway.yml']) cpSync(join(ROOT, f), join(dir, f), { recursive: true })
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  const env = childEnv()
  // every command must succeed (set -e); the background jobs (the upstream, npm start) end with the block
  const script = `set -e\ntrap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n${quickStart()}\n`
  const p = track(spawn('bash', ['-c', script], { cwd: dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] }))
  let out = ''
  let err = ''
  p.stdout.on('data', (c: Buffer) => { out += c.toString() })
  p.stderr.on('data', (c: Buffer) => { err += c.toString() })
  const timer = setTimeout(() => { try { process.kill(-p.pid!, 'SIGKILL') } catch {} }, 150_000)
  const code = await new Promise<number | null>((resolve) => p.once('close', resolve))
  clearTimeout(timer)
  try { process.kill(-p.pid!, 'SIGKILL') } catch {}
  t.equal(code, 0, `the block exits 0${code === 0 ? '' : `: ${err.slice(-1500)}\n${out.slice(-1500)}`}`)
  t.match(out, /"x-svc-username": "alice"/, 'the upstream saw alice')
  t.match(out, /"x-svc-auth-method": "bearer"/, 'signed in with the bearer token')
  t.notMatch(out, /"authorization"/, 'and never the token')
  t.match(out, /\{"detail":"Invalid or expired token\.","code":"invalid_token"\}/, 'the token was one-time')
  t.notMatch(err, /EADDRINUSE|cannot listen/, 'no port had to be moved')
})

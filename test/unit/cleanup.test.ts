/**
 * test/fixtures/cleanup.ts: whatever a test process started is gone when it
 * ends, however it ends. A child node process starts a process of its own (a
 * plain node process listening on a port, as a Redis server or a gateway
 * would) and makes a temp dir through the fixtures, then is killed: with
 * SIGALRM (tap's timeout, the signal handler runs) and with SIGKILL (no
 * handler can run: the detached reaper does the work).
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { connect } from 'node:net'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from '../fixtures/gateway.js'
import { track } from '../fixtures/cleanup.js'
import { eventually } from '../fixtures/wait.js'

/** Something accepts connections on the port. */
const listening = async (port: number): Promise<boolean> => await new Promise((resolve) => {
  const s = connect(port, '127.0.0.1')
  s.once('connect', () => { s.destroy(); resolve(true) })
  s.once('error', () => resolve(false))
})
/** the TypeScript loader tap runs test files with (package.json "tap".node-arg) */
const LOADER = 'tsx'

async function startVictim (): Promise<{ kill: (s: NodeJS.Signals) => void, port: number, dir: string }> {
  const p = track(spawn(process.execPath, [`--import=${LOADER}`, join(ROOT, 'test', 'fixtures', 'cleanup-victim.ts')], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] }))
  const line = await new Promise<string>((resolve, reject) => {
    let out = ''
    p.stdout!.on('data', (c: Buffer) => { out += c.toString(); if (out.includes('\n')) resolve(out.split('\n')[0]) })
    p.once('exit', (code) => reject(new Error(`the test process exited ${code}: ${out}`)))
  })
  const { port, dir } = JSON.parse(line) as { port: number, dir: string }
  return { kill: (s) => p.kill(s), port, dir }
}

for (const signal of ['SIGALRM', 'SIGKILL'] as const) {
  t.test(`a test process killed with ${signal}: the process it started and its temp dir are gone`, async (t) => {
    const v = await startVictim()
    t.ok(await listening(v.port), `its child process answers on ${v.port}`)
    t.ok(existsSync(v.dir), 'the temp dir exists')
    v.kill(signal)
    const started = Date.now()
    t.ok(await eventually(async () => !(await listening(v.port)) && !existsSync(v.dir), 30_000, 100), `both gone (${Date.now() - started} ms)`)
  })
}

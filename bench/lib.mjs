/**
 * Shared helpers of the bench: free ports, a private redis-server, child
 * processes that announce themselves with one JSON line on stdout.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const BENCH = import.meta.dirname
export const ROOT = join(BENCH, '..')

const children = new Set()
// Every child dies with the bench, whatever happens to it.
process.once('exit', () => { for (const p of children) p.kill('SIGKILL') })
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => process.exit(130))

export function track (proc) {
  children.add(proc)
  proc.once('exit', () => children.delete(proc))
  return proc
}

export async function freePort () {
  return await new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
}

export async function waitForPort (port, ms = 10_000) {
  const end = Date.now() + ms
  for (;;) {
    const ok = await new Promise((resolve) => {
      const c = connect(port, '127.0.0.1')
      c.once('connect', () => { c.destroy(); resolve(true) })
      c.once('error', () => resolve(false))
    })
    if (ok) return
    if (Date.now() > end) throw new Error(`nothing listens on ${port} after ${ms} ms`)
    await sleep(25)
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** A redis-server of our own: random port, temp dir, no persistence. Never 6379. */
export async function startRedis () {
  const dir = mkdtempSync(join(tmpdir(), 'sidegate-bench-redis-'))
  const port = await freePort()
  const proc = track(spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' }))
  await waitForPort(port)
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: proc.pid,
    async stop () {
      if (proc.exitCode === null) await new Promise((resolve) => { proc.once('exit', resolve); proc.kill('SIGKILL') })
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

/**
 * Runs `node <script> [args]`; resolves with the first JSON line it prints on
 * stdout (its address), rejects if it exits first.
 */
export async function spawnNode (script, args = [], o = {}) {
  const proc = track(spawn(process.execPath, [...(o.nodeArgs ?? []), script, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: o.env ?? process.env }))
  const info = await new Promise((resolve, reject) => {
    let buf = ''
    const onData = (c) => {
      buf += c
      const nl = buf.indexOf('\n')
      if (nl === -1) return
      proc.stdout.off('data', onData)
      proc.stdout.resume()
      try { resolve(JSON.parse(buf.slice(0, nl))) } catch (err) { reject(err) }
    }
    proc.stdout.setEncoding('utf8')
    proc.stdout.on('data', onData)
    proc.once('exit', (code) => reject(new Error(`${script} exited ${code} before it was ready`)))
  })
  return { proc, info, stop: () => stopProc(proc) }
}

export async function stopProc (proc, signal = 'SIGTERM') {
  if (proc.exitCode !== null || proc.signalCode !== null) return
  await new Promise((resolve) => {
    const t = setTimeout(() => proc.kill('SIGKILL'), 5000)
    proc.once('exit', () => { clearTimeout(t); resolve() })
    proc.kill(signal)
  })
}

/** Runs a child to completion and parses the last line of its stdout as JSON. */
export async function runJson (script, input, o = {}) {
  const proc = track(spawn(process.execPath, [script], { stdio: ['pipe', 'pipe', 'inherit'], env: o.env ?? process.env }))
  proc.stdin.end(JSON.stringify(input))
  let out = ''
  proc.stdout.setEncoding('utf8')
  proc.stdout.on('data', (c) => { out += c })
  const code = await new Promise((resolve) => proc.once('exit', resolve))
  const last = out.trim().split('\n').pop()
  if (code !== 0) throw new Error(`${script} exited ${code}: ${out.slice(-500)}`)
  return JSON.parse(last)
}

export function parseFlags (argv, defaults) {
  const o = { ...defaults }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`)
    const eq = a.indexOf('=')
    const name = (eq === -1 ? a.slice(2) : a.slice(2, eq)).replace(/-([a-z])/g, (_, c) => c.toUpperCase())
    if (!(name in defaults)) throw new Error(`unknown flag --${name}; known: ${Object.keys(defaults).map((k) => '--' + k).join(' ')}`)
    if (typeof defaults[name] === 'boolean') { o[name] = eq === -1 ? true : a.slice(eq + 1) !== 'false'; continue }
    const v = eq === -1 ? argv[++i] : a.slice(eq + 1)
    if (v === undefined) throw new Error(`--${name} needs a value`)
    o[name] = typeof defaults[name] === 'number' ? Number(v) : v
    if (typeof defaults[name] === 'number' && !Number.isFinite(o[name])) throw new Error(`--${name} must be a number`)
  }
  return o
}

/**
 * CPU seconds (user + system) the processes have used so far (Linux /proc); null when one is gone or there is no /proc.
 */
export function cpuSeconds (pids) {
  let sum = 0
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      sum += (Number(f[11]) + Number(f[12])) / 100 // USER_HZ, 100 on Linux
    } catch { return null }
  }
  return sum
}

/**
 * Sign-ins at concurrencies 1, 4 and 16, `requests` each: `once(i)` makes the
 * i-th and resolves to its milliseconds. A row per concurrency: sign-ins per
 * second and the latency's p50 and p95 (bench/sign-in-*.mjs).
 */
export async function signInRows (once, requests) {
  const rows = []
  for (const concurrency of [1, 4, 16]) {
    const ms = []
    let next = 0
    const started = Date.now()
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < requests) ms.push(await once(next++))
    }))
    const seconds = (Date.now() - started) / 1000
    ms.sort((a, b) => a - b)
    const at = (q) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))].toFixed(1)
    rows.push({ concurrency, 'sign-ins/s': Math.round(ms.length / seconds), 'p50 ms': at(0.5), 'p95 ms': at(0.95) })
  }
  return rows
}

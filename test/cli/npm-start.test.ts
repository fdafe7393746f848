/**
 * `npm start` stops cleanly: the script execs node, so the SIGTERM npm
 * forwards reaches sidegate itself (with `sh -c node …` it reached only the
 * shell, and node went on serving), and Ctrl-C at a terminal, which node gets
 * once from the terminal and once more from npm, is one graceful stop.
 * The real npm, running this package's own start script.
 */
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { request } from '../fixtures/http.js'
import { embeddedStore, ROOT, SECRET, storeDoc } from '../fixtures/gateway.js'
import { npmStartIn, workdir } from '../fixtures/procs.js'
import { eventually } from '../fixtures/wait.js'

const hasNpm = spawnSync('npm', ['--version'], { encoding: 'utf8' }).status === 0
const db = embeddedStore()
t.teardown(() => db.stop())

/** A copy of the package's start script in a directory of its own, with its own gateway.yml. */
async function npmStart (prefix: string): Promise<{
  p: ReturnType<typeof spawn>,
  url: string,
  out: () => string,
  exited: Promise<number | null>
}> {
  const W = await workdir({ ...storeDoc(db.url, prefix), server: { drain_delay: 1, shutdown_grace: 2 } }, 'sidegate-npm-')
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
  writeFileSync(join(W.dir, 'package.json'), JSON.stringify({ name: 'npm-start-check', version: '0.0.0', private: true, scripts: { start: pkg.scripts.start } }))
  symlinkSync(join(ROOT, 'bin'), join(W.dir, 'bin'))
  const { p, out, exited } = npmStartIn(W.dir, { SIDEGATE_SECRET_KEY: SECRET })
  t.teardown(() => { try { process.kill(-p.pid!, 'SIGKILL') } catch {} })
  const ok = await eventually(async () => { try { return (await request(W.url, '/readyz')).status === 200 } catch { return false } }, 30_000, 100)
  if (!ok) throw new Error(`npm start did not become ready: ${out()}`)
  return { p, url: W.url, out, exited }
}

const gone = async (url: string): Promise<boolean> => { try { await request(url, '/healthz'); return false } catch { return true } }

t.test('kill <npm pid> (SIGTERM): sidegate drains and exits, npm with it', { skip: hasNpm ? false : 'npm not installed' }, async (t) => {
  const s = await npmStart('npm1:')
  s.p.kill('SIGTERM') // npm's pid, not node's
  t.equal(await s.exited, 0, 'npm exits 0 (it waited for sidegate)')
  t.match(s.out(), /exec node bin\/sidegate\.js start --config gateway\.yml/, 'the script as package.json has it')
  t.ok(await eventually(async () => await gone(s.url), 5000), 'nothing serves on the port any more')
  t.match(s.out(), /"signal":"SIGTERM".*draining/s)
  t.match(s.out(), /"msg":"stopped"/, 'a complete shutdown')
})

t.test('Ctrl-C (SIGINT to the whole foreground group): one graceful stop, not a kill halfway', { skip: hasNpm ? false : 'npm not installed' }, async (t) => {
  const s = await npmStart('npm2:')
  process.kill(-s.p.pid!, 'SIGINT')
  t.equal(await s.exited, 0, 'npm exits 0')
  t.ok(await eventually(async () => await gone(s.url), 5000), 'nothing serves on the port any more')
  t.match(s.out(), /"msg":"stopped"/, 'sidegate finished its shutdown')
  t.notMatch(s.out(), /again: exiting without waiting/, 'the second copy of the signal was not taken for a second Ctrl-C')
})

/**
 * What `npm start` writes beside gateway.yml stays out of git: in a fresh
 * clone, `git status --porcelain` is empty after it (the repository's
 * .gitignore); in another git work tree that does not ignore the store or the
 * key file, the start warns, naming each (src/app/git-exposure.ts). The real
 * npm and git, running this package's own start script.
 */
import t from 'tap'
import { cpSync, existsSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { request } from '../fixtures/http.js'
import { ROOT } from '../fixtures/gateway.js'
import { npmStartIn } from '../fixtures/procs.js'
import { eventually } from '../fixtures/wait.js'
import { tempDir } from '../fixtures/cleanup.js'
import { freePort } from '../fixtures/redis.js'

const hasNpm = spawnSync('npm', ['--version'], { encoding: 'utf8' }).status === 0
const hasGit = spawnSync('git', ['--version']).status === 0
const inClone = hasGit && spawnSync('git', ['-C', ROOT, 'rev-parse', '--is-inside-work-tree']).status === 0

/**
 * `npm start` as a new user runs it, in `dir` (the package's
 * gateway.yml, its port from SIDEGATE_PORT), until ready; then stopped.
 */
async function startedIn (dir: string): Promise<string> {
  const port = await freePort()
  const { p, out, exited } = npmStartIn(dir, { SIDEGATE_PORT: String(port), SIDEGATE_ADMIN_PASSWORD: 'first-admin-password-1' })
  t.teardown(() => { try { process.kill(-p.pid!, 'SIGKILL') } catch {} })
  const ok = await eventually(async () => { try { return (await request(`http://127.0.0.1:${port}`, '/readyz')).status === 200 } catch { return false } }, 30_000, 100)
  if (!ok) throw new Error(`npm start did not become ready: ${out()}`)
  p.kill('SIGTERM')
  if (await exited !== 0) throw new Error(`npm start did not stop with 0: ${out()}`)
  return out()
}

t.test('npm start in a fresh clone leaves nothing for `git add -A`: the store and the key file are ignored', { skip: !hasNpm ? 'npm not installed' : !inClone ? 'not a git clone' : false }, async (t) => {
  const dir = join(tempDir('sidegate-clone-'), 'sidegate')
  const clone = spawnSync('git', ['clone', '-q', '--depth', '1', `file://${ROOT}`, dir], { encoding: 'utf8' })
  t.equal(clone.status, 0, clone.stderr)
  // what `npm ci` would put there: the dependencies, and the build `prepare` makes
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true })
  const out = await startedIn(dir)
  t.ok(existsSync(join(dir, 'sidegate.db')), 'the embedded store was created beside gateway.yml')
  t.ok(readdirSync(dir).some((f) => f.endsWith('.key')), 'and the secret key file')
  t.equal(spawnSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=all'], { encoding: 'utf8' }).stdout, '', 'git status --porcelain is empty')
  t.notMatch(out, /is in a git work tree and not ignored/, 'no warning: they are ignored')
})

t.test('a store or key file in a git work tree that does not ignore it: a warning naming each', { skip: !hasNpm ? 'npm not installed' : !hasGit ? 'git not installed' : false }, async (t) => {
  const dir = tempDir('sidegate-repo-')
  t.equal(spawnSync('git', ['init', '-q', dir]).status, 0)
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'git-exposure-check', version: '0.0.0', private: true, scripts: { start: pkg.scripts.start } }))
  writeFileSync(join(dir, 'gateway.yml'), 'log:\n  level: info\n')
  symlinkSync(join(ROOT, 'bin'), join(dir, 'bin'))
  writeFileSync(join(dir, '.gitignore'), 'bin\n')
  const out = await startedIn(dir)
  for (const file of ['sidegate.db', 'sidegate.key']) t.match(out, new RegExp(`${join(dir, file).replace(/[.]/g, '\\.')} is in a git work tree and not ignored`), `${file} named`)
  writeFileSync(join(dir, '.gitignore'), 'bin\nsidegate.db*\n*.key\n')
  t.notMatch(await startedIn(dir), /is in a git work tree/, 'ignored: no warning')
})

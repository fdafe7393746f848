/**
 * sidegate as a package, the way a user installs it: `npm pack` in a copy of
 * this checkout (its `prepare` builds dist/ there), `npm install -g` of the
 * tarball into a prefix of its own (production dependencies only, from the
 * registry or npm's cache; nothing compiled but better-sqlite3), then the
 * installed `sidegate start` in an empty directory: it writes gateway.yml,
 * the key file and the store there, saying where, serves, signs the admin in,
 * and stops on SIGINT. The real npm; slow (better-sqlite3 builds from source
 * where no prebuilt binary can be fetched, minutes on a loaded 2-core machine).
 */
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, existsSync, readdirSync, readFileSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { request } from '../fixtures/http.js'
import { ROOT } from '../fixtures/gateway.js'
import { childEnv, startIn } from '../fixtures/procs.js'
import { freePort } from '../fixtures/redis.js'
import { login } from '../fixtures/session.js'
import { tempDir, track } from '../fixtures/cleanup.js'
import { defaultsYaml } from '../../src/config/defaults.js'

const hasNpm = spawnSync('npm', ['--version'], { encoding: 'utf8' }).status === 0
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
// the install builds better-sqlite3 from source: more than the default 300 s per file on a busy machine
t.setTimeout(1_200_000)

const npmEnv = childEnv

/** `npm …` in `cwd`; its exit code and output (killed after 15 minutes). */
async function npm (cwd: string, args: string[]): Promise<{ code: number | null, out: string }> {
  const p = track(spawn('npm', args, { cwd, env: npmEnv(), stdio: ['ignore', 'pipe', 'pipe'] }))
  let out = ''
  p.stdout.on('data', (c: Buffer) => { out += c.toString() })
  p.stderr.on('data', (c: Buffer) => { out += c.toString() })
  const timer = setTimeout(() => p.kill('SIGKILL'), 900_000)
  const code = await new Promise<number | null>((resolve) => p.once('close', resolve))
  clearTimeout(timer)
  return { code, out }
}

/** The fields of the JSON log line whose msg is `msg`. */
const logLine = (out: string, msg: string): Record<string, any> | undefined =>
  out.split('\n').flatMap((l) => { try { return [JSON.parse(l)] } catch { return [] } }).find((o) => o.msg === msg)

t.test('npm pack → npm install -g → sidegate start in an empty directory serves', { skip: hasNpm ? false : 'npm not installed' }, async (t) => {
  // a copy of the checkout as a clone has it after `npm ci`: sources, the dependencies (linked), no dist/
  const src = tempDir('sidegate-pack-src-')
  for (const f of ['package.json', 'package-lock.json', 'tsconfig.json', 'src', 'scripts', ...pkg.files.map((f: string) => f.split('/')[0])]) {
    if (f !== 'dist') cpSync(join(ROOT, f), join(src, f), { recursive: true })
  }
  symlinkSync(join(ROOT, 'node_modules'), join(src, 'node_modules'))
  const out = tempDir('sidegate-pack-')
  const packed = await npm(src, ['pack', '--pack-destination', out])
  t.equal(packed.code, 0, packed.code === 0 ? 'npm pack' : packed.out)
  const tgz = join(out, `sidegate-${pkg.version as string}.tgz`)
  t.ok(existsSync(tgz), `${tgz} written`)
  const listed = spawnSync('tar', ['-tzf', tgz], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l !== '')
  t.ok(listed.includes('package/dist/cli/index.js'), 'the tarball carries dist/, built by prepare')
  t.same(listed.filter((f) => /\.(ts|map)$/.test(f) || /^package\/(src|test|scripts)\//.test(f)), [], 'and no sources, tests, declarations or source maps')

  const prefix = join(out, 'prefix')
  const installed = await npm(out, ['install', '-g', '--prefix', prefix, '--prefer-offline', tgz])
  t.equal(installed.code, 0, installed.code === 0 ? 'npm install -g of the tarball' : installed.out)
  const home = join(prefix, 'lib', 'node_modules', 'sidegate')
  const deps = readdirSync(join(home, 'node_modules'))
  // a dev dependency that a production one also needs (ldapts → @types/asn1 → @types/node) is installed
  // rightly: the lock marks only the dev-only ones `dev: true`
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'))
  const devOnly = Object.keys(pkg.devDependencies).filter((d) => lock.packages[`node_modules/${d}`]?.dev === true)
  for (const dev of devOnly) t.notOk(existsSync(join(home, 'node_modules', dev)), `no ${dev} (a dev-only dependency)`)
  const bin = join(prefix, 'bin', 'sidegate')
  const version = spawnSync(bin, ['--version'], { encoding: 'utf8', env: npmEnv() })
  t.equal(version.stdout.trim(), `sidegate ${pkg.version as string}`, 'sidegate --version')
  const size = spawnSync('du', ['-sk', home], { encoding: 'utf8' }).stdout.split('\t')[0]
  const count = deps.flatMap((d) => d.startsWith('@') ? readdirSync(join(home, 'node_modules', d)) : d.startsWith('.') ? [] : [d]).length
  t.comment(`installed: ${count} packages at the top of node_modules, ${Math.round(Number(size) / 1024)} MB`)

  const dir = tempDir('sidegate-installed-')
  const port = await freePort()
  const env = { SIDEGATE_HOST: '127.0.0.1', SIDEGATE_PORT: String(port), SIDEGATE_METRICS_PORT: String(await freePort()) }
  const url = `http://127.0.0.1:${port}`
  const s = await startIn(dir, url, { bin, env })
  t.teardown(async () => { await s.stop('SIGKILL') })
  const password = /created superuser "admin" with password: (\S+)/.exec(s.err())?.[1]
  t.ok(password, 'the generated admin password is printed once')
  const session = await login(url, 'admin', password!)
  const profile = await request(url, '/api/v1/users/profile/', { headers: { cookie: session.cookie } })
  t.same([profile.status, profile.json?.username], [200, 'admin'], 'an authenticated request as admin')
  t.equal(await s.stop('SIGINT'), 0, 'SIGINT: a clean stop')

  // what it wrote, and where it said
  t.match(s.err(), `sidegate: wrote the default config to ${join(dir, 'gateway.yml')}`, 'gateway.yml, said on stderr')
  t.equal(readFileSync(join(dir, 'gateway.yml'), 'utf8'), defaultsYaml(), 'the default file, every key commented')
  t.equal(logLine(s.out(), 'store ready')?.path, join(dir, 'sidegate.db'), 'the store, said in the log')
  t.match(logLine(s.out(), 'generated a new secret key; back it up: encrypted access-key secrets and private tokens cannot be read without it'),
    { path: join(dir, 'sidegate.key') }, 'the key file, said in the log')
  t.same(readdirSync(dir).filter((f) => !/^sidegate\.db-(wal|shm)$/.test(f)).sort(), ['gateway.yml', 'sidegate.db', 'sidegate.key'], 'nothing else')
  t.equal(readFileSync(join(dir, 'sidegate.key'), 'utf8').trim().length >= 32, true, 'a key of 32 characters or more')
})

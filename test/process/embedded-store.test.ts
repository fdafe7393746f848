/**
 * The embedded store as a newcomer meets it: `npm start` in a directory as a
 * fresh clone has it (the shipped gateway.yml, no Redis configured) serves the
 * README's quick start on sidegate.db; the CLI beside the running gateway
 * (and its --workers) shares the file, and a revocation from it is refused
 * everywhere within a second; a restart keeps everything; a writer killed
 * with SIGKILL loses nothing it acknowledged; an empty store under a key that
 * was used before is reported (or refused); a file that is not a sidegate
 * store stops the start with one line.
 */
import t from 'tap'
import Database from 'better-sqlite3'
import { spawn } from 'node:child_process'
import { copyFileSync, existsSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { Keyring } from '../../src/crypto.js'
import { SqliteStore } from '../../src/store/sqlite/index.js'
import { tempDir, track } from '../fixtures/cleanup.js'
import { signedHeaders } from '../fixtures/creds.js'
import { ROOT, SECRET } from '../fixtures/gateway.js'
import { request, startEcho } from '../fixtures/http.js'
import { cliIn, npmStartIn, spawnIn, startIn, type Started } from '../fixtures/procs.js'
import { freePort } from '../fixtures/redis.js'
import { eventually } from '../fixtures/wait.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const echo = await startEcho()
t.teardown(() => echo.close())

/** A directory as a fresh clone has it: the shipped gateway.yml and package.json, bin/ linked to this checkout's. */
function freshDir (): string {
  const dir = tempDir('sidegate-embedded-')
  copyFileSync(join(ROOT, 'gateway.yml'), join(dir, 'gateway.yml'))
  copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'))
  symlinkSync(join(ROOT, 'bin'), join(dir, 'bin'))
  return dir
}

/** Ports of its own, and what the README's quick start sets; nothing that names a Redis. */
async function envFor (o: Record<string, string> = {}): Promise<{
  env: Record<string, string>,
  url: string,
  metrics: string
}> {
  const port = await freePort()
  const metrics = await freePort()
  return {
    env: { SIDEGATE_HOST: '127.0.0.1', SIDEGATE_PORT: String(port), SIDEGATE_METRICS_PORT: String(metrics), SIDEGATE_UPSTREAM: echo.url, SIDEGATE_ADMIN_PASSWORD: 'change-me-please', ...o },
    url: `http://127.0.0.1:${port}`,
    metrics: `http://127.0.0.1:${metrics}`
  }
}

const form = (fields: Record<string, string>): { method: string, body: string, headers: Record<string, string> } =>
  ({ method: 'POST', body: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })

t.test('npm start with no Redis configured serves the README\'s quick start on the embedded store', async (t) => {
  const dir = freshDir()
  const { env, url } = await envFor()
  const { p, out: output, exited } = npmStartIn(dir, env)
  let out = ''
  t.teardown(() => { try { process.kill(-p.pid!, 'SIGKILL') } catch {} })
  t.ok(await eventually(async () => { try { return (await request(url, '/readyz')).status === 200 } catch { return false } }, 60_000, 100), `ready: ${output()}`)
  out = output()

  const store = JSON.parse(out.split('\n').find((l) => l.includes('"msg":"store ready"')) ?? '{}')
  t.match(store, { store: 'sqlite', path: join(dir, 'sidegate.db') }, 'the log says which store and where')
  t.notMatch(out, /redis/i, 'no Redis is named, let alone reached')
  t.ok(existsSync(join(dir, 'sidegate.db')), 'sidegate.db beside gateway.yml')

  // 3. a user in the Default organization, and a bearer token for them
  const add = await cliIn(dir, ['user', 'add', 'alice', '--password-stdin', '--org', DEFAULT_ORG], { stdin: 'alice-password-1\n' })
  t.equal(add.code, 0, add.stderr)
  const tok = await request(url, '/api/v1/authentication/auth/', form({ username: 'alice', password: 'alice-password-1' }))
  t.equal(tok.status, 201, tok.text)
  // 4. the upstream sees who is calling; the token works once
  const first = await request(url, '/anything', { headers: { authorization: `Bearer ${tok.json.token as string}` } })
  t.equal(first.status, 200, first.text)
  t.match(first.json.headers, { 'x-svc-username': 'alice', 'x-svc-org': DEFAULT_ORG, 'x-svc-auth-method': 'bearer' })
  const again = await request(url, '/anything', { headers: { authorization: `Bearer ${tok.json.token as string}` } })
  t.match(again, { status: 401, json: { code: 'invalid_token' } }, 'one-time: it was used up')

  process.kill(-p.pid!, 'SIGTERM')
  t.equal(await exited, 0)
})

/** Every one of `n` requests on new connections (spread over the workers) answers `status`. */
async function allAnswer (url: string, headers: () => Record<string, string>, status: number, n = 6): Promise<boolean> {
  const rs = await Promise.all(Array.from({ length: n }, async () => await request(url, '/anything', { headers: headers() })))
  return rs.every((r) => r.status === status)
}

t.test('the CLI beside the running gateway and its workers: at once, and revocations refused everywhere within a second; a restart keeps everything', async (t) => {
  const dir = freshDir()
  const { env, url } = await envFor()
  let gw: Started = await startIn(dir, url, { env, args: ['--workers', '2'] })
  t.teardown(async () => { await gw.stop() })
  t.equal((await cliIn(dir, ['user', 'add', 'bob', '--password-stdin', '--org', DEFAULT_ORG], { stdin: 'bob-password-1\n' })).code, 0)

  const made = await cliIn(dir, ['token', 'create', 'bob'])
  t.equal(made.code, 0, made.stderr)
  const token = made.stdout.trim()
  const byToken = (): Record<string, string> => ({ authorization: `Token ${token}` })
  t.ok(await allAnswer(url, byToken, 200, 12), 'a private token created beside the gateway works at once, on every worker (now cached there)')
  t.equal((await cliIn(dir, ['token', 'revoke', 'bob'])).code, 0)
  const revoked = Date.now()
  t.ok(await eventually(async () => await allAnswer(url, byToken, 401), 1000, 20), 'refused on every worker within a second of the revocation')
  t.comment(`seen everywhere after ${Date.now() - revoked} ms`)

  const key = await cliIn(dir, ['key', 'create', 'bob', '--json'])
  t.equal(key.code, 0, key.stderr)
  const { id, secret } = JSON.parse(key.stdout) as { id: string, secret: string }
  const signed = (): Record<string, string> => signedHeaders(id, secret, 'GET', '/anything')
  t.ok(await allAnswer(url, signed, 200, 12), 'an access key created beside the gateway signs at once')
  t.equal((await cliIn(dir, ['key', 'disable', id])).code, 0)
  t.ok(await eventually(async () => await allAnswer(url, signed, 401), 1000, 20), 'disabled: refused on every worker within a second')
  t.equal((await cliIn(dir, ['key', 'enable', id])).code, 0)
  t.ok(await eventually(async () => await allAnswer(url, signed, 200), 1000, 20), 'enabled again')
  const kept = (await cliIn(dir, ['token', 'create', 'bob'])).stdout.trim()

  t.equal(await gw.stop(), 0)
  gw = await startIn(dir, url, { env })
  t.ok(await allAnswer(url, signed, 200, 2), 'after a restart the access key still signs')
  t.equal((await request(url, '/anything', { headers: { authorization: `Token ${kept}` } })).status, 200, 'and the private token still works')
  t.equal((await request(url, '/anything', byToken())).status, 401, 'and the revoked one stays revoked')
  t.match((await cliIn(dir, ['user', 'list'])).stdout, /bob/)
  // the audit trail is a table of the same file: the CLI's events and the gateway's, in order
  const tail = await cliIn(dir, ['audit', 'tail', '--json', '--limit', '1000'])
  t.equal(tail.code, 0, tail.stderr)
  const events = tail.stdout.trim().split('\n').map((l) => JSON.parse(l) as { event: string, id: string })
  for (const ev of ['user.created', 'private_token.created', 'private_token.revoked', 'key.created', 'key.disabled', 'key.enabled']) t.ok(events.some((e) => e.event === ev), `audit tail shows ${ev}`)
  t.same(events.map((e) => e.id), [...events.map((e) => e.id)].sort((a, b) => Number(a.split('-')[0]) - Number(b.split('-')[0]) || Number(a.split('-')[1]) - Number(b.split('-')[1])), 'oldest first')
})

t.test('a writer killed with SIGKILL loses nothing it acknowledged, and the file stays whole', async (t) => {
  const path = join(tempDir('sidegate-kill-'), 'store.db')
  const writer = `
    const { SqliteStore } = await import(${JSON.stringify(join(ROOT, 'dist', 'store', 'sqlite', 'index.js'))})
    const { Keyring } = await import(${JSON.stringify(join(ROOT, 'dist', 'crypto.js'))})
    const s = new SqliteStore({ path: ${JSON.stringify(path)}, busyTimeout: 1000, cache: { max: 0, ttl: 1 } }, new Keyring(${JSON.stringify(SECRET)}))
    await s.connect()
    for (let i = 0; ; i++) {
      const u = await s.users.create({ username: 'w' + i, password: null })
      const k = await s.accessKeys.create(u.id)
      process.stdout.write(JSON.stringify({ user: u.id, key: k.key.id, secret: k.secret }) + '\\n')
    }`
  const p = track(spawn(process.execPath, ['--input-type=module', '-e', writer], { stdio: ['ignore', 'pipe', 'inherit'] }))
  const acked: Array<{ user: string, key: string, secret: string }> = []
  const lines = createInterface({ input: p.stdout! })
  const killed = new Promise<void>((resolve) => {
    lines.on('line', (l) => {
      acked.push(JSON.parse(l))
      if (acked.length === 300) { p.kill('SIGKILL'); resolve() }
    })
  })
  await killed
  await new Promise((resolve) => p.once('close', resolve))
  const s = new SqliteStore({ path, busyTimeout: 1000, cache: { max: 0, ttl: 1 } }, new Keyring(SECRET))
  await s.connect()
  t.teardown(() => s.close())
  t.equal(s.sqlite.db.pragma('integrity_check', { simple: true }), 'ok', 'the file is whole')
  let missing = 0
  for (const a of acked) {
    const k = await s.accessKeys.get(a.key)
    if ((await s.users.get(a.user)) === null || k?.secret !== a.secret) missing++
  }
  t.equal(missing, 0, `every one of the ${acked.length} acknowledged users and keys is there (killed mid-stream: ${await s.users.count()} users in all)`)
})

t.test('an empty store under a key that was used before: a loud warning, an audit event and a metric; store.require_existing refuses it', async (t) => {
  const dir = freshDir()
  const { env, url, metrics } = await envFor()
  let gw = await startIn(dir, url, { env })
  t.equal(await gw.stop(), 0)
  t.ok(existsSync(join(dir, 'sidegate.key')), 'the first start wrote its key file')
  const lose = (): void => { for (const f of ['sidegate.db', 'sidegate.db-wal', 'sidegate.db-shm']) rmSync(join(dir, f), { force: true }) }
  lose()
  gw = await startIn(dir, url, { env })
  t.teardown(async () => { await gw.stop() })
  const warning = gw.out().split('\n').find((l) => l.includes('the store is EMPTY'))
  t.ok(warning, 'warned')
  t.match(JSON.parse(warning ?? '{}'), { level: 40, reason: 'key_file', store: 'sqlite', path: join(dir, 'sidegate.db') })
  t.match(gw.out(), /"event":"store\.data_missing","outcome":"failure".*"reason":"key_file"/, 'an audit event')
  t.match((await request(metrics, '/metrics')).text, /^sidegate_store_data_missing_total 1$/m, 'a metric')
  t.equal(await gw.stop(), 0)

  writeFileSync(join(dir, 'gateway.yml'), readFileSync(join(dir, 'gateway.yml'), 'utf8').replace('# require_existing: false', 'require_existing: true'))
  lose()
  const refused = await spawnIn(dir, ['start'], { env })
  t.equal(refused.code, 2, 'exit 2')
  t.match(refused.stderr, /^sidegate: the store at .*sidegate\.db is empty, but the secret key \(.*sidegate\.key\) was used before: .*store\.require_existing is true/m)
  const db = new Database(join(dir, 'sidegate.db'), { readonly: true })
  t.equal(db.prepare('SELECT count(*) FROM users').pluck().get(), 0, 'no new admin was made')
  db.close()
})

t.test('a file that is not a sidegate store stops the start: one line, exit 2, the file untouched', async (t) => {
  const dir = freshDir()
  const { env } = await envFor()
  const db = new Database(join(dir, 'sidegate.db'))
  db.exec('CREATE TABLE invoices (id INTEGER PRIMARY KEY)')
  db.close()
  const before = readFileSync(join(dir, 'sidegate.db'))
  for (const withKey of [false, true]) {
    const r = await spawnIn(dir, ['start'], { env: withKey ? { ...env, SIDEGATE_SECRET_KEY: SECRET } : env })
    t.equal(r.code, 2, `exit 2 (${withKey ? 'a key set' : 'no key yet'})`)
    t.match(r.stderr, /^sidegate: .*sidegate\.db is not a sidegate store \(an SQLite database of another application\): nothing was read or written; give store\.path a file of its own\n$/)
    t.notMatch(r.stderr + r.stdout, /\n\s+at /, 'no stack trace')
  }
  t.same(readFileSync(join(dir, 'sidegate.db')), before, 'untouched')
  t.notOk(existsSync(join(dir, 'sidegate.key')), 'no key made for it')
})

/**
 * `sidegate store export|import|backup`: the embedded store → a real Redis →
 * another embedded store, every record kept (users with their password
 * hashes, access keys whose secrets still verify, private tokens, sessions,
 * unexpired bearer tokens, signing keys, legacy key generations, the audit
 * trail), and a gateway started on the Redis copy accepting credentials made
 * on the original; what an import refuses (another secret key, a store that
 * holds data, a bad line) writing nothing; a backup taken while another
 * process writes.
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Keyring } from '../../src/crypto.js'
import { RedisStore } from '../../src/store/redis/index.js'
import { SqliteStore } from '../../src/store/sqlite/index.js'
import { SqliteKeyRecords } from '../../src/store/sqlite/key-records.js'
import { newSigningKey } from '../../src/forward/identity.js'
import { startRedis } from '../fixtures/redis.js'
import { request, startEcho } from '../fixtures/http.js'
import { ROOT, SECRET } from '../fixtures/gateway.js'
import { cliIn, snapshot, startIn, workdir } from '../fixtures/procs.js'
import { signedHeaders } from '../fixtures/creds.js'
import { tempDir, track } from '../fixtures/cleanup.js'

const redis = await startRedis()
const echo = await startEcho()
t.teardown(async () => { await echo.close(); await redis.stop() })
const env = { SIDEGATE_SECRET_KEY: SECRET }
const OTHER = 'another-secret-key-that-is-long-enough-9876543210'
const HOUR = 3600_000

const sqliteDir = async (): Promise<{ dir: string, port: number, url: string, path: string }> => {
  const w = await workdir({ store: { backend: 'sqlite', path: 'store.db' }, upstream: { url: echo.url } })
  return { ...w, path: join(w.dir, 'store.db') }
}
let prefixes = 0
const redisDir = async (): Promise<{ dir: string, port: number, url: string, prefix: string }> => {
  const prefix = `xfer${process.pid}-${++prefixes}:`
  return { ...await workdir({ store: { backend: 'redis' }, redis: { url: redis.url, prefix }, upstream: { url: echo.url } }), prefix }
}

const openSqlite = async (path: string, now?: () => number): Promise<SqliteStore> => {
  const s = new SqliteStore({ path, busyTimeout: 2000, now, cache: { max: 0, ttl: 1 } }, new Keyring(SECRET))
  await s.connect()
  return s
}
const openRedis = async (prefix: string): Promise<RedisStore> => {
  const s = new RedisStore({ url: redis.url, prefix, commandTimeout: 2000, connectTimeout: 2000, cache: { max: 0, ttl: 1 } }, new Keyring(SECRET))
  await s.connect()
  return s
}
const verify = { mode: 'cli', where: 'test', source: 'test', db: 0 } as const
type AnyStore = SqliteStore | RedisStore

// ── the original: an embedded store with one of everything ──────────────────
const src = await sqliteDir()
const fresh = await openSqlite(src.path)
await fresh.verifyKey({ ...verify, mode: 'start' })
const org = await fresh.createOrg('Team')
const alice = await fresh.createUser({ username: 'Alice', password: 'alice-password-1', orgs: { [org.id]: 'admin' } })
const bob = await fresh.createUser({ username: 'bob', password: null })
const DJANGO = 'pbkdf2_sha256$260000$c2FsdHNhbHQ$Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmE='
await fresh.setLegacyPasswordHash(bob.id, DJANGO)
const { key, secret } = await fresh.createAccessKey(alice.id, 0, { name: 'ci' })
await fresh.touchAccessKey(key.id)
const ptAlice = await fresh.createPrivateToken(alice.id)
const ptBob = 'a1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6a7b8c9d0'
await fresh.importPrivateToken(bob.id, ptBob)
const bearerLive = await fresh.issueBearerToken(alice.id, 3600)
const session = await fresh.createSession(alice.id, 3600, 86400)
const sk = newSigningKey('EdDSA', Date.now(), Date.now())
t.ok(await fresh.putSigningKeys(0, [sk]), 'a signing key set')
await new SqliteKeyRecords(fresh.sqlite, 'test').set('key-legacy:0123abcd', 'sealed-legacy-generations')
await fresh.appendAudit(JSON.stringify({ event: 'test.one', n: 1 }), 1000)
await fresh.appendAudit(JSON.stringify({ event: 'test.two', n: 2 }), 1000)
await fresh.close()
// a bearer token and a session that expired an hour ago: issued on a clock two hours back
const past = await openSqlite(src.path, () => Date.now() - 2 * HOUR)
const bearerDead = await past.issueBearerToken(alice.id, 60)
const sessionDead = await past.createSession(alice.id, 60)
await past.close()

/** Every credential of the original works in `s`, once where once is the rule. */
async function checkCredentials (t: Test, s: AnyStore, what: string): Promise<void> {
  t.equal((await s.verifyKey(verify)).empty, false, `${what}: its key check value is the key's`)
  t.match(await s.getUserByUsername('alice'), { id: alice.id, username: 'Alice', orgs: { [org.id]: 'admin' } }, `${what}: the user and membership`)
  t.match(await s.getOrg(org.id), { name: 'Team' }, `${what}: the org`)
  t.ok((await s.getPasswordHash(alice.id))?.startsWith('scrypt'), `${what}: the password hash`)
  t.equal(await s.getPasswordHash(bob.id), DJANGO, `${what}: the imported Django hash`)
  t.ok(await s.isImportedPasswordHash(bob.id, DJANGO), `${what}: and its imported marker`)
  const k = await s.getAccessKey(key.id)
  t.equal(k?.secret, secret, `${what}: the access key's secret decrypts to the same`)
  t.match(k?.key, { name: 'ci', user_id: alice.id, is_active: true }, `${what}: the key's fields`)
  t.ok(k?.key.date_last_used, `${what}: its last use`)
  t.equal(await s.userIdForPrivateToken(ptAlice), alice.id, `${what}: the private token authenticates`)
  t.equal(await s.getPrivateToken(alice.id), ptAlice, `${what}: and reads back`)
  t.equal(await s.userIdForPrivateToken(ptBob), bob.id, `${what}: the imported, untagged token too`)
  t.equal((await s.getSession(session.id))?.user_id, alice.id, `${what}: the session`)
  t.equal(await s.getSession(sessionDead.id), null, `${what}: not the expired session`)
  t.equal(await s.consumeBearerToken(bearerDead.token), null, `${what}: not the expired bearer token`)
  const keys = await s.getSigningKeys()
  t.same(keys.keys.map((x) => [x.kid, x.private?.d]), [[sk.kid, sk.private!.d]], `${what}: the signing key, its private half readable`)
  t.same((await s.readAudit({ since: 0 })).map((e) => (JSON.parse(e.json) as { event: string }).event), ['test.one', 'test.two'], `${what}: the audit trail`)
}

const lines = (text: string): Array<Record<string, unknown>> => text.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
/** The records, sessions' expiry (Redis keeps a TTL) and bearer tokens (consumed by the checks) aside. */
const comparable = (text: string): unknown[] => lines(text).slice(1).filter((r) => r.kind !== 'bearer_token').map((r) => r.kind === 'session' ? { ...r, expires: 0 } : r)

const exportFile = join(tempDir('sidegate-xfer-'), 'store.ndjson')
let original = ''

t.test('export: a header with the key check value, then every record; nothing decrypted, nothing expired', async (t) => {
  const r = await cliIn(src.dir, ['store', 'export', '--out', exportFile], { env })
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /exported \d+ records from the store file .*store\.db to .*store\.ndjson: 1 org, 2 users, 1 access key, 2 private tokens/)
  original = readFileSync(exportFile, 'utf8')
  t.equal(statSync(exportFile).mode & 0o777, 0o600, 'the file is its owner\'s only')
  const all = lines(original)
  t.match(all[0], { format: 'sidegate-store', version: 1, key_check: new Keyring(SECRET).checkValue() })
  t.ok(Date.parse(String(all[0].exported)) > Date.now() - 60_000, 'exported: an ISO time')
  const kinds = all.slice(1).map((x) => x.kind)
  for (const k of ['org', 'user', 'access_key', 'private_token', 'private_token_lookup', 'private_token_imported', 'bearer_token', 'session', 'signing_keys', 'key_legacy', 'audit']) t.ok(kinds.includes(k), `a ${k} record`)
  t.equal(kinds.filter((k) => k === 'bearer_token').length, 1, 'the expired bearer token is left out')
  t.equal(kinds.filter((k) => k === 'session').length, 1, 'the expired session too')
  for (const [what, v] of [['access-key secret', secret], ['private token', ptAlice], ['imported token', ptBob], ['bearer token', bearerLive.token], ['session id', session.id], ['signing key', sk.private!.d]]) {
    t.notOk(original.includes(v), `no ${what} in the file`)
  }
  const stdout = await cliIn(src.dir, ['store', 'export'], { env })
  t.equal(stdout.code, 0, stdout.stderr)
  t.same(comparable(stdout.stdout), comparable(original), 'without --out: the same records on stdout')
})

const red = await redisDir()

t.test('import into an empty Redis: every record, the key check value recorded; a gateway on it accepts the original\'s credentials', async (t) => {
  const r = await cliIn(red.dir, ['store', 'import', exportFile], { env })
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /^imported .*store\.ndjson into Redis at .*: 1 org, 2 users, 1 access key, 2 private tokens, .*1 bearer token, 1 session, 1 signing key set, 1 legacy key generation, 2 audit entries\n$/)
  const again = await cliIn(red.dir, ['store', 'export'], { env })
  t.equal(again.code, 0, again.stderr)
  t.same(comparable(again.stdout), comparable(original), 'exported from Redis: the same records')

  const g = await startIn(red.dir, red.url, { env })
  t.teardown(() => g.stop())
  const byToken = await request(red.url, '/api/v1/users/profile/', { headers: { authorization: `Token ${ptAlice}` } })
  t.equal(byToken.status, 200, 'the private token made on the original')
  t.equal(byToken.json.headers['x-svc-username'], 'Alice')
  const signed = await request(red.url, '/api/v1/x/', { headers: signedHeaders(key.id, secret, 'GET', '/api/v1/x/') })
  t.equal(signed.status, 200, 'an access-key signature with the original\'s secret')
  t.equal(signed.json.headers['x-svc-username'], 'Alice')
  const wrong = await request(red.url, '/api/v1/x/', { headers: signedHeaders(key.id, 'not-the-secret-0123456789', 'GET', '/api/v1/x/') })
  t.equal(wrong.status, 401, 'and not another secret')
  await g.stop()

  const s = await openRedis(red.prefix)
  t.teardown(() => s.close())
  await checkCredentials(t, s, 'Redis')
  t.equal(await s.consumeBearerToken(bearerLive.token), alice.id, 'the bearer token, once')
  t.equal(await s.consumeBearerToken(bearerLive.token), null, 'and only once')
})

t.test('Redis → a new embedded store (through a pipe): every record again', async (t) => {
  const back = await sqliteDir()
  const out = await cliIn(red.dir, ['store', 'export'], { env })
  t.equal(out.code, 0, out.stderr)
  const r = await cliIn(back.dir, ['store', 'import', '-'], { env, stdin: out.stdout })
  t.equal(r.code, 0, r.stderr)
  // the gateway started on the Redis copy added its Default org
  t.match(r.stdout, /^imported standard input into the store file .*: 2 orgs, 2 users, 1 access key, 2 private tokens/)
  const s = await openSqlite(back.path)
  t.teardown(() => s.close())
  await checkCredentials(t, s, 'SQLite again')
  const again = await cliIn(back.dir, ['store', 'export'], { env })
  const isDefault = (x: unknown): boolean => (x as { org?: { name: string } }).org?.name === 'Default'
  t.same(comparable(again.stdout).filter((x) => !isDefault(x)), comparable(original), 'the same records as the original (and the Default org)')
})

t.test('refused, exit 2, nothing written: another secret key, a store that holds data, a bad line', async (t) => {
  const other = await redisDir()
  const wrongKey = await cliIn(other.dir, ['store', 'import', exportFile], { env: { SIDEGATE_SECRET_KEY: OTHER } })
  t.equal(wrongKey.code, 2)
  t.match(wrongKey.stderr, /exported from a store with another secret key.*nothing was written/)
  t.same(await snapshot(redis.url, other.prefix), {}, 'another key: nothing written')

  const before = await snapshot(redis.url, red.prefix)
  const full = await cliIn(red.dir, ['store', 'import', exportFile], { env })
  t.equal(full.code, 2)
  t.match(full.stderr, /already holds 2 users and 2 orgs: import into an empty store .*--merge.*nothing was written/)
  t.same(await snapshot(redis.url, red.prefix), before, 'a store with data: nothing written')
  const merged = await cliIn(red.dir, ['store', 'import', exportFile, '--merge'], { env })
  t.equal(merged.code, 0, merged.stderr)
  // what was deleted since the export comes back: here the bearer token the checks used (docs/cli.md says so)
  t.match(merged.stdout, /: 1 bearer token; 14 skipped \(already there: 1 org, 2 users, 1 access key, 2 private tokens/)
  const merged1 = await snapshot(redis.url, red.prefix)
  t.same(Object.keys(merged1).filter((k) => !(k in before)).map((k) => k.slice(red.prefix.length).split(':')[0]), ['bt'], '--merge: only the missing record written')
  t.same(Object.fromEntries(Object.entries(merged1).filter(([k]) => k in before && !k.startsWith(`${red.prefix}user-bt:`))), Object.fromEntries(Object.entries(before).filter(([k]) => !k.startsWith(`${red.prefix}user-bt:`))), 'nothing else changed')

  const bad = original.split('\n')
  bad[4] = bad[4].slice(0, 20)
  const badFile = join(tempDir('sidegate-xfer-'), 'bad.ndjson')
  writeFileSync(badFile, bad.join('\n'))
  const empty = await sqliteDir()
  const r = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(r.code, 2)
  t.match(r.stderr, /bad\.ndjson: line 5: not JSON .*nothing was written/)
  const viaRedis = await cliIn(other.dir, ['store', 'import', badFile], { env })
  t.equal(viaRedis.code, 2)
  t.match(viaRedis.stderr, /line 5: not JSON/)
  t.same(await snapshot(redis.url, other.prefix), {}, 'a bad line, Redis: nothing written')
  const unknownUser = original.split('\n')
  unknownUser.splice(3, 0, JSON.stringify({ kind: 'session', hash: 'h', user_id: 'nobody', created: Date.now(), expires: Date.now() + HOUR }))
  writeFileSync(badFile, unknownUser.join('\n'))
  const dangling = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(dangling.code, 2)
  t.match(dangling.stderr, /line 4: session of user nobody, who is neither in the file nor in/)
  const noSecret = original.split('\n')
  const at = noSecret.findIndex((l) => l.includes('"kind":"access_key"'))
  const rec = JSON.parse(noSecret[at]) as { key: Record<string, unknown> }
  delete rec.key.secret
  noSecret[at] = JSON.stringify(rec)
  noSecret.push(noSecret[1])
  writeFileSync(badFile, noSecret.join('\n'))
  const unsealed = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(unsealed.code, 2)
  t.match(unsealed.stderr, new RegExp(`line ${at + 1}: key\\.secret must be a non-empty string`), 'a record without a field: its line')
  noSecret[at] = original.split('\n')[at]
  writeFileSync(badFile, noSecret.join('\n'))
  const twice = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(twice.code, 2)
  t.match(twice.stderr, new RegExp(`line ${noSecret.length}: org ".*" is already on line 2`), 'a record given twice')
  writeFileSync(badFile, original.split('\n').slice(1).join('\n'))
  const headless = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(headless.code, 2)
  t.match(headless.stderr, /line 1: no header/)
  writeFileSync(badFile, original.replace('"version":1', '"version":2'))
  const newer = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(newer.code, 2)
  t.match(newer.stderr, /version 2 of the format; this sidegate reads version 1/)
  const s = await openSqlite(empty.path)
  t.teardown(() => s.close())
  t.equal(await s.countUsers(), 0, 'the embedded store: no user written')
  t.equal(await new SqliteKeyRecords(s.sqlite, 'test').get('key-check'), null, 'nor its key check value')
})

t.test('backup while another process writes: a consistent copy that opens as a store', async (t) => {
  const { dir, path } = await sqliteDir()
  const seed = await openSqlite(path)
  await seed.verifyKey({ ...verify, mode: 'start' })
  const u = await seed.createUser({ username: 'kept', password: 'kept-password-1' })
  const k = await seed.createAccessKey(u.id)
  await seed.close()
  // each transaction writes a user and its key: a copy holds both or neither
  const writer = track(spawn(process.execPath, ['-e', `
    const Database = require(${JSON.stringify(join(ROOT, 'node_modules', 'better-sqlite3'))})
    const db = new Database(${JSON.stringify(path)}, { timeout: 5000 })
    const user = db.prepare('INSERT INTO users (id, username_lower, json) VALUES (?, ?, ?)')
    const key = db.prepare('INSERT INTO access_keys (id, user_id, json) VALUES (?, ?, ?)')
    const both = db.transaction((i) => { user.run('w-' + i, 'w-' + i, '{}'); key.run('wk-' + i, 'w-' + i, '{}') })
    let i = 0
    const step = () => { for (let j = 0; j < 20; j++) both(i++); if (i % 200 === 0) process.stdout.write(i + '\\n'); setImmediate(step) }
    step()`], { stdio: ['ignore', 'pipe', 'inherit'] }))
  let written = 0
  writer.stdout!.on('data', (c: Buffer) => { written = Number(c.toString().trim().split('\n').pop()) })
  t.teardown(() => { writer.kill('SIGKILL') })
  while (written < 400) await new Promise((resolve) => setTimeout(resolve, 20))
  const copy = join(tempDir('sidegate-backup-'), 'copy.db')
  const r = await cliIn(dir, ['store', 'backup', copy], { env })
  const after = written
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /copied the store file .* to .*copy\.db \(\d+ pages/)
  t.ok(writer.exitCode === null, 'the writer was still writing')
  t.equal(statSync(copy).mode & 0o777, 0o600, 'the copy is its owner\'s only')
  writer.kill('SIGKILL')
  const s = await openSqlite(copy)
  t.teardown(() => s.close())
  const db = s.sqlite.db
  t.equal(db.pragma('integrity_check', { simple: true }), 'ok')
  const users = db.prepare("SELECT count(*) FROM users WHERE id LIKE 'w-%'").pluck().get() as number
  const keys = db.prepare("SELECT count(*) FROM access_keys WHERE id LIKE 'wk-%'").pluck().get() as number
  t.ok(users >= 400, `the copy holds what was written before it (${users} of at least ${after - 200})`)
  t.equal(keys, users, 'every transaction whole: as many keys as users')
  t.equal(db.prepare("SELECT count(*) FROM access_keys k JOIN users u ON u.id = k.user_id WHERE k.id LIKE 'wk-%'").pluck().get(), keys, 'each key with its user')
  await s.verifyKey(verify)
  t.equal((await s.getAccessKey(k.key.id))?.secret, k.secret, 'a store with the same data and key')
  t.equal((await cliIn(dir, ['store', 'backup', copy], { env })).code, 2, 'an existing file is never overwritten')
})

t.test('backup of Redis: exit 2, pointing at Redis persistence and store export', async (t) => {
  const r = await cliIn(red.dir, ['store', 'backup', join(tempDir('sidegate-backup-'), 'x.db')], { env })
  t.equal(r.code, 2)
  t.match(r.stderr, /BGSAVE.*AOF.*store export/)
})

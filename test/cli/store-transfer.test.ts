/**
 * `sidegate store export|import|backup` on the embedded store (through a
 * Redis: test/topology/store-transfer.test.ts): the export of a store with
 * one of everything (users with their password hashes, access keys whose
 * secrets still verify, private tokens, sessions, unexpired bearer tokens,
 * signing keys, legacy key generations, the audit trail), nothing decrypted;
 * its import into another embedded store keeping every record, and a gateway
 * started on the copy accepting credentials made on the original; what an
 * import refuses (another secret key, a store that holds data, a bad line)
 * writing nothing, --merge writing only what is missing; a backup taken
 * while another process writes.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Keyring } from '../../src/crypto.js'
import { SqliteKeyRecords } from '../../src/store/sqlite/key-records.js'
import { startEcho } from '../fixtures/http.js'
import { ROOT, SECRET } from '../fixtures/gateway.js'
import { cliIn, fileSnapshot } from '../fixtures/procs.js'
import { tempDir, track } from '../fixtures/cleanup.js'
import { comparable, HOUR, importIntoEmpty, lines, makeOriginal, openSqlite, sqliteDir, verify } from '../fixtures/transfer.js'

const echo = await startEcho()
t.teardown(async () => { await echo.close() })
const env = { SIDEGATE_SECRET_KEY: SECRET }
const OTHER = 'another-secret-key-that-is-long-enough-9876543210'

// the original: an embedded store with one of everything
const o = await makeOriginal(t, echo.url)

const exportFile = join(tempDir('sidegate-xfer-'), 'store.ndjson')
let original = ''

t.test('export: a header with the key check value, then every record; nothing decrypted, nothing expired', async (t) => {
  const r = await cliIn(o.dir, ['store', 'export', '--out', exportFile], { env })
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /exported \d+ records from the store file .*store\.db to .*store\.ndjson: 1 org, 2 users, 1 access key, 2 private tokens/)
  original = readFileSync(exportFile, 'utf8')
  t.equal(statSync(exportFile).mode & 0o777, 0o600, 'the file is its owner\'s only')
  const all = lines(original)
  t.match(all[0], { format: 'sidegate-store', version: 1, key_check: new Keyring(SECRET).checkValue() })
  t.ok(Date.parse(String(all[0].exported)) > Date.now() - 60_000, 'exported: an ISO time')
  const kinds = all.slice(1).map((x) => x.kind)
  for (const k of ['org', 'user', 'access_key', 'private_token', 'private_token_lookup', 'private_token_imported', 'bearer_token', 'session', 'totp', 'recovery_code', 'passkey', 'signing_keys', 'key_legacy', 'audit']) t.ok(kinds.includes(k), `a ${k} record`)
  t.equal(kinds.filter((k) => k === 'bearer_token').length, 1, 'the expired bearer token is left out')
  t.equal(kinds.filter((k) => k === 'session').length, 1, 'the expired session too')
  for (const [what, v] of [['access-key secret', o.secret], ['private token', o.ptAlice], ['imported token', o.ptBob], ['bearer token', o.bearerLive.token], ['session id', o.session.id], ['signing key', o.sk.private!.d], ['TOTP secret', o.totp], ['recovery code', o.recovery[0].replace('-', '')]]) {
    t.notOk(original.includes(v), `no ${what} in the file`)
  }
  const stdout = await cliIn(o.dir, ['store', 'export'], { env })
  t.equal(stdout.code, 0, stdout.stderr)
  t.same(comparable(stdout.stdout), comparable(original), 'without --out: the same records on stdout')
})

const copy = await sqliteDir(echo.url)

t.test('import into an empty embedded store: every record, the key check value recorded; a gateway on it accepts the original\'s credentials', async (t) => {
  await importIntoEmpty(t, o, exportFile, original, { ...copy, named: 'the store file .*store\\.db', label: 'the copy', open: async () => await openSqlite(copy.path) })
})

t.test('refused, exit 2, nothing written: another secret key, a store that holds data, a bad line; --merge writes only what is missing', async (t) => {
  const empty = await sqliteDir(echo.url)
  const wrongKey = await cliIn(empty.dir, ['store', 'import', exportFile], { env: { SIDEGATE_SECRET_KEY: OTHER } })
  t.equal(wrongKey.code, 2)
  t.match(wrongKey.stderr, /exported from a store with another secret key.*nothing was written/)
  t.same(fileSnapshot(empty.path), {}, 'another key: nothing written')

  const before = fileSnapshot(copy.path)
  const full = await cliIn(copy.dir, ['store', 'import', exportFile], { env })
  t.equal(full.code, 2)
  // the gateway started on the copy added its Default org
  t.match(full.stderr, /already holds 2 users and 2 orgs: import into an empty store .*--merge.*nothing was written/)
  t.same(fileSnapshot(copy.path), before, 'a store with data: nothing written')
  const merged = await cliIn(copy.dir, ['store', 'import', exportFile, '--merge'], { env })
  t.equal(merged.code, 0, merged.stderr)
  // what was deleted since the export comes back: here the bearer token and the recovery code the checks used (docs/cli.md says so)
  t.match(merged.stdout, /: 1 bearer token, 1 recovery code; 25 skipped \(already there: 1 org, 2 users, 1 access key, 2 private tokens/)
  const merged1 = fileSnapshot(copy.path)
  // rows by content (a table keyed by two columns, mfa_recovery, shifts the snapshot's names)
  const rowsBefore = new Set(Object.entries(before).map(([k, v]) => `${k.split(':')[0]} ${v}`))
  const rowsAfter = Object.entries(merged1).map(([k, v]) => `${k.split(':')[0]} ${v}`)
  t.same(rowsAfter.filter((r) => !rowsBefore.has(r)).map((r) => r.split(' ')[0]).sort(), ['bearer', 'mfa_recovery'], '--merge: only the missing records written')
  t.ok([...rowsBefore].every((r) => rowsAfter.includes(r)), 'nothing else changed')

  const bad = original.split('\n')
  bad[4] = bad[4].slice(0, 20)
  const badFile = join(tempDir('sidegate-xfer-'), 'bad.ndjson')
  writeFileSync(badFile, bad.join('\n'))
  const r = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(r.code, 2)
  t.match(r.stderr, /bad\.ndjson: line 5: not JSON .*nothing was written/)
  t.same(fileSnapshot(empty.path), {}, 'a bad line: nothing written')
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
  t.same(fileSnapshot(empty.path), {}, 'none of them wrote anything')
  const s = await openSqlite(empty.path)
  t.teardown(() => s.close())
  t.equal(await s.countUsers(), 0, 'the embedded store: no user written')
  t.equal(await new SqliteKeyRecords(s.sqlite, 'test').get('key-check'), null, 'nor its key check value')
})

t.test('backup while another process writes: a consistent copy that opens as a store', async (t) => {
  const { dir, path } = await sqliteDir(echo.url)
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

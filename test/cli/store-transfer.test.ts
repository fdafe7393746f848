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
import { hashPassword, Keyring } from '../../src/crypto.js'
import { SqliteKeyRecords } from '../../src/store/sqlite/key-records.js'
import { startEcho } from '../fixtures/http.js'
import { ROOT, SECRET } from '../fixtures/gateway.js'
import { cliIn, fileSnapshot } from '../fixtures/procs.js'
import { tempDir, track } from '../fixtures/cleanup.js'
import { comparable, HOUR, importIntoEmpty, lines, makeOriginal, openSqlite, resign, sqliteDir, verify } from '../fixtures/transfer.js'

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
  t.match(r.stdout, /exported \d+ records from the store file .*store\.db to .*store\.ndjson: 1 org, 2 groups, 2 users, 1 link, 1 access key, 2 private tokens/)
  original = readFileSync(exportFile, 'utf8')
  t.equal(statSync(exportFile).mode & 0o777, 0o600, 'the file is its owner\'s only')
  const all = lines(original)
  t.match(all[0], { format: 'sidegate-store', version: 2, key_check: new Keyring(SECRET).checkValue() })
  // the last line: the MAC of every byte before it, under a key derived from the secret key
  const body = original.slice(0, original.trimEnd().lastIndexOf('\n') + 1)
  t.same(all[all.length - 1], { mac: new Keyring(SECRET).storeFileMac(body) }, 'the last line is the MAC of the rest')
  t.notOk(new Keyring(OTHER).storeFileMac(body) === all[all.length - 1].mac, 'a MAC another key cannot make')
  t.ok(Date.parse(String(all[0].exported)) > Date.now() - 60_000, 'exported: an ISO time')
  const kinds = all.slice(1, -1).map((x) => x.kind)
  for (const k of ['org', 'group', 'user', 'link', 'access_key', 'private_token', 'private_token_lookup', 'private_token_imported', 'bearer_token', 'session', 'totp', 'recovery_code', 'passkey', 'signing_keys', 'key_legacy', 'audit']) t.ok(kinds.includes(k), `a ${k} record`)
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

  // the store's rows but its audit trail (every import, refused or not, appends to it: checked below)
  const data = (): Record<string, string> => Object.fromEntries(Object.entries(fileSnapshot(copy.path)).filter(([k]) => !k.startsWith('audit:')))
  const before = data()
  const full = await cliIn(copy.dir, ['store', 'import', exportFile], { env })
  t.equal(full.code, 2)
  // the gateway started on the copy added its Default org
  t.match(full.stderr, /already holds 2 users and 2 orgs: import into an empty store .*--merge.*nothing was written/)
  t.same(data(), before, 'a store with data: nothing written')
  // a merge that would give users already there a credential or a second factor lists them and needs --allow-takeover
  const unallowed = await cliIn(copy.dir, ['store', 'import', exportFile, '--merge'], { env })
  t.equal(unallowed.code, 1)
  t.match(unallowed.stderr, /2 privileged records not allowed, nothing was written:\n {2}line \d+: adds bearer token ".*" to user .*, who is already in .*\(--allow-takeover\)\n {2}line \d+: adds recovery code .*\nCheck them, then run again with --allow-takeover/)
  t.same(data(), before, 'privileged records not allowed: nothing written')
  const merged = await cliIn(copy.dir, ['store', 'import', exportFile, '--merge', '--allow-takeover'], { env })
  t.equal(merged.code, 0, merged.stderr)
  // what was deleted since the export comes back: here the bearer
  // token and the recovery code the checks used (docs/cli.md says so)
  t.match(merged.stdout, /: 1 bearer token, 1 recovery code; 28 skipped \(already there: 1 org, 2 groups, 2 users, 1 link, 1 access key, 2 private tokens/)
  t.match(merged.stdout, /privileged: line \d+: adds bearer token .*\(--allow-takeover, allowed\)/)
  const merged1 = data()
  // rows by content (a table keyed by two columns, mfa_recovery, shifts the snapshot's names)
  const rowsBefore = new Set(Object.entries(before).map(([k, v]) => `${k.split(':')[0]} ${v}`))
  const rowsAfter = Object.entries(merged1).map(([k, v]) => `${k.split(':')[0]} ${v}`)
  t.same(rowsAfter.filter((r) => !rowsBefore.has(r)).map((r) => r.split(' ')[0]).sort(), ['bearer', 'mfa_recovery'], '--merge: only the missing records written')
  t.ok([...rowsBefore].every((r) => rowsAfter.includes(r)), 'nothing else changed')

  const bad = original.split('\n')
  bad[4] = bad[4].slice(0, 20)
  const badFile = join(tempDir('sidegate-xfer-'), 'bad.ndjson')
  // what follows checks the lines past the MAC: each file signed again with the key
  writeFileSync(badFile, resign(bad.join('\n')))
  const r = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(r.code, 2)
  t.match(r.stderr, /bad\.ndjson: line 5: not JSON .*nothing was written/)
  t.same(fileSnapshot(empty.path), {}, 'a bad line: nothing written')
  const unknownUser = original.split('\n')
  unknownUser.splice(3, 0, JSON.stringify({ kind: 'session', hash: 'h', user_id: 'nobody', created: Date.now(), expires: Date.now() + HOUR }))
  writeFileSync(badFile, resign(unknownUser.join('\n')))
  const dangling = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(dangling.code, 2)
  t.match(dangling.stderr, /line 4: session of user nobody, who is neither in the file nor in/)
  const noSecret = original.split('\n').filter((l) => !l.startsWith('{"mac":'))
  const at = noSecret.findIndex((l) => l.includes('"kind":"access_key"'))
  const rec = JSON.parse(noSecret[at]) as { key: Record<string, unknown> }
  delete rec.key.secret
  noSecret[at] = JSON.stringify(rec)
  noSecret.push(noSecret[1])
  writeFileSync(badFile, resign(noSecret.join('\n')))
  const unsealed = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(unsealed.code, 2)
  t.match(unsealed.stderr, new RegExp(`line ${at + 1}: key\\.secret must be a non-empty string`), 'a record without a field: its line')
  noSecret[at] = original.split('\n')[at]
  writeFileSync(badFile, resign(noSecret.join('\n')))
  const twice = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(twice.code, 2)
  t.match(twice.stderr, new RegExp(`line ${noSecret.length}: org ".*" is already on line 2`), 'a record given twice')
  // a second group of one name in its org (any case), with another id: refused, as a username given twice is
  const clash = original.split('\n').filter((l) => !l.startsWith('{"mac":'))
  const gAt = clash.findIndex((l) => l.includes('"kind":"group"') && l.includes('"Developers"'))
  const gRec = JSON.parse(clash[gAt]) as { group: Record<string, unknown> }
  clash.splice(gAt + 1, 0, JSON.stringify({ kind: 'group', group: { ...gRec.group, id: '0c0c0c0c-0000-4000-8000-000000000001', name: 'DEVELOPERS' } }))
  writeFileSync(badFile, resign(clash.join('\n')))
  const sameName = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(sameName.code, 2)
  t.match(sameName.stderr, new RegExp(`line ${gAt + 2}: group name "DEVELOPERS" is already on line ${gAt + 1}`), 'a group name given twice')
  // a second link of one provider for one user (another subject): refused, as the store itself refuses it
  const two = original.split('\n').filter((l) => !l.startsWith('{"mac":'))
  const lAt = two.findIndex((l) => l.includes('"kind":"link"'))
  const lRec = JSON.parse(two[lAt]) as { link: Record<string, unknown> }
  two.splice(lAt + 1, 0, JSON.stringify({ kind: 'link', link: { ...lRec.link, subject: 'another-sub' } }))
  writeFileSync(badFile, resign(two.join('\n')))
  const twoLinks = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(twoLinks.code, 2)
  t.match(twoLinks.stderr, new RegExp(`line ${lAt + 2}: user .* already has a link of oidc:corp on line ${lAt + 1}`), 'two links of one provider for one user')
  t.same(fileSnapshot(empty.path), {}, 'nothing written')
  writeFileSync(badFile, resign(original.split('\n').slice(1).join('\n')))
  const headless = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(headless.code, 2)
  t.match(headless.stderr, /line 1: no header/)
  writeFileSync(badFile, resign(original.replace('"version":2', '"version":3')))
  const newer = await cliIn(empty.dir, ['store', 'import', badFile], { env })
  t.equal(newer.code, 2)
  t.match(newer.stderr, /version 3 of the format; this sidegate reads versions 1 and 2/)
  t.same(fileSnapshot(empty.path), {}, 'none of them wrote anything')
  const s = await openSqlite(empty.path)
  t.teardown(() => s.close())
  t.equal(await s.users.count(), 0, 'the embedded store: no user written')
  t.equal(await new SqliteKeyRecords(s.sqlite, 'test').get('key-check'), null, 'nor its key check value')
})

t.test('a forged file is refused (its MAC), nothing written, the refusal audited; signed, privileged records need their flags; an unsigned (version 1) file only with --allow-unsigned', async (t) => {
  const audited = async (): Promise<Array<Record<string, unknown>>> => {
    const s = await openSqlite(copy.path)
    try { return (await s.audit.read({ since: 0 })).map((e) => JSON.parse(e.json) as Record<string, unknown>).filter((e) => String(e.event).startsWith('store.')) } finally { await s.close() }
  }
  const data = (): Record<string, string> => Object.fromEntries(Object.entries(fileSnapshot(copy.path)).filter(([k]) => !k.startsWith('audit:')))
  // the review's file: the export with a superuser whose password the
  // forger chose, a passkey on a user of the store, an audit entry
  const all = original.trimEnd().split('\n')
  const userLine = JSON.parse(all.find((l) => l.includes('"kind":"user"'))!) as { user: Record<string, unknown> }
  const mallory = { kind: 'user', user: { ...userLine.user, id: '0b0b0b0b-0000-4000-8000-000000000001', username: 'mallory', name: 'mallory', email: '', is_superuser: true, password_hash: await hashPassword('chosen-password-1'), orgs: {}, default_org: null } }
  const passkeyLine = JSON.parse(all.find((l) => l.includes('"kind":"passkey"'))!) as { passkey: Record<string, unknown> }
  const planted = { kind: 'passkey', passkey: { ...passkeyLine.passkey, id: 'Zm9yZ2VkLXBhc3NrZXk', user_id: o.alice.id } }
  const lastAudit = JSON.parse(all.filter((l) => l.includes('"kind":"audit"')).pop()!) as { id: string }
  const forgedAudit = { kind: 'audit', id: `${Number(lastAudit.id.split('-')[0]) + 1}-0`, event: JSON.stringify({ event: 'user.created', actor: 'system', username: 'mallory' }) }
  const records = all.slice(0, -1)
  const auditAt = records.findIndex((l) => l.includes('"kind":"audit"'))
  records.splice(auditAt, 0, JSON.stringify(mallory), JSON.stringify(planted))
  records.push(JSON.stringify(forgedAudit))
  const forged = records.join('\n') + '\n' + all[all.length - 1] + '\n'
  const file = join(tempDir('sidegate-xfer-'), 'forged.ndjson')
  const before = data()
  const eventsBefore = (await audited()).length

  // the MAC of the export kept: it does not cover the added lines
  writeFileSync(file, forged)
  const kept = await cliIn(copy.dir, ['store', 'import', file, '--merge', '--allow-superuser', '--allow-takeover'], { env })
  t.equal(kept.code, 2, 'refused, even with every --allow flag')
  t.match(kept.stderr, /forged\.ndjson: line \d+: its MAC does not verify: the file was changed after its export, or not exported with this secret key; nothing was written/)
  // without a MAC line, and with one made up
  writeFileSync(file, records.join('\n') + '\n')
  const none = await cliIn(copy.dir, ['store', 'import', file, '--merge', '--allow-superuser', '--allow-takeover'], { env })
  t.equal(none.code, 2)
  t.match(none.stderr, /no MAC line/)
  writeFileSync(file, records.join('\n') + '\n' + JSON.stringify({ mac: new Keyring(OTHER).storeFileMac(records.join('\n') + '\n') }) + '\n')
  const other = await cliIn(copy.dir, ['store', 'import', file, '--merge', '--allow-superuser', '--allow-takeover'], { env })
  t.equal(other.code, 2)
  t.match(other.stderr, /its MAC does not verify/)
  t.same(data(), before, 'nothing written')
  const s0 = await openSqlite(copy.path)
  t.equal(await s0.users.byUsername('mallory'), null, 'no superuser mallory')
  t.equal(await s0.passkeys.get('Zm9yZ2VkLXBhc3NrZXk'), null, 'no passkey planted on alice')
  await s0.close()
  const refusals = (await audited()).slice(eventsBefore)
  t.same(refusals.map((e) => [e.event, e.outcome, e.reason, e.via, e.actor]), Array(3).fill(['store.import_refused', 'failure', 'invalid_store_file', 'merge', 'cli']), 'each refusal audited')

  // signed with the key (an operator's file): the privileged records are listed and need their flags
  writeFileSync(file, resign(records.join('\n')))
  const listed = await cliIn(copy.dir, ['store', 'import', file, '--merge', '--allow-takeover'], { env })
  t.equal(listed.code, 1)
  t.match(listed.stderr, /1 privileged record not allowed, nothing was written:\n {2}line \d+: creates mallory \(0b0b0b0b-.*\) as a superuser \(--allow-superuser\)\nCheck them, then run again with --allow-superuser/)
  const listed2 = await cliIn(copy.dir, ['store', 'import', file, '--merge', '--allow-superuser'], { env })
  t.equal(listed2.code, 1)
  t.match(listed2.stderr, /line \d+: adds passkey "Zm9yZ2VkLXBhc3NrZXk" to user .*, who is already in .*\(--allow-takeover\)/)
  t.same(data(), before, 'nothing written without both flags')
  const ok = await cliIn(copy.dir, ['store', 'import', file, '--merge', '--allow-superuser', '--allow-takeover'], { env })
  t.equal(ok.code, 0, ok.stderr)
  // the forged audit entry is older than the store's newest: skipped
  // as already there, as any audit entry a merge finds older
  t.match(ok.stdout, /: 1 user, 1 passkey; .*\nprivileged: line \d+: creates mallory .*\(--allow-superuser, allowed\)\nprivileged: line \d+: adds passkey .*\(--allow-takeover, allowed\)\n$/)
  const events = (await audited()).slice(eventsBefore + 3)
  const imported = events.find((e) => e.event === 'store.imported')!
  t.match(imported, { outcome: 'success', actor: 'cli', via: 'merge', reason: file, privileged: 2, records: 2 }, `the import audited (${JSON.stringify(imported)})`)
  t.same(events.filter((e) => e.event === 'store.import_privileged').map((e) => e.reason).sort(), ['superuser', 'takeover'], 'each privileged record audited: the superuser, the passkey of a user already there')

  // a version 1 file (an earlier sidegate's: no MAC) only with --allow-unsigned
  const empty = await sqliteDir(echo.url)
  const v1 = original.trimEnd().split('\n').slice(0, -1).join('\n').replace('"version":2', '"version":1') + '\n'
  writeFileSync(file, v1)
  const unsigned = await cliIn(empty.dir, ['store', 'import', file], { env })
  t.equal(unsigned.code, 2)
  t.match(unsigned.stderr, /is version 1 of the format: it has no MAC.*--allow-unsigned; nothing was written/)
  t.same(fileSnapshot(empty.path), {}, 'nothing written, nothing audited into the empty store')
  const allowed = await cliIn(empty.dir, ['store', 'import', file, '--allow-unsigned'], { env })
  t.equal(allowed.code, 0, allowed.stderr)
  const s1 = await openSqlite(empty.path)
  t.teardown(() => s1.close())
  const last = (await s1.audit.read({ since: 0 })).map((e) => JSON.parse(e.json) as Record<string, unknown>).pop()
  t.match(last, { event: 'store.imported', via: 'empty', unsigned: true, privileged: 0 }, 'audited as unsigned')
})

t.test('backup while another process writes: a consistent copy that opens as a store', async (t) => {
  const { dir, path } = await sqliteDir(echo.url)
  const seed = await openSqlite(path)
  await seed.verifyKey({ ...verify, mode: 'start' })
  const u = await seed.users.create({ username: 'kept', password: 'kept-password-1' })
  const k = await seed.accessKeys.create(u.id)
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
  t.equal((await s.accessKeys.get(k.key.id))?.secret, k.secret, 'a store with the same data and key')
  t.equal((await cliIn(dir, ['store', 'backup', copy], { env })).code, 2, 'an existing file is never overwritten')
})

/**
 * SqliteStore: the Store contract (test/fixtures/store-contract.ts, the suite
 * RedisStore passes) on the embedded backend, on a clock the
 * tests step; and what only a file has: its mode, durability across a
 * restart, secrets sealed at rest, files it must refuse, a full disk, a
 * write lock held elsewhere, the invalidation log; and on a stepped clock,
 * exact expiries, the gate, the last use written
 * once a minute across processes, expired rows swept.
 */
import t, { type Test } from 'tap'
import Database from 'better-sqlite3'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Keyring } from '../../src/crypto.js'
import { E, GatewayError, UsageError } from '../../src/errors.js'
import { exitCodeOf } from '../../src/cli/exit-codes.js'
import { SqliteStore } from '../../src/store/sqlite/index.js'
import type { User } from '../../src/store/types.js'
import { APPLICATION_ID, SCHEMA_VERSION } from '../../src/store/sqlite/schema.js'
import { tempDir } from '../fixtures/cleanup.js'
import { SECRET } from '../fixtures/gateway.js'
import { sqliteStore } from '../fixtures/sqlite-store.js'
import { rejectsWith, sqliteStores, storeContract } from '../fixtures/store-contract.js'
import { eventually } from '../fixtures/wait.js'
import { oathtool, stepTime } from '../fixtures/oathtool.js'
import { verify } from '../fixtures/transfer.js'

t.test('the Store contract', async (t) => { storeContract(t, sqliteStores()) })

/** A store on a file of its own. */
async function open (path: string, o: { busyTimeout?: number, pollMs?: number } = {}): Promise<SqliteStore> {
  const s = new SqliteStore(
    { path, busyTimeout: o.busyTimeout ?? 200, pollMs: o.pollMs, cache: { max: 1000, ttl: 60 } }, new Keyring(SECRET)
  )
  await s.connect()
  return s
}
/**
 * The user as the fast path answers it, at once from memory (users.lookup gave no promise); else
 * undefined (the lookup went to the store: its promise is left to settle).
 */
function inMemory (s: SqliteStore, id: string): User | null | undefined {
  const v = s.users.lookup(id)
  if (!(v instanceof Promise)) return v
  v.catch(() => {})
  return undefined
}

const fileIn = (name = 'store.db'): string => join(tempDir('sidegate-sqlite-'), name)

/** The error a connect gives, or null. */
async function openError (path: string): Promise<Error | null> {
  const s = new SqliteStore({ path, busyTimeout: 200, cache: { max: 0, ttl: 1 } }, new Keyring(SECRET))
  try { await s.connect(); return null } catch (err) { return err as Error } finally { await s.close() }
}

t.test('the file: WAL mode, readable by its owner only, marked as sidegate\'s, with its schema version', async (t) => {
  const path = fileIn()
  const s = await open(path)
  t.teardown(() => s.close())
  t.equal(s.sqlite.db.pragma('journal_mode', { simple: true }), 'wal')
  t.equal(s.sqlite.db.pragma('synchronous', { simple: true }), 1, 'NORMAL: durable against a killed process')
  t.equal(s.sqlite.db.pragma('application_id', { simple: true }), APPLICATION_ID)
  t.equal(s.sqlite.db.pragma('user_version', { simple: true }), SCHEMA_VERSION)
  t.equal(statSync(path).mode & 0o777, 0o600)
})

t.test('a restart keeps every record: users, keys, tokens, sessions, signing keys', async (t) => {
  const path = fileIn()
  const a = await open(path)
  const u = await a.users.create({ username: 'kept', password: 'kept-password' })
  const { key, secret } = await a.accessKeys.create(u.id)
  const pt = await a.privateTokens.create(u.id)
  const bt = await a.bearerTokens.issue(u.id, 3600)
  const sess = await a.sessions.create(u.id, 3600)
  await a.close()
  const b = await open(path)
  t.teardown(() => b.close())
  t.equal((await b.users.byUsername('kept'))?.id, u.id)
  t.equal((await b.accessKeys.get(key.id))?.secret, secret, 'the key\'s secret decrypts')
  t.equal(await b.privateTokens.userIdFor(pt), u.id)
  t.equal((await b.sessions.get(sess.id))?.user_id, u.id)
  t.equal((await b.bearerTokens.consume(bt.token))?.user_id, u.id)
  t.equal(await b.bearerTokens.consume(bt.token), null, 'and only once')
})

t.test('secrets are encrypted at rest: no secret, token or session id in the file', async (t) => {
  const path = fileIn()
  const s = await open(path)
  const u = await s.users.create({ username: 'sealed', password: 'sealed-password' })
  const { secret } = await s.accessKeys.create(u.id)
  const pt = await s.privateTokens.create(u.id)
  const bt = await s.bearerTokens.issue(u.id, 3600)
  const sess = await s.sessions.create(u.id, 3600)
  await s.close()
  const bytes = Buffer.concat([readFileSync(path), ...['-wal'].filter((x) => existsSync(path + x)).map((x) => readFileSync(path + x))]).toString('latin1')
  t.ok(bytes.includes('sealed'), 'the file is read (the username is there)')
  for (const [what, v] of [['access-key secret', secret], ['private token', pt], ['bearer token', bt.token], ['session id', sess.id], ['password', 'sealed-password']]) t.notOk(bytes.includes(v), `no ${what}`)
})

t.test('a file it cannot use is refused with one line naming it, and never written to', async (t) => {
  const dir = tempDir('sidegate-sqlite-bad-')
  const gone = join(dir, 'no-such-dir', 'store.db')
  t.match((await openError(gone))?.message, /^cannot open the store file .*no-such-dir\/store\.db: /)
  t.notOk(existsSync(join(dir, 'no-such-dir')), 'no directory made')

  const junk = join(dir, 'junk.db')
  writeFileSync(junk, 'this is not a database, it is a text file that is long enough to have a header'.repeat(100))
  const before = readFileSync(junk)
  const err = await openError(junk)
  t.ok(err instanceof UsageError && exitCodeOf(err.code) === 2, 'exit 2')
  t.match(err?.message, /^cannot use the store file .*junk\.db: file is not a database/)
  t.same(readFileSync(junk), before, 'untouched')

  const foreign = join(dir, 'foreign.db')
  const f = new Database(foreign)
  f.exec('CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)')
  f.close()
  t.match((await openError(foreign))?.message, /foreign\.db is not a sidegate store \(an SQLite database of another application\): nothing was read or written/)
  const g = new Database(foreign)
  t.same(g.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all(), ['invoices'], 'nothing added')
  g.close()

  const newer = fileIn()
  ;(await open(newer)).close()
  const n = new Database(newer)
  n.pragma(`user_version = ${SCHEMA_VERSION + 1}`)
  n.close()
  t.match((await openError(newer))?.message, new RegExp(`was written by a newer sidegate \\(schema version ${SCHEMA_VERSION + 1}; this one knows up to ${SCHEMA_VERSION}\\): nothing was written`))
  for (const e of [await openError(gone), await openError(junk), await openError(foreign), await openError(newer)]) t.notMatch(e?.message, /\n/, 'one line')
})

t.test('a full disk (max_page_count) and a write lock held too long are 503 store_unavailable, and the store goes on', async (t) => {
  const path = fileIn()
  const s = await open(path, { busyTimeout: 100 })
  t.teardown(() => s.close())
  const u = await s.users.create({ username: 'full', password: 'full-password' })
  const pages = s.sqlite.db.pragma('page_count', { simple: true }) as number
  s.sqlite.db.pragma(`max_page_count = ${pages}`)
  let failed = 0
  for (let i = 0; i < 200 && failed === 0; i++) {
    try { await s.audit.append(JSON.stringify({ filler: 'x'.repeat(2000), i }), 100_000) } catch (err) {
      failed++
      t.ok(err instanceof GatewayError && err.status === 503 && err.code === 'store_unavailable', `503 store_unavailable: ${(err as Error).message}`)
    }
  }
  t.equal(failed, 1, 'the disk filled up')
  t.equal((await s.users.get(u.id))?.username, 'full', 'reads go on')
  s.sqlite.db.pragma('max_page_count = 1073741823')
  await s.audit.append('{"after":true}', 100_000)

  // another process holds the write lock: a write waits busy_timeout, then 503
  const other = new Database(path)
  other.exec('BEGIN IMMEDIATE')
  const started = Date.now()
  await rejectsWith(t, s.orgs.create('Blocked'), 503, 'store_unavailable', 'while another holds the lock')
  t.ok(Date.now() - started >= 90, 'after waiting about busy_timeout')
  t.ok(await s.users.get(u.id), 'reads do not wait (WAL)')
  other.exec('ROLLBACK')
  other.close()
  t.ok(await s.orgs.create('Free again'), 'and writes go on once it is released')
})

t.test('invalidations: a replica hears a change within the poll; one that fell behind starts cold', async (t) => {
  const path = fileIn()
  const a = await open(path, { pollMs: 50 })
  const b = await open(path, { pollMs: 50 })
  t.teardown(async () => { await a.close(); await b.close() })
  const u = await a.users.create({ username: 'cached', password: 'cached-password' })
  t.ok(await b.users.get(u.id), 'b reads it')
  b.caches.users.set(u.id, { ...(await b.users.get(u.id))!, name: 'stale' })
  t.equal(inMemory(b, u.id)?.name, 'stale', 'b serves its cache')
  await a.users.setActive(u.id, false)
  t.ok(await eventually(async () => inMemory(b, u.id) === undefined, 2000, 20), 'b evicted it on a\'s message')
  t.equal((await b.users.get(u.id))?.is_active, false)

  // c reads the log only when told: it falls behind, and the row it missed is dropped (as rows older than a minute are)
  const c = await open(path, { pollMs: 3_600_000 })
  t.teardown(() => c.close())
  c.caches.users.set(u.id, { ...(await c.users.get(u.id))!, name: 'stale in c' })
  c.caches.users.set('another', { ...(await c.users.get(u.id))!, id: 'another' })
  await a.users.setActive(u.id, true)
  a.sqlite.db.prepare('DELETE FROM invalidations').run()
  c.sqlite.invalidation.read()
  t.equal(c.caches.users.size, 0, 'c missed a message: its whole cache is dropped')
  c.caches.users.set(u.id, { ...(await c.users.get(u.id))!, name: 'cached again' })
  c.sqlite.invalidation.read()
  t.equal(inMemory(c, u.id)?.name, 'cached again', 'and from there on it reads only what is new')
  c.sqlite.invalidation.stop()
  t.equal(c.sqlite.invalidation.trusted, false, 'a process that stopped reading the log does not trust its cache')
  t.equal(inMemory(c, u.id), undefined, 'so the fast path answers nothing from it (the store is asked)')
})

/** What each schema version added, undone: a file as an older sidegate wrote it. */
const UNDO: Record<number, string> = {
  2: 'DROP TABLE mfa_totp; DROP TABLE mfa_recovery;',
  3: 'ALTER TABLE sessions DROP COLUMN factors; ALTER TABLE bearer DROP COLUMN factors;',
  4: 'DROP TABLE passkeys;',
  5: 'DROP TABLE groups;',
  6: 'DROP TABLE links;',
  7: 'DROP TABLE session_tags; ALTER TABLE sessions DROP COLUMN sso;'
}

function downgradeTo (path: string, version: number): void {
  const raw = new Database(path)
  for (let v = SCHEMA_VERSION; v > version; v--) raw.exec(UNDO[v])
  raw.pragma(`user_version = ${version}`)
  raw.close()
}

t.test('a version-1 file (before second factors and sign-in factors) is upgraded step by step at its first open, keeping every record', async (t) => {
  const path = fileIn()
  const a = await open(path)
  const u = await a.users.create({ username: 'old', password: 'old-password' })
  const session = await a.sessions.create(u.id, 600)
  const bt = await a.bearerTokens.issue(u.id, 600)
  await a.close()
  // the file as sidegate wrote it before schema version 2: no MFA tables, sessions and bearer without factors
  downgradeTo(path, 1)
  const b = await open(path)
  t.teardown(() => b.close())
  t.equal(b.sqlite.db.pragma('user_version', { simple: true }), SCHEMA_VERSION, `upgraded step by step to version ${SCHEMA_VERSION}`)
  t.equal((await b.users.byUsername('old'))?.id, u.id, 'the records kept')
  t.same((await b.sessions.get(session.id))?.factors, ['pwd'], 'a session from before reads as made with the password alone')
  t.same(await b.bearerTokens.read(bt.token), { user_id: u.id, factors: ['pwd'] }, 'so does a bearer token')
  t.ok(await b.mfa.begin(u.id), 'and second factors can be stored')
  t.same((await b.mfa.factors(u.id)).totp?.confirmed, false)
  const two = await b.sessions.create(u.id, 600, 600, ['pwd', 'otp'])
  t.same((await b.sessions.get(two.id))?.factors, ['pwd', 'otp'], 'and sign-in factors')
})

t.test('a file of the version before passkeys gets their table at its first open, keeping every record', async (t) => {
  const path = fileIn()
  const a = await open(path)
  const u = await a.users.create({ username: 'older', password: 'older-password' })
  await a.close()
  downgradeTo(path, 3)
  const b = await open(path)
  t.teardown(() => b.close())
  t.equal(b.sqlite.db.pragma('user_version', { simple: true }), SCHEMA_VERSION)
  t.equal((await b.users.byUsername('older'))?.id, u.id, 'the records kept')
  t.ok(await b.passkeys.add({ id: 'AAEC', user_id: u.id, user_handle: 'h', public_key: 'pk', counter: 0, transports: [], device_type: 'singleDevice', backed_up: false, name: 'key' }))
  t.equal((await b.passkeys.list(u.id)).length, 1, 'and passkeys can be stored')
})

t.test('a file of the version before groups (4) gets their table at its first open, keeping every record', async (t) => {
  const path = fileIn()
  const a = await open(path)
  const u = await a.users.create({ username: 'grouped', password: 'grouped-password' })
  await a.close()
  downgradeTo(path, 4)
  const b = await open(path)
  t.teardown(() => b.close())
  t.equal(b.sqlite.db.pragma('user_version', { simple: true }), SCHEMA_VERSION)
  t.equal((await b.users.byUsername('grouped'))?.id, u.id, 'the records kept')
  const g = await b.groups.create('Readers')
  await b.groups.addMember(g.id, u.id)
  t.same((await b.users.get(u.id))?.groups?.map((x) => x.name), ['Readers'], 'and groups can be stored')
})

t.test('a file of the version before links (5) gets their table at its first open, keeping every record', async (t) => {
  const path = fileIn()
  const a = await open(path)
  const u = await a.users.create({ username: 'linked', password: 'linked-password' })
  await a.close()
  downgradeTo(path, 5)
  const b = await open(path)
  t.teardown(() => b.close())
  t.equal(b.sqlite.db.pragma('user_version', { simple: true }), SCHEMA_VERSION)
  t.equal((await b.users.byUsername('linked'))?.id, u.id, 'the records kept')
  await b.links.link(u.id, 'oidc:corp', 'sub')
  t.equal((await b.links.find('oidc:corp', 'sub'))?.user_id, u.id, 'and links can be stored')
})

t.test('a file of the version before provider-made sessions (6) gets their column and table at its first open', async (t) => {
  const path = fileIn()
  const a = await open(path)
  const u = await a.users.create({ username: 'tagged', password: 'tagged-password' })
  const before = await a.sessions.create(u.id, 600)
  await a.close()
  downgradeTo(path, 6)
  const b = await open(path)
  t.teardown(() => b.close())
  t.equal(b.sqlite.db.pragma('user_version', { simple: true }), SCHEMA_VERSION)
  t.equal(SCHEMA_VERSION, 7, 'the last step is this one')
  t.equal((await b.sessions.get(before.id))?.user_id, u.id, 'the sessions kept')
  const s = await b.sessions.create(u.id, 600, 600, ['pwd'], { source: 'oidc:corp', names: ['sub:x'] })
  t.same(await b.sessions.endTagged('oidc:corp', 'sub:x'), [u.id], 'and provider-made sessions can be stored and ended')
  t.equal(await b.sessions.get(s.id), null)
})

t.test('secret rotation re-encrypts a TOTP secret: codes (from oathtool) still match under the new key, not under the old', async (t) => {
  const path = fileIn()
  const a = await open(path)
  await a.verifyKey({ ...verify, mode: 'start' })
  const u = await a.users.create({ username: 'rot', password: 'rot-password' })
  const e = (await a.mfa.begin(u.id))!
  const now = Date.now()
  t.ok(await a.mfa.confirm(u.id, oathtool(e.secret, now)))
  const pendingUser = await a.users.create({ username: 'rot2', password: 'rot2-password' })
  await a.mfa.require(pendingUser.id)
  const NEW = 'a-new-secret-key-for-the-totp-rotation-test-0123'
  const r = await a.rotateKey(new Keyring(NEW), { dryRun: false, limit: null, progress: () => {}, where: 'test' })
  await a.close()
  t.equal(r.done, true)
  t.ok(r.converted >= 1, 'the TOTP record was re-encrypted (a record that only requires enrolment has no secret to)')
  t.same(r.unreadable, [])
  const b = new SqliteStore({ path, busyTimeout: 200, cache: { max: 1000, ttl: 60 } }, new Keyring(NEW))
  await b.connect()
  t.teardown(() => b.close())
  const raw = new Database(path, { readonly: true })
  const stored = raw.prepare('SELECT stored FROM mfa_totp WHERE user_id = ?').pluck().get(u.id) as string
  raw.close()
  t.equal(new Keyring(SECRET).tryDecrypt((JSON.parse(stored) as { secret: string }).secret, `user-totp:${u.id}`), null, 'no longer under the old key')
  t.equal(await b.mfa.verify(u.id, oathtool(e.secret, stepTime(now, 1))), 'otp', 'the new key opens it')
  t.equal((await b.mfa.factors(pendingUser.id)).required, true)
})

// ---- on a clock the tests step: dates, expiries, the gate, the last use, the sweep

const clocked = async (t: Test): Promise<{ store: SqliteStore, clock: { now: number } }> => {
  const clock = { now: Date.parse('2030-01-01T00:00:00Z') }
  // uncached: what is asserted is the file's own expiries (a cached session may outlive its by the cache's seconds)
  const store = await sqliteStore({ now: () => clock.now, cache: false })
  t.teardown(() => store.close())
  return { store, clock }
}

/** Rows held in the tables of expiring entries, expired ones included until swept. */
const rows = (s: SqliteStore): Record<'bearer' | 'sessions' | 'attempts' | 'once', number> => {
  const n = (table: string): number => (s.sqlite.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n
  return { bearer: n('bearer'), sessions: n('sessions'), attempts: n('attempts'), once: n('once') }
}

t.test('dates and expiries come from the clock: an entry expires when the clock reaches its expiry', async (t) => {
  const { store, clock } = await clocked(t)
  const u = await store.users.create({ username: 'timely', password: 'timely-password' })
  t.equal(u.date_joined, '2030-01-01T00:00:00.000Z')
  const { token, expires } = await store.bearerTokens.issue(u.id, 60)
  t.equal(expires.toISOString(), '2030-01-01T00:01:00.000Z')
  const s = await store.sessions.create(u.id, 60)
  t.equal(s.created, clock.now)
  t.equal(await store.limits.markOnce('sig', 'v', 60), true)
  clock.now += 59_999
  t.not(await store.sessions.get(s.id), null, '1 ms before: alive')
  t.equal(await store.limits.markOnce('sig', 'v', 60), false)
  const late = await store.bearerTokens.issue(u.id, 60)
  clock.now += 1
  t.equal(await store.sessions.get(s.id), null, 'at its expiry: gone')
  t.equal(await store.bearerTokens.consume(token), null)
  t.equal(await store.limits.markOnce('sig', 'v', 60), true)
  t.equal((await store.bearerTokens.consume(late.token))?.user_id, u.id, 'issued later, expires later')
  await store.users.recordLogin(u.id)
  t.equal((await store.users.get(u.id))!.last_login, '2030-01-01T00:01:00.000Z')
})

t.test('login attempts on a stepped clock: retryAfter is the window left, rounded like Redis TTL', async (t) => {
  const { store, clock } = await clocked(t)
  t.same(await store.limits.countLoginAttempt('s', 100, 3), { count: 1, retryAfter: 100 })
  clock.now += 30_400
  t.same(await store.limits.countLoginAttempt('s', 100, 3), { count: 2, retryAfter: 70 }, '69.6 s left: 70')
  clock.now += 200
  t.same(await store.limits.countLoginAttempt('s', 100, 3), { count: 3, retryAfter: 100 }, 'the max-th attempt: a full window again')
  clock.now += 99_999
  t.same(await store.limits.countLoginAttempt('s', 100, 3), { count: 4, retryAfter: 0 }, 'counting on until the window ends')
  clock.now += 1
  t.same(await store.limits.countLoginAttempt('s', 100, 3), { count: 1, retryAfter: 100 }, 'then a new window')
})

t.test('last use of an access key: written at most once a minute, whichever replica sees the use', async (t) => {
  const { store, clock } = await clocked(t)
  const other = await sqliteStore({ replicaOf: store, now: () => clock.now, cache: false })
  t.teardown(() => other.close())
  const { key } = await store.accessKeys.create('u1')
  store.accessKeys.touch(key.id)
  t.equal((await store.accessKeys.list('u1'))[0].date_last_used, '2030-01-01T00:00:00.000Z')
  clock.now += 59_999
  store.accessKeys.touch(key.id)
  t.equal((await store.accessKeys.list('u1'))[0].date_last_used, '2030-01-01T00:00:00.000Z', 'within the minute: not written')
  other.accessKeys.touch(key.id)
  t.equal((await store.accessKeys.list('u1'))[0].date_last_used, '2030-01-01T00:00:00.000Z', 'another replica does not write within the minute either')
  clock.now += 1
  store.accessKeys.touch(key.id)
  t.equal((await store.accessKeys.list('u1'))[0].date_last_used, '2030-01-01T00:01:00.000Z', 'after the minute: written')
})

t.test('the gate: while closed every call fails with its error; close() is 503 store_unavailable', async (t) => {
  const { store } = await clocked(t)
  const u = await store.users.create({ username: 'gated', password: 'gated-password' })
  const { key } = await store.accessKeys.create(u.id)
  const gate = E.storeUnavailable()
  store.setGate(gate)
  const calls: Array<() => Promise<unknown>> = [() => store.ping(), () => store.users.get(u.id), () => store.accessKeys.get(key.id), () => store.orgs.list(), () => store.limits.countLoginAttempt('x', 1, 1)]
  for (const call of calls) await t.rejects(async () => { await call() }, gate)
  store.accessKeys.touch(key.id)
  store.setGate(null)
  t.equal((await store.accessKeys.get(key.id))!.key.date_last_used, null, 'a touch while gated writes nothing')
  t.equal(store.isReady, true)
  await store.close()
  t.equal(store.isReady, false)
  await t.rejects(store.users.get(u.id), { status: 503, code: 'store_unavailable' })
})

t.test('expired entries nobody reads again are dropped, at most once a minute', async (t) => {
  const { store, clock } = await clocked(t)
  for (let i = 0; i < 50; i++) await store.bearerTokens.issue('u1', 1)
  for (let i = 0; i < 50; i++) await store.limits.markOnce('sig', `v${i}`, 1)
  for (let i = 0; i < 5; i++) await store.sessions.create(`u${i}`, 1)
  await store.limits.countLoginAttempt('someone', 1, 5)
  t.same(rows(store), { bearer: 50, sessions: 5, attempts: 1, once: 50 }, 'held until swept')
  clock.now += 30_000
  await store.bearerTokens.issue('u1', 600)
  t.equal(rows(store).bearer, 51, 'not within a minute of the last sweep')
  clock.now += 30_000
  const kept = await store.bearerTokens.issue('u1', 600) // a write sweeps
  const live = await store.sessions.create('u1', 600)
  t.same(rows(store), { bearer: 2, sessions: 1, attempts: 0, once: 0 }, 'only live entries are left')
  t.equal((await store.bearerTokens.consume(kept.token))?.user_id, 'u1')
  t.not(await store.sessions.get(live.id), null)
})

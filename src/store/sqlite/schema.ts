/**
 * The embedded store's file: one SQLite database in WAL mode, its tables,
 * and the checks made before anything is read or written. A file that is
 * not sidegate's (another application id, other tables), is damaged, or was
 * written by a newer sidegate (a higher schema version) is refused with a
 * StoreFileError: never re-initialised, never written to.
 *
 * Durability: WAL with synchronous=NORMAL. A transaction is on disk in the
 * WAL when its statement returns, so a process killed at any moment (even
 * SIGKILL) loses nothing acknowledged; a power loss may roll back the last
 * transactions, never corrupt the file.
 */
import { closeSync, openSync } from 'node:fs'
import Database from 'better-sqlite3'
import { UsageError } from '../../errors.js'

/** "SGT1" as a 32-bit integer: PRAGMA application_id marks the file as sidegate's. */
export const APPLICATION_ID = 0x53475431
/** Raised by every change of the tables; a file with a higher one was written by a newer sidegate. */
export const SCHEMA_VERSION = 7

export type Db = Database.Database

/** Why the file cannot be used: a one-line message, exit 2 at start. */
export class StoreFileError extends UsageError {
  constructor (code: 'store_file_unusable' | 'store_file_newer' | 'store_file_foreign', message: string) {
    super(message, code)
    this.name = 'StoreFileError'
  }
}

/**
 * What each version adds to the one before, in order: an older file gets the
 * rest at its first open by this version, in one transaction each. A new
 * file is made from TABLES (version 1) and every step.
 */
const UPGRADES: ReadonlyArray<{ to: number, sql: string }> = [
  // second factors
  {
    to: 2,
    sql: `
CREATE TABLE mfa_totp (user_id TEXT PRIMARY KEY, stored TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE mfa_recovery (user_id TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (user_id, hash)) WITHOUT ROWID;
`
  },
  // the factors a session or bearer token was obtained with (NULL: the password alone)
  {
    to: 3,
    sql: `
ALTER TABLE sessions ADD COLUMN factors TEXT;
ALTER TABLE bearer ADD COLUMN factors TEXT;
`
  },
  // passkeys (WebAuthn credentials): a row per credential id, its user indexed; the
  // counter and the last use in columns of their own (the counter's compare-and-set is one UPDATE)
  {
    to: 4,
    sql: `
CREATE TABLE passkeys (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, json TEXT NOT NULL, counter INTEGER NOT NULL, last_used TEXT) WITHOUT ROWID;
CREATE INDEX passkeys_user ON passkeys (user_id);
`
  },
  // groups: a row per group, its name claimed per org (groupNameKey) by the UNIQUE column; members are on the users
  {
    to: 5,
    sql: `
CREATE TABLE groups (id TEXT PRIMARY KEY, name_key TEXT NOT NULL UNIQUE, json TEXT NOT NULL) WITHOUT ROWID;
`
  },
  // links of accounts elsewhere (OIDC, LDAP) to users: one per (source, subject), one per source per user
  {
    to: 6,
    sql: `
CREATE TABLE links (source TEXT NOT NULL, subject TEXT NOT NULL, user_id TEXT NOT NULL, json TEXT NOT NULL, PRIMARY KEY (source, subject)) WITHOUT ROWID;
CREATE UNIQUE INDEX links_user ON links (user_id, source);
`
  },
  // sessions made through a provider: their mark (JSON) and the tags its back-channel logout finds them by
  {
    to: 7,
    sql: `
ALTER TABLE sessions ADD COLUMN sso TEXT;
CREATE TABLE session_tags (tag TEXT NOT NULL, hash TEXT NOT NULL, exp INTEGER NOT NULL, PRIMARY KEY (tag, hash)) WITHOUT ROWID;
CREATE INDEX session_tags_exp ON session_tags (exp);
`
  }
]

const TABLES = `
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE orgs (id TEXT PRIMARY KEY, json TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE users (id TEXT PRIMARY KEY, username_lower TEXT NOT NULL UNIQUE, json TEXT NOT NULL);
CREATE TABLE access_keys (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, json TEXT NOT NULL, last_used TEXT);
CREATE INDEX access_keys_user ON access_keys (user_id);
CREATE TABLE pt_lookup (hash TEXT PRIMARY KEY, user_id TEXT NOT NULL) WITHOUT ROWID;
CREATE INDEX pt_lookup_user ON pt_lookup (user_id);
CREATE TABLE pt_user (user_id TEXT PRIMARY KEY, stored TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE pt_imported (hash TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE bearer (hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, exp INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX bearer_user ON bearer (user_id);
CREATE INDEX bearer_exp ON bearer (exp);
CREATE TABLE sessions (hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, created INTEGER NOT NULL, exp INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_exp ON sessions (exp);
CREATE TABLE attempts (hash TEXT PRIMARY KEY, count INTEGER NOT NULL, exp INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX attempts_exp ON attempts (exp);
CREATE TABLE once (key TEXT PRIMARY KEY, exp INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX once_exp ON once (exp);
CREATE TABLE rate_hits (bucket TEXT NOT NULL, t INTEGER NOT NULL, exp INTEGER NOT NULL);
CREATE INDEX rate_hits_bucket ON rate_hits (bucket, t);
CREATE INDEX rate_hits_exp ON rate_hits (exp);
CREATE TABLE locks (name TEXT PRIMARY KEY, token TEXT NOT NULL, exp INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE audit (n INTEGER PRIMARY KEY, ms INTEGER NOT NULL, seq INTEGER NOT NULL, json TEXT NOT NULL);
CREATE INDEX audit_ms ON audit (ms, seq);
CREATE TABLE invalidations (seq INTEGER PRIMARY KEY AUTOINCREMENT, origin TEXT NOT NULL, msg TEXT NOT NULL, at INTEGER NOT NULL);
CREATE INDEX invalidations_at ON invalidations (at);
` + UPGRADES.map((u) => u.sql).join('')

export interface OpenOptions {
  /** ms a statement waits for another process's write lock before failing (then 503 store_unavailable) */
  busyTimeout: number
  /** open an existing file only (tools that read: never create one) */
  mustExist?: boolean
}

/** Opens (creating when new) and checks the file; throws StoreFileError naming the path when it cannot be used. */
export function openDatabase (path: string, o: OpenOptions): Db {
  let db: Db
  try {
    // a new file is readable by its owner only (its -wal and -shm files take its mode)
    if (o.mustExist !== true) { try { closeSync(openSync(path, 'wx', 0o600)) } catch (err) { if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err } }
    db = new Database(path, { timeout: o.busyTimeout, fileMustExist: o.mustExist === true })
  } catch (err) {
    throw new StoreFileError('store_file_unusable', `cannot open the store file ${path}: ${describe(err)}`)
  }
  try {
    prepare(db, path)
    return db
  } catch (err) {
    db.close()
    if (err instanceof StoreFileError) throw err
    throw new StoreFileError('store_file_unusable', `cannot use the store file ${path}: ${describe(err)}`)
  }
}

function prepare (db: Db, path: string): void {
  // reads the header first: a file that is not a database fails here, before any write
  const app = db.pragma('application_id', { simple: true }) as number
  const version = db.pragma('user_version', { simple: true }) as number
  const tables = (db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number }).n
  if (app === 0 && version === 0 && tables === 0) {
    db.pragma('journal_mode = WAL')
    db.transaction(() => {
      db.exec(TABLES)
      db.pragma(`application_id = ${APPLICATION_ID}`)
      db.pragma(`user_version = ${SCHEMA_VERSION}`)
    }).immediate()
  } else if (app !== APPLICATION_ID) {
    throw new StoreFileError('store_file_foreign', `${path} is not a sidegate store (an SQLite database of another application): nothing was read or written; give store.path a file of its own`)
  } else if (version > SCHEMA_VERSION) {
    throw new StoreFileError('store_file_newer', `${path} was written by a newer sidegate (schema version ${version}; this one knows up to ${SCHEMA_VERSION}): nothing was written; run that version, or restore a backup made for this one`)
  }
  if (version < SCHEMA_VERSION && !db.readonly) {
    for (const u of UPGRADES) {
      db.transaction(() => {
        // another process may have upgraded it meanwhile: each step looks again
        if ((db.pragma('user_version', { simple: true }) as number) !== u.to - 1) return
        db.exec(u.sql)
        db.pragma(`user_version = ${u.to}`)
      }).immediate()
    }
  }
  if (db.pragma('journal_mode', { simple: true }) !== 'wal') db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  // a quick look at the pages' structure: a damaged file is refused at start, not at a request
  const check = db.pragma('quick_check(1)', { simple: true })
  if (check !== 'ok') throw new StoreFileError('store_file_unusable', `${path} is damaged (${String(check)}): restore it from a backup (sidegate store backup)`)
}

export function describe (err: unknown): string {
  const e = err as { code?: string, message?: string }
  return e.code !== undefined && e.message !== undefined && !e.message.includes(e.code) ? `${e.message} (${e.code})` : e.message ?? String(err)
}

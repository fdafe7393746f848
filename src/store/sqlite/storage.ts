/**
 * The embedded backend's Storage: one SQLite file (better-sqlite3) shared by
 * every process of one host (the gateway, its --workers, the CLI), one
 * object per aggregate, each in its own file, and an invalidation log
 * (./invalidation.ts) for the caches. Every call is one short, indexed
 * statement or one IMMEDIATE transaction, run synchronously: nothing can
 * interleave within it, in this process or another. A statement that waits
 * longer than store.sqlite.busy_timeout for another process's write fails
 * with 503 store_unavailable, as does any other SQLite failure (a full disk).
 */
import type Database from 'better-sqlite3'
import { E, GatewayError } from '../../errors.js'
import type { Storage } from '../ports.js'
import { SqliteAccessKeys } from './access-keys.js'
import { SqliteAudit } from './audit.js'
import { SqliteGroups } from './groups.js'
import { SqliteLinks } from './links.js'
import { SqliteBearerTokens } from './bearer-tokens.js'
import type { SqlContext } from './context.js'
import { InvalidationLog } from './invalidation.js'
import { SqliteLimits, SqliteLocks } from './limits.js'
import { SqliteMfa } from './mfa.js'
import { SqlitePasskeys } from './passkeys.js'
import { SqlitePrivateTokens } from './private-tokens.js'
import { openDatabase, type Db } from './schema.js'
import { SqliteSessions } from './sessions.js'
import { SqliteSigningKeys } from './signing-keys.js'
import { SqliteOrgs, SqliteUsers } from './users.js'

export interface SqliteStorageOptions {
  /** the database file */
  path: string
  /** ms a statement waits for another process's write lock */
  busyTimeout: number
  /** ms between reads of the invalidation log */
  pollMs?: number
  /** the clock (default Date.now): tests step it */
  now?: () => number
  /** called with every failed statement (counted by metrics) */
  onCommandError?: (err: unknown) => void
  /** called once the file is open and checked */
  onReady?: () => void
}

/** Expired rows nobody reads again are dropped at most this often (clock time). */
const SWEEP_EVERY_MS = 60_000

export class SqliteStorage implements Storage, SqlContext {
  readonly path: string
  readonly orgs = new SqliteOrgs(this)
  readonly groups = new SqliteGroups(this)
  readonly users = new SqliteUsers(this)
  readonly links = new SqliteLinks(this)
  readonly accessKeys = new SqliteAccessKeys(this)
  readonly privateTokens = new SqlitePrivateTokens(this)
  readonly bearerTokens = new SqliteBearerTokens(this)
  readonly sessions = new SqliteSessions(this)
  readonly limits = new SqliteLimits(this)
  readonly locks = new SqliteLocks(this)
  readonly audit = new SqliteAudit(this)
  readonly signingKeys = new SqliteSigningKeys(this)
  readonly mfa = new SqliteMfa(this)
  readonly passkeys = new SqlitePasskeys(this)
  readonly invalidation: InvalidationLog
  readonly #o: SqliteStorageOptions
  readonly #statements = new Map<string, Database.Statement>()
  #db: Db | null = null
  #gate: GatewayError | null = null
  #closed = false
  #nextSweep = 0

  constructor (o: SqliteStorageOptions) {
    this.#o = o
    this.path = o.path
    this.invalidation = new InvalidationLog(this, o.pollMs ?? 250)
  }

  get db (): Db {
    if (this.#db === null) throw E.storeUnavailable()
    return this.#db
  }

  now (): number { return this.#o.now?.() ?? Date.now() }

  st (sql: string): Database.Statement {
    let s = this.#statements.get(sql)
    if (s === undefined) this.#statements.set(sql, (s = this.db.prepare(sql)))
    return s
  }

  run<T> (fn: () => T): T {
    if (this.#gate !== null) throw this.#gate
    return this.ungated(fn)
  }

  ungated<T> (fn: () => T): T {
    if (this.#closed || this.#db === null) throw E.storeUnavailable()
    try {
      return fn()
    } catch (err) {
      if (err instanceof GatewayError) throw err
      this.#o.onCommandError?.(err)
      throw Object.assign(E.storeUnavailable(), { cause: err })
    }
  }

  /** fn in one IMMEDIATE transaction; within one already open, a savepoint (better-sqlite3's nesting). */
  tx<T> (fn: () => T): T {
    return this.run(() => {
      const db = this.db
      if (db.inTransaction) return db.transaction(fn)()
      this.st('BEGIN IMMEDIATE').run()
      try {
        const result = fn()
        this.st('COMMIT').run()
        return result
      } catch (err) {
        if (db.inTransaction) this.st('ROLLBACK').run()
        throw err
      }
    })
  }

  sweep (): void {
    const now = this.now()
    if (now < this.#nextSweep) return
    this.#nextSweep = now + SWEEP_EVERY_MS
    for (const table of ['bearer', 'sessions', 'session_tags', 'attempts', 'once', 'rate_hits', 'locks']) this.st(`DELETE FROM ${table} WHERE exp <= ?`).run(now)
  }

  /** Opens the file (a StoreFileError when it cannot be used) and starts reading the invalidation log. */
  async connect (): Promise<void> {
    if (this.#db !== null) return
    this.#db = openDatabase(this.path, { busyTimeout: this.#o.busyTimeout })
    this.invalidation.start()
    this.#o.onReady?.()
  }

  get isReady (): boolean { return this.#db !== null && !this.#closed }

  setGate (err: GatewayError | null): void { this.#gate = err }
  get gateOpen (): boolean { return this.#gate === null && this.isReady }

  async ping (): Promise<void> { this.run(() => this.st('SELECT 1').get()) }

  async close (): Promise<void> {
    this.#closed = true
    this.invalidation.stop()
    this.#statements.clear()
    this.#db?.close()
    this.#db = null
  }
}

/** What every aggregate of the embedded backend shares: the database, its clock, one way to run statements. */
import type Database from 'better-sqlite3'
import type { Db } from './schema.js'
import type { Factor } from '../model.js'

export interface SqlContext {
  readonly db: Db
  /** The clock of every expiry, epoch ms. */
  now(): number
  /** A prepared statement, prepared once per process. */
  st(sql: string): Database.Statement
  /**
   * Runs `fn` synchronously; a closed gate or store refuses it, and any SQLite failure becomes a 503 store_unavailable.
   */
  run<T>(fn: () => T): T
  /** run() past the gate: the secret key's own check, which decides whether the gate opens. */
  ungated<T>(fn: () => T): T
  /** Runs `fn` in one IMMEDIATE transaction (the write lock taken first), under run(). */
  tx<T>(fn: () => T): T
  /** Drops expired rows, at most once a minute of the clock. */
  sweep(): void
}

/**
 * A session's or bearer token's factors as their column holds them: NULL for the password alone, else space-separated.
 */
export function factorsColumn (factors: readonly Factor[] | undefined): string | null {
  return factors === undefined ? null : factors.join(' ')
}

export function factorsOf (column: string | null): Factor[] | undefined {
  return column === null ? undefined : column.split(' ') as Factor[]
}

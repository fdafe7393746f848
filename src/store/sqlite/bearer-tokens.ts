/**
 * One-time bearer tokens in SQLite: hash → user id, factors and expiry, indexed by user (what a password change ends).
 */
import type { BearerTokenStorage, StoredGrant } from '../ports.js'
import { factorsColumn, factorsOf, type SqlContext } from './context.js'

export class SqliteBearerTokens implements BearerTokenStorage {
  constructor (private readonly c: SqlContext) {}

  async insert (hash: string, grant: StoredGrant, now: number, ttlSeconds: number): Promise<boolean> {
    const { c } = this
    return c.tx(() => {
      c.sweep()
      // an expired row with the same hash is replaced, as Redis's expired key would be gone
      c.st('DELETE FROM bearer WHERE hash = ? AND exp <= ?').run(hash, c.now())
      return c.st('INSERT OR IGNORE INTO bearer (hash, user_id, exp, factors) VALUES (?, ?, ?, ?)').run(hash, grant.user_id, now + ttlSeconds * 1000, factorsColumn(grant.factors)).changes === 1
    })
  }

  /** One statement: of concurrent callers, in this process or another, exactly one gets the row. */
  async consume (hash: string): Promise<StoredGrant | null> {
    const { c } = this
    return c.run(() => {
      const r = c.st('DELETE FROM bearer WHERE hash = ? RETURNING user_id, exp, factors').get(hash) as Row | undefined
      return r !== undefined && r.exp > c.now() ? grantOf(r) : null
    })
  }

  async read (hash: string): Promise<StoredGrant | null> {
    const { c } = this
    const r = c.run(() => c.st('SELECT user_id, exp, factors FROM bearer WHERE hash = ? AND exp > ?').get(hash, c.now()) as Row | undefined)
    return r === undefined ? null : grantOf(r)
  }

  async endAll (userId: string): Promise<void> { this.c.run(() => this.c.st('DELETE FROM bearer WHERE user_id = ?').run(userId)) }
}

interface Row { user_id: string, exp: number, factors: string | null }

function grantOf (r: Row): StoredGrant {
  const factors = factorsOf(r.factors)
  return factors === undefined ? { user_id: r.user_id } : { user_id: r.user_id, factors }
}

/** One-time bearer tokens in SQLite: hash → user id with its expiry, indexed by user (what a password change ends). */
import type { BearerTokenStorage } from '../ports.js'
import type { SqlContext } from './context.js'

export class SqliteBearerTokens implements BearerTokenStorage {
  constructor (private readonly c: SqlContext) {}

  async insert (hash: string, userId: string, now: number, ttlSeconds: number): Promise<boolean> {
    const { c } = this
    return c.tx(() => {
      c.sweep()
      // an expired row with the same hash is replaced, as Redis's expired key would be gone
      c.st('DELETE FROM bearer WHERE hash = ? AND exp <= ?').run(hash, c.now())
      return c.st('INSERT OR IGNORE INTO bearer (hash, user_id, exp) VALUES (?, ?, ?)').run(hash, userId, now + ttlSeconds * 1000).changes === 1
    })
  }

  /** One statement: of concurrent callers, in this process or another, exactly one gets the row. */
  async consume (hash: string): Promise<string | null> {
    const { c } = this
    return c.run(() => {
      const r = c.st('DELETE FROM bearer WHERE hash = ? RETURNING user_id, exp').get(hash) as { user_id: string, exp: number } | undefined
      return r !== undefined && r.exp > c.now() ? r.user_id : null
    })
  }

  async read (hash: string): Promise<string | null> {
    const { c } = this
    return c.run(() => (c.st('SELECT user_id FROM bearer WHERE hash = ? AND exp > ?').pluck().get(hash, c.now()) as string | undefined) ?? null)
  }

  async endAll (userId: string): Promise<void> { this.c.run(() => this.c.st('DELETE FROM bearer WHERE user_id = ?').run(userId)) }
}

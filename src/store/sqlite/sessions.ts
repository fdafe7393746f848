/** Sessions in SQLite: hash → user id, creation, factors and expiry (the idle timeout), indexed by user. */
import type { SessionStorage, StoredSession } from '../ports.js'
import type { SessionInfo } from '../model.js'
import { factorsColumn, factorsOf, type SqlContext } from './context.js'

export class SqliteSessions implements SessionStorage {
  constructor (private readonly c: SqlContext) {}

  async insert (hash: string, s: StoredSession, ttlSeconds: number): Promise<void> {
    const { c } = this
    c.run(() => {
      c.sweep()
      c.st('INSERT OR REPLACE INTO sessions (hash, user_id, created, exp, factors) VALUES (?, ?, ?, ?, ?)').run(hash, s.user_id, s.created, s.created + ttlSeconds * 1000, factorsColumn(s.factors))
    })
  }

  async get (hash: string): Promise<StoredSession | null> {
    const { c } = this
    const r = c.run(
      () => c.st(
        'SELECT user_id, created, factors FROM sessions WHERE hash = ? AND exp > ?'
      ).get(hash, c.now()) as { user_id: string, created: number, factors: string | null } | undefined
    )
    if (r === undefined) return null
    const factors = factorsOf(r.factors)
    return factors === undefined
      ? { user_id: r.user_id, created: r.created }
      : { user_id: r.user_id, created: r.created, factors }
  }

  async touch (hash: string, ttlSeconds: number): Promise<void> {
    const { c } = this
    c.run(() => { const now = c.now(); c.st('UPDATE sessions SET exp = ? WHERE hash = ? AND exp > ?').run(now + ttlSeconds * 1000, hash, now) })
  }

  async delete (hash: string): Promise<string | null> {
    const { c } = this
    const r = c.run(() => c.st('DELETE FROM sessions WHERE hash = ? RETURNING user_id, exp').get(hash) as { user_id: string, exp: number } | undefined)
    return r !== undefined && r.exp > c.now() ? r.user_id : null
  }

  async list (userId: string): Promise<SessionInfo[]> {
    const { c } = this
    const rows = c.run(() => c.st('SELECT hash, created, exp FROM sessions WHERE user_id = ? AND exp > ?').all(userId, c.now()) as Array<{ hash: string, created: number, exp: number }>)
    return rows.map((r) => ({ id: r.hash, created: r.created, expires: r.exp }))
  }

  async deleteOf (userId: string, hash: string): Promise<boolean> {
    const { c } = this
    return c.run(() => c.st('DELETE FROM sessions WHERE hash = ? AND user_id = ? AND exp > ?').run(hash, userId, c.now()).changes === 1)
  }

  async endAll (userId: string): Promise<void> { this.c.run(() => this.c.st('DELETE FROM sessions WHERE user_id = ?').run(userId)) }
}

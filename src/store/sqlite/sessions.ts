/**
 * Sessions in SQLite: hash → user id, creation, factors, a provider's mark and
 * expiry (the idle timeout), indexed by user; a provider's tags in
 * session_tags, living as long as the user's index would (the absolute timeout).
 */
import type { SessionStorage, SsoMark, StoredSession } from '../ports.js'
import type { SessionInfo } from '../model.js'
import { factorsColumn, factorsOf, type SqlContext } from './context.js'

type Row = { user_id: string, created: number, factors: string | null, sso: string | null }

export class SqliteSessions implements SessionStorage {
  constructor (private readonly c: SqlContext) {}

  async insert (hash: string, s: StoredSession, ttlSeconds: number, indexSeconds: number): Promise<void> {
    const { c } = this
    const write = (): void => {
      c.sweep()
      c.st('INSERT OR REPLACE INTO sessions (hash, user_id, created, exp, factors, sso) VALUES (?, ?, ?, ?, ?, ?)').run(
        hash, s.user_id, s.created, s.created + ttlSeconds * 1000, factorsColumn(s.factors),
        s.sso === undefined ? null : JSON.stringify(s.sso)
      )
      for (const tag of s.sso?.tags ?? []) {
        c.st('INSERT OR REPLACE INTO session_tags (tag, hash, exp) VALUES (?, ?, ?)').run(tag, hash, s.created + indexSeconds * 1000)
      }
    }
    // with tags, one transaction: a session is never found by one of its tags and missed by another
    if (s.sso !== undefined && s.sso.tags.length > 0) c.tx(write)
    else c.run(write)
  }

  async get (hash: string): Promise<StoredSession | null> {
    const { c } = this
    const r = c.run(
      () => c.st('SELECT user_id, created, factors, sso FROM sessions WHERE hash = ? AND exp > ?').get(hash, c.now()) as Row | undefined
    )
    return r === undefined ? null : stored(r)
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

  async endTagged (tag: string): Promise<Array<{ hash: string, user_id: string }>> {
    const { c } = this
    return c.tx(() => {
      const now = c.now()
      const gone = c.st(
        'DELETE FROM sessions WHERE hash IN (SELECT hash FROM session_tags WHERE tag = ?) RETURNING hash, user_id, exp'
      ).all(tag) as Array<{ hash: string, user_id: string, exp: number }>
      c.st('DELETE FROM session_tags WHERE tag = ?').run(tag)
      return gone.filter((r) => r.exp > now).map((r) => ({ hash: r.hash, user_id: r.user_id }))
    })
  }
}

/** A row as the port's record: the factors and the mark only when there are any. */
function stored (r: Row): StoredSession {
  const s: StoredSession = { user_id: r.user_id, created: r.created }
  const factors = factorsOf(r.factors)
  if (factors !== undefined) s.factors = factors
  if (r.sso !== null) s.sso = JSON.parse(r.sso) as SsoMark
  return s
}

/**
 * Private tokens in SQLite: pt_lookup (hash → user id), pt_user (the user's
 * token as `<lookup hash>:<sealed token>`, ../secret/records.ts) and
 * pt_imported (the imported, untagged tokens' hashes).
 */
import type { PrivateTokenStorage, StoredPrivateToken, StoredUser } from '../ports.js'
import { openPrivateToken, sealPrivateToken } from '../secret/records.js'
import type { SqlContext } from './context.js'

export class SqlitePrivateTokens implements PrivateTokenStorage {
  constructor (private readonly c: SqlContext) {}

  async setLookup (hash: string, userId: string): Promise<void> {
    this.c.run(() => this.c.st('INSERT OR REPLACE INTO pt_lookup (hash, user_id) VALUES (?, ?)').run(hash, userId))
  }

  async lookup (hash: string): Promise<string | null> {
    return this.c.run(() => (this.c.st('SELECT user_id FROM pt_lookup WHERE hash = ?').pluck().get(hash) as string | undefined) ?? null)
  }

  /** One statement: the entry joined with its user's row. */
  async lookupUser (hash: string): Promise<{ userId: string, user: StoredUser | null } | null> {
    const r = this.c.run(() => this.c.st('SELECT l.user_id AS id, u.json AS user FROM pt_lookup l LEFT JOIN users u ON u.id = l.user_id WHERE l.hash = ?').get(hash) as { id: string, user: string | null } | undefined)
    return r === undefined ? null : { userId: r.id, user: r.user === null ? null : JSON.parse(r.user) as StoredUser }
  }

  async dropLookup (hash: string): Promise<void> { this.c.run(() => this.c.st('DELETE FROM pt_lookup WHERE hash = ?').run(hash)) }

  async lookupsOf (userId: string): Promise<string[]> {
    return this.c.run(() => this.c.st('SELECT hash FROM pt_lookup WHERE user_id = ?').pluck().all(userId) as string[])
  }

  async swap (userId: string, t: { hash: string, sealed: string }): Promise<StoredPrivateToken | null> {
    const { c } = this
    return c.tx(() => {
      const old = this.#read(userId)
      c.st('INSERT OR REPLACE INTO pt_user (user_id, stored) VALUES (?, ?)').run(userId, sealPrivateToken(t.hash, t.sealed))
      return old
    })
  }

  async get (userId: string): Promise<StoredPrivateToken | null> { return this.c.run(() => this.#read(userId)) }

  async take (userId: string): Promise<StoredPrivateToken | null> {
    const stored = this.c.run(() => this.c.st('DELETE FROM pt_user WHERE user_id = ? RETURNING stored').pluck().get(userId) as string | undefined)
    return stored === undefined ? null : openPrivateToken(stored)
  }

  async addImported (hash: string): Promise<void> { this.c.run(() => this.c.st('INSERT OR IGNORE INTO pt_imported (hash) VALUES (?)').run(hash)) }
  async dropImported (hash: string): Promise<boolean> { return this.c.run(() => this.c.st('DELETE FROM pt_imported WHERE hash = ?').run(hash).changes === 1) }

  /** One indexed lookup per candidate, only when any token was imported (one statement tells). */
  async findImported (candidates: () => string[]): Promise<string | null> {
    const { c } = this
    return c.run(() => {
      if (c.st('SELECT 1 FROM pt_imported LIMIT 1').get() === undefined) return null
      const has = c.st('SELECT 1 FROM pt_imported WHERE hash = ?')
      return candidates().find((h) => has.get(h) !== undefined) ?? null
    })
  }

  #read (userId: string): StoredPrivateToken | null {
    const stored = this.c.st('SELECT stored FROM pt_user WHERE user_id = ?').pluck().get(userId) as string | undefined
    return stored === undefined ? null : openPrivateToken(stored)
  }
}

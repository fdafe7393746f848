/**
 * Access keys in SQLite: the JSON record (secret sealed) per row, its last
 * use in a column of its own (written often, never rewriting the record),
 * indexed by user for the listing and the cap.
 */
import {
  applyKeyState, type AccessKeyStorage, type KeyStateExpected, type KeyStateFields, type StoredKey, type StoredUser
} from '../ports.js'
import type { RateLimitPolicy } from '../model.js'
import type { SqlContext } from './context.js'

export class SqliteAccessKeys implements AccessKeyStorage {
  constructor (private readonly c: SqlContext) {}

  async insert (key: StoredKey, max: number): Promise<boolean> {
    const { c } = this
    return c.tx(() => {
      if (max > 0 && (c.st('SELECT count(*) FROM access_keys WHERE user_id = ?').pluck().get(key.user_id) as number) >= max) return false
      c.st('INSERT INTO access_keys (id, user_id, json) VALUES (?, ?, ?)').run(key.id, key.user_id, JSON.stringify(key))
      return true
    })
  }

  async insertNew (key: StoredKey): Promise<boolean> {
    return this.c.run(() => this.c.st('INSERT OR IGNORE INTO access_keys (id, user_id, json) VALUES (?, ?, ?)').run(key.id, key.user_id, JSON.stringify(key)).changes === 1)
  }

  async get (id: string): Promise<{ stored: StoredKey, lastUsed: string | null } | null> {
    const r = this.c.run(() => this.c.st('SELECT json, last_used FROM access_keys WHERE id = ?').get(id) as { json: string, last_used: string | null } | undefined)
    return r === undefined ? null : { stored: JSON.parse(r.json) as StoredKey, lastUsed: r.last_used }
  }

  /** One statement: the key's row joined with its user's. */
  async getWithUser (id: string): Promise<{
    stored: StoredKey,
    lastUsed: string | null,
    user: StoredUser | null
  } | null> {
    const r = this.c.run(
      () => this.c.st(
        'SELECT k.json, k.last_used, u.json AS user FROM access_keys k LEFT JOIN users u ON u.id = k.user_id WHERE k.id = ?'
      ).get(id) as { json: string, last_used: string | null, user: string | null } | undefined
    )
    return r === undefined
      ? null
      : {
          stored: JSON.parse(r.json) as StoredKey,
          lastUsed: r.last_used,
          user: r.user === null ? null : JSON.parse(r.user) as StoredUser
        }
  }

  async ids (userId: string): Promise<string[]> {
    return this.c.run(() => this.c.st('SELECT id FROM access_keys WHERE user_id = ?').pluck().all(userId) as string[])
  }

  async setState (id: string, fields: KeyStateFields, expect?: KeyStateExpected): Promise<boolean> {
    return this.#change(id, (s) => applyKeyState(s, fields, expect))
  }

  async setRateLimit (id: string, policy: RateLimitPolicy | null): Promise<boolean> {
    return this.#change(id, (s) => { s.rate_limit = policy; return true })
  }

  async delete (id: string): Promise<boolean> {
    return this.c.run(() => this.c.st('DELETE FROM access_keys WHERE id = ?').run(id).changes === 1)
  }

  async touch (id: string, now: string, olderThan: string): Promise<0 | 1 | 2> {
    const { c } = this
    return c.tx(() => {
      const r = c.st('SELECT last_used FROM access_keys WHERE id = ?').get(id) as { last_used: string | null } | undefined
      if (r === undefined) return 0
      if (r.last_used !== null && r.last_used > olderThan) return 0
      c.st('UPDATE access_keys SET last_used = ? WHERE id = ?').run(now, id)
      return r.last_used === null ? 2 : 1
    })
  }

  #change (id: string, edit: (s: StoredKey) => boolean): boolean {
    const { c } = this
    return c.tx(() => {
      const r = c.st('SELECT json FROM access_keys WHERE id = ?').get(id) as { json: string } | undefined
      if (r === undefined) return false
      const s = JSON.parse(r.json) as StoredKey
      if (!edit(s)) return false
      c.st('UPDATE access_keys SET json = ? WHERE id = ?').run(JSON.stringify(s), id)
      return true
    })
  }
}

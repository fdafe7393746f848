/**
 * Passkeys in SQLite: `passkeys`, a row per credential id (its counter a column: the compare-and-set is one UPDATE).
 */
import type { PasskeyStorage } from '../ports.js'
import type { StoredPasskey } from '../model.js'
import type { SqlContext } from './context.js'

interface Row { json: string, counter: number, last_used: string | null }

const fromRow = (r: Row): StoredPasskey => ({
  ...(JSON.parse(r.json) as StoredPasskey),
  counter: r.counter,
  last_used: r.last_used
})

export class SqlitePasskeys implements PasskeyStorage {
  constructor (private readonly c: SqlContext) {}

  async insert (p: StoredPasskey): Promise<boolean> {
    const { counter, last_used: lastUsed, ...rest } = p
    return this.c.run(() => this.c.st('INSERT OR IGNORE INTO passkeys (id, user_id, json, counter, last_used) VALUES (?, ?, ?, ?, ?)')
      .run(p.id, p.user_id, JSON.stringify(rest), counter, lastUsed).changes === 1)
  }

  async get (credentialId: string): Promise<StoredPasskey | null> {
    const r = this.c.run(() => this.c.st('SELECT json, counter, last_used FROM passkeys WHERE id = ?').get(credentialId) as Row | undefined)
    return r === undefined ? null : fromRow(r)
  }

  async list (userId: string): Promise<StoredPasskey[]> {
    return this.c.run(() => (this.c.st('SELECT json, counter, last_used FROM passkeys WHERE user_id = ?').all(userId) as Row[]).map(fromRow))
  }

  async rename (userId: string, credentialId: string, name: string): Promise<boolean> {
    return this.c.run(() => this.c.st("UPDATE passkeys SET json = json_set(json, '$.name', ?) WHERE id = ? AND user_id = ?").run(name, credentialId, userId).changes === 1)
  }

  async delete (userId: string, credentialId: string): Promise<boolean> {
    return this.c.run(() => this.c.st('DELETE FROM passkeys WHERE id = ? AND user_id = ?').run(credentialId, userId).changes === 1)
  }

  async deleteAll (userId: string): Promise<number> {
    return this.c.run(() => this.c.st('DELETE FROM passkeys WHERE user_id = ?').run(userId).changes)
  }

  async advance (credentialId: string, counter: number, lastUsed: string): Promise<boolean> {
    // ../ports.ts counterAdvances, as one statement
    return this.c.run(() => this.c.st('UPDATE passkeys SET counter = @counter, last_used = @lastUsed WHERE id = @id AND (counter < @counter OR (counter = 0 AND @counter = 0))')
      .run({ counter, lastUsed, id: credentialId }).changes === 1)
  }
}

/**
 * The secret key's records (../secret/records.ts) in SQLite: names in the
 * meta table; `ak:<id>` the access key's JSON, `user-pt:<user id>` the
 * stored private token, `jwks` the signing key set (in meta).
 */
import type { KeyRecords } from '../secret/records.js'
import type { SqlContext } from './context.js'

export class SqliteKeyRecords implements KeyRecords {
  constructor (private readonly c: SqlContext, readonly where: string) {}

  async get (name: string): Promise<string | null> {
    return this.c.ungated(() => (this.c.st('SELECT value FROM meta WHERE name = ?').pluck().get(name) as string | undefined) ?? null)
  }

  async set (name: string, value: string): Promise<void> { this.c.ungated(() => this.c.st('INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)').run(name, value)) }
  async setIfAbsent (name: string, value: string): Promise<boolean> { return this.c.ungated(() => this.c.st('INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)').run(name, value).changes === 1) }
  async delete (name: string): Promise<void> { this.c.ungated(() => this.c.st('DELETE FROM meta WHERE name = ?').run(name)) }
  async deleteIfEqual (name: string, value: string): Promise<void> { this.c.ungated(() => this.c.st('DELETE FROM meta WHERE name = ? AND value = ?').run(name, value)) }
  async userIds (): Promise<string[]> { return this.c.ungated(() => this.c.st('SELECT id FROM users').pluck().all() as string[]) }
  async keyIds (userId: string): Promise<string[]> { return this.c.ungated(() => this.c.st('SELECT id FROM access_keys WHERE user_id = ?').pluck().all(userId) as string[]) }

  async read (record: string): Promise<string | null> {
    const [sql, id] = where(record)
    return this.c.ungated(() => (this.c.st(`SELECT ${sql}`).pluck().get(id) as string | undefined) ?? null)
  }

  async compareAndSet (record: string, expected: string, value: string): Promise<boolean> {
    const [sql, id] = where(record)
    const [column, rest] = sql.split(' FROM ')
    const [table, cond] = rest.split(' WHERE ')
    return this.c.ungated(() => this.c.st(`UPDATE ${table} SET ${column} = ? WHERE ${cond} AND ${column} = ?`).run(value, id, expected).changes === 1)
  }

  async isEmpty (): Promise<boolean> {
    return this.c.ungated(() => this.c.st("SELECT NOT EXISTS (SELECT 1 FROM meta WHERE name = 'key-check') AND NOT EXISTS (SELECT 1 FROM users) AND NOT EXISTS (SELECT 1 FROM orgs)").pluck().get() === 1)
  }
}

/** A record's column, table and condition, and the id it names. */
function where (record: string): [string, string] {
  if (record === 'jwks') return ['value FROM meta WHERE name = ?', 'jwks']
  const i = record.indexOf(':')
  const kind = record.slice(0, i)
  const id = record.slice(i + 1)
  if (kind === 'ak') return ['json FROM access_keys WHERE id = ?', id]
  if (kind === 'user-pt') return ['stored FROM pt_user WHERE user_id = ?', id]
  throw new Error(`no such record: ${record}`)
}

/**
 * The secret key's records (../secret/records.ts) in SQLite: names in the
 * meta table; `ak:<id>` the access key's JSON, `user-pt:<user id>` the
 * stored private token, `user-totp:<user id>` the TOTP record, `jwks` the signing key set (in meta).
 */
import type { KeyRecords } from '../secret/records.js'
import type { SqlContext } from './context.js'

export class SqliteKeyRecords implements KeyRecords {
  constructor (private readonly c: SqlContext, readonly where: string) {}

  async get (name: string): Promise<string | null> {
    return this.c.ungated(() => (this.c.st('SELECT value FROM meta WHERE name = ?').pluck().get(name) as string | undefined) ?? null)
  }

  async set (name: string, value: string): Promise<void> { this.c.ungated(() => this.c.st('INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)').run(name, value)) }
  async setIfAbsent (name: string, value: string): Promise<boolean> {
    return this.c.ungated(
      () => this.c.st('INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)').run(name, value).changes === 1
    )
  }

  async delete (name: string): Promise<void> { this.c.ungated(() => this.c.st('DELETE FROM meta WHERE name = ?').run(name)) }
  async deleteIfEqual (name: string, value: string): Promise<void> {
    this.c.ungated(() => this.c.st('DELETE FROM meta WHERE name = ? AND value = ?').run(name, value))
  }

  async userIds (): Promise<string[]> { return this.c.ungated(() => this.c.st('SELECT id FROM users').pluck().all() as string[]) }
  async keyIds (userId: string): Promise<string[]> {
    return this.c.ungated(
      () => this.c.st('SELECT id FROM access_keys WHERE user_id = ?').pluck().all(userId) as string[]
    )
  }

  async read (record: string): Promise<string | null> {
    const w = where(record)
    return this.c.ungated(() => (this.c.st(`SELECT ${w.column} FROM ${w.table} WHERE ${w.key} = ?`).pluck().get(w.id) as string | undefined) ?? null)
  }

  async compareAndSet (record: string, expected: string, value: string): Promise<boolean> {
    const w = where(record)
    return this.c.ungated(() => this.c.st(`UPDATE ${w.table} SET ${w.column} = ? WHERE ${w.key} = ? AND ${w.column} = ?`).run(value, w.id, expected).changes === 1)
  }

  async isEmpty (): Promise<boolean> {
    return this.c.ungated(() => this.c.st("SELECT NOT EXISTS (SELECT 1 FROM meta WHERE name = 'key-check') AND NOT EXISTS (SELECT 1 FROM users) AND NOT EXISTS (SELECT 1 FROM orgs)").pluck().get() === 1)
  }
}

interface Where { table: string, column: string, key: string, id: string }

/** Where a record lives: its table, the column holding it, the key column and the id it names. */
function where (record: string): Where {
  if (record === 'jwks') return { table: 'meta', column: 'value', key: 'name', id: 'jwks' }
  const i = record.indexOf(':')
  const kind = record.slice(0, i)
  const id = record.slice(i + 1)
  if (kind === 'ak') return { table: 'access_keys', column: 'json', key: 'id', id }
  if (kind === 'user-pt') return { table: 'pt_user', column: 'stored', key: 'user_id', id }
  if (kind === 'user-totp') return { table: 'mfa_totp', column: 'stored', key: 'user_id', id }
  throw new Error(`no such record: ${record}`)
}

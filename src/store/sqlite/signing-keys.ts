/**
 * The identity JWT's signing keys in SQLite: the sealed set as one JSON
 * value (meta `jwks`), written by compare-and-set on its revision.
 */
import { JWKS_KEY, parseKeySet, type StoredKeySet } from '../keyset.js'
import type { SigningKeyStorage } from '../ports.js'
import type { SqlContext } from './context.js'

export class SqliteSigningKeys implements SigningKeyStorage {
  constructor (private readonly c: SqlContext) {}

  async get (): Promise<StoredKeySet> { return this.c.run(() => this.#read()) }

  async putIfRev (rev: number, set: StoredKeySet): Promise<boolean> {
    const { c } = this
    return c.tx(() => {
      if (this.#read().rev !== rev) return false
      c.st('INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)').run(JWKS_KEY, JSON.stringify(set))
      return true
    })
  }

  #read (): StoredKeySet {
    const v = this.c.st('SELECT value FROM meta WHERE name = ?').pluck().get(JWKS_KEY) as string | undefined
    return v === undefined ? { rev: 0, keys: [] } : parseKeySet(v)
  }
}

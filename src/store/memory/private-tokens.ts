/** Private tokens in memory: lookup entries, each user's sealed token, and the hashes of imported tokens. */
import type { PrivateTokenStorage, StoredPrivateToken, StoredUser } from '../ports.js'
import type { Local } from './data.js'

export class MemoryPrivateTokens implements PrivateTokenStorage {
  constructor (private readonly l: Local) {}

  async setLookup (hash: string, userId: string): Promise<void> { this.l.open().privateTokens.set(hash, userId) }
  async lookup (hash: string): Promise<string | null> { return this.peek(hash) }
  /** lookup without a promise (Storage.instant) */
  peek (hash: string): string | null { return this.l.open().privateTokens.get(hash) ?? null }
  async lookupUser (hash: string): Promise<{ userId: string, user: StoredUser | null } | null> {
    const d = this.l.open()
    const userId = d.privateTokens.get(hash)
    if (userId === undefined) return null
    const u = d.users.get(userId)
    return { userId, user: u === undefined ? null : structuredClone(u) }
  }

  async dropLookup (hash: string): Promise<void> { this.l.open().privateTokens.delete(hash) }

  async lookupsOf (userId: string): Promise<string[]> {
    return [...this.l.open().privateTokens].filter(([, u]) => u === userId).map(([h]) => h)
  }

  async swap (userId: string, t: { hash: string, sealed: string }): Promise<StoredPrivateToken | null> {
    const d = this.l.open()
    const old = d.userPrivateToken.get(userId) ?? null
    d.userPrivateToken.set(userId, { ...t })
    return old
  }

  async get (userId: string): Promise<StoredPrivateToken | null> {
    const t = this.l.open().userPrivateToken.get(userId)
    return t === undefined ? null : { ...t }
  }

  async take (userId: string): Promise<StoredPrivateToken | null> {
    const d = this.l.open()
    const t = d.userPrivateToken.get(userId) ?? null
    d.userPrivateToken.delete(userId)
    return t
  }

  async addImported (hash: string): Promise<void> { this.l.open().importedTokens.add(hash) }
  async dropImported (hash: string): Promise<boolean> { return this.l.open().importedTokens.delete(hash) }

  async findImported (candidates: () => string[]): Promise<string | null> {
    const imported = this.l.open().importedTokens
    if (imported.size === 0) return null
    return candidates().find((h) => imported.has(h)) ?? null
  }
}

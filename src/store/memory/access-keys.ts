/** Access keys in memory: the record, its last use apart, and the user's set of key ids. */
import {
  applyKeyState, type AccessKeyStorage, type KeyStateExpected, type KeyStateFields, type StoredKey, type StoredUser
} from '../ports.js'
import type { RateLimitPolicy } from '../types.js'
import { addTo, insertOwned, type Local } from './data.js'

export class MemoryAccessKeys implements AccessKeyStorage {
  constructor (private readonly l: Local) {}

  async insert (key: StoredKey, max: number): Promise<boolean> {
    const d = this.l.open()
    if (max > 0 && (d.userKeys.get(key.user_id)?.size ?? 0) >= max) return false
    // false means the cap only (AccessKeyStorage.insert): a new key's id is random, so written as Redis's SET writes it
    d.keys.set(key.id, structuredClone(key))
    addTo(d.userKeys, key.user_id, key.id)
    return true
  }

  async insertNew (key: StoredKey): Promise<boolean> {
    const d = this.l.open()
    return insertOwned(d.keys, d.userKeys, key)
  }

  async get (id: string): Promise<{ stored: StoredKey, lastUsed: string | null } | null> {
    const d = this.l.open()
    const s = d.keys.get(id)
    return s === undefined ? null : { stored: structuredClone(s), lastUsed: d.keyUsed.get(id) ?? null }
  }

  async getWithUser (id: string): Promise<{
    stored: StoredKey,
    lastUsed: string | null,
    user: StoredUser | null
  } | null> {
    const d = this.l.open()
    const s = d.keys.get(id)
    if (s === undefined) return null
    const u = d.users.get(s.user_id)
    return {
      stored: structuredClone(s),
      lastUsed: d.keyUsed.get(id) ?? null,
      user: u === undefined ? null : structuredClone(u)
    }
  }

  async ids (userId: string): Promise<string[]> { return [...(this.l.open().userKeys.get(userId) ?? [])] }

  async setState (id: string, fields: KeyStateFields, expect?: KeyStateExpected): Promise<boolean> {
    const s = this.l.open().keys.get(id)
    return s !== undefined && applyKeyState(s, fields, expect)
  }

  async setRateLimit (id: string, policy: RateLimitPolicy | null): Promise<boolean> {
    const s = this.l.open().keys.get(id)
    if (s === undefined) return false
    s.rate_limit = policy === null ? null : { ...policy }
    return true
  }

  async delete (id: string): Promise<boolean> {
    const d = this.l.open()
    const s = d.keys.get(id)
    if (s === undefined) return false
    d.keys.delete(id)
    d.keyUsed.delete(id)
    d.userKeys.get(s.user_id)?.delete(id)
    return true
  }

  async touch (id: string, now: string, olderThan: string): Promise<0 | 1 | 2> {
    const d = this.l.open()
    const last = d.keyUsed.get(id)
    if (last !== undefined && last > olderThan) return 0
    d.keyUsed.set(id, now)
    return last === undefined ? 2 : 1
  }
}

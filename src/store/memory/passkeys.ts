/** Passkeys in process: by credential id, indexed by user. */
import { counterAdvances, type PasskeyStorage } from '../ports.js'
import type { StoredPasskey } from '../types.js'
import { insertOwned, type Local } from './data.js'

export class MemoryPasskeys implements PasskeyStorage {
  constructor (private readonly l: Local) {}

  async insert (p: StoredPasskey): Promise<boolean> {
    const d = this.l.open()
    return insertOwned(d.passkeys, d.userPasskeys, p)
  }

  async get (credentialId: string): Promise<StoredPasskey | null> {
    const p = this.l.open().passkeys.get(credentialId)
    return p === undefined ? null : structuredClone(p)
  }

  async list (userId: string): Promise<StoredPasskey[]> {
    const d = this.l.open()
    return [...(d.userPasskeys.get(userId) ?? [])].flatMap((id) => {
      const p = d.passkeys.get(id); return p === undefined ? [] : [structuredClone(p)]
    })
  }

  #owned (userId: string, credentialId: string): StoredPasskey | null {
    const p = this.l.open().passkeys.get(credentialId)
    return p !== undefined && p.user_id === userId ? p : null
  }

  async rename (userId: string, credentialId: string, name: string): Promise<boolean> {
    const p = this.#owned(userId, credentialId)
    if (p === null) return false
    p.name = name
    return true
  }

  async delete (userId: string, credentialId: string): Promise<boolean> {
    const d = this.l.open()
    if (this.#owned(userId, credentialId) === null) return false
    d.passkeys.delete(credentialId)
    const set = d.userPasskeys.get(userId)
    set?.delete(credentialId)
    if (set?.size === 0) d.userPasskeys.delete(userId)
    return true
  }

  async deleteAll (userId: string): Promise<number> {
    const d = this.l.open()
    const ids = d.userPasskeys.get(userId) ?? new Set()
    let n = 0
    for (const id of ids) if (d.passkeys.delete(id)) n++
    d.userPasskeys.delete(userId)
    return n
  }

  async advance (credentialId: string, counter: number, lastUsed: string): Promise<boolean> {
    const p = this.l.open().passkeys.get(credentialId)
    if (p === undefined || !counterAdvances(p.counter, counter)) return false
    p.counter = counter
    p.last_used = lastUsed
    return true
  }
}

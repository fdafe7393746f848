/** Locks in memory: name → its holder's token, with an expiry on the clock. */
import type { LockStorage } from '../ports.js'
import type { Local } from './data.js'

export class MemoryLocks implements LockStorage {
  constructor (private readonly l: Local) {}

  async acquire (name: string, token: string, ttlMs: number): Promise<boolean> {
    const d = this.l.open()
    if (d.alive(d.locks, name) !== undefined) return false
    d.locks.set(name, { v: token, exp: this.l.now() + ttlMs })
    return true
  }

  async release (name: string, token: string): Promise<boolean> {
    const d = this.l.open()
    if (d.alive(d.locks, name)?.v !== token) return false
    d.locks.delete(name)
    return true
  }
}

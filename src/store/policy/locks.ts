/** Locks shared by every replica (periodic jobs): held with a random token that only its holder knows. */
import { randomUUID } from 'node:crypto'
import type { Context } from './context.js'

export class Locks {
  constructor (private readonly c: Context) {}

  /**
   * A lock shared by every replica (periodic jobs: src/admin/unused-keys.ts): a new random token when `name`
   * was free (held for `ttlMs` at most), null when another holds it. One key, SET NX PX: cluster-safe.
   */
  async acquire (name: string, ttlMs: number): Promise<string | null> {
    const token = randomUUID()
    return (await this.c.storage.locks.acquire(name, token, ttlMs)) ? token : null
  }

  /** Frees the lock only if `token` still holds it (a script compares and deletes); false otherwise. */
  async release (name: string, token: string): Promise<boolean> {
    return await this.c.storage.locks.release(name, token)
  }
}

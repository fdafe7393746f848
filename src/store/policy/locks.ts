/** Locks shared by every replica (periodic jobs): held with a random token that only its holder knows. */
import { randomUUID } from 'node:crypto'
import type { Context } from './context.js'

export class Locks {
  constructor (private readonly c: Context) {}

  async acquire (name: string, ttlMs: number): Promise<string | null> {
    const token = randomUUID()
    return (await this.c.storage.locks.acquire(name, token, ttlMs)) ? token : null
  }

  async release (name: string, token: string): Promise<boolean> {
    return await this.c.storage.locks.release(name, token)
  }
}

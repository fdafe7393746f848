/** Locks in Redis: `lock:<name>` holds its holder's random token (src/admin/unused-keys.ts runs under one). */
import type { LockStorage } from '../ports.js'
import type { RedisContext } from './context.js'

export class RedisLocks implements LockStorage {
  constructor (private readonly c: RedisContext) {}

  /** SET NX PX: one key, cluster-safe. */
  async acquire (name: string, token: string, ttlMs: number): Promise<boolean> {
    return (await this.c.run(() => this.c.redis.set(this.c.k('lock', name), token, 'PX', ttlMs, 'NX'))) !== null
  }

  async release (name: string, token: string): Promise<boolean> {
    return await this.c.run(() => this.c.scripts.releaseLock(this.c.k('lock', name), token))
  }
}

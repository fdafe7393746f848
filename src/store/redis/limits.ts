/**
 * Counters in Redis, one key and one command or script each:
 * `fail:<hash>` login attempts, `once:<kind>:<hash>` replay marks,
 * `rl:<bucket>` rate-limit windows (on the server's clock).
 */
import { randomUUID } from 'node:crypto'
import type { LimitStorage } from '../ports.js'
import type { LoginFailures } from '../model.js'
import type { RedisContext } from './context.js'

export class RedisLimits implements LimitStorage {
  /** unique per process and request: the sorted set's member */
  readonly #nonce = randomUUID().slice(0, 8)
  #seq = 0

  constructor (private readonly c: RedisContext) {}

  async countAttempt (hash: string, windowSeconds: number, max: number): Promise<LoginFailures> {
    const [count, retryAfter] = await this.c.run(
      () => this.c.scripts.countAttempt(this.c.k('fail', hash), windowSeconds, max)
    )
    return { count, retryAfter }
  }

  async resetAttempts (hash: string): Promise<void> { await this.c.run(() => this.c.redis.del(this.c.k('fail', hash))) }
  async forgiveAttempt (hash: string): Promise<void> {
    await this.c.run(() => this.c.scripts.forgiveAttempt(this.c.k('fail', hash)))
  }

  async markOnce (kind: string, hash: string, ttlSeconds: number): Promise<boolean> {
    return (await this.c.run(() => this.c.redis.set(this.c.k('once', kind, hash), '1', 'EX', ttlSeconds, 'NX'))) !== null
  }

  async markSeen (kind: string, hash: string, ttlSeconds: number, create = true): Promise<number | null> {
    const left = await this.c.run(
      () => this.c.scripts.markSeen(this.c.k('once', kind, hash), ttlSeconds * 1000, create ? 1 : 0)
    )
    // the mark lives ttl from its first sighting: what is left of it says when that was (-2: just expired)
    return left === -1 ? null : Math.max(0, ttlSeconds * 1000 - Math.max(0, left))
  }

  async hit (bucket: string, limit: number, windowMs: number): Promise<{
    allowed: boolean,
    remaining: number,
    resetMs: number
  }> {
    const member = `${this.#nonce}:${(this.#seq++).toString(36)}`
    const [allowed, remaining, resetMs] = await this.c.run(
      () => this.c.scripts.rateLimit(this.c.k('rl', bucket), limit, windowMs, member)
    )
    return { allowed: allowed === 1, remaining, resetMs }
  }
}

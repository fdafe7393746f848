/**
 * Counters with a window: login attempts and replay marks are kept under the
 * lookup hash of their subject (never the username or the signature itself);
 * a rate-limit hit is rounded up to whole seconds.
 */
import type { LoginFailures, RateLimitHit } from '../model.js'
import type { Context } from './context.js'

export class Limits {
  constructor (private readonly c: Context) {}

  /**
   * Counts one login attempt of a subject (username + client IP), before its password is checked, and
   * returns the attempts since the last reset: one key, INCR + EXPIRE in one script, so concurrent attempts
   * and replicas all see the same number. The window starts at the first attempt and starts again when the
   * count reaches `max`, so a lock lasts a full window. `retryAfter`: seconds until the count expires.
   */
  async countLoginAttempt (subject: string, windowSeconds: number, max: number): Promise<LoginFailures> {
    return await this.c.storage.limits.countAttempt(this.c.keys.lookup(subject), windowSeconds, max)
  }

  /** After a successful login. */
  async resetLoginFailures (subject: string): Promise<void> {
    await this.c.storage.limits.resetAttempts(this.c.keys.lookup(subject))
  }

  /** Gives one attempt counted back (a success), never below 0; the window is kept. */
  async forgiveLoginAttempt (subject: string): Promise<void> {
    await this.c.storage.limits.forgiveAttempt(this.c.keys.lookup(subject))
  }

  /** True the first time a value is seen within ttl; false on replay. */
  async markOnce (kind: string, value: string, ttlSeconds: number): Promise<boolean> {
    return await this.c.storage.limits.markOnce(kind, this.c.keys.lookup(value), ttlSeconds)
  }

  /** As markOnce: null the first time a value is seen within ttl, else the milliseconds since it was first seen. */
  async markSeen (kind: string, value: string, ttlSeconds: number, create = true): Promise<number | null> {
    return await this.c.storage.limits.markSeen(kind, this.c.keys.lookup(value), ttlSeconds, create)
  }

  /**
   * Counts one request against a bucket, a sliding window log: allowed when fewer than `limit`
   * requests were counted within the last `windowSeconds` (a refused request is not counted). One
   * key, one atomic script, the store's clock (Redis TIME): every replica sees the same count.
   */
  async hitRateLimit (bucket: string, limit: number, windowSeconds: number): Promise<RateLimitHit> {
    const { allowed, remaining, resetMs } = await this.c.storage.limits.hit(bucket, limit, windowSeconds * 1000)
    return { allowed, remaining, reset: Math.max(1, Math.ceil(resetMs / 1000)) }
  }
}

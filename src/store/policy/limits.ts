/**
 * Counters with a window: login attempts and replay marks are kept under the
 * lookup hash of their subject (never the username or the signature itself);
 * a rate-limit hit is rounded up to whole seconds.
 */
import type { LoginFailures, RateLimitHit } from '../types.js'
import type { Context } from './context.js'

export class Limits {
  constructor (private readonly c: Context) {}

  async countLoginAttempt (subject: string, windowSeconds: number, max: number): Promise<LoginFailures> {
    return await this.c.storage.limits.countAttempt(this.c.keys.lookup(subject), windowSeconds, max)
  }

  async resetLoginFailures (subject: string): Promise<void> {
    await this.c.storage.limits.resetAttempts(this.c.keys.lookup(subject))
  }

  async forgiveLoginAttempt (subject: string): Promise<void> {
    await this.c.storage.limits.forgiveAttempt(this.c.keys.lookup(subject))
  }

  async markOnce (kind: string, value: string, ttlSeconds: number): Promise<boolean> {
    return await this.c.storage.limits.markOnce(kind, this.c.keys.lookup(value), ttlSeconds)
  }

  async markSeen (kind: string, value: string, ttlSeconds: number, create = true): Promise<number | null> {
    return await this.c.storage.limits.markSeen(kind, this.c.keys.lookup(value), ttlSeconds, create)
  }

  async hitRateLimit (bucket: string, limit: number, windowSeconds: number): Promise<RateLimitHit> {
    const { allowed, remaining, resetMs } = await this.c.storage.limits.hit(bucket, limit, windowSeconds * 1000)
    return { allowed, remaining, reset: Math.max(1, Math.ceil(resetMs / 1000)) }
  }
}

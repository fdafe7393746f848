/** Login attempts, replay marks and rate-limit buckets in memory, each with its expiry on the clock. */
import type { LimitStorage } from '../ports.js'
import type { LoginFailures } from '../types.js'
import type { Local } from './data.js'

export class MemoryLimits implements LimitStorage {
  constructor (private readonly l: Local) {}

  async countAttempt (hash: string, windowSeconds: number, max: number): Promise<LoginFailures> {
    const d = this.l.open()
    d.sweep()
    const now = this.l.now()
    const e = d.alive(d.attempts, hash) ?? { v: 0, exp: now + windowSeconds * 1000 }
    e.v++
    // as the Redis script: the window starts at the first attempt and again at the max-th
    if (e.v === 1 || e.v === max) e.exp = now + windowSeconds * 1000
    d.attempts.set(hash, e)
    // Redis's TTL: the remaining time rounded to whole seconds
    return { count: e.v, retryAfter: Math.floor((e.exp - now + 500) / 1000) }
  }

  async resetAttempts (hash: string): Promise<void> { this.l.open().attempts.delete(hash) }

  async forgiveAttempt (hash: string): Promise<void> {
    const d = this.l.open()
    const e = d.alive(d.attempts, hash)
    if (e !== undefined && e.v > 0) e.v--
  }

  async markOnce (kind: string, hash: string, ttlSeconds: number): Promise<boolean> {
    const d = this.l.open()
    d.sweep()
    const key = `${kind}:${hash}`
    if (d.alive(d.once, key) !== undefined) return false
    d.once.set(key, { v: true, exp: this.l.now() + ttlSeconds * 1000 })
    return true
  }

  async markSeen (kind: string, hash: string, ttlSeconds: number, create = true): Promise<number | null> {
    const d = this.l.open()
    d.sweep()
    const key = `${kind}:${hash}`
    const e = d.alive(d.once, key)
    // the mark's expiry is its first sighting plus ttl
    if (e !== undefined) return Math.max(0, this.l.now() - (e.exp - ttlSeconds * 1000))
    if (!create) return null
    d.once.set(key, { v: true, exp: this.l.now() + ttlSeconds * 1000 })
    return null
  }

  async hit (bucket: string, limit: number, windowMs: number): Promise<{
    allowed: boolean,
    remaining: number,
    resetMs: number
  }> {
    const d = this.l.open()
    d.sweep()
    // as the Redis script: whole milliseconds, (now - window, now] counts
    const now = Math.floor(this.l.now())
    const times = (d.alive(d.rates, bucket)?.v ?? []).filter((t) => t > now - windowMs)
    if (times.length < limit) {
      times.push(now)
      d.rates.set(bucket, { v: times, exp: now + windowMs })
      return { allowed: true, remaining: limit - times.length, resetMs: times[0] + windowMs - now }
    }
    d.rates.set(bucket, { v: times, exp: times[times.length - 1] + windowMs })
    return { allowed: false, remaining: 0, resetMs: times[times.length - limit] + windowMs - now }
  }
}

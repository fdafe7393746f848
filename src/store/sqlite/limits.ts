/**
 * Counters with a window in SQLite (login attempts, replay marks, rate-limit
 * buckets as a log of hits) and the periodic jobs' locks. Every row has its
 * expiry; what nobody reads again is swept (SqlContext.sweep).
 */
import type { LimitStorage, LockStorage } from '../ports.js'
import type { LoginFailures } from '../model.js'
import type { SqlContext } from './context.js'

export class SqliteLimits implements LimitStorage {
  constructor (private readonly c: SqlContext) {}

  async countAttempt (hash: string, windowSeconds: number, max: number): Promise<LoginFailures> {
    const { c } = this
    return c.tx(() => {
      c.sweep()
      const now = c.now()
      const r = c.st('SELECT count, exp FROM attempts WHERE hash = ? AND exp > ?').get(hash, now) as { count: number, exp: number } | undefined
      const count = (r?.count ?? 0) + 1
      // as the Redis script: the window starts at the first attempt and again at the max-th
      const exp = count === 1 || count === max || r === undefined ? now + windowSeconds * 1000 : r.exp
      c.st('INSERT OR REPLACE INTO attempts (hash, count, exp) VALUES (?, ?, ?)').run(hash, count, exp)
      // Redis's TTL: the remaining time rounded to whole seconds
      return { count, retryAfter: Math.floor((exp - now + 500) / 1000) }
    })
  }

  async resetAttempts (hash: string): Promise<void> { this.c.run(() => this.c.st('DELETE FROM attempts WHERE hash = ?').run(hash)) }

  async forgiveAttempt (hash: string): Promise<void> {
    const { c } = this
    c.run(() => c.st('UPDATE attempts SET count = count - 1 WHERE hash = ? AND count > 0 AND exp > ?').run(hash, c.now()))
  }

  /** The first mark: markSeen found no live one and made it (one transaction). */
  async markOnce (kind: string, hash: string, ttlSeconds: number): Promise<boolean> {
    return (await this.markSeen(kind, hash, ttlSeconds)) === null
  }

  async markSeen (kind: string, hash: string, ttlSeconds: number, create = true): Promise<number | null> {
    const { c } = this
    return c.tx(() => {
      c.sweep()
      const now = c.now()
      const key = `${kind}:${hash}`
      c.st('DELETE FROM once WHERE key = ? AND exp <= ?').run(key, now)
      const exp = c.st('SELECT exp FROM once WHERE key = ?').pluck().get(key) as number | undefined
      // the mark's expiry is its first sighting plus ttl
      if (exp !== undefined) return Math.max(0, now - (exp - ttlSeconds * 1000))
      if (!create) return null
      c.st('INSERT INTO once (key, exp) VALUES (?, ?)').run(key, now + ttlSeconds * 1000)
      return null
    })
  }

  /** A sliding window log, as the Redis script: whole milliseconds, (now - window, now] counts. */
  async hit (bucket: string, limit: number, windowMs: number): Promise<{
    allowed: boolean,
    remaining: number,
    resetMs: number
  }> {
    const { c } = this
    return c.tx(() => {
      c.sweep()
      const now = Math.floor(c.now())
      c.st('DELETE FROM rate_hits WHERE bucket = ? AND t <= ?').run(bucket, now - windowMs)
      const { n, first } = c.st('SELECT count(*) AS n, min(t) AS first FROM rate_hits WHERE bucket = ?').get(bucket) as { n: number, first: number | null }
      if (n < limit) {
        c.st('INSERT INTO rate_hits (bucket, t, exp) VALUES (?, ?, ?)').run(bucket, now, now + windowMs)
        return { allowed: true, remaining: limit - n - 1, resetMs: (first ?? now) + windowMs - now }
      }
      // refused: until the hit that makes room leaves the window
      const t = c.st('SELECT t FROM rate_hits WHERE bucket = ? ORDER BY t LIMIT 1 OFFSET ?').pluck().get(bucket, n - limit) as number
      return { allowed: false, remaining: 0, resetMs: t + windowMs - now }
    })
  }
}

export class SqliteLocks implements LockStorage {
  constructor (private readonly c: SqlContext) {}

  async acquire (name: string, token: string, ttlMs: number): Promise<boolean> {
    const { c } = this
    return c.tx(() => {
      const now = c.now()
      c.st('DELETE FROM locks WHERE name = ? AND exp <= ?').run(name, now)
      return c.st('INSERT OR IGNORE INTO locks (name, token, exp) VALUES (?, ?, ?)').run(name, token, now + ttlMs).changes === 1
    })
  }

  async release (name: string, token: string): Promise<boolean> {
    const { c } = this
    return c.run(() => c.st('DELETE FROM locks WHERE name = ? AND token = ? AND exp > ?').run(name, token, c.now()).changes === 1)
  }
}

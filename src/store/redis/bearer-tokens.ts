/**
 * One-time bearer tokens in Redis: `bt:<hash>` → user id with the token's
 * TTL, and `user-bt:<user id>` a sorted set of the user's token hashes by
 * expiry (what a password change ends). A used token's entry stays in the
 * index until it would have expired.
 */
import type { BearerTokenStorage } from '../ports.js'
import type { RedisContext } from './context.js'

export class RedisBearerTokens implements BearerTokenStorage {
  constructor (private readonly c: RedisContext) {}

  async insert (hash: string, userId: string, now: number, ttlSeconds: number): Promise<boolean> {
    const { c } = this
    if ((await c.run(() => c.redis.set(c.k('bt', hash), userId, 'EX', ttlSeconds, 'NX'))) === null) return false
    await c.run(() => c.scripts.indexBearer(c.k('user-bt', userId), now, hash, now + ttlSeconds * 1000, ttlSeconds * 1000))
    return true
  }

  async consume (hash: string): Promise<string | null> { return await this.c.run(() => this.c.redis.getdel(this.c.k('bt', hash))) }
  async read (hash: string): Promise<string | null> { return await this.c.run(() => this.c.redis.get(this.c.k('bt', hash))) }

  /** Never cached: gone from Redis, gone everywhere. */
  async endAll (userId: string): Promise<void> {
    const { c } = this
    const key = c.k('user-bt', userId)
    const hashes = await c.run(() => c.redis.zrange(key, '0', '-1'))
    for (const h of hashes) await c.run(() => c.redis.del(c.k('bt', h)))
    await c.run(() => c.redis.del(key))
  }
}

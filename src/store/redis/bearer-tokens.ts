/**
 * One-time bearer tokens in Redis: `bt:<hash>` → its grant with the token's
 * TTL (the user id alone for the password alone, as before factors were
 * kept; else JSON `{"user_id", "factors"}`), and `user-bt:<user id>` a sorted set of the user's token hashes by
 * expiry (what a password change ends). A used token's entry stays in the
 * index until it would have expired.
 */
import type { BearerTokenStorage, StoredGrant } from '../ports.js'
import type { RedisContext } from './context.js'

export class RedisBearerTokens implements BearerTokenStorage {
  constructor (private readonly c: RedisContext) {}

  async insert (hash: string, grant: StoredGrant, now: number, ttlSeconds: number): Promise<boolean> {
    const { c } = this
    if ((await c.run(() => c.redis.set(c.k('bt', hash), encodeGrant(grant), 'EX', ttlSeconds, 'NX'))) === null) return false
    await c.run(
      () => c.scripts.indexBearer(c.k('user-bt', grant.user_id), now, hash, now + ttlSeconds * 1000, ttlSeconds * 1000)
    )
    return true
  }

  async consume (hash: string): Promise<StoredGrant | null> {
    return decodeGrant(await this.c.run(() => this.c.redis.getdel(this.c.k('bt', hash))))
  }

  async read (hash: string): Promise<StoredGrant | null> {
    return decodeGrant(await this.c.run(() => this.c.redis.get(this.c.k('bt', hash))))
  }

  /** Never cached: gone from Redis, gone everywhere. */
  async endAll (userId: string): Promise<void> {
    const { c } = this
    const key = c.k('user-bt', userId)
    const hashes = await c.run(() => c.redis.zrange(key, '0', '-1'))
    for (const h of hashes) await c.run(() => c.redis.del(c.k('bt', h)))
    await c.run(() => c.redis.del(key))
  }
}

/** A grant as `bt:<hash>` holds it: the user id alone (a UUID) for the password alone, else JSON. */
export function encodeGrant (g: StoredGrant): string {
  return g.factors === undefined ? g.user_id : JSON.stringify({ user_id: g.user_id, factors: g.factors })
}

export function decodeGrant (v: string | null): StoredGrant | null {
  if (v === null) return null
  if (!v.startsWith('{')) return { user_id: v }
  const g = JSON.parse(v) as StoredGrant
  return { user_id: g.user_id, factors: g.factors }
}

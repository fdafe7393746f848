/**
 * Access keys in Redis: `ak:<id>` the JSON record (secret sealed),
 * `ak-used:<id>` its last use (an ISO time), `user-aks:<user id>` the set of
 * the user's key ids, which also enforces the cap (the id is reserved in the
 * set first, atomically against the cap; a listing skips an id without a
 * record yet).
 */
import type { AccessKeyStorage, KeyStateExpected, KeyStateFields, StoredKey, StoredUser } from '../ports.js'
import type { RateLimitPolicy } from '../model.js'
import type { RedisContext } from './context.js'
import { parseUser } from './users.js'

export class RedisAccessKeys implements AccessKeyStorage {
  constructor (private readonly c: RedisContext) {}

  async insert (key: StoredKey, max: number): Promise<boolean> {
    const { c } = this
    if (!(await c.run(() => c.scripts.addCapped(c.k('user-aks', key.user_id), key.id, max)))) return false
    await c.run(() => c.redis.set(c.k('ak', key.id), JSON.stringify(key)))
    return true
  }

  async insertNew (key: StoredKey): Promise<boolean> {
    const { c } = this
    if ((await c.run(() => c.redis.set(c.k('ak', key.id), JSON.stringify(key), 'NX'))) === null) return false
    await c.run(() => c.redis.sadd(c.k('user-aks', key.user_id), key.id))
    return true
  }

  async get (id: string): Promise<{ stored: StoredKey, lastUsed: string | null } | null> {
    const { c } = this
    // two GETs, not MGET: the keys may live in different cluster slots
    const [raw, used] = await c.run(async () => await Promise.all([c.redis.get(c.k('ak', id)), c.redis.get(c.k('ak-used', id))]))
    return raw === null ? null : { stored: JSON.parse(raw) as StoredKey, lastUsed: used }
  }

  /** One script; on a cluster (three slots) the two GETs of get, then the user's. */
  async getWithUser (id: string): Promise<{
    stored: StoredKey,
    lastUsed: string | null,
    user: StoredUser | null
  } | null> {
    const { c } = this
    if (c.cluster) {
      const v = await this.get(id)
      if (v === null) return null
      const raw = await c.run(() => c.redis.get(c.k('user', v.stored.user_id)))
      return { ...v, user: raw === null ? null : parseUser(raw) }
    }
    const r = await c.run(() => c.scripts.keyWithUser(c.k('ak', id), c.k('ak-used', id), c.k('user', '')))
    if (r === null || r[0] === null) return null
    return { stored: JSON.parse(r[0]) as StoredKey, lastUsed: r[1], user: r[2] === null ? null : parseUser(r[2]) }
  }

  async ids (userId: string): Promise<string[]> {
    return await this.c.run(() => this.c.redis.smembers(this.c.k('user-aks', userId)))
  }

  async setState (id: string, fields: KeyStateFields, expect?: KeyStateExpected): Promise<boolean> {
    return await this.c.run(
      () => this.c.scripts.setFields(this.c.k('ak', id), JSON.stringify(fields), JSON.stringify(expect ?? {}))
    )
  }

  async setRateLimit (id: string, policy: RateLimitPolicy | null): Promise<boolean> {
    return await this.c.run(() => this.c.scripts.setField(this.c.k('ak', id), 'rate_limit', JSON.stringify(policy)))
  }

  async delete (id: string): Promise<boolean> {
    const { c } = this
    const raw = await c.run(() => c.redis.get(c.k('ak', id)))
    if (raw === null) return false
    const s = JSON.parse(raw) as StoredKey
    await c.run(() => c.redis.del(c.k('ak', id)))
    await c.run(() => c.redis.del(c.k('ak-used', id)))
    await c.run(() => c.redis.srem(c.k('user-aks', s.user_id), id))
    return true
  }

  /** Not through run: a failed write of a last use is no request's failure (the caller gets false). */
  async touch (id: string, now: string, olderThan: string): Promise<0 | 1 | 2> {
    return await this.c.scripts.touchIfOlder(this.c.k('ak-used', id), now, olderThan) as 0 | 1 | 2
  }
}

/**
 * Sessions in Redis: `sess:<hash>` the JSON record with the idle timeout as
 * TTL, `user-sess:<user id>` the set of the user's session hashes (what
 * disabling or a password change ends), and `sess-tag:<tag>` the sets a
 * provider's back-channel logout ends (each living as long as the user's index).
 */
import type { SessionStorage, StoredSession } from '../ports.js'
import type { SessionInfo } from '../model.js'
import { getJson, type RedisContext } from './context.js'

export class RedisSessions implements SessionStorage {
  constructor (private readonly c: RedisContext) {}

  async insert (hash: string, s: StoredSession, ttlSeconds: number, indexSeconds: number): Promise<void> {
    const { c } = this
    await c.run(() => c.redis.set(c.k('sess', hash), JSON.stringify(s), 'EX', ttlSeconds))
    // The user's index of sessions: ids whose record is gone (idle, logged out,
    // ended) are dropped first, one EXISTS each (the records live in other
    // slots, so no script can look), and the set lives as long as the newest
    // session may: it no longer grows with every login, forever.
    const index = c.k('user-sess', s.user_id)
    const ids = await c.run(() => c.redis.smembers(index))
    const alive = await c.run(async () => await Promise.all(ids.map(async (x) => await c.redis.exists(c.k('sess', x)))))
    const gone = ids.filter((_, i) => alive[i] === 0)
    if (gone.length > 0) await c.run(() => c.redis.srem(index, ...gone))
    await c.run(() => c.redis.sadd(index, hash))
    await c.run(() => c.redis.expire(index, indexSeconds))
    for (const tag of s.sso?.tags ?? []) {
      await c.run(() => c.redis.sadd(c.k('sess-tag', tag), hash))
      await c.run(() => c.redis.expire(c.k('sess-tag', tag), indexSeconds))
    }
  }

  async get (hash: string): Promise<StoredSession | null> {
    return await getJson<StoredSession>(this.c, this.c.k('sess', hash))
  }

  async touch (hash: string, ttlSeconds: number): Promise<void> {
    await this.c.run(() => this.c.redis.expire(this.c.k('sess', hash), ttlSeconds))
  }

  async delete (hash: string): Promise<string | null> {
    const { c } = this
    const s = await getJson<{ user_id: string }>(c, c.k('sess', hash))
    await c.run(() => c.redis.del(c.k('sess', hash)))
    if (s !== null) await c.run(() => c.redis.srem(c.k('user-sess', s.user_id), hash))
    return s?.user_id ?? null
  }

  async list (userId: string): Promise<SessionInfo[]> {
    const { c } = this
    const ids = await c.run(() => c.redis.smembers(c.k('user-sess', userId)))
    const out: SessionInfo[] = []
    for (const h of ids) {
      const s = await getJson<StoredSession>(c, c.k('sess', h))
      // gone since (idle, logged out): not listed
      if (s === null || s.user_id !== userId) continue
      const ttl = await c.run(() => c.redis.pttl(c.k('sess', h)))
      if (ttl < 0) continue
      out.push({ id: h, created: s.created, expires: Date.now() + ttl })
    }
    return out
  }

  async deleteOf (userId: string, hash: string): Promise<boolean> {
    const { c } = this
    const s = await getJson<StoredSession>(c, c.k('sess', hash))
    if (s === null || s.user_id !== userId) return false
    await c.run(() => c.redis.del(c.k('sess', hash)))
    await c.run(() => c.redis.srem(c.k('user-sess', userId), hash))
    return true
  }

  async endTagged (tag: string): Promise<Array<{ hash: string, user_id: string }>> {
    const { c } = this
    const key = c.k('sess-tag', tag)
    const ids = await c.run(() => c.redis.smembers(key))
    const out: Array<{ hash: string, user_id: string }> = []
    for (const h of ids) {
      const s = await getJson<StoredSession>(c, c.k('sess', h))
      if (s === null) continue
      await c.run(() => c.redis.del(c.k('sess', h)))
      await c.run(() => c.redis.srem(c.k('user-sess', s.user_id), h))
      out.push({ hash: h, user_id: s.user_id })
    }
    await c.run(() => c.redis.del(key))
    return out
  }

  async endAll (userId: string): Promise<void> {
    const { c } = this
    const index = c.k('user-sess', userId)
    const ids = await c.run(() => c.redis.smembers(index))
    for (const h of ids) await c.run(() => c.redis.del(c.k('sess', h)))
    await c.run(() => c.redis.del(index))
  }
}

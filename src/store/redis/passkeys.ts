/**
 * Passkeys in Redis: `pk:<credential id>`, a hash (`rec`: the fixed fields as
 * JSON; `user`, `name`, `counter`, `last_used` fields of their own, so a
 * rename and the counter's compare-and-set are each one script on one key),
 * and `user-pk:<user id>`, a set of the user's credential ids. Every command
 * touches one key: cluster-safe. The index entry is written before the
 * record and deleted after it: a failure in between leaves an index entry
 * without a record (which reads skip), never a passkey that signs in but is
 * not listed.
 */
import type { PasskeyStorage } from '../ports.js'
import type { StoredPasskey } from '../model.js'
import type { RedisContext } from './context.js'

/** The hash of a passkey as stored, and back. */
export function passkeyFields (p: StoredPasskey): string[] {
  const { counter, last_used: lastUsed, name, user_id: user, ...rec } = p
  return [
    'rec',
    JSON.stringify(rec),
    'user',
    user,
    'name',
    name,
    'counter',
    String(counter),
    ...(lastUsed === null ? [] : ['last_used', lastUsed])
  ]
}

export function passkeyOf (h: Record<string, string>): StoredPasskey | null {
  if (h.rec === undefined || h.user === undefined) return null
  return {
    ...(JSON.parse(h.rec) as StoredPasskey),
    user_id: h.user,
    name: h.name ?? '',
    counter: Number(h.counter ?? 0),
    last_used: h.last_used ?? null
  }
}

export class RedisPasskeys implements PasskeyStorage {
  constructor (private readonly c: RedisContext) {}

  #key (credentialId: string): string { return this.c.k('pk', credentialId) }

  async insert (p: StoredPasskey): Promise<boolean> {
    const index = this.c.k('user-pk', p.user_id)
    await this.c.run(() => this.c.redis.sadd(index, p.id))
    if (await this.c.run(() => this.c.scripts.newHash(this.#key(p.id), ...passkeyFields(p)))) return true
    // taken: the index entry goes again unless the passkey there is this user's
    if ((await this.get(p.id))?.user_id !== p.user_id) await this.c.run(() => this.c.redis.srem(index, p.id))
    return false
  }

  async get (credentialId: string): Promise<StoredPasskey | null> {
    return passkeyOf(await this.c.run(() => this.c.redis.hgetall(this.#key(credentialId))))
  }

  async list (userId: string): Promise<StoredPasskey[]> {
    const ids = await this.c.run(() => this.c.redis.smembers(this.c.k('user-pk', userId)))
    const out: StoredPasskey[] = []
    for (const id of ids) {
      const p = await this.get(id)
      if (p !== null && p.user_id === userId) out.push(p)
    }
    return out
  }

  async rename (userId: string, credentialId: string, name: string): Promise<boolean> {
    return await this.c.run(() => this.c.scripts.setOwnedField(this.#key(credentialId), userId, 'name', name))
  }

  async delete (userId: string, credentialId: string): Promise<boolean> {
    const gone = await this.c.run(() => this.c.scripts.deleteOwned(this.#key(credentialId), userId))
    if (gone) await this.c.run(() => this.c.redis.srem(this.c.k('user-pk', userId), credentialId))
    return gone
  }

  async deleteAll (userId: string): Promise<number> {
    const ids = await this.c.run(() => this.c.redis.smembers(this.c.k('user-pk', userId)))
    let n = 0
    for (const id of ids) if (await this.c.run(() => this.c.scripts.deleteOwned(this.#key(id), userId))) n++
    await this.c.run(() => this.c.redis.del(this.c.k('user-pk', userId)))
    return n
  }

  async advance (credentialId: string, counter: number, lastUsed: string): Promise<boolean> {
    return await this.c.run(() => this.c.scripts.advanceCounter(this.#key(credentialId), counter, lastUsed))
  }
}

/**
 * Orgs and users in Redis: one JSON record per key, a set of ids each, and the lowercase username claimed with SET NX.
 */
import type { OrgStorage, StoredUser, UserField, UserStorage } from '../ports.js'
import type { Org, OrgRole } from '../model.js'
import { getJson, type RedisContext } from './context.js'

/** A user record as stored: cjson encodes an empty table as {} but may return [] after edits; normalised. */
export function parseUser (raw: string): StoredUser {
  const s = JSON.parse(raw) as StoredUser
  if (Array.isArray(s.orgs)) s.orgs = {}
  return normalizeGroups(s)
}

/** The same for the groups: an empty table read as [] is no groups. */
export function normalizeGroups (s: StoredUser): StoredUser {
  const g = s.groups as unknown
  if (g !== undefined && (typeof g !== 'object' || g === null || Array.isArray(g))) delete s.groups
  return s
}

export class RedisOrgs implements OrgStorage {
  constructor (private readonly c: RedisContext) {}

  async insert (org: Org): Promise<boolean> {
    const ok = await this.c.run(() => this.c.redis.set(this.c.k('org', org.id), JSON.stringify(org), 'NX'))
    if (ok === null) return false
    await this.c.run(() => this.c.redis.sadd(this.c.k('orgs'), org.id))
    return true
  }

  async get (id: string): Promise<Org | null> { return await getJson<Org>(this.c, this.c.k('org', id)) }

  async list (): Promise<Org[]> {
    const ids = await this.c.run(() => this.c.redis.smembers(this.c.k('orgs')))
    const orgs = await Promise.all(ids.map(async (id) => await this.get(id)))
    return orgs.filter((o): o is Org => o !== null)
  }
}

export class RedisUsers implements UserStorage {
  constructor (private readonly c: RedisContext) {}

  async insert (user: StoredUser, usernameLower: string): Promise<'ok' | 'username_taken' | 'id_taken'> {
    const { c } = this
    const unameKey = c.k('uname', usernameLower)
    const claimed = await c.run(() => c.redis.set(unameKey, user.id, 'NX'))
    if (claimed === null) return 'username_taken'
    try {
      // NX: an id given by an import never overwrites another user's record
      if ((await c.run(() => c.redis.set(c.k('user', user.id), JSON.stringify(user), 'NX'))) === null) {
        await c.redis.del(unameKey).catch(() => {})
        return 'id_taken'
      }
      await c.run(() => c.redis.sadd(c.k('users'), user.id))
    } catch (err) {
      await c.redis.del(unameKey).catch(() => {})
      throw err
    }
    return 'ok'
  }

  async get (id: string): Promise<StoredUser | null> {
    const raw = await this.c.run(() => this.c.redis.get(this.c.k('user', id)))
    return raw === null ? null : parseUser(raw)
  }

  async idByUsername (usernameLower: string): Promise<string | null> {
    return await this.c.run(() => this.c.redis.get(this.c.k('uname', usernameLower)))
  }

  async ids (): Promise<string[]> { return await this.c.run(() => this.c.redis.smembers(this.c.k('users'))) }
  async count (): Promise<number> { return await this.c.run(() => this.c.redis.scard(this.c.k('users'))) }

  async setField<F extends UserField> (id: string, field: F, value: StoredUser[F]): Promise<boolean> {
    return await this.c.run(() => this.c.scripts.setField(this.c.k('user', id), field, JSON.stringify(value)))
  }

  async swapPasswordHash (id: string, expected: string, hash: string): Promise<boolean> {
    return await this.c.run(() => this.c.scripts.swapField(this.c.k('user', id), 'password_hash', expected, hash))
  }

  async setMembership (id: string, orgId: string, role: OrgRole | null): Promise<boolean> {
    return await this.c.run(() => this.c.scripts.setMember(this.c.k('user', id), orgId, role ?? ''))
  }

  async setGroupMember (userId: string, source: string, groupId: string, member: boolean): Promise<boolean> {
    return await this.c.run(() => this.c.scripts.setGroupMember(this.c.k('user', userId), source, groupId, member ? 1 : 0))
  }

  async replaceGroups (userId: string, source: string, ids: string[]): Promise<boolean> {
    return await this.c.run(() => this.c.scripts.replaceGroups(this.c.k('user', userId), source, JSON.stringify(ids)))
  }
}

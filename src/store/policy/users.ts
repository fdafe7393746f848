/**
 * Orgs, users and memberships: records, lookups, and a user's state.
 * Disabling a user ends their sessions and evicts their cached record, keys
 * and sessions on every replica.
 */
import { randomUUID } from 'node:crypto'
import { hashPassword } from '../../crypto.js'
import { E } from '../../errors.js'
import type { NewUser, Org, OrgRole, RateLimitPolicy, SignInUser, User } from '../model.js'
import { invalidate, isoNow, sessionsEnded, type Context } from './context.js'
import { newUserRecord, publicUser } from './records.js'

export class Orgs {
  constructor (private readonly c: Context) {}

  async create (name: string, id: string = randomUUID()): Promise<Org> {
    const org: Org = { id: id.toLowerCase(), name, date_created: isoNow(this.c) }
    if (!(await this.c.storage.orgs.insert(org))) throw E.orgExists(org.id)
    return org
  }

  async get (id: string): Promise<Org | null> { return await this.c.storage.orgs.get(id) }

  async list (): Promise<Org[]> {
    return (await this.c.storage.orgs.list()).sort((a, b) => a.name.localeCompare(b.name))
  }
}

export class Users {
  constructor (private readonly c: Context) {
    const cache = c.caches
    // refresh ahead: a hot user is read again before it expires; one that is gone is dropped
    cache?.users.refreshWith(async (id) => await this.#fill(id))
  }

  async create (u: NewUser): Promise<User> {
    const id = u.id?.toLowerCase() ?? randomUUID()
    // an imported Django hash is kept as it is until the next login re-hashes it (./passwords.ts)
    const hash = u.password === null ? (u.password_hash ?? null) : await hashPassword(u.password)
    const user = newUserRecord(u, id, hash, isoNow(this.c), this.c.keys)
    const done = await this.c.storage.users.insert(user, u.username.toLowerCase())
    if (done === 'username_taken') throw E.userExists(u.username)
    if (done === 'id_taken') throw E.userExists(id)
    return publicUser(user)
  }

  /** Cached in process where the backend needs it; invalidated on every replica when the user changes. */
  async get (id: string): Promise<User | null> { return await this.lookup(id) }

  /** get, but at once (no promise) when the user is cached in process; else a promise of the stored record. */
  lookup (id: string): User | null | Promise<User | null> {
    const cache = this.c.caches
    const hit = cache !== null && cache.trusted ? cache.users.get(id) : undefined
    return hit === undefined ? this.#fill(id) : hit
  }

  /** Read from the backend, never the cache (which takes the copy): for the sign-in paths. */
  async forSignIn (id: string): Promise<SignInUser | null> {
    const stamp = this.c.caches?.users.stamp
    const s = await this.c.storage.users.get(id)
    if (s === null) return null
    const user = await this.c.groupTable.userOf(s)
    this.c.caches?.users.set(id, user, stamp)
    return { user, sessionsEnded: typeof s.sessions_ended === 'number' ? s.sessions_ended : 0 }
  }

  async #fill (id: string): Promise<User | null> {
    const cache = this.c.caches
    // taken before the read: an eviction meanwhile voids the fill (../cache.ts)
    const stamp = cache?.users.stamp
    const s = await this.c.storage.users.get(id)
    if (s === null) return null
    const u = await this.c.groupTable.userOf(s)
    cache?.users.set(id, u, stamp)
    return u
  }

  async byUsername (username: string): Promise<User | null> {
    const id = await this.c.storage.users.idByUsername(username.toLowerCase())
    return id === null ? null : await this.get(id)
  }

  async list (orgId?: string): Promise<User[]> {
    const ids = await this.c.storage.users.ids()
    const all = await Promise.all(ids.map(async (id) => await this.get(id)))
    return all
      .filter((u): u is User => u !== null && (orgId === undefined || orgId in u.orgs))
      .sort((a, b) => a.username.localeCompare(b.username))
  }

  async count (): Promise<number> { return await this.c.storage.users.count() }

  /**
   * Disabling also ends the user's sessions; either way every
   * replica drops the user's cached record, keys and sessions.
   */
  async setActive (userId: string, active: boolean): Promise<void> {
    if (!(await this.c.storage.users.setField(userId, 'is_active', active))) throw E.userNotFound()
    if (!active) {
      await this.c.storage.sessions.endAll(userId)
      await sessionsEnded(this.c, userId)
    }
    await invalidate(this.c, `user-aks:${userId}`)
  }

  async setMembership (userId: string, orgId: string, role: OrgRole | null): Promise<void> {
    if (!(await this.c.storage.users.setMembership(userId, orgId, role))) throw E.userNotFound()
    await invalidate(this.c, `user:${userId}`)
  }

  /** Changes a user's name, email or superuser flag (every replica sees it at once). */
  async setFields (userId: string, fields: Partial<Pick<User, 'name' | 'email' | 'is_superuser'>>): Promise<void> {
    const users = this.c.storage.users
    for (const [k, v] of Object.entries(fields) as Array<['name' | 'email' | 'is_superuser', string | boolean | undefined]>) {
      if (v !== undefined && !(await users.setField(userId, k, v as never))) throw E.userNotFound()
    }
    await invalidate(this.c, `user:${userId}`)
  }

  /** False: no such user. */
  async setRateLimit (userId: string, policy: RateLimitPolicy | null): Promise<boolean> {
    const found = await this.c.storage.users.setField(userId, 'rate_limit', policy)
    if (found) await invalidate(this.c, `user:${userId}`)
    return found
  }

  async recordLogin (userId: string): Promise<void> {
    if (!(await this.c.storage.users.setField(userId, 'last_login', isoNow(this.c)))) throw E.userNotFound()
    // this replica's copy only: the last login is not worth a message to every replica
    this.c.caches?.users.delete(userId)
  }
}

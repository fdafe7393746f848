/** Orgs and users in memory. Records go in and come out as copies. */
import type { OrgStorage, StoredUser, UserField, UserStorage } from '../ports.js'
import type { Org, OrgRole } from '../types.js'
import type { Local } from './data.js'
import { safeEqual } from '../../crypto.js'

export class MemoryOrgs implements OrgStorage {
  constructor (private readonly l: Local) {}

  async insert (org: Org): Promise<boolean> {
    const d = this.l.open()
    if (d.orgs.has(org.id)) return false
    d.orgs.set(org.id, { ...org })
    return true
  }

  async get (id: string): Promise<Org | null> {
    const o = this.l.open().orgs.get(id)
    return o === undefined ? null : { ...o }
  }

  async list (): Promise<Org[]> { return [...this.l.open().orgs.values()].map((o) => ({ ...o })) }
}

export class MemoryUsers implements UserStorage {
  constructor (private readonly l: Local) {}

  async insert (user: StoredUser, usernameLower: string): Promise<'ok' | 'username_taken' | 'id_taken'> {
    const d = this.l.open()
    if (d.usernames.has(usernameLower)) return 'username_taken'
    if (d.users.has(user.id)) return 'id_taken'
    d.usernames.set(usernameLower, user.id)
    d.users.set(user.id, structuredClone(user))
    return 'ok'
  }

  /** The stored record itself (not a copy): for this backend's own reads. */
  peek (id: string): StoredUser | null { return this.l.open().users.get(id) ?? null }

  async get (id: string): Promise<StoredUser | null> {
    const s = this.peek(id)
    return s === null ? null : structuredClone(s)
  }

  async idByUsername (usernameLower: string): Promise<string | null> {
    return this.l.open().usernames.get(usernameLower) ?? null
  }

  async ids (): Promise<string[]> { return [...this.l.open().users.keys()] }
  async count (): Promise<number> { return this.l.open().users.size }

  async setField<F extends UserField> (id: string, field: F, value: StoredUser[F]): Promise<boolean> {
    const u = this.peek(id)
    if (u === null) return false
    u[field] = structuredClone(value)
    return true
  }

  async swapPasswordHash (id: string, expected: string, hash: string): Promise<boolean> {
    const u = this.peek(id)
    if (u === null || u.password_hash === null || !safeEqual(u.password_hash, expected)) return false
    u.password_hash = hash
    return true
  }

  async setMembership (id: string, orgId: string, role: OrgRole | null): Promise<boolean> {
    const u = this.peek(id)
    if (u === null) return false
    if (role === null) delete u.orgs[orgId]
    else u.orgs[orgId] = role
    if (u.default_org === null || !(u.default_org in u.orgs)) u.default_org = Object.keys(u.orgs)[0] ?? null
    return true
  }
}

/**
 * Orgs and users in SQLite: one JSON record per row; the
 * lowercase username is a UNIQUE column, claimed with the insert.
 */
import type { OrgStorage, StoredUser, UserField, UserStorage } from '../ports.js'
import type { Org, OrgRole } from '../model.js'
import type { SqlContext } from './context.js'
import { safeEqual } from '../../crypto.js'

type Row = { json: string } | undefined

export class SqliteOrgs implements OrgStorage {
  constructor (private readonly c: SqlContext) {}

  async insert (org: Org): Promise<boolean> {
    return this.c.run(() => this.c.st('INSERT OR IGNORE INTO orgs (id, json) VALUES (?, ?)').run(org.id, JSON.stringify(org)).changes === 1)
  }

  async get (id: string): Promise<Org | null> {
    const r = this.c.run(() => this.c.st('SELECT json FROM orgs WHERE id = ?').get(id) as Row)
    return r === undefined ? null : JSON.parse(r.json) as Org
  }

  async list (): Promise<Org[]> {
    return this.c.run(() => (this.c.st('SELECT json FROM orgs').all() as Array<{ json: string }>).map((r) => JSON.parse(r.json) as Org))
  }
}

export class SqliteUsers implements UserStorage {
  constructor (private readonly c: SqlContext) {}

  async insert (user: StoredUser, usernameLower: string): Promise<'ok' | 'username_taken' | 'id_taken'> {
    const { c } = this
    return c.tx(() => {
      if (c.st('SELECT 1 FROM users WHERE username_lower = ?').get(usernameLower) !== undefined) return 'username_taken'
      if (c.st('SELECT 1 FROM users WHERE id = ?').get(user.id) !== undefined) return 'id_taken'
      c.st('INSERT INTO users (id, username_lower, json) VALUES (?, ?, ?)').run(user.id, usernameLower, JSON.stringify(user))
      return 'ok'
    })
  }

  /** The record, read in the caller's statement or transaction. */
  read (id: string): StoredUser | null {
    const r = this.c.st('SELECT json FROM users WHERE id = ?').get(id) as Row
    return r === undefined ? null : JSON.parse(r.json) as StoredUser
  }

  async get (id: string): Promise<StoredUser | null> { return this.c.run(() => this.read(id)) }

  async idByUsername (usernameLower: string): Promise<string | null> {
    const r = this.c.run(() => this.c.st('SELECT id FROM users WHERE username_lower = ?').get(usernameLower) as { id: string } | undefined)
    return r?.id ?? null
  }

  async ids (): Promise<string[]> { return this.c.run(() => this.c.st('SELECT id FROM users').pluck().all() as string[]) }
  async count (): Promise<number> { return this.c.run(() => this.c.st('SELECT count(*) FROM users').pluck().get() as number) }

  async setField<F extends UserField> (id: string, field: F, value: StoredUser[F]): Promise<boolean> {
    return this.#change(id, (u) => { u[field] = value; return true })
  }

  async swapPasswordHash (id: string, expected: string, hash: string): Promise<boolean> {
    return this.#change(id, (u) => {
      if (u.password_hash === null || !safeEqual(u.password_hash, expected)) return false
      u.password_hash = hash
      return true
    })
  }

  async setMembership (id: string, orgId: string, role: OrgRole | null): Promise<boolean> {
    return this.#change(id, (u) => {
      if (role === null) delete u.orgs[orgId]
      else u.orgs[orgId] = role
      if (u.default_org === null || !(u.default_org in u.orgs)) u.default_org = Object.keys(u.orgs)[0] ?? null
      return true
    })
  }

  async setGroupMember (userId: string, source: string, groupId: string, member: boolean): Promise<boolean> {
    return this.#change(userId, (u) => {
      const had = u.groups?.[source] ?? []
      const ids = member ? (had.includes(groupId) ? had : [...had, groupId]) : had.filter((g) => g !== groupId)
      setSource(u, source, ids)
      return true
    })
  }

  async replaceGroups (userId: string, source: string, ids: string[]): Promise<boolean> {
    return this.#change(userId, (u) => { setSource(u, source, [...ids]); return true })
  }

  /** Reads, changes and writes the record in one transaction; `edit` false: nothing written. */
  #change (id: string, edit: (u: StoredUser) => boolean): boolean {
    return this.c.tx(() => {
      const u = this.read(id)
      if (u === null || !edit(u)) return false
      this.c.st('UPDATE users SET json = ? WHERE id = ?').run(JSON.stringify(u), id)
      return true
    })
  }
}

/** One source's list of group ids set on the record: an empty list goes, and with the last source the field. */
function setSource (u: StoredUser, source: string, ids: string[]): void {
  const groups = { ...u.groups }
  if (ids.length === 0) delete groups[source]
  else groups[source] = ids
  if (Object.keys(groups).length === 0) delete u.groups
  else u.groups = groups
}

/**
 * Groups and their members. A group is an org's or global, its name unique
 * per org in any case; memberships are on the user records by source, so an
 * operator's (`local`) and an identity provider's (`idp:<provider>`, replaced
 * as a whole at each sign-in there) never mix. Creating or removing a group
 * is announced (`group:<id>`): every replica reads its group table again and
 * drops the cached users that show a removed one.
 */
import { randomUUID } from 'node:crypto'
import { E, UsageError } from '../../errors.js'
import { hasControl, NO_CONTROLS } from '../../text.js'
import { LOCAL_GROUPS, type Group, type User } from '../model.js'
import { groupNameKey } from '../ports.js'
import { invalidate, isoNow, type Context } from './context.js'
import { sortSources } from './group-table.js'

export const MAX_GROUP_NAME = 128

/** A group's name as given, or a UsageError saying what is wrong with it. */
export function checkGroupName (name: string): string {
  if (name.length === 0 || name.length > MAX_GROUP_NAME) throw new UsageError(`group name: 1 to ${MAX_GROUP_NAME} characters`)
  if (hasControl(name)) throw new UsageError(`group name: ${NO_CONTROLS}`)
  if (name.trim() !== name) throw new UsageError('group name: no leading or trailing whitespace')
  return name
}

/** An identity provider's source (`idp:oidc:corp`), or a UsageError: `local` is the operator's alone. */
function checkSource (source: string): string {
  if (!/^idp:\S{1,120}$/.test(source) || hasControl(source)) throw new UsageError(`group source must be idp:<provider>, got ${JSON.stringify(source)}`)
  return source
}

/** A member as listed: the user and the sources that make them one. */
export interface GroupMember { user: User, sources: string[] }

export class Groups {
  constructor (private readonly c: Context) {}

  /** A new group of the org (null: global); 409 group_exists when the org has one of that name in any case. */
  async create (name: string, org: string | null = null, id: string = randomUUID()): Promise<Group> {
    checkGroupName(name)
    if (org !== null && (await this.c.storage.orgs.get(org)) === null) throw E.orgNotFound()
    const group: Group = { id: id.toLowerCase(), name, org, date_created: isoNow(this.c) }
    const done = await this.c.storage.groups.insert(group, groupNameKey(org, name.toLowerCase()))
    if (done === 'name_taken') throw E.groupExists(name)
    if (done === 'id_taken') throw E.groupExists(group.id)
    await this.#announce(group.id)
    return group
  }

  async get (id: string): Promise<Group | null> { return await this.c.storage.groups.get(id.toLowerCase()) }

  /** The org's group (null: the global one) of that name, in any case. */
  async byName (name: string, org: string | null): Promise<Group | null> {
    const id = await this.c.storage.groups.idByName(org, name.toLowerCase())
    return id === null ? null : await this.get(id)
  }

  /** Every group (undefined), the global ones (null) or an org's; global first, then by org, then by name. */
  async list (org?: string | null): Promise<Group[]> {
    const all = await this.c.storage.groups.list()
    return all
      .filter((g) => org === undefined || g.org === org)
      .sort((a, b) => (a.org ?? '').localeCompare(b.org ?? '') || a.name.localeCompare(b.name))
  }

  /** Finds the group, or creates it (race-safe: a concurrent creation's group is returned): for sign-ins. */
  async ensure (name: string, org: string | null): Promise<Group> {
    for (let tries = 1; ; tries++) {
      const found = await this.byName(name, org)
      if (found !== null) return found
      try {
        return await this.create(name, org)
      } catch (err) {
        // another process created it meanwhile (or is removing one of that name): look again
        if ((err as { code?: string }).code !== 'group_exists' || tries === 3) throw err
      }
    }
  }

  /**
   * Removes the group, then its memberships from every user who has it (each
   * one id in one step: a concurrent change of theirs is kept); 404 group_not_found.
   */
  async remove (id: string): Promise<Group> {
    const group = await this.get(id)
    if (group === null || !(await this.c.storage.groups.remove(group.id))) throw E.groupNotFound()
    await this.#announce(group.id)
    for (const userId of await this.c.storage.users.ids()) {
      const s = await this.c.storage.users.get(userId)
      const sources = Object.entries(s?.groups ?? {}).filter(([, ids]) => ids.includes(group.id)).map(([src]) => src)
      for (const source of sources) await this.c.storage.users.setGroupMember(userId, source, group.id, false)
      if (sources.length > 0) await invalidate(this.c, `user:${userId}`)
    }
    return group
  }

  /** The users with any membership of the group, each with its sources; by username. */
  async members (groupId: string): Promise<GroupMember[]> {
    const id = groupId.toLowerCase()
    const out: GroupMember[] = []
    for (const userId of await this.c.storage.users.ids()) {
      const s = await this.c.storage.users.get(userId)
      if (s === null) continue
      const sources = Object.entries(s.groups ?? {}).filter(([, ids]) => ids.includes(id)).map(([src]) => src)
      if (sources.length > 0) out.push({ user: await this.c.groupTable.userOf(s), sources: sortSources(sources) })
    }
    return out.sort((a, b) => a.user.username.localeCompare(b.user.username))
  }

  /** An operator's membership (source `local`); 404 group_not_found, user_not_found. */
  async addMember (groupId: string, userId: string): Promise<void> { await this.#setLocal(groupId, userId, true) }

  /** Ends the operator's membership only: an identity provider's stays until its next sign-in. */
  async removeMember (groupId: string, userId: string): Promise<void> { await this.#setLocal(groupId, userId, false) }

  /**
   * Replaces the groups an identity provider gives the user (source `idp:<provider>`) as a whole, in one
   * step; the other sources are kept. Unchanged: nothing written, nothing announced. 404 user_not_found.
   */
  async replaceExternal (userId: string, source: string, groupIds: readonly string[]): Promise<void> {
    checkSource(source)
    const ids = [...new Set(groupIds.map((g) => g.toLowerCase()))]
    const s = await this.c.storage.users.get(userId)
    if (s === null) throw E.userNotFound()
    const had = s.groups?.[source] ?? []
    // a sign-in that changes nothing writes nothing and tells no replica
    if (had.length === ids.length && ids.every((g) => had.includes(g))) return
    if (!(await this.c.storage.users.replaceGroups(userId, source, ids))) throw E.userNotFound()
    await invalidate(this.c, `user:${userId}`)
  }

  async #setLocal (groupId: string, userId: string, member: boolean): Promise<void> {
    const group = await this.get(groupId)
    if (group === null) throw E.groupNotFound()
    if (!(await this.c.storage.users.setGroupMember(userId, LOCAL_GROUPS, group.id, member))) throw E.userNotFound()
    await invalidate(this.c, `user:${userId}`)
  }

  /** Every process reads its group table again (this one at once: Redis hears its own message later). */
  async #announce (id: string): Promise<void> {
    this.c.groupTable.forget()
    await invalidate(this.c, `group:${id}`)
  }
}

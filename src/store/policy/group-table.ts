/**
 * The whole group table in process, so that a user record's group ids become
 * its `User.groups` without a read per group: groups are few, and change only
 * when one is created or removed. It is read again after any `group:<id>`
 * message (Invalidation), after a reset of the messages, on every read
 * while the backend says cached entries may not be trusted, and at least
 * every TABLE_TTL_MS (what bounds a change written past the policy, such as
 * `sidegate store import --merge` into a file). A group id that is not in the
 * table (removed, or never there) is skipped.
 */
import { LOCAL_GROUPS, type Group, type User, type UserGroup } from '../model.js'
import type { Storage, StoredUser } from '../ports.js'
import { publicUser } from './records.js'

/** The table is read again at least this often (ms), messages or not. */
export const TABLE_TTL_MS = 60_000

interface Table {
  groups: ReadonlyMap<string, Group>
  /** org id → name: orgs are read with the groups (a group's org exists before it does) */
  orgNames: ReadonlyMap<string, string>
}

export class GroupTable {
  #table: Promise<Table> | null = null
  #readAt = 0

  constructor (private readonly storage: Pick<Storage, 'groups' | 'orgs' | 'invalidation'>) {
    storage.invalidation?.listen((msg) => { if (msg.startsWith('group:')) this.forget() }, () => this.forget())
  }

  /** The next read reads the table again (a group was created or removed here or elsewhere). */
  forget (): void { this.#table = null }

  /** The public record of a stored user, with its groups resolved; at once when it has none. */
  userOf (s: StoredUser): User | Promise<User> {
    const u = publicUser(s)
    if (!hasGroups(s)) return u
    return this.#read().then((t) => {
      const groups = resolve(t, s.groups!)
      if (groups.length > 0) u.groups = groups
      return u
    })
  }

  #read (): Promise<Table> {
    if (this.storage.invalidation?.trusted !== true) return this.#load()
    if (this.#table === null || Date.now() - this.#readAt > TABLE_TTL_MS) {
      this.#readAt = Date.now()
      const p = this.#load()
      this.#table = p
      // a failed read is not kept: the next one tries again
      p.catch(() => { if (this.#table === p) this.#table = null })
    }
    return this.#table
  }

  async #load (): Promise<Table> {
    const [groups, orgs] = await Promise.all([this.storage.groups.list(), this.storage.orgs.list()])
    return { groups: new Map(groups.map((g) => [g.id, g])), orgNames: new Map(orgs.map((o) => [o.id, o.name])) }
  }
}

const hasGroups = (s: StoredUser): boolean =>
  s.groups !== undefined && Object.values(s.groups).some((ids) => Array.isArray(ids) && ids.length > 0)

/**
 * Each group once, with every source that lists it (`local` first, then the
 * others in order), known groups only; sorted by entry: global groups first,
 * then by org name, then by name (code-unit order, as headers compare).
 */
function resolve (t: Table, bySource: Record<string, string[]>): UserGroup[] {
  const sources = new Map<string, string[]>()
  for (const [source, ids] of Object.entries(bySource)) {
    if (!Array.isArray(ids)) continue
    for (const id of ids) {
      const list = sources.get(id) ?? []
      if (!list.includes(source)) list.push(source)
      sources.set(id, list)
    }
  }
  const out: UserGroup[] = []
  for (const [id, list] of sources) {
    const g = t.groups.get(id)
    if (g === undefined) continue
    const orgName = g.org === null ? null : t.orgNames.get(g.org) ?? null
    out.push({ id, name: g.name, org: g.org, orgName, sources: sortSources(list) })
  }
  return out.sort((a, b) => cmp(entry(a), entry(b)) || cmp(a.id, b.id))
}

const entry = (g: UserGroup): string => g.org === null ? `\u0000${g.name}` : `\u0001${g.orgName ?? g.org}\u0000${g.name}`
const cmp = (a: string, b: string): number => a < b ? -1 : a > b ? 1 : 0

/** A membership's sources: `local` first, then the providers in order. */
export const sortSources = (sources: string[]): string[] =>
  [...sources].sort((a, b) => a === b ? 0 : a === LOCAL_GROUPS ? -1 : b === LOCAL_GROUPS ? 1 : cmp(a, b))

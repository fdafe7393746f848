/**
 * `sidegate import`'s plan for JumpServer's user groups (./import.ts, phase 2):
 * `group` records (users_usergroup: id, name, org_id) and `group_member`
 * records (users_user_groups: user_id, usergroup_id), checked against the
 * file and the store. A group keeps JumpServer's id; one whose org already
 * has a group of that name (any case) is that group (noted). Memberships are
 * an operator's (source `local`). A rerun changes nothing.
 */
import type { Store, User } from '../store/types.js'
import type { Action, ImportAudit, Parsed, Problem, Problems, RecordType, UserRef } from './import-parse.js'

/** What the groups' plan shares with the rest of the import's. */
export interface GroupPlan {
  store: Store
  problems: Problems
  notes: Problem[]
  audit: ImportAudit
  step: (type: RecordType, action: Action, write?: () => Promise<void>) => void
  /** the user a record names (in the file or the store), or null with a problem added */
  resolve: (ref: UserRef, line: number) => Promise<{ id: string, username: string, user: User | null } | null>
  /** the org is in the file, is created by it, or is in the store */
  orgKnown: (id: string) => Promise<boolean>
}

export async function planGroups (c: GroupPlan, p: Parsed): Promise<void> {
  const { store, problems, notes, step, audit } = c
  const via = 'import'
  /** the file's group id → the group's id in the store (itself, or the org's group of that name) */
  const ids = new Map<string, string>()
  const lines = new Map<string, number>()
  const names = new Map<string, number>()
  for (const g of p.groups) {
    const nameKey = `${g.org ?? ''}/${g.name.toLowerCase()}`
    if (lines.has(g.id)) { problems.add(g.line, `group ${g.id} is also on line ${lines.get(g.id)!}`); continue }
    if (names.has(nameKey)) { problems.add(g.line, `a group of that name and org is also on line ${names.get(nameKey)!}`); continue }
    lines.set(g.id, g.line)
    names.set(nameKey, g.line)
    if (g.org !== null && !(await c.orgKnown(g.org))) {
      problems.add(g.line, `org ${g.org} is neither in this file nor in the store: add its org record`)
      continue
    }
    const have = await store.groups.get(g.id)
    if (have !== null) {
      if (have.org !== g.org) { problems.add(g.line, `group ${g.id} exists in the store in ${have.org === null ? 'no org' : `org ${have.org}`}`); continue }
      if (have.name !== g.name) notes.push({ line: g.line, message: `group ${g.id} exists as "${have.name}": its name is kept` })
      ids.set(g.id, g.id)
      step('group', 'unchanged')
      continue
    }
    const named = await store.groups.byName(g.name, g.org)
    if (named !== null) {
      notes.push({ line: g.line, message: `group "${g.name}" exists with id ${named.id}: records naming group ${g.id} apply to it` })
      ids.set(g.id, named.id)
      step('group', 'unchanged')
      continue
    }
    ids.set(g.id, g.id)
    step('group', 'created', async () => {
      // a rerun after a partial write: already there is fine
      if ((await store.groups.get(g.id)) !== null) return
      await store.groups.create(g.name, g.org, g.id)
      audit({ event: 'group.created', group: g.id, ...(g.org === null ? {} : { org: g.org }), via })
    })
  }

  const seen = new Map<string, number>()
  for (const m of p.groupMembers) {
    const who = await c.resolve(m.user, m.line)
    if (who === null) continue
    const group = ids.get(m.group) ?? (await store.groups.get(m.group))?.id
    if (group === undefined) { problems.add(m.line, `group ${m.group} is neither in this file nor in the store`); continue }
    const k = `${who.id} ${group}`
    if (seen.has(k)) { problems.add(m.line, `the same group membership is also on line ${seen.get(k)!}`); continue }
    seen.set(k, m.line)
    if (who.user?.groups?.find((g) => g.id === group)?.sources.includes('local') === true) { step('group_member', 'unchanged'); continue }
    step('group_member', 'created', async () => {
      await store.groups.addMember(group, who.id)
      audit({ event: 'group.member_added', user: { id: who.id, username: who.username }, group, via })
    })
  }
}

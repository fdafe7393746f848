/**
 * Groups (`sidegate group …`, /admin/v1/groups…): each operation's declaration
 * (./operation.ts) with its code. A group is named by its id, or by its name:
 * a global group's, or with --org (`?org=`) an org's; an org by its id or by
 * a name no other org has. An operator's memberships are the `local` source
 * only: those an identity provider gives are refreshed at its sign-ins.
 */
import { Type as T, type Static } from '@sinclair/typebox'
import { E, UsageError } from '../errors.js'
import { isUuid } from '../http/uuid.js'
import { checkGroupName } from '../store/policy/groups.js'
import { escapeControls } from '../text.js'
import type { Group as StoredGroup } from '../store/types.js'
import type { AdminOps } from './context.js'
import { defineOperation, iso, named, nullable, obj, text, uuid } from './operation.js'

const GROUP_FIELDS = {
  id: uuid,
  name: T.String(),
  org: nullable(T.String(), 'its org\'s id; null: a global group'),
  org_name: nullable(T.String(), 'its org\'s name; null: a global group'),
  date_created: iso
}
const Group = named('Group', T.Object(GROUP_FIELDS))
export type GroupJson = Static<typeof Group>
const GroupList = named('GroupList', T.Array(Group))
const Sources = T.Array(T.String(), { description: '`local` (an operator\'s) and `idp:<provider>` (an identity provider\'s, refreshed at its sign-ins)' })
const GroupDetail = named('GroupDetail', T.Object({
  ...GROUP_FIELDS,
  members: T.Array(T.Object({ id: uuid, username: T.String(), sources: Sources }))
}))
const GroupMembership = named('GroupMembership', T.Object({
  group: Group,
  user: T.Object({ id: uuid, username: T.String() }),
  sources: T.Array(T.String(), { description: 'what makes the user a member now (empty: not one)' })
}))

const ORG_QUERY = { org: 'With a group\'s name: the org whose group it is (its id or unique name); without: a global group.' }
const GROUP_SYNOPSIS = '<group> [--org ORG]'

/** The org a caller names: its id, or a name that one org alone has (in any case). */
export async function orgRef (ops: AdminOps, ref: string): Promise<string> {
  if (isUuid(ref)) return (await ops.org(ref.toLowerCase())).id
  const named = (await ops.store.orgs.list()).filter((o) => o.name.toLowerCase() === ref.toLowerCase())
  if (named.length === 1) return named[0].id
  if (named.length === 0) throw new UsageError(`no org with id or name "${escapeControls(ref)}"${ops.labels.orgHint}`, 'org_not_found')
  throw new UsageError(`${named.length} orgs are named "${escapeControls(ref)}": give its id${ops.labels.orgHint}`)
}

/** The group a caller names: its id, else its name (global, or the org's); 404 group_not_found. */
async function groupRef (ops: AdminOps, ref: string, org: string | null): Promise<StoredGroup> {
  const orgId = org === null ? null : await orgRef(ops, org)
  const byId = isUuid(ref) ? await ops.store.groups.get(ref) : null
  if (byId !== null && (org === null || byId.org === orgId)) return byId
  const found = await ops.store.groups.byName(ref, orgId)
  if (found === null) throw E.groupNotFound()
  return found
}

async function groupJson (ops: AdminOps, g: StoredGroup): Promise<GroupJson> {
  const org = g.org === null ? null : await ops.store.orgs.get(g.org)
  return { id: g.id, name: g.name, org: g.org, org_name: org?.name ?? null, date_created: g.date_created }
}

/** The `?org=` of a call, from the CLI's --org. */
const orgQuery = (flags: { readonly [name: string]: any }): URLSearchParams =>
  new URLSearchParams(flags.org === undefined ? [] : [['org', String(flags.org[0])]])

/** An operator's membership added or ended; what makes the user a member after it. */
async function membership (
  ops: AdminOps, groupId: string, username: string, add: boolean, org: string | null
): Promise<Static<typeof GroupMembership>> {
  const group = await groupRef(ops, groupId, org)
  const u = await ops.user(username)
  if (add) await ops.store.groups.addMember(group.id, u.id)
  else await ops.store.groups.removeMember(group.id, u.id)
  ops.audit({ event: add ? 'group.member_added' : 'group.member_removed', user: u, group: group.id })
  const after = await ops.user(u.username)
  const sources = after.groups?.find((g) => g.id === group.id)?.sources ?? []
  return { group: await groupJson(ops, group), user: { id: u.id, username: u.username }, sources: [...sources] }
}

const sourcesText = (sources: readonly string[]): string => sources.length === 0 ? 'no longer a member' : `member (${sources.join(', ')})`

export const GROUP_OPERATIONS = [
  defineOperation({
    method: 'POST',
    path: 'groups',
    status: 201,
    tag: 'Groups',
    operationId: 'createGroup',
    summary: 'Create a group, global or an organization\'s (`sidegate group add`)',
    body: obj({
      name: text('1 to 128 characters, no control characters, no leading or trailing whitespace; unique per organization (or among the global groups) in any case.'),
      org: T.Optional(text('Its organization: an id, or a name no other organization has; absent: a global group.'))
    }),
    answer: Group,
    errors: ['group_exists', 'org_not_found'],
    cli: [{
      command: 'group add',
      args: ['name'],
      what: 'group name',
      synopsis: '<name> [--org ORG]',
      help: ['a global group, or with --org (an id or unique name) an org\'s'],
      input: (c, p) => ({ body: { name: p.name, org: c.flags.org?.[0] } }),
      text: (g) => `created group ${escapeControls(g.name)} (${g.id})${g.org === null ? '' : ` in org ${escapeControls(g.org_name ?? g.org)}`}`
    }],
    run: async (ops, { body: { name, org } }) => {
      checkGroupName(name)
      const group = await ops.store.groups.create(name, org === undefined ? null : await orgRef(ops, org))
      ops.audit({ event: 'group.created', group: group.id, ...(group.org === null ? {} : { org: group.org }) })
      return await groupJson(ops, group)
    }
  }),
  defineOperation({
    method: 'GET',
    path: 'groups',
    status: 200,
    tag: 'Groups',
    operationId: 'listGroups',
    summary: 'List groups (`sidegate group list`)',
    query: { org: 'Only this organization\'s groups (its id or unique name).' },
    answer: GroupList,
    errors: ['org_not_found'],
    cli: [{
      command: 'group list',
      args: [],
      synopsis: '[--org ORG]',
      input: (c) => ({ query: orgQuery(c.flags) }),
      text: (groups) => groups.map((g) => `${g.id}  ${escapeControls(g.org_name === null ? g.name : `${g.org_name}/${g.name}`)}`).join('\n') || '(no groups)'
    }],
    run: async (ops, { query }) => {
      const org = query.get('org')
      const groups = await ops.store.groups.list(org === null ? undefined : await orgRef(ops, org))
      return await Promise.all(groups.map(async (g) => await groupJson(ops, g)))
    }
  }),
  defineOperation({
    method: 'GET',
    path: 'groups/{id}',
    status: 200,
    tag: 'Groups',
    operationId: 'getGroup',
    summary: 'Show a group with its members and what makes each one (`sidegate group show`)',
    description: '`{id}`: the group\'s id, or its name (a global group\'s; with `?org=` the organization\'s).',
    query: ORG_QUERY,
    answer: GroupDetail,
    errors: ['group_not_found', 'org_not_found'],
    cli: [{
      command: 'group show',
      args: ['id'],
      what: 'group',
      synopsis: GROUP_SYNOPSIS,
      help: ['the group and its members, each with its sources (local, idp:…)'],
      input: (c) => ({ query: orgQuery(c.flags) }),
      text: (g) => [
        `${g.id}  ${escapeControls(g.org_name === null ? g.name : `${g.org_name}/${g.name}`)}`,
        ...g.members.map((m) => `  ${m.username}  ${m.sources.join(', ')}`),
        ...(g.members.length === 0 ? ['  (no members)'] : [])
      ].join('\n')
    }],
    run: async (ops, { params, query }) => {
      const group = await groupRef(ops, params.id, query.get('org'))
      const members = (await ops.store.groups.members(group.id))
        .map((m) => ({ id: m.user.id, username: m.user.username, sources: m.sources }))
      return { ...(await groupJson(ops, group)), members }
    }
  }),
  defineOperation({
    method: 'DELETE',
    path: 'groups/{id}',
    status: 200,
    tag: 'Groups',
    operationId: 'removeGroup',
    summary: 'Remove a group and every membership of it (`sidegate group remove`)',
    description: 'Memberships from every source go with it; every replica stops showing it at once.',
    query: ORG_QUERY,
    answer: Group,
    errors: ['group_not_found', 'org_not_found'],
    cli: [{
      command: 'group remove',
      args: ['id'],
      what: 'group',
      synopsis: GROUP_SYNOPSIS,
      help: ['with every membership of it'],
      input: (c) => ({ query: orgQuery(c.flags) }),
      text: (g) => `removed group ${escapeControls(g.name)} (${g.id})`
    }],
    run: async (ops, { params, query }) => {
      const group = await groupRef(ops, params.id, query.get('org'))
      const json = await groupJson(ops, group)
      await ops.store.groups.remove(group.id)
      ops.audit({ event: 'group.removed', group: group.id })
      return json
    }
  }),
  defineOperation({
    method: 'POST',
    path: 'groups/{id}/members',
    status: 200,
    tag: 'Groups',
    operationId: 'addGroupMember',
    summary: 'Make a user a member of a group (`sidegate group members add`)',
    description: 'The operator\'s membership (source `local`), beside any an identity provider gives.',
    query: ORG_QUERY,
    body: obj({ username: text('The user.') }),
    answer: GroupMembership,
    errors: ['group_not_found', 'not_found', 'org_not_found'],
    cli: [{
      command: 'group members',
      when: (c) => c.args[0] === 'add',
      args: ['action', 'id', 'username'],
      usage: 'expected group members add|remove <group> <username>',
      synopsis: `add ${GROUP_SYNOPSIS.replace(' [', ' <username> [')}`,
      input: (c, p) => ({ body: { username: p.username }, query: orgQuery(c.flags) }),
      text: (m) => `${m.user.username} in ${escapeControls(m.group.name)}: ${sourcesText(m.sources)}`
    }],
    run: async (ops, { params, body, query }) => await membership(ops, params.id, body.username, true, query.get('org'))
  }),
  defineOperation({
    method: 'DELETE',
    path: 'groups/{id}/members/{username}',
    status: 200,
    tag: 'Groups',
    operationId: 'removeGroupMember',
    summary: 'End a user\'s membership of a group (`sidegate group members remove`)',
    description: 'Ends the operator\'s membership (source `local`) only: one an identity provider gives stays until its next sign-in (`sources` says what is left).',
    query: ORG_QUERY,
    answer: GroupMembership,
    errors: ['group_not_found', 'not_found', 'org_not_found'],
    cli: [{
      command: 'group members',
      args: ['action', 'id', 'username'],
      usage: 'expected group members add|remove <group> <username>',
      synopsis: `remove ${GROUP_SYNOPSIS.replace(' [', ' <username> [')}`,
      input: (c, p) => {
        if (p.action !== 'remove') throw new UsageError(`group members: add or remove, got "${escapeControls(p.action)}"`)
        return { query: orgQuery(c.flags) }
      },
      text: (m) => `${m.user.username} in ${escapeControls(m.group.name)}: ${sourcesText(m.sources)}`
    }],
    run: async (ops, { params, query }) => await membership(ops, params.id, params.username, false, query.get('org'))
  })
]

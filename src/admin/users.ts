/**
 * Users: their records, passwords, being disabled, and memberships of
 * organizations (`sidegate user …`, /admin/v1/users…): each operation's
 * declaration (./operation.ts) with its code.
 */
import { Type as T, type Static } from '@sinclair/typebox'
import { UsageError } from '../errors.js'
import { isUuid } from '../http/uuid.js'
import { escapeControls, hasControl, NO_CONTROLS } from '../text.js'
import type { OrgRole, User as StoredUser } from '../store/types.js'
import { CLI_LABELS, type AdminOps } from './context.js'
import { USERNAME } from './import.js'
import { defineOperation, iso, named, nullable, obj, oneOf, text, uuid } from './operation.js'
import { LinkSchema, linkJson, linkLine } from './links.js'
import { MIN_PASSWORD, RESET_LINK_MINUTES } from '../limits.js'
import { RESET_PATH } from '../routes/next.js'

/** The base of a reset link: an http(s) origin, with a path prefix if the gateway is mounted under one. */
function baseUrl (given: string): string {
  let u: URL
  try { u = new URL(given) } catch { throw new UsageError(`--url: not a URL: ${escapeControls(given)}`, 'bad_request') }
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.search !== '' || u.hash !== '' || u.username !== '') {
    throw new UsageError('--url: an http(s) URL without a query, fragment or user', 'bad_request')
  }
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`
}

export const User = named('User', T.Object({
  id: uuid,
  username: T.String(),
  name: T.Optional(T.String()),
  email: T.Optional(T.String()),
  is_active: T.Boolean(),
  is_superuser: T.Boolean(),
  orgs: T.Unsafe<Record<string, OrgRole>>({ type: 'object', description: 'org id → role', additionalProperties: oneOf(['admin', 'user']) }),
  default_org: T.Optional(nullable(T.String())),
  date_joined: T.Optional(iso),
  last_login: T.Optional(nullable(iso)),
  groups: T.Optional(T.Array(T.Object({
    id: uuid,
    name: T.String(),
    org: nullable(T.String(), 'its org\'s id; null: a global group'),
    org_name: nullable(T.String()),
    sources: T.Array(T.String(), { description: '`local` (an operator\'s), `idp:<provider>` (an identity provider\'s)' })
  }), { description: 'the user\'s groups (absent: none)' })),
  links: T.Optional(T.Array(LinkSchema, { description: 'accounts elsewhere linked to the user (GET users/{username} only; absent: none)' }))
}))
export type UserJson = Static<typeof User>
const UserList = named('UserList', T.Array(User))
const UserRef = named('UserRef', T.Object({ id: uuid, username: T.String() }))
const ResetLink = named('ResetLink', T.Object({ id: uuid, username: T.String(), url: T.String(), expires: iso }))
const UserActive = named('UserActive', T.Object({ id: uuid, username: T.String(), is_active: T.Boolean() }))

/** Fields of a user in the JSON, in a fixed order. */
const USER_FIELDS = Object.keys(User.properties) as Array<keyof UserJson & keyof StoredUser>

export function userJson (u: StoredUser): UserJson {
  const out: Record<string, unknown> = {}
  for (const f of USER_FIELDS) if (u[f] !== undefined) out[f] = u[f]
  out.orgs = Object.fromEntries(Object.entries(u.orgs).sort(([a], [b]) => a.localeCompare(b)))
  if (u.groups !== undefined && u.groups.length > 0) {
    out.groups = u.groups.map((g) => ({
      id: g.id, name: g.name, org: g.org, org_name: g.orgName, sources: [...g.sources]
    }))
  } else delete out.groups
  return out as UserJson
}

/** `sidegate user show`: the record, a line per org and per group (`org name/group` for an org's). */
function showText (u: UserJson): string {
  const groups = (u.groups ?? []).map((g) => `  group ${escapeControls(g.org_name === null ? g.name : `${g.org_name}/${g.name}`)} (${g.id}): ${g.sources.join(', ')}`)
  return [
    `${u.username} (${u.id})${u.is_superuser ? '  superuser' : ''}${u.is_active ? '' : '  disabled'}`,
    ...(u.name === undefined || u.name === '' ? [] : [`  name ${escapeControls(u.name)}`]),
    ...(u.email === undefined || u.email === '' ? [] : [`  email ${escapeControls(u.email)}`]),
    ...Object.entries(u.orgs).map(([org, role]) => `  org ${org}: ${role}${org === u.default_org ? ' (default)' : ''}`),
    ...(groups.length === 0 ? ['  (no groups)'] : groups),
    ...(u.links ?? []).map(linkLine)
  ].join('\n')
}

/** `ID[:admin|:user|:none]` (the role defaults to user) → the org id and the role (null: no membership). */
export function parseMembership (v: string, label = CLI_LABELS.org): { id: string, role: OrgRole | null } {
  const [id, role = 'user'] = v.split(':')
  return membership(id, role, label)
}

function membership (id: string, role: string, label: string): { id: string, role: OrgRole | null } {
  if (!isUuid(id)) throw new UsageError(`${label}: "${id}" is not an org UUID`)
  if (role !== 'admin' && role !== 'user' && role !== 'none') throw new UsageError(`${label}: role must be admin, user or none, got "${role}"`)
  return { id: id.toLowerCase(), role: role === 'none' ? null : role }
}

/** A password as given (one line of standard input, or the JSON field): at least MIN_PASSWORD characters. */
export function checkPassword (pw: string): string {
  if (pw.length < MIN_PASSWORD) throw new UsageError(`the password must have at least ${MIN_PASSWORD} characters`, 'failed')
  return pw
}

const NewUser = obj({
  username: text('1 to 150 letters (any script), digits and @ . + - _.'),
  password: text('At least 8 characters.'),
  email: T.Optional(T.String()),
  name: T.Optional(T.String()),
  superuser: T.Optional(T.Boolean()),
  orgs: T.Optional(T.Record(T.String(), T.String(), { description: 'org id → role: `admin`, `user` (or `none`: no membership).' }))
})

async function createUser (ops: AdminOps, i: Static<typeof NewUser>): Promise<UserJson> {
  const username = i.username.normalize('NFC')
  if (!USERNAME.test(username)) throw new UsageError('username: 1 to 150 letters (any script), digits and @ . + - _')
  for (const [field, v] of [['email', i.email], ['name', i.name]] as const) {
    if (v !== undefined && hasControl(v)) throw new UsageError(`${field}: ${NO_CONTROLS}`)
  }
  const orgs: Record<string, OrgRole> = {}
  for (const [org, r] of Object.entries(i.orgs ?? {})) {
    const { id, role } = membership(org, String(r), ops.labels.org)
    await ops.org(id)
    if (role !== null) orgs[id] = role
  }
  const password = checkPassword(i.password)
  const u = await ops.store.users.create(
    { username, password, email: i.email, name: i.name, superuser: i.superuser === true, orgs }
  )
  ops.audit({ event: 'user.created', user: u, superuser: u.is_superuser })
  return userJson(u)
}

/** Memberships: a role per org (`none` ends the membership). */
export async function grant (
  ops: AdminOps, username: string, memberships: Array<{ id: string, role: string }>
): Promise<UserJson> {
  const u = await ops.user(username)
  for (const m of memberships) {
    const { id, role } = membership(m.id, m.role, ops.labels.org)
    await ops.org(id)
    await ops.store.users.setMembership(u.id, id, role)
    ops.audit({ event: 'membership.changed', user: u, org: id, role: role ?? 'none' })
  }
  return userJson(await ops.user(u.username))
}

export const USER_OPERATIONS = [
  defineOperation({
    method: 'POST',
    path: 'users',
    status: 201,
    tag: 'Users',
    operationId: 'createUser',
    summary: 'Create a user (`sidegate user add`)',
    body: NewUser,
    answer: User,
    errors: ['org_not_found', 'user_exists'],
    cli: [{
      command: 'user add',
      args: ['username'],
      synopsis: '<username> --password-stdin [--email E] [--name N] [--org ID[:admin]]... [--superuser]',
      input: async (c, p) => ({
        body: {
          username: p.username,
          password: await c.password(),
          email: c.flags.email,
          name: c.flags.name,
          superuser: c.flags.superuser === true,
          orgs: Object.fromEntries(c.orgs().map((o) => [o.id, o.role]))
        }
      }),
      text: (u) => `created user ${u.username} (${u.id})`
    }],
    run: async (ops, { body }) => await createUser(ops, body)
  }),
  defineOperation({
    method: 'GET',
    path: 'users',
    status: 200,
    tag: 'Users',
    operationId: 'listUsers',
    summary: 'List users (`sidegate user list`)',
    query: { org: 'Only the members of this organization (a UUID).' },
    answer: UserList,
    errors: [],
    cli: [{
      command: 'user list',
      args: [],
      synopsis: '[--org ID]',
      input: (c) => ({ query: new URLSearchParams(c.flags.org === undefined ? [] : [['org', parseMembership(c.flags.org[0]).id]]) }),
      text: (users) => users.map((u) => `${u.id}  ${u.username}${u.is_superuser ? '  superuser' : ''}${u.is_active ? '' : '  disabled'}`).join('\n') || '(no users)'
    }],
    run: async (ops, { query }) => {
      const org = query.get('org')
      return (await ops.store.users.list(org === null ? undefined : membership(org, 'user', ops.labels.org).id)).map(userJson)
    }
  }),
  defineOperation({
    method: 'GET',
    path: 'users/{username}',
    status: 200,
    tag: 'Users',
    operationId: 'getUser',
    summary: 'Show a user, with their orgs, groups and links (`sidegate user show`)',
    answer: User,
    errors: ['not_found'],
    cli: [{
      command: 'user show',
      args: ['username'],
      help: ['the user\'s record, orgs, groups (with their sources) and links'],
      text: (u) => showText(u)
    }],
    run: async (ops, { params }) => {
      const u = await ops.user(params.username)
      const links = (await ops.store.links.list(u.id)).map(linkJson)
      return { ...userJson(u), ...(links.length === 0 ? {} : { links }) }
    }
  }),
  defineOperation({
    method: 'PATCH',
    path: 'users/{username}',
    status: 200,
    tag: 'Users',
    operationId: 'setUserActive',
    summary: 'Disable or enable a user (`sidegate user disable|enable`)',
    description: 'Disabling also ends the user\'s sessions and evicts their cached credentials on every replica: every credential of theirs is refused at once (401 user_inactive).',
    body: obj({ is_active: T.Boolean() }),
    answer: UserActive,
    errors: ['not_found'],
    cli: [false, true].map((active) => ({
      command: active ? 'user enable' : 'user disable',
      args: ['username'],
      help: active ? [] : ['also ends their sessions and evicts cached keys on every replica'],
      input: () => ({ body: { is_active: active } }),
      text: (r: { username: string }) => `${active ? 'enable' : 'disable'}d user ${r.username}`
    })),
    run: async (ops, { params, body }) => {
      // disabling also ends the user's sessions and evicts their cached keys on every replica
      const u = await ops.user(params.username)
      await ops.store.users.setActive(u.id, body.is_active)
      ops.audit({ event: body.is_active ? 'user.enabled' : 'user.disabled', user: u })
      return { id: u.id, username: u.username, is_active: body.is_active }
    }
  }),
  defineOperation({
    method: 'PUT',
    path: 'users/{username}/password',
    status: 200,
    tag: 'Users',
    operationId: 'setPassword',
    summary: 'Set a user\'s password (`sidegate user passwd`)',
    description: 'Also ends the user\'s sessions and unused bearer tokens on every replica; private tokens and access keys stay.',
    body: obj({ password: text('At least 8 characters.') }),
    answer: UserRef,
    errors: ['not_found'],
    cli: [{
      command: 'user passwd',
      args: ['username'],
      synopsis: '<username> --password-stdin',
      help: ['also ends their sessions and unused bearer tokens on every', 'replica; private tokens and access keys stay'],
      // an unknown user is said before the password is read
      input: async (c, p, ops) => { await ops.user(p.username); return { body: { password: await c.password() } } },
      text: (r) => `password changed for ${r.username}`
    }],
    run: async (ops, { params, body }) => {
      const u = await ops.user(params.username)
      await ops.store.passwords.set(u.id, checkPassword(body.password))
      ops.audit({ event: 'password.changed', user: u })
      return { id: u.id, username: u.username }
    }
  }),
  defineOperation({
    method: 'POST',
    path: 'users/{username}/reset-link',
    status: 201,
    tag: 'Users',
    operationId: 'createResetLink',
    summary: 'A one-time link that lets a user set a new password (`sidegate user reset-link`)',
    description: `Valid ${RESET_LINK_MINUTES} minutes and once: setting any password (this link, another, \`sidegate user passwd\`, the account page) voids it. Nothing is stored; give the link to the user by a channel you trust. Using it ends the user's sessions and unused bearer tokens, as a new password does.`,
    body: obj({ base_url: T.Optional(text('The gateway as the user reaches it (https://app.example.com); default http://localhost:<listen.port>.')) }),
    answer: ResetLink,
    errors: ['not_found', 'bad_request'],
    cli: [{
      command: 'user reset-link',
      args: ['username'],
      synopsis: '<username> [--url https://app.example.com]',
      help: [`a link valid ${RESET_LINK_MINUTES} minutes, once, to set a new password`, '(there is no mail: give it to them yourself)'],
      input: (c) => ({ body: { base_url: c.flags.url } }),
      text: (r) => `reset link for ${r.username} (once, until ${r.expires}):\n${r.url}`
    }],
    run: async (ops, { params, body }) => {
      const u = await ops.user(params.username)
      const base = baseUrl(body.base_url ?? `http://localhost:${ops.config.listen.port}`)
      const { token, expires } = await ops.store.passwords.resetToken(u.id, RESET_LINK_MINUTES * 60_000)
      ops.audit({ event: 'password.reset_link', user: u })
      return { id: u.id, username: u.username, url: `${base}${RESET_PATH}?token=${token}`, expires: new Date(expires).toISOString() }
    }
  }),
  defineOperation({
    method: 'PUT',
    path: 'users/{username}/orgs/{org_id}',
    status: 200,
    tag: 'Users',
    operationId: 'setMembership',
    summary: 'Make a user a member of an organization, or change the role (`sidegate user grant --org ID:ROLE`)',
    body: obj({ role: text('`admin` or `user` (`none` ends the membership).') }),
    answer: User,
    errors: ['not_found', 'org_not_found'],
    run: async (ops, { params, body }) => await grant(ops, params.username, [{ id: params.org_id, role: body.role }])
  }),
  defineOperation({
    method: 'DELETE',
    path: 'users/{username}/orgs/{org_id}',
    status: 200,
    tag: 'Users',
    operationId: 'removeMembership',
    summary: 'End a user\'s membership of an organization (`sidegate user grant --org ID:none`)',
    answer: User,
    errors: ['not_found', 'org_not_found'],
    run: async (ops, { params }) => await grant(ops, params.username, [{ id: params.org_id, role: 'none' }])
  })
]

/**
 * User records in JumpServer's field names, as far as sidegate knows them.
 * With `names.abbrev: JMS` (`jumpserver`) also in JumpServer's shapes, so
 * SDK models parse them: `source` as {value, label}, roles as
 * [{id, display_name}] with JumpServer's built-in role ids, dates as
 * `%Y/%m/%d %H:%M:%S %z`.
 */
import { Type as T, type Static, type TSchema } from '@sinclair/typebox'
import type { User } from '../store/types.js'
import { jmsDate } from '../http/date.js'

/** JumpServer's built-in roles (rbac/builtin.py): id 00000000-0000-0000-0000-00000000000<n> */
const ROLE_ID = { SystemAdmin: 1, User: 3, OrgAdmin: 5, OrgUser: 7 } as const
type RoleName = keyof typeof ROLE_ID
const jmsRole = (name: RoleName): { id: string, display_name: string } => ({ id: `00000000-0000-0000-0000-00000000000${ROLE_ID[name]}`, display_name: name })
const jmsTime = (iso: string | null): string | null => iso === null ? null : jmsDate(new Date(iso))

/** A user as JumpServer's API shows one: sidegate's fields, or (`jumpserver`) JumpServer's shapes too. */
export type ProfileJson = Static<typeof PROFILE> | Static<typeof JMS_PROFILE>

export function profile (u: User, orgId?: string, jumpserver = false): ProfileJson {
  const orgRole = orgId === undefined ? undefined : u.orgs[orgId]
  const systemRole: RoleName = u.is_superuser ? 'SystemAdmin' : 'User'
  const orgRoles: RoleName[] = orgRole === undefined ? [] : [orgRole === 'admin' ? 'OrgAdmin' : 'OrgUser']
  const common = {
    id: u.id,
    name: u.name,
    username: u.username,
    email: u.email
  }
  if (!jumpserver) {
    return {
      ...common,
      source: 'local',
      is_active: u.is_active,
      is_valid: u.is_active,
      is_superuser: u.is_superuser,
      last_login: u.last_login,
      date_joined: u.date_joined,
      system_roles: [{ name: systemRole }],
      org_roles: orgRoles.map((name) => ({ name }))
    }
  }
  return {
    ...common,
    source: { value: 'local', label: 'Local' },
    is_active: u.is_active,
    is_valid: u.is_active,
    is_superuser: u.is_superuser,
    last_login: jmsTime(u.last_login),
    date_joined: jmsTime(u.date_joined)!,
    system_roles: [jmsRole(systemRole)],
    org_roles: orgRoles.map(jmsRole)
  }
}

/** The schema of profile() (`Profile` and `Role` in the document): every route that answers a profile uses it. */
export function profileSchema (jumpserver: boolean): typeof PROFILE | typeof JMS_PROFILE {
  return jumpserver ? JMS_PROFILE : PROFILE
}

const ROLE_NAMES = ['SystemAdmin', 'User', 'OrgAdmin', 'OrgUser']

function profileOf<S extends TSchema, D extends TSchema, N extends TSchema, R extends TSchema> (o: {
  source: S, date: D, lastLogin: N, role: R
}) {
  return T.Object({
    id: T.String({ format: 'uuid' }),
    name: T.String(),
    username: T.String(),
    email: T.String(),
    source: o.source,
    is_active: T.Boolean(),
    is_valid: T.Boolean(),
    is_superuser: T.Boolean(),
    last_login: o.lastLogin,
    date_joined: o.date,
    system_roles: T.Array(o.role),
    org_roles: T.Array(o.role)
  }, { $id: 'Profile' })
}

const PROFILE = profileOf({
  source: T.String({ examples: ['local'] }),
  date: T.String({ format: 'date-time' }),
  lastLogin: T.Union([T.String({ format: 'date-time' }), T.Null()]),
  role: T.Object({ name: T.String({ examples: ROLE_NAMES }) }, { $id: 'Role' })
})

const JMS_TIME = { description: '`%Y/%m/%d %H:%M:%S %z`', examples: ['2026/11/23 10:25:33 +0000'] }
const JMS_PROFILE = profileOf({
  source: T.Object({ value: T.String({ examples: ['local'] }), label: T.String({ examples: ['Local'] }) }),
  date: T.String(JMS_TIME),
  lastLogin: T.Union([T.String(JMS_TIME), T.Null()]),
  role: T.Object({
    id: T.String({ format: 'uuid', description: 'JumpServer\'s built-in role id' }),
    display_name: T.String({ examples: ROLE_NAMES })
  }, { $id: 'Role' })
})

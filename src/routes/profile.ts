/**
 * User records in JumpServer's field names, as far as sidegate knows them.
 * With `names.abbrev: JMS` (`jumpserver`) also in JumpServer's shapes, so
 * SDK models parse them: `source` as {value, label}, roles as
 * [{id, display_name}] with JumpServer's built-in role ids, dates as
 * `%Y/%m/%d %H:%M:%S %z`.
 */
import type { User } from '../store/types.js'
import { schemaRef, type Json } from './spec.js'
import { jmsDate } from '../http/date.js'

/** JumpServer's built-in roles (rbac/builtin.py): id 00000000-0000-0000-0000-00000000000<n> */
const ROLE_ID = { SystemAdmin: 1, User: 3, OrgAdmin: 5, OrgUser: 7 } as const
type RoleName = keyof typeof ROLE_ID
const jmsRole = (name: RoleName): { id: string, display_name: string } => ({ id: `00000000-0000-0000-0000-00000000000${ROLE_ID[name]}`, display_name: name })
const jmsTime = (iso: string | null): string | null => iso === null ? null : jmsDate(new Date(iso))

export function profile (u: User, orgId?: string, jumpserver = false): Record<string, unknown> {
  const orgRole = orgId === undefined ? undefined : u.orgs[orgId]
  const systemRole: RoleName = u.is_superuser ? 'SystemAdmin' : 'User'
  const orgRoles: RoleName[] = orgRole === undefined ? [] : [orgRole === 'admin' ? 'OrgAdmin' : 'OrgUser']
  const role: (name: RoleName) => Record<string, string> = jumpserver ? jmsRole : (name) => ({ name })
  const time = jumpserver ? jmsTime : (iso: string | null) => iso
  return {
    id: u.id,
    name: u.name,
    username: u.username,
    email: u.email,
    source: jumpserver ? { value: 'local', label: 'Local' } : 'local',
    is_active: u.is_active,
    is_valid: u.is_active,
    is_superuser: u.is_superuser,
    last_login: time(u.last_login),
    date_joined: time(u.date_joined),
    system_roles: [role(systemRole)],
    org_roles: orgRoles.map(role)
  }
}

/** The OpenAPI schemas of profile(): every route that answers a profile carries them. */
export function profileSchemas (jumpserver: boolean): Record<string, Json> {
  return jumpserver ? JMS_PROFILE_SCHEMAS : PROFILE_SCHEMAS
}

function profileSchema (o: { source: Json, time: Json, role: Json }): Record<string, Json> {
  return {
    Profile: {
      type: 'object',
      properties: {
        id: { type: 'string', format: 'uuid' },
        name: { type: 'string' },
        username: { type: 'string' },
        email: { type: 'string' },
        source: o.source,
        is_active: { type: 'boolean' },
        is_valid: { type: 'boolean' },
        is_superuser: { type: 'boolean' },
        last_login: { ...(o.time as object), type: ['string', 'null'] },
        date_joined: { ...(o.time as object), type: 'string' },
        system_roles: { type: 'array', items: schemaRef('Role') },
        org_roles: { type: 'array', items: schemaRef('Role') }
      }
    },
    Role: o.role
  }
}

const ROLE_NAMES = ['SystemAdmin', 'User', 'OrgAdmin', 'OrgUser']

const PROFILE_SCHEMAS = profileSchema({
  source: { type: 'string', examples: ['local'] },
  time: { format: 'date-time' },
  role: { type: 'object', properties: { name: { type: 'string', examples: ROLE_NAMES } } }
})

const JMS_PROFILE_SCHEMAS = profileSchema({
  source: { type: 'object', properties: { value: { type: 'string', examples: ['local'] }, label: { type: 'string', examples: ['Local'] } } },
  time: { description: '`%Y/%m/%d %H:%M:%S %z`', examples: ['2026/11/23 10:25:33 +0000'] },
  role: {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid', description: 'JumpServer\'s built-in role id' },
      display_name: { type: 'string', examples: ROLE_NAMES }
    }
  }
})

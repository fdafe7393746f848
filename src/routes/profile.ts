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
  if (jumpserver) {
    return {
      id: u.id,
      name: u.name,
      username: u.username,
      email: u.email,
      source: { value: 'local', label: 'Local' },
      is_active: u.is_active,
      is_valid: u.is_active,
      is_superuser: u.is_superuser,
      last_login: jmsTime(u.last_login),
      date_joined: jmsTime(u.date_joined),
      system_roles: [jmsRole(systemRole)],
      org_roles: orgRoles.map(jmsRole)
    }
  }
  return {
    id: u.id,
    name: u.name,
    username: u.username,
    email: u.email,
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

/** The OpenAPI schemas of profile(): every route that answers a profile carries them. */
export function profileSchemas (jumpserver: boolean): Record<string, Json> {
  return jumpserver ? JMS_PROFILE_SCHEMAS : PROFILE_SCHEMAS
}

const JMS_PROFILE_SCHEMAS: Record<string, Json> = {
  Profile: {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      name: { type: 'string' },
      username: { type: 'string' },
      email: { type: 'string' },
      source: { type: 'object', properties: { value: { type: 'string', examples: ['local'] }, label: { type: 'string', examples: ['Local'] } } },
      is_active: { type: 'boolean' },
      is_valid: { type: 'boolean' },
      is_superuser: { type: 'boolean' },
      last_login: { type: ['string', 'null'], description: '`%Y/%m/%d %H:%M:%S %z`', examples: ['2026/11/23 10:25:33 +0000'] },
      date_joined: { type: 'string', description: '`%Y/%m/%d %H:%M:%S %z`', examples: ['2026/11/23 10:25:33 +0000'] },
      system_roles: { type: 'array', items: schemaRef('Role') },
      org_roles: { type: 'array', items: schemaRef('Role') }
    }
  },
  Role: {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid', description: 'JumpServer\'s built-in role id' },
      display_name: { type: 'string', examples: ['SystemAdmin', 'User', 'OrgAdmin', 'OrgUser'] }
    }
  }
}

const PROFILE_SCHEMAS: Record<string, Json> = {
  Profile: {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      name: { type: 'string' },
      username: { type: 'string' },
      email: { type: 'string' },
      source: { type: 'string', examples: ['local'] },
      is_active: { type: 'boolean' },
      is_valid: { type: 'boolean' },
      is_superuser: { type: 'boolean' },
      last_login: { type: ['string', 'null'], format: 'date-time' },
      date_joined: { type: 'string', format: 'date-time' },
      system_roles: { type: 'array', items: schemaRef('Role') },
      org_roles: { type: 'array', items: schemaRef('Role') }
    }
  },
  Role: { type: 'object', properties: { name: { type: 'string', examples: ['SystemAdmin', 'User', 'OrgAdmin', 'OrgUser'] } } }
}

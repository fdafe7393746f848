/** User records in JumpServer's field names, as far as sidegate knows them. */
import type { User } from '../store/types.js'
import { schemaRef, type Json } from './spec.js'

export function profile (u: User, orgId?: string): Record<string, unknown> {
  const orgRole = orgId === undefined ? undefined : u.orgs[orgId]
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
    system_roles: [{ name: u.is_superuser ? 'SystemAdmin' : 'User' }],
    org_roles: orgRole === undefined ? [] : [{ name: orgRole === 'admin' ? 'OrgAdmin' : 'OrgUser' }]
  }
}

/** The OpenAPI schemas of profile(): every route that answers a profile carries them. */
export const PROFILE_SCHEMAS: Record<string, Json> = {
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

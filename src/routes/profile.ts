/** User records in JumpServer's field names, as far as sidegate knows them. */
import type { User } from '../store/types.js'

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

/** What OIDC providers and LDAP directories share in sign_in: provisioning and org memberships from groups. */
import { Type as T } from '@sinclair/typebox'
import { oneOf, str } from './kit.js'

export const PROVISION = ['link', 'create', 'off'] as const

export const orgMapping = () => T.Array(T.Object({
  group: str('', { description: 'a group name the provider sends' }),
  org: str('', { check: 'orgId' }),
  role: oneOf(['member', 'admin'] as const, 'member')
}, { additionalProperties: false, default: {} }), {
  default: [],
  description: '[{ group: eng, org: <org id>, role: member|admin }]: memberships of the orgs for the\nmembers of those groups, set at each sign-in here and taken back when the provider\nno longer sends the group (an operator\'s own memberships are never changed)'
})

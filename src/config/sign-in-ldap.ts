/**
 * sign_in.ldap: directories that check passwords (docs/ldap.md).
 */
import { Type as T } from '@sinclair/typebox'
import { bool, int, list, oneOf, optStr, str } from './kit.js'
import { PROVISION, orgMapping } from './sign-in-common.js'

export const LdapDirectory = T.Object({
  id: str('', { check: 'providerId', description: 'its name: `corp\\alice` or `alice@corp` signs in here only; unique across sign_in' }),
  urls: list([], { check: 'ldapUrl', description: 'ldaps:// or ldap:// servers, tried in order; one that fails is skipped for retry_after' }),
  start_tls: bool(false, 'ldap:// upgraded with StartTLS before anything is sent'),
  ca_file: optStr({ description: 'PEM CA bundle the servers\' certificates are verified against (empty: the system\'s);\nverification cannot be turned off' }),
  bind_dn: optStr({ description: 'the service account that searches (empty: an anonymous search)' }),
  bind_password: optStr({ secret: true, description: 'prefer bind_password_file' }),
  bind_password_file: optStr({ description: 'a file holding bind_dn\'s password (read at each use)' }),
  users: T.Object({
    base: str(''),
    filter: str('(&(objectClass=person)(uid={username}))', { description: '{username}: the name typed, escaped (RFC 4515). AD: (sAMAccountName={username})' })
  }, { additionalProperties: false, default: {} }),
  attributes: T.Object({
    id: str('entryUUID', { description: 'the stable id a link keys on (AD: objectGUID)' }),
    username: str('uid'),
    email: str('mail'),
    name: str('cn')
  }, { additionalProperties: false, default: {} }),
  groups: T.Object({
    base: str('', { description: 'empty: no groups read' }),
    filter: str('(member={dn})', { description: '{dn}: the user\'s entry (escaped). AD nested: (member:1.2.840.113556.1.4.1941:={dn})' }),
    name: str('cn'),
    nested: bool(true, 'groups of groups count (followed up to 10 levels)')
  }, { additionalProperties: false, default: {} }),
  provision: oneOf(PROVISION, 'create', 'create: a user made at the first sign-in; link: linked users only (sidegate user link);\noff: linked users only'),
  match_email: bool(false, 'true: a first sign-in links to the one local user with the entry\'s email'),
  orgs: orgMapping(),
  timeout: int(1, 60, 5, 'seconds a server may take to connect or to answer one operation'),
  retry_after: int(1, 3600, 30, 'seconds a server that failed is skipped'),
  pool: int(1, 100, 4, 'connections open at once per server, at most')
}, { additionalProperties: false, default: {} })

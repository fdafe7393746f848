/**
 * sign_in: who else may vouch for a user: OpenID Connect providers and LDAP
 * directories. A first sign-in is linked or provisioned by src/auth/external.ts.
 */
import { Type as T, type Static } from '@sinclair/typebox'
import { oneOf, section } from './kit.js'
import { LdapDirectory } from './sign-in-ldap.js'
import { OidcProvider } from './sign-in-oidc.js'
import type { Problem } from './validate.js'

export const signIn = section({
  password_order: oneOf(['local_first', 'directory_first'] as const, 'local_first', 'a password is checked against the user\'s local hash first, then the directories\n(local_first); or the directories first (directory_first). docs/ldap.md'),
  oidc: T.Array(OidcProvider, { default: [], description: 'OpenID Connect providers (docs/oidc.md)' }),
  ldap: T.Array(LdapDirectory, { default: [], description: 'LDAP directories, tried in this order for a password (docs/ldap.md)' })
}, 'Sign-in through an identity provider or a directory. A first sign-in is linked to a\nlocal user by (provider, subject), never by a name alone; docs/identity-providers.md, docs/ldap.md')

export type SignInConfig = Static<typeof signIn>
export type OidcProviderConfig = Static<typeof OidcProvider>
export type LdapDirectoryConfig = Static<typeof LdapDirectory>

/** What the shapes cannot say: unique ids, one secret, a base to search. */
export function signInProblems (s: SignInConfig): Problem[] {
  const p: Problem[] = []
  const seen = new Map<string, string>()
  const id = (key: string, v: string): void => {
    const other = seen.get(v)
    if (other !== undefined) p.push({ key, message: `${JSON.stringify(v)} is taken by ${other}: ids are unique across sign_in` })
    else seen.set(v, key)
  }
  s.oidc.forEach((o, i) => {
    const k = `sign_in.oidc[${i}]`
    id(`${k}.id`, o.id)
    if (o.issuer === '') p.push({ key: `${k}.issuer`, message: 'is required' })
    if (o.client_id === '') p.push({ key: `${k}.client_id`, message: 'is required' })
    const secrets = [o.client_secret, o.client_secret_file, o.private_key_file].filter((x) => x !== null && x !== '').length
    if (secrets !== 1) p.push({ key: `${k}.client_secret`, message: 'give exactly one of client_secret, client_secret_file and private_key_file (private_key_jwt)' })
    if (o.claims.username === '' && o.provision === 'create') p.push({ key: `${k}.claims.username`, message: 'provision: create needs a username claim' })
    if (!o.scopes.includes('openid')) p.push({ key: `${k}.scopes`, message: 'must include openid' })
  })
  s.ldap.forEach((d, i) => {
    const k = `sign_in.ldap[${i}]`
    id(`${k}.id`, d.id)
    if (d.urls.length === 0) p.push({ key: `${k}.urls`, message: 'needs at least one server' })
    if (d.start_tls && d.urls.some((u) => u.startsWith('ldaps:'))) p.push({ key: `${k}.start_tls`, message: 'StartTLS is for ldap:// servers; ldaps:// is TLS already' })
    if (d.users.base === '') p.push({ key: `${k}.users.base`, message: 'is required (where users are searched)' })
    if (!d.users.filter.includes('{username}')) p.push({ key: `${k}.users.filter`, message: 'must contain {username}' })
    if (d.groups.base !== '' && !d.groups.filter.includes('{dn}') && !d.groups.filter.includes('{username}')) {
      p.push({ key: `${k}.groups.filter`, message: 'must contain {dn} or {username}' })
    }
    if (d.bind_password !== null && d.bind_password_file !== null) p.push({ key: `${k}.bind_password`, message: 'give bind_password or bind_password_file, not both' })
    if (d.bind_dn === null && (d.bind_password !== null || d.bind_password_file !== null)) p.push({ key: `${k}.bind_dn`, message: 'a bind password needs bind_dn' })
  })
  return p
}

/**
 * sign_in.oidc as `config check` sees it (nothing fetched): ids unique across
 * sign_in, exactly one way to authenticate the client, https issuers (http on
 * a loopback host only), openid among the scopes, secrets never in a message.
 */
import t from 'tap'
import { buildConfig } from '../../src/config/index.js'

const provider = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: 'corp', issuer: 'https://idp.example.com/realms/main', client_id: 'sidegate', client_secret_file: '/run/secrets/corp', ...over
})
const problems = (oidc: unknown[], more: Record<string, unknown> = {}): string => {
  try { buildConfig({ sign_in: { oidc, ...more } }); return '' } catch (err) { return (err as Error).message }
}

t.test('a provider with its defaults; two at once', async (t) => {
  const c = buildConfig({ sign_in: { oidc: [provider(), provider({ id: 'partner', name: 'Partner SSO', issuer: 'http://localhost:8080' })] } })
  t.match(c.sign_in.oidc[0], {
    id: 'corp',
    name: '',
    provision: 'link',
    match_email: false,
    trust_mfa: false,
    timeout: 10,
    scopes: ['openid', 'profile', 'email'],
    claims: { username: 'preferred_username', email: 'email', name: 'name', groups: 'groups' }
  })
  t.equal(c.sign_in.oidc[1].issuer, 'http://localhost:8080', 'http on localhost')
})

t.test('the problems config check reports', async (t) => {
  t.match(problems([provider(), provider()]), /sign_in\.oidc\[1\]\.id: "corp" is taken by sign_in\.oidc\[0\]\.id/)
  t.match(problems([provider()], { ldap: [{ id: 'corp', urls: ['ldaps://dc1'], users: { base: 'dc=x' } }] }), /"corp" is taken by sign_in\.oidc\[0\]\.id/)
  t.match(problems([provider({ id: 'Corp SSO' })]), /sign_in\.oidc\[0\]\.id: must be 1 to 64 lowercase letters/)
  t.match(problems([provider({ issuer: 'http://idp.example.com' })]), /sign_in\.oidc\[0\]\.issuer: must be https \(http only on localhost\)/)
  t.match(problems([provider({ issuer: '' })]), /sign_in\.oidc\[0\]\.issuer/)
  t.match(problems([provider({ client_id: '' })]), /sign_in\.oidc\[0\]\.client_id: is required/)
  const one = /sign_in\.oidc\[0\]\.client_secret: give exactly one of client_secret, client_secret_file and private_key_file/
  t.match(problems([provider({ client_secret_file: null })]), one, 'none')
  t.match(problems([provider({ client_secret: 'hunter2-secret' })]), one, 'two')
  t.match(problems([provider({ private_key_file: '/run/secrets/key.pem' })]), one, 'a key and a secret')
  t.equal(problems([provider({ client_secret_file: null, private_key_file: '/run/secrets/key.pem' })]), '', 'private_key_jwt alone')
  t.match(problems([provider({ scopes: ['profile'] })]), /sign_in\.oidc\[0\]\.scopes: must include openid/)
  t.match(problems([provider({ provision: 'create', claims: { username: '' } })]), /claims\.username: provision: create needs a username claim/)
  t.match(problems([provider({ orgs: [{ group: 'eng', org: 'nope' }] })]), /orgs\[0\]\.org: must be an org id/)
  t.match(problems([provider({ surprise: true })]), /sign_in\.oidc\[0\]\.surprise/)
  t.notMatch(problems([provider({ client_secret: 'hunter2-secret', issuer: 'ftp://x' })]), /hunter2/, 'a secret never in a message')
})

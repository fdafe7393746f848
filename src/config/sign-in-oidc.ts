/**
 * sign_in.oidc: OpenID Connect providers (src/auth/oidc/). Shapes only; a
 * provider's discovery is fetched by the gateway, never by `config check`.
 */
import { Type as T } from '@sinclair/typebox'
import { bool, int, list, oneOf, optStr, str } from './kit.js'
import { PROVISION, orgMapping } from './sign-in-common.js'

export const OidcProvider = T.Object({
  id: str('', { check: 'providerId', description: 'routes /login/oidc/<id> and /login/oidc/<id>/callback; unique across sign_in' }),
  name: str('', { description: 'the button on /login (empty: the id)' }),
  issuer: str('', { check: 'issuerUrl', description: 'its discovery (<issuer>/.well-known/openid-configuration): https, or http on localhost' }),
  client_id: str(''),
  client_secret: optStr({ secret: true, description: 'prefer client_secret_file' }),
  client_secret_file: optStr({ description: 'a file holding the client secret (read when the provider\'s client is made: at start and at each reload)' }),
  private_key_file: optStr({ description: 'private_key_jwt: a file holding the client\'s private key (PKCS#8 PEM or a JWK with its kid),\nits public key registered at the provider; instead of a client secret' }),
  scopes: list(['openid', 'profile', 'email']),
  claims: T.Object({
    username: str('preferred_username'),
    email: str('email'),
    name: str('name'),
    groups: str('groups')
  }, { additionalProperties: false, default: {} }),
  provision: oneOf(PROVISION, 'link', 'link: only users linked by an operator or matched by a verified email (match_email);\ncreate: a user made at the first sign-in; off: linked users only'),
  match_email: bool(false, 'true: a first sign-in whose email the provider says is verified (email_verified)\nlinks to the one local user with that email'),
  trust_mfa: bool(false, 'true: the provider\'s amr proving a second factor (mfa, otp, hwk, …) counts as one;\nfalse: sidegate asks its own TOTP or passkey where the user has one'),
  end_session: bool(true, 'true: signing out here also signs out at the provider (RP-initiated logout), when its discovery\nnames an end_session_endpoint: register https://<sidegate>/login as a post-logout redirect URI'),
  timeout: int(1, 60, 10, 'seconds each call to the provider may take (discovery, keys, token)'),
  orgs: orgMapping(),
  email_domains: list([], { description: 'a username@<domain> typed on /login is steered to this provider' })
}, { additionalProperties: false, default: {} })

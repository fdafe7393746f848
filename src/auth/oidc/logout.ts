/**
 * OpenID Connect Back-Channel Logout 1.0, the receiving end: a provider POSTs
 * a logout token (a JWT) naming a session (`sid`) or a person (`sub`), and
 * every session made through it under that name ends, on every replica at once
 * (store.sessions.endTagged). The token is checked as section 2.6 asks, by
 * jose (no hand-written JOSE): the signature against the provider's JWKS (its
 * discovery's jwks_uri; an unknown `kid` fetches it again, at most once per
 * 30 s), an asymmetric algorithm only, `iss` the provider's, `aud` our client
 * id, `iat` within LOGOUT_TOKEN_AGE_S and not in the future, `typ` logout+jwt
 * when set, the back-channel logout event, `sub` or `sid`, no `nonce`, and
 * its `jti` used once (store.limits.markOnce, shared by every replica).
 */
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose'
import { E, type GatewayError } from '../../errors.js'
import type { Configuration } from 'openid-client'
import type { OidcClient } from './client.js'

/** How old a logout token may be (its `iat`), and how long its `jti` is remembered. */
export const LOGOUT_TOKEN_AGE_S = 300
const SKEW_S = 30
const EVENT = 'http://schemas.openid.net/event/backchannel-logout'
/** Never none, never HMAC: a provider's keys are public. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']
const MAX_TOKEN = 16 * 1024

/** What a verified logout token names: the sessions to end. */
export interface LogoutNames {
  sub?: string
  sid?: string
  jti: string
}

type KeySet = ReturnType<typeof createRemoteJWKSet>
const keySets = new WeakMap<object, KeySet>()

/** The provider's JWKS as jose fetches it: one per discovered configuration, so a rediscovery starts afresh. */
function keysOf (p: OidcClient, config: Configuration): KeySet {
  let set = keySets.get(config)
  if (set === undefined) {
    const uri = config.serverMetadata().jwks_uri
    if (uri === undefined) throw E.logoutTokenInvalid('the provider publishes no jwks_uri')
    set = createRemoteJWKSet(new URL(uri), { timeoutDuration: p.c.timeout * 1000, cooldownDuration: 30_000 })
    keySets.set(config, set)
  }
  return set
}

/**
 * The logout token checked; throws logout_token_invalid saying why, or
 * idp_unavailable when the provider's discovery or keys cannot be fetched.
 */
export async function verifyLogoutToken (p: OidcClient, token: unknown): Promise<LogoutNames> {
  if (typeof token !== 'string' || token === '') throw E.logoutTokenInvalid('no logout_token')
  if (token.length > MAX_TOKEN) throw E.logoutTokenInvalid('the logout_token is too long')
  const config = await p.configuration()
  const keys = keysOf(p, config)
  let payload: JWTPayload
  let typ: string | undefined
  try {
    const r = await jwtVerify(token, keys, {
      issuer: config.serverMetadata().issuer,
      audience: p.c.client_id,
      algorithms: ALGORITHMS,
      clockTolerance: SKEW_S,
      maxTokenAge: LOGOUT_TOKEN_AGE_S,
      requiredClaims: ['iat', 'jti', 'events']
    })
    payload = r.payload
    typ = r.protectedHeader.typ
  } catch (err) {
    throw refusal(err)
  }
  if (typ !== undefined && !/^(application\/)?logout\+jwt$/i.test(typ)) throw E.logoutTokenInvalid(`its typ is ${typ}, not logout+jwt`)
  const events = payload.events
  if (typeof events !== 'object' || events === null || Array.isArray(events) ||
    typeof (events as Record<string, unknown>)[EVENT] !== 'object' || (events as Record<string, unknown>)[EVENT] === null) {
    throw E.logoutTokenInvalid('its events claim has no back-channel logout event')
  }
  if ('nonce' in payload) throw E.logoutTokenInvalid('it carries a nonce (an id_token is no logout token)')
  const sub = typeof payload.sub === 'string' && payload.sub !== '' ? payload.sub : undefined
  const sid = typeof payload.sid === 'string' && payload.sid !== '' ? payload.sid : undefined
  if (sub === undefined && sid === undefined) throw E.logoutTokenInvalid('it names neither a sub nor a sid')
  if (typeof payload.jti !== 'string' || payload.jti === '') throw E.logoutTokenInvalid('its jti is not a string')
  return { ...(sub === undefined ? {} : { sub }), ...(sid === undefined ? {} : { sid }), jti: payload.jti }
}

/** A failed check as the catalogue's error: the provider unreachable, or why the token is refused. */
function refusal (err: unknown): GatewayError {
  if (err instanceof errors.JWKSTimeout || (err as Error)?.name === 'TypeError') return E.idpUnavailable()
  // the library's message names the check: '"iat" claim timestamp check failed (too far in the past)'
  if (err instanceof errors.JWTClaimValidationFailed || err instanceof errors.JWTExpired) {
    return E.logoutTokenInvalid(`its ${err.claim} claim fails: ${err.message.replace(/"/g, '')}`)
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return E.logoutTokenInvalid('its algorithm is not allowed (asymmetric ones only)')
  if (err instanceof errors.JWKSNoMatchingKey) return E.logoutTokenInvalid('no key of the provider\'s matches it')
  if (err instanceof errors.JWSSignatureVerificationFailed) return E.logoutTokenInvalid('its signature does not verify')
  // the JWKS answered other than 200 (a 5xx, most likely): the provider, not the token
  if (err instanceof errors.JOSEError && err.code === 'ERR_JOSE_GENERIC' && /HTTP response/.test(err.message)) return E.idpUnavailable()
  if (err instanceof errors.JOSEError) return E.logoutTokenInvalid(`it is not a valid JWT (${err.code})`)
  return E.idpUnavailable()
}

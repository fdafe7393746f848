/**
 * `Authorization: Bearer <token>`: tokens from the token endpoint. One-time by
 * default, consumed atomically; with `auth.bearer.single_use: false` valid
 * until they expire (JumpServer's behaviour), read without consuming.
 */
import { E, GatewayError, mapResult, type Result } from '../errors.js'
import type { BearerGrant, Factor, Store } from '../store/types.js'
import { parseTokenCredential } from './parse.js'
import type { Authenticator, ClaimBase, Credentials } from './types.js'
import { jwtShaped } from './trusted-token.js'

export interface BearerClaim extends ClaimBase<'bearer'> { factors: readonly Factor[] }

declare module './types.js' {
  interface ClaimsByMethod { bearer: BearerClaim }
}

export class BearerAuthenticator implements Authenticator {
  readonly method = 'bearer' as const
  /** `jwts`: trusted issuers are configured, so a JWT-shaped value is theirs (./trusted-token.ts) */
  constructor (private readonly store: Store, private readonly singleUse = true, private readonly jwts = false) {}

  claims (c: Credentials): boolean {
    return c.authorization?.scheme === 'bearer' && !(this.jwts && jwtShaped(c.authorization.credentials))
  }

  check (c: Credentials): Result<BearerClaim> {
    const token = parseTokenCredential(c.authorization!.credentials)
    if (token instanceof GatewayError) return token
    const tokens = this.store.bearerTokens
    return mapResult(this.singleUse ? tokens.consume(token) : tokens.read(token), this.#claim)
  }

  readonly #claim = (grant: BearerGrant | null): BearerClaim | GatewayError =>
    grant === null ? E.invalidToken() : { userId: grant.user_id, method: this.method, factors: grant.factors }
}

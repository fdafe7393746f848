/**
 * `Authorization: Bearer <token>`: tokens from the token endpoint. One-time by
 * default, consumed atomically; with `auth.bearer.single_use: false` valid
 * until they expire (JumpServer's behaviour), read without consuming.
 */
import { E } from '../errors.js'
import type { Factor, Store } from '../store/types.js'
import { parseTokenCredential } from './parse.js'
import type { Authenticator, ClaimBase, Credentials } from './types.js'

export interface BearerClaim extends ClaimBase<'bearer'> { factors: readonly Factor[] }

declare module './types.js' {
  interface ClaimsByMethod { bearer: BearerClaim }
}

export class BearerAuthenticator implements Authenticator {
  readonly method = 'bearer' as const
  constructor (private readonly store: Store, private readonly singleUse = true) {}

  claims (c: Credentials): boolean { return c.authorization?.scheme === 'bearer' }

  async authenticate (c: Credentials): Promise<BearerClaim> {
    const token = parseTokenCredential(c.authorization!.credentials)
    const tokens = this.store.bearerTokens
    const grant = this.singleUse ? await tokens.consume(token) : await tokens.read(token)
    if (grant === null) throw E.invalidToken()
    return { userId: grant.user_id, method: this.method, factors: grant.factors }
  }
}

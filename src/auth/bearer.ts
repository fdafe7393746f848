/**
 * `Authorization: Bearer <token>`: tokens from the token endpoint. One-time by
 * default, consumed atomically; with `auth.bearer.single_use: false` valid
 * until they expire (JumpServer's behaviour), read without consuming.
 */
import { E } from '../errors.js'
import type { Store } from '../store/types.js'
import { parseTokenCredential } from './parse.js'
import type { Authenticator, Claim, Credentials } from './types.js'

export class BearerAuthenticator implements Authenticator {
  readonly method = 'bearer' as const
  constructor (private readonly store: Store, private readonly singleUse = true) {}

  claims (c: Credentials): boolean { return c.authorization?.scheme === 'bearer' }

  async authenticate (c: Credentials): Promise<Claim> {
    const token = parseTokenCredential(c.authorization!.credentials)
    const grant = this.singleUse ? await this.store.consumeBearerToken(token) : await this.store.readBearerToken(token)
    if (grant === null) throw E.invalidToken()
    return { userId: grant.user_id, method: this.method, factors: grant.factors }
  }
}

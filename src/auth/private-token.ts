/** `Authorization: Token <t>` or `PrivateToken <t>`: the permanent per-user token. */
import { E, GatewayError, mapResult, type Result } from '../errors.js'
import type { Store } from '../store/types.js'
import { parseTokenCredential } from './parse.js'
import type { Authenticator, ClaimBase, Credentials } from './types.js'

export interface PrivateTokenClaim extends ClaimBase<'private_token'> { factors?: undefined }

declare module './types.js' {
  interface ClaimsByMethod { private_token: PrivateTokenClaim }
}

const SCHEMES = new Set(['token', 'privatetoken'])

export class PrivateTokenAuthenticator implements Authenticator {
  readonly method = 'private_token' as const
  constructor (private readonly store: Store) {}

  claims (c: Credentials): boolean { return c.authorization !== null && SCHEMES.has(c.authorization.scheme) }

  /** The token's user: at once when memory decides (cached, or a wrong check tag), else as the store answers. */
  check (c: Credentials): Result<PrivateTokenClaim> {
    const token = parseTokenCredential(c.authorization!.credentials)
    if (token instanceof GatewayError) return token
    return mapResult(this.store.privateTokens.lookup(token), this.#claim)
  }

  readonly #claim = (userId: string | null): PrivateTokenClaim | GatewayError =>
    userId === null ? E.invalidToken() : { userId, method: this.method }
}

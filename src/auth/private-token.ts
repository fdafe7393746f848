/** `Authorization: Token <t>` or `PrivateToken <t>`: the permanent per-user token. */
import { E, type GatewayError } from '../errors.js'
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

  cached (c: Credentials): PrivateTokenClaim | GatewayError | undefined {
    const token = parseTokenCredential(c.authorization!.credentials)
    const userId = this.store.privateTokens.cachedUserIdFor(token)
    if (userId === undefined) return undefined
    if (userId === null) return E.invalidToken()
    return { userId, method: this.method }
  }

  async authenticate (c: Credentials): Promise<PrivateTokenClaim> {
    const token = parseTokenCredential(c.authorization!.credentials)
    const userId = await this.store.privateTokens.userIdFor(token)
    if (userId === null) throw E.invalidToken()
    return { userId, method: this.method }
  }
}

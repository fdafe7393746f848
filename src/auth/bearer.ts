/** `Authorization: Bearer <token>`: one-time tokens from the token endpoint, consumed atomically. */
import { E } from '../errors.js'
import type { Store } from '../store/types.js'
import { parseTokenCredential } from './parse.js'
import type { Authenticator, Claim, Credentials } from './types.js'

export class BearerAuthenticator implements Authenticator {
  readonly method = 'bearer' as const
  constructor (private readonly store: Store) {}

  claims (c: Credentials): boolean { return c.authorization?.scheme === 'bearer' }

  async authenticate (c: Credentials): Promise<Claim> {
    const token = parseTokenCredential(c.authorization!.credentials)
    const userId = await this.store.consumeBearerToken(token)
    if (userId === null) throw E.invalidToken()
    return { userId, method: this.method }
  }
}

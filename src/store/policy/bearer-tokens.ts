/**
 * One-time bearer tokens: issued with a check tag, stored only as a lookup
 * hash with an expiry and indexed under their user (a password change ends
 * the unused ones: ./passwords.ts). One without a valid tag is refused
 * before storage is asked, so a forgery uses up nothing.
 */
import type { StoredGrant } from '../ports.js'
import { PASSWORD_ONLY, samePasswordOnly, type BearerGrant, type Factor } from '../factors.js'
import type { Context } from './context.js'

export class BearerTokens {
  constructor (private readonly c: Context) {}

  /** `factors`: what the sign-in it is issued for was made with (default the password alone). */
  async issue (
    userId: string, ttlSeconds: number, factors: readonly Factor[] = PASSWORD_ONLY
  ): Promise<{ token: string, expires: Date }> {
    const grant: StoredGrant = samePasswordOnly(factors)
      ? { user_id: userId }
      : { user_id: userId, factors: [...factors] }
    for (;;) {
      const token = this.c.keys.issue('bearer token')
      const now = this.c.storage.now()
      // a hash already taken (never in practice): another token
      if (!(await this.c.storage.bearerTokens.insert(this.c.keys.lookup(token), grant, now, ttlSeconds))) continue
      return { token, expires: new Date(now + ttlSeconds * 1000) }
    }
  }

  /** Exactly one caller gets the grant. */
  async consume (token: string): Promise<BearerGrant | null> {
    if (!this.c.keys.tagged('bearer token', token)) return null
    return grantOf(await this.c.storage.bearerTokens.consume(this.c.keys.lookup(token)))
  }

  /** Never cached, so a revocation counts at once on every replica. */
  async read (token: string): Promise<BearerGrant | null> {
    if (!this.c.keys.tagged('bearer token', token)) return null
    return grantOf(await this.c.storage.bearerTokens.read(this.c.keys.lookup(token)))
  }
}

function grantOf (g: StoredGrant | null): BearerGrant | null {
  return g === null ? null : { user_id: g.user_id, factors: g.factors ?? PASSWORD_ONLY }
}

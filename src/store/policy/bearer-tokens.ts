/**
 * One-time bearer tokens: issued with a check tag, stored only as a lookup
 * hash with an expiry and indexed under their user (a password change ends
 * the unused ones: ./passwords.ts). One without a valid tag is refused
 * before storage is asked, so a forgery uses up nothing.
 */
import type { Context } from './context.js'

export class BearerTokens {
  constructor (private readonly c: Context) {}

  async issue (userId: string, ttlSeconds: number): Promise<{ token: string, expires: Date }> {
    for (;;) {
      const token = this.c.keys.issue('bearer token')
      const now = this.c.storage.now()
      // a hash already taken (never in practice): another token
      if (!(await this.c.storage.bearerTokens.insert(this.c.keys.lookup(token), userId, now, ttlSeconds))) continue
      return { token, expires: new Date(now + ttlSeconds * 1000) }
    }
  }

  /** Exactly one caller gets the user id. */
  async consume (token: string): Promise<string | null> {
    if (!this.c.keys.tagged('bearer token', token)) return null
    return await this.c.storage.bearerTokens.consume(this.c.keys.lookup(token))
  }

  /** Never cached, so a revocation counts at once on every replica. */
  async read (token: string): Promise<string | null> {
    if (!this.c.keys.tagged('bearer token', token)) return null
    return await this.c.storage.bearerTokens.read(this.c.keys.lookup(token))
  }
}

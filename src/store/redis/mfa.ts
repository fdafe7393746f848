/**
 * Second factors in Redis: `user-totp:<user id>` (the TOTP record, a string)
 * and `user-rc:<user id>` (a set of recovery-code hashes: SREM takes one
 * once). Every command touches one key: cluster-safe.
 */
import type { MfaStorage } from '../ports.js'
import type { RedisContext } from './context.js'

export class RedisMfa implements MfaStorage {
  constructor (private readonly c: RedisContext) {}

  async getTotp (userId: string): Promise<string | null> {
    return await this.c.run(() => this.c.redis.get(this.c.k('user-totp', userId)))
  }

  async putTotp (userId: string, stored: string): Promise<void> {
    await this.c.run(() => this.c.redis.set(this.c.k('user-totp', userId), stored))
  }

  async swapTotp (userId: string, expected: string, stored: string): Promise<boolean> {
    return await this.c.run(() => this.c.scripts.swapIfEqual(this.c.k('user-totp', userId), expected, stored))
  }

  /** The recovery codes first: a failure in between leaves the factor, never codes without it. */
  async deleteAll (userId: string): Promise<boolean> {
    await this.c.run(() => this.c.redis.del(this.c.k('user-rc', userId)))
    return (await this.c.run(() => this.c.redis.del(this.c.k('user-totp', userId)))) === 1
  }

  async setRecoveryCodes (userId: string, hashes: string[]): Promise<void> {
    await this.c.run(() => this.c.scripts.replaceSet(this.c.k('user-rc', userId), ...hashes))
  }

  async takeRecoveryCode (userId: string, hash: string): Promise<boolean> {
    return (await this.c.run(() => this.c.redis.srem(this.c.k('user-rc', userId), hash))) === 1
  }

  async countRecoveryCodes (userId: string): Promise<number> {
    return await this.c.run(() => this.c.redis.scard(this.c.k('user-rc', userId)))
  }
}

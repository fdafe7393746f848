/**
 * The identity JWT's key set in Redis: `jwks`, one JSON record, written by a compare-and-set script on its revision.
 */
import { JWKS_KEY, parseKeySet, type StoredKeySet } from '../keyset.js'
import type { SigningKeyStorage } from '../ports.js'
import type { RedisContext } from './context.js'

export class RedisSigningKeys implements SigningKeyStorage {
  constructor (private readonly c: RedisContext) {}

  async get (): Promise<StoredKeySet> {
    return parseKeySet(await this.c.run(() => this.c.redis.get(this.c.k(JWKS_KEY))))
  }

  async putIfRev (rev: number, set: StoredKeySet): Promise<boolean> {
    return await this.c.run(() => this.c.scripts.putIfRev(this.c.k(JWKS_KEY), rev, JSON.stringify(set)))
  }
}

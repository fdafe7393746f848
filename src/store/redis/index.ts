/**
 * RedisStore: the shared policy (../policy/) over the Redis backend
 * (./storage.ts), with what a process's composition root needs around it
 * (ManagedStore): the secret key's check and rotation, and the caches'
 * counters. In src/, only src/app/open-store.ts constructs one.
 */
import type { Keyring } from '../../crypto.js'
import type { CacheOptions } from '../policy/caches.js'
import { CachedPolicyStore } from '../policy/index.js'
import type { ManagedStore } from '../types.js'
import type { RedisClient } from './connect.js'
import { verifyStoreKey, type Verified, type VerifyOptions } from '../secret/check.js'
import { rotateSecretKey, type RotateOptions, type RotateResult } from '../secret/rotate.js'
import { RedisKeyRecords, selectDb } from './key-records.js'
import { RedisStorage, type RedisStorageOptions } from './storage.js'

export interface RedisStoreOptions extends RedisStorageOptions {
  /** The in-process caches: entries and TTL (seconds). */
  cache: CacheOptions
  /** Called with the record's key (never its content) when an encrypted value cannot be decrypted with this key. */
  onUnreadable?: (record: string) => void
}

export class RedisStore extends CachedPolicyStore implements ManagedStore {
  declare protected readonly storage: RedisStorage

  constructor (opts: RedisStoreOptions, keyring: Keyring) {
    super(new RedisStorage(opts), keyring, { cache: opts.cache, onUnreadable: opts.onUnreadable })
  }

  /** The command connection (tests and tools read keys through it). */
  get redis (): RedisClient { return this.storage.redis }

  async verifyKey (o: VerifyOptions): Promise<Verified> {
    await selectDb(this.redis, o.db, o.where)
    return await verifyStoreKey(this.keyRecords(o.where), this.keyring, o)
  }

  async rotateKey (newKeys: Keyring, o: RotateOptions & { db: number, where: string }): Promise<RotateResult> {
    await selectDb(this.redis, o.db, o.where)
    return await rotateSecretKey(this.keyRecords(o.where), this.keyring, newKeys, o)
  }

  keyRecords (where: string): RedisKeyRecords { return new RedisKeyRecords(this.redis, this.storage.prefix, where) }
}

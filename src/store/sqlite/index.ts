/**
 * SqliteStore: the shared policy (../policy/) over the embedded backend
 * (./storage.ts), with what a process's composition root needs around it
 * (ManagedStore): the secret key's check and rotation (../secret/, over
 * ./key-records.ts) and the caches' counters. In src/, only
 * src/app/open-store.ts constructs one.
 */
import type { Keyring } from '../../crypto.js'
import type { CacheOptions } from '../policy/caches.js'
import { CachedPolicyStore } from '../policy/index.js'
import { verifyStoreKey, type Verified, type VerifyOptions } from '../secret/check.js'
import { rotateSecretKey, type RotateOptions, type RotateResult } from '../secret/rotate.js'
import type { ManagedStore } from '../types.js'
import { SqliteKeyRecords } from './key-records.js'
import { SqliteStorage, type SqliteStorageOptions } from './storage.js'

export interface SqliteStoreOptions extends SqliteStorageOptions {
  /** The in-process caches: entries and TTL (seconds). */
  cache: CacheOptions
  /** Called with the record's name (never its content) when a sealed value cannot be opened with this key. */
  onUnreadable?: (record: string) => void
}

export class SqliteStore extends CachedPolicyStore implements ManagedStore {
  declare protected readonly storage: SqliteStorage

  constructor (opts: SqliteStoreOptions, keyring: Keyring) {
    super(new SqliteStorage(opts), keyring, { cache: opts.cache, onUnreadable: opts.onUnreadable })
  }

  /** The backend (tests and tools reach the file through it). */
  get sqlite (): SqliteStorage { return this.storage }

  async verifyKey (o: VerifyOptions): Promise<Verified> {
    return await verifyStoreKey(new SqliteKeyRecords(this.storage, o.where), this.keyring, o)
  }

  async rotateKey (newKeys: Keyring, o: RotateOptions & { where: string }): Promise<RotateResult> {
    return await rotateSecretKey(new SqliteKeyRecords(this.storage, o.where), this.keyring, newKeys, o)
  }
}

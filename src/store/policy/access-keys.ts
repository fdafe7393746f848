/**
 * Access keys: new ones under the per-user cap (atomic in storage), imported
 * ones as they were, secrets sealed with the Keyring, enabling and disabling
 * (who disabled it, compare-and-set), and the last use: written at most once
 * per LAST_USED_EVERY_MS per key, by this process and across replicas, the
 * first one ever reported (the audit's key.first_used).
 */
import { randomUUID } from 'node:crypto'
import { E } from '../../errors.js'
import { LAST_USED_EVERY_MS } from '../../limits.js'
import type { KeyStateFields, StoredKey } from '../ports.js'
import type { AccessKey, KeyDisabler, KeyState, NewKeyOptions, RateLimitPolicy } from '../model.js'
import type { Caches } from './caches.js'
import { invalidate, isoNow, type Context } from './context.js'
import { importedDisable, keyOf, lifecycle, openKeySecret } from './records.js'

/**
 * Keys whose last touch this process remembers; past it, it forgets
 * them all (a touch more, not a write more: storage compares too).
 */
const TOUCHED_MAX = 100_000

export class AccessKeys {
  readonly #lastTouched = new Map<string, number>()

  constructor (private readonly c: Context) {
    const cache = c.caches
    // refresh ahead: a hot key is read again (with its user) before it expires; one that is gone is dropped
    cache?.accessKeys.refreshWith(async (id) => await this.#fill(cache, id))
  }

  /** `max` > 0: refused with `too_many_keys` when the user already has that many (atomic) */
  async create (userId: string, max = 0, o: NewKeyOptions = {}): Promise<{ key: AccessKey, secret: string }> {
    const id = randomUUID()
    const secret = randomUUID()
    const stored: StoredKey = {
      id,
      user_id: userId,
      is_active: true,
      date_created: isoNow(this.c),
      ...lifecycle(o),
      secret: this.c.keys.encrypt(secret, `ak:${id}`)
    }
    if (!(await this.c.storage.accessKeys.insert(stored, max))) throw E.tooManyKeys(max)
    return { key: keyOf(stored, null), secret }
  }

  /**
   * Stores an access key with the id and secret it had elsewhere (an import),
   * exactly as create stores one; false when the id is taken.
   */
  async import (
    userId: string, k: { id: string, secret: string, is_active: boolean } & NewKeyOptions
  ): Promise<boolean> {
    const id = k.id.toLowerCase()
    const stored: StoredKey = {
      id,
      user_id: userId,
      is_active: k.is_active,
      date_created: isoNow(this.c),
      ...lifecycle(k),
      ...importedDisable(k.is_active),
      secret: this.c.keys.encrypt(k.secret, `ak:${id}`)
    }
    if (!(await this.c.storage.accessKeys.insertNew(stored))) return false
    await invalidate(this.c, `ak:${id}`)
    return true
  }

  /** The key and its secret; `secret` null (and reported) when it cannot be opened with this secret key. */
  async #read (id: string): Promise<{ key: AccessKey, secret: string | null } | null> {
    const v = await this.c.storage.accessKeys.get(id)
    if (v === null) return null
    return openKeySecret(this.c.keys, keyOf(v.stored, v.lastUsed), v.stored.secret, this.c.onUnreadable)
  }

  /** Cached in process; invalidated on every replica when the key or its user changes. */
  async get (id: string): Promise<{ key: AccessKey, secret: string } | null> { return await this.lookup(id) }

  /** get, but at once (no promise) when the key is cached in process; else a promise of the stored one. */
  lookup (id: string): { key: AccessKey, secret: string } | null | Promise<{ key: AccessKey, secret: string } | null> {
    const cache = this.c.caches
    if (cache === null) return this.#uncached(id)
    const hit = cache.trusted ? cache.accessKeys.get(id) : undefined
    return hit === undefined ? this.#fill(cache, id) : hit
  }

  async #uncached (id: string): Promise<{ key: AccessKey, secret: string } | null> {
    const v = await this.#read(id)
    // a key whose secret cannot be read verifies nothing: refused like an unknown one
    return v === null || v.secret === null ? null : { key: v.key, secret: v.secret }
  }

  /**
   * A miss: the key, its last use and its user in one round trip, both
   * cached (the request asks for the user next); each fill voided by an
   * eviction since its stamp (../cache.ts).
   */
  async #fill (cache: Caches, id: string): Promise<{ key: AccessKey, secret: string } | null> {
    const stamp = cache.accessKeys.stamp
    const userStamp = cache.users.stamp
    const v = await this.c.storage.accessKeys.getWithUser(id)
    if (v === null) return null
    if (v.user !== null) cache.users.set(v.stored.user_id, await this.c.groupTable.userOf(v.user), userStamp)
    const opened = openKeySecret(this.c.keys, keyOf(v.stored, v.lastUsed), v.stored.secret, this.c.onUnreadable)
    if (opened.secret === null) return null
    const found = { key: opened.key, secret: opened.secret }
    cache.accessKeys.set(id, found, stamp)
    return found
  }

  async list (userId: string): Promise<AccessKey[]> {
    const ids = await this.c.storage.accessKeys.ids(userId)
    const keys = await Promise.all(ids.map(async (id) => await this.#read(id)))
    return keys.filter((k) => k !== null).map((k) => k.key).sort((a, b) => a.date_created.localeCompare(b.date_created))
  }

  /**
   * Enabling records date_enabled (a key enabled again is not at once
   * disabled again for being unused) and clears disabled_by; disabling
   * records who did it.
   */
  async setActive (id: string, active: boolean, by: KeyDisabler = 'operator', expect?: KeyState): Promise<boolean> {
    const fields: KeyStateFields = active
      ? { is_active: true, date_enabled: isoNow(this.c), disabled_by: null }
      : { is_active: false, disabled_by: by }
    const was = expect === undefined
      ? undefined
      : { is_active: expect.is_active, disabled_by: expect.disabled_by ?? null }
    const found = await this.c.storage.accessKeys.setState(id, fields, was)
    await invalidate(this.c, `ak:${id}`)
    return found
  }

  async setRateLimit (id: string, policy: RateLimitPolicy | null): Promise<boolean> {
    const found = await this.c.storage.accessKeys.setRateLimit(id, policy)
    if (found) await invalidate(this.c, `ak:${id}`)
    return found
  }

  async delete (id: string): Promise<boolean> {
    if (!(await this.c.storage.accessKeys.delete(id))) return false
    await invalidate(this.c, `ak:${id}`)
    return true
  }

  /**
   * Records the key's last use, at most once a minute per key (per process, and across replicas). undefined:
   * nothing sent (used within the minute); else resolves true when this was the key's first recorded use ever,
   * once across every replica (the audit's key.first_used), false otherwise or on any failure: never rejects.
   */
  touch (id: string): Promise<boolean> | undefined {
    if (this.c.shut()) return undefined
    const now = this.c.storage.now()
    if (now - (this.#lastTouched.get(id) ?? -Infinity) < LAST_USED_EVERY_MS) return undefined
    if (this.#lastTouched.size > TOUCHED_MAX) this.#lastTouched.clear()
    this.#lastTouched.set(id, now)
    // and across replicas: storage writes only over a time older than the interval (2: there was none)
    return this.c.storage.accessKeys.touch(
      id, new Date(now).toISOString(), new Date(now - LAST_USED_EVERY_MS).toISOString()
    )
      .then((r) => r === 2, () => false)
  }
}

/**
 * Private tokens: one per user, issued with a check tag and stored as a
 * lookup hash (→ user) beside the token sealed for reading back. Creating or
 * importing one replaces the user's token in one storage step, and whoever
 * replaced a token removes its lookup entry, so concurrent creations leave
 * exactly one token that works. An imported (untagged, JumpServer) token is
 * accepted only when its hash is listed as imported.
 */
import { credentialShaped } from '../../crypto.js'
import type { StoredPrivateToken } from '../ports.js'
import { UNREADABLE } from '../model.js'
import type { Caches } from './caches.js'
import { invalidate, type Context } from './context.js'

export class PrivateTokens {
  constructor (private readonly c: Context) {
    const cache = c.caches
    // refresh ahead: a hot entry is read again (with its user) before it expires; one that is gone is dropped
    cache?.privateTokens.refreshWith(async (h) => await this.#fill(cache, h))
  }

  /** Creates (or replaces) the user's private token and returns it. */
  async create (userId: string): Promise<string> {
    const token = this.c.keys.issue('private token')
    const h = this.c.keys.lookup(token)
    await this.c.storage.privateTokens.setLookup(h, userId)
    const old = await this.c.storage.privateTokens.swap(userId, { hash: h, sealed: this.c.keys.encrypt(token, `pt:${userId}`) })
    if (old !== null) await this.#drop(userId, old, h)
    return token
  }

  /**
   * Makes an imported, untagged token (JumpServer's 40 hex characters) the user's private token,
   * replacing any other; it is accepted although it carries no check tag, because its lookup hash
   * is in the store's set of imported tokens (every replica reloads the set when it changes).
   */
  async import (userId: string, token: string): Promise<void> {
    const pt = this.c.storage.privateTokens
    const h = this.c.keys.lookup(token)
    await pt.setLookup(h, userId)
    // listed before it is the user's token: every replica knows it before a client can send it
    await pt.addImported(h)
    const old = await pt.swap(userId, { hash: h, sealed: this.c.keys.encrypt(token, `pt:${userId}`) })
    if (old !== null) await this.#drop(userId, old, h)
    await invalidate(this.c, 'pt-imported:')
  }

  /** The token read back; null when there is none or it cannot be read (read tells which). */
  async get (userId: string): Promise<string | null> {
    const t = await this.read(userId)
    return typeof t === 'string' ? t : null
  }

  /**
   * The private token; null when there is none; UNREADABLE (and reported)
   * when it was stored under another secret key: never garbage.
   */
  async read (userId: string): Promise<string | null | typeof UNREADABLE> {
    const stored = await this.c.storage.privateTokens.get(userId)
    if (stored === null) return null
    const token = this.c.keys.tryDecrypt(stored.sealed, `pt:${userId}`)
    if (token !== null) return token
    this.c.onUnreadable?.(`user-pt:${userId}`)
    return UNREADABLE
  }

  async revoke (userId: string): Promise<boolean> {
    const old = await this.c.storage.privateTokens.take(userId)
    if (old === null) return false
    await this.#drop(userId, old)
    return true
  }

  /**
   * Removes the lookup entry of a replaced or revoked token (never `keep`).
   * Its hash is stored beside the sealed token, so this needs no decryption.
   * A token stored before that (no hash) is decrypted; if that fails (another
   * secret key), every lookup entry of this user but `keep` is removed instead.
   */
  async #drop (userId: string, stored: StoredPrivateToken, keep?: string): Promise<void> {
    const pt = this.c.storage.privateTokens
    const token = stored.hash === null ? this.c.keys.tryDecrypt(stored.sealed, `pt:${userId}`) : null
    const h = stored.hash ?? (token === null ? null : this.c.keys.lookup(token))
    if (h === null) {
      this.c.onUnreadable?.(`user-pt:${userId}`)
      for (const orphan of await pt.lookupsOf(userId)) {
        if (orphan === keep) continue
        await pt.dropLookup(orphan)
        await invalidate(this.c, `pt:${orphan}`)
      }
      return
    }
    if (h === keep) return
    await pt.dropLookup(h)
    await invalidate(this.c, `pt:${h}`)
    if (await pt.dropImported(h)) await invalidate(this.c, 'pt-imported:')
  }

  async userIdFor (token: string): Promise<string | null> { return await this.lookup(token) }

  /**
   * userIdFor, but at once (no promise) when memory decides: null when the token is none (sidegate's
   * shape with a wrong check tag), the user id when cached in process; else a promise of what the store says.
   */
  lookup (token: string): string | null | Promise<string | null> {
    // untagged: refused here when of sidegate's own shape (another key's, a guess); any other may be imported
    if (!this.c.keys.tagged('private token', token)) return credentialShaped(token) ? null : this.#imported(token)
    return this.#byHash(this.c.keys.lookup(token))
  }

  /** An untagged token: accepted only when its hash is listed as imported (JumpServer's). */
  async #imported (token: string): Promise<string | null> {
    const h = await this.c.storage.privateTokens.findImported(() => this.c.keys.lookups(token))
    return h === null ? null : await this.#byHash(h)
  }

  #byHash (h: string): string | null | Promise<string | null> {
    const cache = this.c.caches
    if (cache === null) return this.c.storage.privateTokens.lookup(h)
    const hit = cache.trusted ? cache.privateTokens.get(h) : undefined
    return hit === undefined ? this.#fill(cache, h) : hit
  }

  /**
   * A miss: the lookup entry and its user in one round trip, both cached (the
   * request asks for the user next); each fill voided by an eviction since
   * its stamp (../cache.ts).
   */
  async #fill (cache: Caches, h: string): Promise<string | null> {
    const stamp = cache.privateTokens.stamp
    const userStamp = cache.users.stamp
    const found = await this.c.storage.privateTokens.lookupUser(h)
    if (found === null) return null
    cache.privateTokens.set(h, found.userId, stamp)
    if (found.user !== null) cache.users.set(found.userId, await this.c.groupTable.userOf(found.user), userStamp)
    return found.userId
  }
}

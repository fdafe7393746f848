/**
 * Passwords: hashed (scrypt) when set; an imported Django hash kept as it is
 * until a login re-hashes it by compare-and-set. A new password, or a new
 * imported hash, ends what whoever held the old one may hold: the user's
 * sessions and unused bearer tokens, on every replica at once. Private
 * tokens and access keys are separate credentials and stay.
 */
import { createHash, randomUUID } from 'node:crypto'
import { hashPassword, safeEqual } from '../../crypto.js'
import { E } from '../../errors.js'
import { invalidate, sessionsEnded, type Context } from './context.js'
import { importedFingerprint } from './records.js'

export class Passwords {
  constructor (private readonly c: Context) {}

  /** The stored password hash, or null when the user is unknown or has no password. */
  async hash (userId: string): Promise<string | null> {
    return (await this.c.storage.users.get(userId))?.password_hash ?? null
  }

  /**
   * Changing the password also ends the user's sessions and unused bearer
   * tokens, on every replica at once; private tokens and access keys stay.
   */
  async set (userId: string, password: string): Promise<void> {
    await this.#write(userId, 'password_hash', await hashPassword(password))
    await this.#endCredentials(userId)
  }

  /**
   * Sets an imported Django hash as the user's password, kept as it is until the next successful login
   * re-hashes it (upgrade); ends sessions and unused bearer tokens as set does.
   */
  async setLegacy (userId: string, hash: string): Promise<void> {
    await this.#write(userId, 'password_hash', hash)
    await this.#write(userId, 'password_imported', importedFingerprint(this.c.keys, hash))
    await this.#endCredentials(userId)
  }

  /** True when this legacy hash is the one the last import set (even if a login has re-hashed it since). */
  async isImported (userId: string, hash: string): Promise<boolean> {
    const s = await this.c.storage.users.get(userId)
    // under any key the store was rotated through: the same hash again is no change
    return s !== null &&
      (
        (s.password_hash !== null && safeEqual(s.password_hash, hash)) ||
          (
            s.password_imported !== undefined &&
              this.c.keys.lookups(`imported password:${hash}`).includes(s.password_imported)
          )
      )
  }

  /**
   * Removes the local password: the user signs in through a directory or a
   * provider only. Ends sessions and unused bearer tokens as set does.
   */
  async clear (userId: string): Promise<void> {
    if (!(await this.c.storage.users.setField(userId, 'password_hash', null))) throw E.userNotFound()
    await this.#endCredentials(userId)
  }

  /**
   * A one-time password-reset link's token (`sidegate user reset-link`): the user, its expiry and a fingerprint of
   * the password hash it replaces, sealed with the store's key. Nothing is stored: setting any password changes the
   * fingerprint, so a token works once, and not after the password changed some other way.
   */
  async resetToken (userId: string, ttlMs: number): Promise<{ token: string, expires: number }> {
    const s = await this.c.storage.users.get(userId)
    if (s === null) throw E.userNotFound()
    const expires = Date.now() + ttlMs
    const sealed = { u: userId, e: expires, f: fingerprint(s.password_hash) }
    return { token: this.c.keys.encrypt(JSON.stringify(sealed), RESET), expires }
  }

  /** The user a reset token is valid for now (active, its password unchanged), else null. */
  async resetUser (token: string): Promise<string | null> {
    const opened = token.length > 1024 ? null : this.c.keys.tryDecrypt(token, RESET)
    if (opened === null) return null
    const t = JSON.parse(opened) as { u: string, e: number, f: string }
    if (Date.now() >= t.e) return null
    const s = await this.c.storage.users.get(t.u)
    return s !== null && s.is_active && safeEqual(fingerprint(s.password_hash), t.f) ? t.u : null
  }

  /**
   * Sets the password a valid reset token allows, once: under a lock per user the token is checked again, so of two
   * concurrent uses one sets the password and the other finds its fingerprint gone. Ends sessions as set does.
   */
  async resetWith (token: string, password: string): Promise<string | null> {
    const first = await this.resetUser(token)
    if (first === null) return null
    const lock = `password-reset:${first}`
    const held = randomUUID()
    if (!(await this.c.storage.locks.acquire(lock, held, 30_000))) return null
    try {
      if ((await this.resetUser(token)) !== first) return null
      await this.set(first, password)
      return first
    } finally { await this.c.storage.locks.release(lock, held) }
  }

  /** Ends nothing: the password is the same. */
  async upgrade (userId: string, oldHash: string, newHash: string): Promise<boolean> {
    return await this.c.storage.users.swapPasswordHash(userId, oldHash, newHash)
  }

  async #write (userId: string, field: 'password_hash' | 'password_imported', value: string): Promise<void> {
    if (!(await this.c.storage.users.setField(userId, field, value))) throw E.userNotFound()
  }

  async #endCredentials (userId: string): Promise<void> {
    await this.c.storage.sessions.endAll(userId)
    await this.c.storage.bearerTokens.endAll(userId)
    await sessionsEnded(this.c, userId)
    await invalidate(this.c, `user-sess:${userId}`)
  }
}

const RESET = 'state:password reset'
/** The password hash a reset replaces, as the token holds it (a salted hash's digest: nothing of the password). */
const fingerprint = (hash: string | null): string => createHash('sha256').update(hash ?? '-').digest('base64url')

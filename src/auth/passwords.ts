/**
 * Passwords: the one check behind the token endpoint, the login form and the
 * password confirmation of the account endpoints, with the login lockout.
 */
import type { AuditContext, Auditor } from '../audit.js'
import { E } from '../errors.js'
import { burnPbkdf2, hashPassword, isLegacyHash, legacyWork, verifyPassword } from '../crypto.js'
import type { Store, User } from '../store/types.js'

export interface LockoutOptions {
  /** failures per (username, client IP) before 429; 0 turns the lockout off */
  max_failures: number
  /** seconds */
  window: number
}

/** Where a password was sent: the login form, the token endpoint, the confirmation of a new credential (the audit's `via`). */
export type PasswordUse = 'login' | 'token' | 'confirm'

export class PasswordChecker {
  #dummy: Promise<string> | undefined
  constructor (
    private readonly store: Store,
    private readonly lockout: LockoutOptions = { max_failures: 0, window: 1 },
    /** records login.succeeded, login.failed and login.locked_out (src/audit.ts) */
    private readonly audit: Auditor | null = null
  ) {}

  /**
   * The password check behind the login form and the token endpoint, with
   * the lockout: after `max_failures` failures for one (username, client IP)
   * within `window` seconds, attempts get 429 too_many_attempts with
   * Retry-After, even with the right password, until a full window has
   * passed; a success resets the count. Each attempt is counted before its
   * password is checked, so a burst of parallel guesses gets no more than
   * `max_failures` checks. The counter does not depend on whether the user exists.
   * `ctx`: the request (its client address counts; audited with it), `via`: which endpoint.
   */
  async login (username: string, password: string, ctx: AuditContext, via: PasswordUse): Promise<User> {
    const { max_failures: max, window } = this.lockout
    const subject = `${username.toLowerCase()}\n${ctx.clientIp}`
    let count = 0
    if (max > 0) {
      const a = await this.store.countLoginAttempt(subject, window, max)
      count = a.count
      if (a.count > max) {
        this.audit?.record({ event: 'login.failed', ctx, username, authMethod: 'password', via, reason: 'too_many_attempts' })
        throw E.tooManyAttempts(a.retryAfter)
      }
    }
    const user = await this.check(username, password)
    if (user === null) {
      this.audit?.record({ event: 'login.failed', ctx, username, authMethod: 'password', via, reason: 'authentication_failed' })
      // the max-th failure: from now on this pair is refused for a whole window (the script restarted it)
      if (count === max && max > 0) this.audit?.record({ event: 'login.locked_out', ctx, username, authMethod: 'password', via, retryAfter: window })
      throw E.authenticationFailed()
    }
    if (max > 0) await this.store.resetLoginFailures(subject)
    this.audit?.record({ event: 'login.succeeded', ctx, user, authMethod: 'password', via })
    return user
  }

  /**
   * The user when username and password match an active account, else null,
   * in about the same time whether the user exists, has a password, or not.
   * A password still held as an imported Django hash (`sidegate import`) is
   * checked as it is and, on success, re-hashed with scrypt. While any such
   * hash is left in the store, every check does the same work: one scrypt
   * (the user's, a dummy, or the re-hash) and PBKDF2 iterations padded to the
   * costliest legacy hash of an active user left, so the time does not tell
   * an imported account from another or from an unknown user. A disabled
   * user's legacy hash is not checked at all (the answer is no anyway).
   */
  async check (username: string, password: string): Promise<User | null> {
    this.#dummy ??= hashPassword('sidegate-dummy-password')
    const [user, work] = await Promise.all([this.store.getUserByUsername(username), this.store.legacyPasswordWork()])
    const hash = user === null ? null : await this.store.getPasswordHash(user.id)
    const legacy = hash !== null && isLegacyHash(hash)
    // a disabled user's legacy hash is not checked: it may cost more than the padding, which leaves it out
    if (!legacy || user === null || !user.is_active) {
      const ok = await verifyPassword(password, hash === null || legacy ? await this.#dummy : hash)
      await burnPbkdf2(work)
      return ok && !legacy && hash !== null && user !== null && user.is_active ? user : null
    }
    const ok = await verifyPassword(password, hash)
    await burnPbkdf2(work - legacyWork(hash))
    if (!ok) {
      await verifyPassword(password, await this.#dummy)
      return null
    }
    // a concurrent password change wins (compare-and-set); the login succeeds either way
    await this.store.upgradePasswordHash(user.id, hash!, await hashPassword(password))
    return user
  }
}

/**
 * Passwords: the one check behind the token endpoint, the login form and the
 * password confirmation of the account endpoints, with the login lockout.
 */
import type { IncomingMessage } from 'node:http'
import type { AuditContext, Auditor } from '../observability/audit.js'
import { E } from '../errors.js'
import { hashPassword, isLegacyHash, verifyPassword } from '../crypto.js'
import { addressBucket, prefixBuckets } from '../http/address.js'
import type { Store, User } from '../store/types.js'
import { CheckGate, type CheckGateOptions } from './check-gate.js'
import { DirectoryUnavailable, type Directories } from './ldap/index.js'

/** auth.password_checks: the gate's bounds and the networks a client address also counts in. */
export type PasswordChecksOptions = CheckGateOptions & {
  ipv4_prefixes?: readonly number[],
  ipv6_prefixes?: readonly number[]
}

export interface LockoutOptions {
  /** failures per (username, client address) before 429; 0 turns the lockout off */
  max_failures: number
  /** seconds */
  window: number
  /** failures per client address, whatever the usernames, before 429; 0: off */
  address_max_failures?: number
  /** IPv6 clients count by this prefix */
  ipv6_prefix?: number
}

/**
 * Where a password was sent: the login form, the token endpoint,
 * the confirmation of a new credential (the audit's `via`).
 */
export type PasswordUse = 'login' | 'token' | 'confirm'

/**
 * The request a password came with: its client address counts;
 * a check still waiting when its client has gone is dropped.
 */
export type PasswordContext = AuditContext & { req?: IncomingMessage }

/** An id no user has (users' ids are UUIDs): an unknown username's read. */
const NO_USER = '-'
const UNBOUNDED: CheckGateOptions = { concurrency: 1_000_000, queue: 0, per_address: 1_000_000, per_address_waiting: 0 }

export class PasswordChecker {
  #dummy: Promise<string> | undefined
  readonly #gate: CheckGate
  readonly #v4: readonly number[]
  readonly #v6: readonly number[]
  constructor (
    private readonly store: Store,
    private readonly lockout: LockoutOptions = { max_failures: 0, window: 1 },
    /** records login.succeeded, login.failed and login.locked_out (src/observability/audit.ts) */
    private readonly audit: Auditor | null = null,
    gate: PasswordChecksOptions = UNBOUNDED,
    /** sign_in.ldap: directories that may vouch for a password (./ldap/) */
    private readonly directories: Directories | null = null
  ) {
    this.#gate = new CheckGate(gate)
    // narrowest first: the widest is the lane a waiting check is queued in
    this.#v4 = [...(gate.ipv4_prefixes ?? [])].sort((a, b) => b - a)
    const v6 = lockout.ipv6_prefix ?? 64
    this.#v6 = [...(gate.ipv6_prefixes ?? [])].filter((n) => n < v6).sort((a, b) => b - a)
  }

  /**
   * The password check behind the login form and the token endpoint, in this
   * order, each before any hashing:
   * 1. the check gate (auth.password_checks, in process): a place among the
   *    checks that run or wait, else 503 busy or, for an address or a network
   *    (ipv4_prefixes, ipv6_prefixes) with too many waiting, 429; places go
   *    round robin over networks, first to addresses that signed in recently;
   *    nothing else is looked at for a refused flood;
   * 2. the client address's budget (auth.lockout.address_max_failures within
   *    `window`, IPv6 by its /ipv6_prefix network): a flood with many usernames
   *    from one place is refused without a hash, and leaves no per-username count;
   * 3. the lockout: after `max_failures` failures for one (username, client
   *    address) within `window` seconds, attempts get 429 too_many_attempts
   *    with Retry-After, even with the right password, until a full window has
   *    passed; a success resets the count.
   * Each attempt is counted before its password is checked, so a burst of
   * parallel guesses gets no more than the budgets allow. The counters do not
   * depend on whether the user exists.
   * `ctx`: the request (its client address counts; audited with it), `via`: which endpoint.
   */
  async login (username: string, password: string, ctx: PasswordContext, via: PasswordUse): Promise<User> {
    const bucket = addressBucket(ctx.clientIp, this.lockout.ipv6_prefix ?? 64)
    const gone = (): boolean => ctx.req?.socket?.destroyed === true
    // the gate first: a flood beyond its places is refused without even a store round trip
    const prefixes = this.#v4.length + this.#v6.length === 0 ? [] : prefixBuckets(ctx.clientIp, this.#v4, this.#v6)
    return await this.#gate.run(
      bucket, gone, async () => await this.#counted(username, password, ctx, via, bucket), prefixes
    )
  }

  /** Inside the gate: the address budget and the lockout (store counters), then the check. */
  async #counted (
    username: string, password: string, ctx: PasswordContext, via: PasswordUse, bucket: string
  ): Promise<User> {
    const { max_failures: max, window } = this.lockout
    const addrMax = this.lockout.address_max_failures ?? 0
    const addressSubject = `\naddress\n${bucket}`
    if (addrMax > 0) {
      const a = await this.store.limits.countLoginAttempt(addressSubject, window, addrMax)
      if (a.count > addrMax) {
        this.audit?.record({ event: 'login.failed', ctx, username, authMethod: 'password', via, reason: 'too_many_attempts' })
        throw E.tooManyAttempts(a.retryAfter)
      }
    }
    // `corp\alice` and `alice@corp` count as alice: another spelling is no other budget
    const subject = `${(this.directories?.route(username).name ?? username).toLowerCase()}\n${bucket}`
    let count = 0
    if (max > 0) {
      const a = await this.store.limits.countLoginAttempt(subject, window, max)
      count = a.count
      if (a.count > max) {
        this.audit?.record({ event: 'login.failed', ctx, username, authMethod: 'password', via, reason: 'too_many_attempts' })
        throw E.tooManyAttempts(a.retryAfter)
      }
    }
    const user = await this.#verify(username, password, ctx, via)
    if (user === null) {
      this.audit?.record({ event: 'login.failed', ctx, username, authMethod: 'password', via, reason: 'authentication_failed' })
      // the max-th failure: from now on this pair is refused for a whole window (the script restarted it)
      if (count === max && max > 0) {
        this.audit?.record({
          event: 'login.locked_out',
          ctx,
          username,
          authMethod: 'password',
          via,
          retryAfter: window
        })
      }
      throw E.authenticationFailed()
    }
    if (max > 0) await this.store.limits.resetLoginFailures(subject)
    if (addrMax > 0) await this.store.limits.forgiveLoginAttempt(addressSubject)
    this.#gate.succeeded(bucket)
    this.audit?.record({ event: 'login.succeeded', ctx, user, authMethod: 'password', via })
    return user
  }

  /**
   * The local hash and the directories in sign_in.password_order. A local user
   * keeps working while every directory is down; otherwise no directory
   * answering is 503 directory_unavailable (never a 401 that did not check).
   */
  async #verify (username: string, password: string, ctx: PasswordContext, via: PasswordUse): Promise<User | null> {
    const d = this.directories
    if (d === null || d.list.length === 0) return await this.check(username, password)
    const directory = async (): Promise<User | null | DirectoryUnavailable> => {
      try { return await d.signIn(username, password, ctx, via) } catch (err) {
        if (err instanceof DirectoryUnavailable) return err
        throw err
      }
    }
    const local = d.order === 'local_first' ? await this.check(username, password) : null
    if (local !== null) return local
    const answer = await directory()
    if (answer !== null && !(answer instanceof DirectoryUnavailable)) return answer
    const after = d.order === 'directory_first' ? await this.check(username, password) : null
    if (after !== null) return after
    if (answer instanceof DirectoryUnavailable) throw E.directoryUnavailable(answer.retryAfter)
    return null
  }

  /**
   * The user when username and password match an active account, else null.
   * An unknown user, one without a password and a disabled one cost one
   * scrypt check, as a known user with sidegate's own hash does: the answer
   * and its time do not tell them apart. A password still held as an imported
   * Django hash (`sidegate import`) is checked as it is (its PBKDF2 iterations)
   * and, on success, re-hashed with scrypt, so this one difference lasts only
   * until the user's first successful login. A disabled user's imported hash
   * is not checked at all (the answer is no anyway).
   */
  async check (username: string, password: string): Promise<User | null> {
    this.#dummy ??= hashPassword('sidegate-dummy-password')
    // the user as stored now, not a cached copy: one disabled a moment ago by another process is refused
    const known = await this.store.users.byUsername(username)
    // an unknown username reads the store as often (a record no user has): the time does not tell them apart
    const user = (await this.store.users.forSignIn(known?.id ?? NO_USER))?.user ?? null
    const hash = user === null ? null : await this.store.passwords.hash(user.id)
    const legacy = hash !== null && isLegacyHash(hash)
    if (!legacy || user === null || !user.is_active) {
      const ok = await verifyPassword(password, hash === null || legacy ? await this.#dummy : hash)
      return ok && !legacy && hash !== null && user !== null && user.is_active ? user : null
    }
    if (!(await verifyPassword(password, hash))) return null
    // a concurrent password change wins (compare-and-set); the login succeeds either way
    await this.store.passwords.upgrade(user.id, hash, await hashPassword(password))
    return user
  }
}

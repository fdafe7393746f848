/**
 * The second factor after a right password, shared by the token endpoint
 * (JumpServer's MFA challenge) and the login page: who must give one, the
 * pending state a client holds between the password and the code, and the
 * code's check with its lockout and audit.
 *
 * The pending state is a cookie sealed with the secret key (AES-256-GCM,
 * ../store/types.ts sealState): the user, the factors passed so far, a
 * random id, its expiry (auth.mfa.pending_ttl) and a keyed hash of the
 * client (address and User-Agent) it was given to. It grants nothing by
 * itself: only the step it leads to (the code, then the token or session)
 * reads it, and the token or session it ends in uses its id up (a replay
 * mark, on every replica). It is void once the user's sessions were ended
 * after it was given (a password change, disabling, `session revoke`), and
 * spent by PENDING_TRIES wrong codes (sign in again with the password).
 */
import { createHash, randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { E } from '../errors.js'
import { MFA_PENDING_TRIES } from '../limits.js'
import type { AuditContext, Auditor } from '../observability/audit.js'
import type { Factor, SsoSignIn, Store, TotpEnrolment, User } from '../store/types.js'
import type { LockoutOptions } from './passwords.js'
import { renderSVG } from 'uqr'
import { parseCookies } from '../http/cookies.js'

/**
 * The factors a sign-in was made with (RFC 8176 `amr` values, ../store/types.ts Factor): a
 * recovery code counts as `otp`; a passkey is `hwk` (bound to its device) or `swk` (synced).
 */
export type Amr = Factor

export interface MfaOptions {
  required: 'none' | 'superusers' | 'all'
  /** seconds */
  pending_ttl: number
}

/**
 * What a user still needs after the right password: a code (TOTP, perhaps
 * passkeys too), a passkey (their only factor), an enrolment, or nothing.
 */
export type MfaNeed = 'none' | 'code' | 'passkey' | 'enrol'

/** The pending state, as sealed into the cookie. */
export interface Pending {
  /** user id */
  u: string
  /** factors passed */
  amr: Amr[]
  /** random id: used up by the token or session it ends in */
  n: string
  /** expiry, epoch ms */
  e: number
  /** the client it was given to */
  c: string
  /** what it waits for: a code or a passkey, or an enrolment (the login page) */
  w: 'code' | 'enrol'
  /** an enrolment's new secret (base32), to show again after a wrong first code */
  s?: string
  /** when it was given, epoch ms */
  t?: number
  /** a provider's first step: the session's source and names there (its back-channel logout's) */
  o?: SsoSignIn
}

const PURPOSE = 'mfa pending'
/**
 * Wrong codes one pending step takes: the next try (even a right code) finds it spent, and the password is asked again.
 */
export const PENDING_TRIES = MFA_PENDING_TRIES

export class SecondFactor {
  constructor (
    private readonly store: Store,
    private readonly opts: MfaOptions,
    private readonly lockout: LockoutOptions,
    private readonly audit: Auditor | null
  ) {}

  /**
   * After the right password: a code (enrolled), an enrolment
   * (required by auth.mfa.required or an operator), or nothing.
   */
  async need (user: User): Promise<MfaNeed> {
    const state = await this.store.mfa.state(user.id)
    if (state === 'enrolled') return 'code'
    if (state === 'passkey') return 'passkey'
    const r = this.opts.required
    return r === 'all' || (r === 'superusers' && user.is_superuser) || state === 'required' ? 'enrol' : 'none'
  }

  /** The sealed pending state for this client. */
  pending (
    user: User, req: IncomingMessage, ctx: AuditContext, w: Pending['w'], amr: Amr[] = ['pwd'], secret?: string,
    sso?: SsoSignIn
  ): string {
    const now = Date.now()
    const p: Pending = {
      u: user.id,
      amr,
      n: randomBytes(12).toString('base64url'),
      e: now + this.opts.pending_ttl * 1000,
      c: clientOf(req, ctx),
      w,
      t: now
    }
    if (secret !== undefined) p.s = secret
    if (sso !== undefined) p.o = sso
    return this.store.state.seal(PURPOSE, JSON.stringify(p))
  }

  /**
   * The pending state the request's `cookie` holds, if it is sealed
   * by this gateway, unexpired and this client's; else null.
   */
  open (req: IncomingMessage, cookie: string, ctx: AuditContext): Pending | null {
    const value = parseCookies(req.headers.cookie)[cookie]
    if (value === undefined || value === null || value === '') return null
    const plain = this.store.state.open(PURPOSE, value)
    if (plain === null) return null
    const p = JSON.parse(plain) as Pending
    if (p.e <= Date.now() || p.c !== clientOf(req, ctx)) return null
    return p
  }

  /**
   * The pending step's user, read from the store itself (never a cache: a
   * user disabled a moment ago by another process counts): null when gone,
   * disabled, or their sessions were ended (a password change, disabling,
   * `session revoke`) since the step was given.
   */
  async user (p: Pending): Promise<User | null> {
    const r = await this.store.users.forSignIn(p.u)
    // a step sealed without its time (an older gateway's) is void once the sessions were ever ended
    if (r === null || !r.user.is_active || r.sessionsEnded >= (p.t ?? 1)) return null
    return r.user
  }

  /**
   * Counts one code given with this pending step (before it is checked):
   * false once PENDING_TRIES were counted, and the step is then used up (the
   * password again). Besides the per-user lockout: a step is never worth more
   * than PENDING_TRIES guesses, whatever auth.lockout says.
   */
  async tries (p: Pending): Promise<boolean> {
    const a = await this.store.limits.countLoginAttempt(`\nmfa pending\n${p.n}`, this.opts.pending_ttl + 60, PENDING_TRIES + 1)
    if (a.count <= PENDING_TRIES) return true
    await this.consume(p)
    return false
  }

  /** Uses the pending state up: true once, on any replica. */
  async consume (p: Pending): Promise<boolean> {
    return await this.store.limits.markOnce('mfa pending', p.n, this.opts.pending_ttl + 60)
  }

  /** The cookie's lifetime, seconds. */
  get ttl (): number { return this.opts.pending_ttl }

  /**
   * Checks a code (a one-time password or a recovery code) after the right
   * password. Wrong codes count per user (auth.lockout.max_failures within
   * its window): beyond it 429 too_many_attempts, even for a right code,
   * until the window has passed; a right code resets the count. Throws
   * mfa_failed (the tries left in the detail, as JumpServer says them).
   */
  async check (user: User, code: string, ctx: AuditContext, via: string): Promise<'otp' | 'recovery'> {
    const got = await this.#counted(
      user, ctx, via, async () => code.length > 64 ? null : await this.store.mfa.verify(user.id, code)
    )
    this.audit?.record({ event: 'mfa.succeeded', ctx, user, authMethod: got, via })
    return got
  }

  /**
   * Confirms the user's pending TOTP enrolment (theirs, or one an operator
   * began) with its first code: the ten recovery codes. Counted as check
   * counts, toward the same per-user lockout; audited as mfa.enrolled.
   */
  async confirm (user: User, code: string, ctx: AuditContext, via: string): Promise<string[]> {
    const codes = await this.#counted(
      user, ctx, via, async () => code.length > 64 ? null : await this.store.mfa.confirm(user.id, code)
    )
    this.audit?.record({ event: 'mfa.enrolled', ctx, user, via })
    return codes
  }

  /**
   * The per-user code lockout around one try: counted before it,
   * reset by a success; mfa_failed or too_many_attempts otherwise.
   */
  async #counted<T> (user: User, ctx: AuditContext, via: string, attempt: () => Promise<T | null>): Promise<T> {
    const { max_failures: max, window } = this.lockout
    const subject = `\nmfa\n${user.id}`
    let count = 0
    if (max > 0) {
      const a = await this.store.limits.countLoginAttempt(subject, window, max)
      count = a.count
      if (a.count > max) {
        this.audit?.record({ event: 'mfa.failed', ctx, user, via, reason: 'too_many_attempts' })
        throw E.tooManyAttempts(a.retryAfter)
      }
    }
    const got = await attempt()
    if (got === null) {
      this.audit?.record({ event: 'mfa.failed', ctx, user, via, reason: 'mfa_failed' })
      const minutes = Math.max(1, Math.round(window / 60))
      throw E.mfaFailed(max > 0
        ? `One-time password invalid, You can also try ${Math.max(0, max - count)} times (The account will be temporarily locked for ${minutes} minutes)`
        : 'One-time password invalid')
    }
    if (max > 0) await this.store.limits.resetLoginFailures(subject)
    return got
  }
}

/** A fingerprint of the client: its address and User-Agent (sealed with the rest, never shown). */
function clientOf (req: IncomingMessage, ctx: AuditContext): string {
  const ua = req.headers['user-agent'] ?? ''
  return createHash('sha256').update(`${ctx.clientIp}\n${ua}`).digest('base64url').slice(0, 22)
}

/** The otpauth:// URI an authenticator app reads (Key Uri Format): issuer and account in the label, the secret and RFC 6238's parameters. */
export function otpauthUri (issuer: string, username: string, e: TotpEnrolment): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(username)}`
  const q = new URLSearchParams({
    secret: e.secret,
    issuer,
    algorithm: e.algorithm,
    digits: String(e.digits),
    period: String(e.period)
  })
  return `otpauth://totp/${label}?${q.toString()}`
}

/** The QR code of an otpauth:// URI, as an SVG data: URI for an <img> (the pages allow data: images, no inline markup). */
export function qrDataUri (uri: string): string {
  return `data:image/svg+xml;base64,${Buffer.from(renderSVG(uri, { ecc: 'M', border: 2 })).toString('base64')}`
}

/**
 * Second factors: a TOTP secret per user (RFC 6238, ../../crypto.ts), sealed
 * with the Keyring (additional data `user-totp:<user id>`), which counts only
 * once confirmed with a first code; ten single-use recovery codes, kept as
 * lookup hashes; and a code accepted once: the (user, time step) it matched
 * is a replay mark (markOnce) for as long as that step can be accepted.
 */
import { TOTP, matchTotp, newRecoveryCode, newTotpSecret, normalizeRecoveryCode } from '../../crypto.js'
import type { MfaFactors, SecondFactorResult, SecondFactorState, TotpEnrolment } from '../model.js'
import { isoNow, type Context } from './context.js'
import { info } from './passkeys.js'

/** The TOTP record as stored: `secret` sealed; `required`: an operator asked for enrolment. */
interface TotpRecord {
  secret?: string
  confirmed: boolean
  created?: string
  required?: boolean
  /**
   * begun by an operator (`sidegate mfa enroll`): the user confirms it with a code, and is never shown its secret again
   */
  operator?: boolean
}

export const RECOVERY_CODES = 10
/** Steps of drift accepted either side of now. */
export const TOTP_DRIFT = 1
/** A used code's mark outlives every step it could still be accepted in. */
const USED_TTL = TOTP.period * (2 * TOTP_DRIFT + 2)

export class Mfa {
  constructor (private readonly c: Context) {}

  async #record (userId: string): Promise<{ stored: string, rec: TotpRecord } | null> {
    const stored = await this.c.storage.mfa.getTotp(userId)
    return stored === null ? null : { stored, rec: JSON.parse(stored) as TotpRecord }
  }

  /** The secret, opened; null when there is none or it is unreadable (reported): nothing then matches. */
  #secret (userId: string, rec: TotpRecord): string | null {
    if (rec.secret === undefined) return null
    const record = `user-totp:${userId}`
    const s = this.c.keys.tryDecrypt(rec.secret, record)
    if (s === null) this.c.onUnreadable?.(record)
    return s
  }

  /** The user's second factors (never a secret). */
  async factors (userId: string): Promise<MfaFactors> {
    const r = await this.#record(userId)
    const totp = r === null || r.rec.secret === undefined
      ? null
      : {
          confirmed: r.rec.confirmed,
          created: r.rec.created ?? '',
          ...(r.rec.operator === true && !r.rec.confirmed ? { operator: true as const } : {})
        }
    const passkeys = (await this.c.storage.passkeys.list(userId))
      .sort((a, b) => a.created.localeCompare(b.created) || a.id.localeCompare(b.id))
      .map(info)
    return {
      totp,
      required: r?.rec.required === true,
      recovery_codes: totp?.confirmed === true ? await this.c.storage.mfa.countRecoveryCodes(userId) : 0,
      passkeys
    }
  }

  /**
   * A confirmed TOTP factor (every sign-in needs a code), else passkeys, else whether an operator required enrolment.
   */
  async state (userId: string): Promise<SecondFactorState> {
    const [r, passkeys] = await Promise.all([this.#record(userId), this.c.storage.passkeys.list(userId)])
    if (r !== null && r.rec.confirmed && r.rec.secret !== undefined) return 'enrolled'
    if (passkeys.length > 0) return 'passkey'
    return r?.rec.required === true ? 'required' : 'none'
  }

  /** A confirmed second factor (TOTP or a passkey): every sign-in needs one. */
  async has (userId: string): Promise<boolean> {
    const s = await this.state(userId)
    return s === 'enrolled' || s === 'passkey'
  }

  /**
   * A new secret, stored unconfirmed (it counts only once confirmed); an
   * earlier unconfirmed one is replaced. null when a confirmed factor exists
   * (reset it first).
   */
  async begin (userId: string, by: 'user' | 'operator' = 'user'): Promise<TotpEnrolment | null> {
    const r = await this.#record(userId)
    if (r !== null && r.rec.confirmed) return null
    const secret = newTotpSecret()
    const rec: TotpRecord = { secret: this.c.keys.encrypt(secret, `user-totp:${userId}`), confirmed: false, created: isoNow(this.c) }
    if (r?.rec.required === true) rec.required = true
    if (by === 'operator') rec.operator = true
    await this.c.storage.mfa.putTotp(userId, JSON.stringify(rec))
    return { secret, period: TOTP.period, digits: TOTP.digits, algorithm: TOTP.algorithm }
  }

  /** Confirms a pending enrolment with a code: the new recovery codes, or null (wrong code, or nothing pending). */
  async confirm (userId: string, code: string): Promise<string[] | null> {
    const r = await this.#record(userId)
    if (r === null || r.rec.confirmed) return null
    const secret = this.#secret(userId, r.rec)
    if (secret === null || !(await this.#accept(userId, secret, code))) return null
    const { required: _, operator: _o, ...rest } = r.rec
    if (!(await this.c.storage.mfa.swapTotp(
      userId, r.stored, JSON.stringify({ ...rest, confirmed: true })
    ))) return null
    return await this.#newRecoveryCodes(userId)
  }

  /** The code matches within the drift and its step was not used yet (marked now, on every replica). */
  async #accept (userId: string, secret: string, code: string): Promise<boolean> {
    const step = matchTotp(secret, code, this.c.storage.now(), TOTP_DRIFT)
    if (step === null) return false
    return await this.c.storage.limits.markOnce('totp', this.c.keys.lookup(`totp:${userId}:${step}`), USED_TTL)
  }

  /**
   * A second factor for a signed-in password: a TOTP code (6 digits) of a
   * confirmed factor, accepted once, or one of the recovery codes (used up).
   * null: neither.
   */
  async verify (userId: string, code: string): Promise<SecondFactorResult> {
    const r = await this.#record(userId)
    if (r === null || !r.rec.confirmed) return null
    const c = code.trim()
    if (/^[0-9]{6}$/.test(c)) {
      const secret = this.#secret(userId, r.rec)
      return secret !== null && (await this.#accept(userId, secret, c)) ? 'otp' : null
    }
    const canonical = normalizeRecoveryCode(c)
    if (canonical.length !== 10) return null
    // under this key and every key the store was rotated away from (the hashes were written under one of them)
    for (const h of new Set(this.c.keys.lookups(`recovery:${userId}:${canonical}`))) {
      if (await this.c.storage.mfa.takeRecoveryCode(userId, h)) return 'recovery'
    }
    return null
  }

  /** Ten new recovery codes replace the old ones; null when no confirmed factor. */
  async regenerate (userId: string): Promise<string[] | null> {
    const r = await this.#record(userId)
    if (r === null || !r.rec.confirmed) return null
    return await this.#newRecoveryCodes(userId)
  }

  async #newRecoveryCodes (userId: string): Promise<string[]> {
    const codes = Array.from({ length: RECOVERY_CODES }, () => newRecoveryCode())
    await this.c.storage.mfa.setRecoveryCodes(userId, codes.map((x) => this.c.keys.lookup(`recovery:${userId}:${normalizeRecoveryCode(x)}`)))
    return codes
  }

  /** Removes the factor, the recovery codes, the passkeys (and a requirement); false when there was nothing. */
  async reset (userId: string): Promise<boolean> {
    const passkeys = await this.c.storage.passkeys.deleteAll(userId)
    return (await this.c.storage.mfa.deleteAll(userId)) || passkeys > 0
  }

  /**
   * Requires the user to enrol at their next sign-in (whatever
   * auth.mfa.required says); false: already enrolled or required.
   */
  async require (userId: string): Promise<boolean> {
    const r = await this.#record(userId)
    if (r !== null && (r.rec.confirmed || r.rec.required === true)) return false
    if ((await this.c.storage.passkeys.list(userId)).length > 0) return false
    if (r === null) {
      await this.c.storage.mfa.putTotp(
        userId, JSON.stringify({ confirmed: false, required: true } satisfies TotpRecord)
      )
      return true
    }
    return await this.c.storage.mfa.swapTotp(userId, r.stored, JSON.stringify({ ...r.rec, required: true }))
  }
}

/**
 * What a sign-in was made with, as RFC 8176 `amr` values: `pwd` the password,
 * `otp` a one-time password (TOTP, or a recovery code), `hwk` a passkey
 * bound to its device, `swk` a synced passkey. Sessions and bearer tokens
 * keep theirs (records written before they were kept read as `['pwd']`).
 */
export type Factor = 'pwd' | 'otp' | 'hwk' | 'swk'

/** What a session or bearer token was obtained with, when not stated: the password alone. */
export const PASSWORD_ONLY: readonly Factor[] = Object.freeze(['pwd'])

/**
 * Two factors: a password and a second one, or a passkey alone (possession and the authenticator's user verification).
 */
export function isTwoFactor (factors: readonly Factor[]): boolean {
  return factors.includes('hwk') || factors.includes('swk') || (factors.includes('pwd') && factors.includes('otp'))
}

/** A bearer token's user and the factors it was obtained with (store.bearerTokens.consume and read). */
export interface BearerGrant {
  user_id: string
  factors: readonly Factor[]
}

/** The password alone: stored as no factors at all (what records written before factors were kept say). */
export function samePasswordOnly (factors: readonly Factor[]): boolean {
  return factors.length === 1 && factors[0] === 'pwd'
}

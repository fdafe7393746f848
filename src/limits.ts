/**
 * Fixed limits (not configurable); the error catalogue and the OpenAPI document state those of the account endpoints.
 */

/** Access keys one user may hold at once. */
export const MAX_ACCESS_KEYS = 10
/** A browser session this young (since its login) may create permanent credentials without the password again. */
export const FRESH_LOGIN_MS = 5 * 60_000
/** The shortest password a user may set (every way of setting one). */
export const MIN_PASSWORD = 8
/** How long a password-reset link (`sidegate user reset-link`) is valid. */
export const RESET_LINK_MINUTES = 60
/**
 * Codes one pending sign-in step (the cookie after the password) takes:
 * the next try, even a right code, finds it spent (docs/mfa.md).
 */
export const MFA_PENDING_TRIES = 5
/**
 * Passkey assertions refused before their signature verified, per credential id within
 * auth.lockout.window: beyond it they are 429 too_many_attempts (a valid one still passes: the
 * signature is checked first).
 */
export const PASSKEY_CREDENTIAL_FAILURES = 100
/** Characters of an access key's name. */
export const MAX_KEY_NAME = 128
/** Entries of an access key's IP allow-list. */
export const MAX_KEY_ALLOW_IPS = 64
/**
 * An access key's last use is written at most this often (per
 * process and across replicas): auth.keys.disable_after reads it.
 */
export const LAST_USED_EVERY_MS = 60_000

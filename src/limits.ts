/** Fixed limits of the account endpoints (not configurable); the error catalogue and the OpenAPI document state them. */

/** Access keys one user may hold at once. */
export const MAX_ACCESS_KEYS = 10
/** A browser session this young (since its login) may create permanent credentials without the password again. */
export const FRESH_LOGIN_MS = 5 * 60_000

/**
 * The text form of a rate limit, `<requests>/<window>` (gateway.yml,
 * `sidegate limit set`). No imports: config validation uses it.
 */

/** `limit` requests per `window` seconds (the store's RateLimitPolicy). */
export interface Policy { limit: number, window: number }

export const MAX_LIMIT = 100_000
export const MAX_WINDOW = 86_400
const UNIT: Record<string, number> = { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }
const SPEC = /^\s*(\d{1,7})\s*\/\s*(\d{0,6})\s*([smhd]?)\s*$/

/** `100/60s`, `100/60`, `5/s`, `1000/1h` → a policy, or null (limit 1 to 100000, window 1 s to 1 day). */
export function parsePolicy (spec: string): Policy | null {
  const m = SPEC.exec(spec)
  if (m === null) return null
  const limit = Number(m[1])
  const window = (m[2] === '' ? 1 : Number(m[2])) * UNIT[m[3]]
  if (limit < 1 || limit > MAX_LIMIT || window < 1 || window > MAX_WINDOW) return null
  return { limit, window }
}

export const formatPolicy = (p: Policy): string => `${p.limit}/${p.window}s`

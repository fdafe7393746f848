/**
 * What a new access key may have besides its secret: an
 * expiry, a name and an IP allow-list. One parser for both ways of making a
 * key: `sidegate key create --expires --name --allow-ip` (src/cli/index.ts) and the
 * self-service endpoint and page (src/routes/account.ts). A value that does
 * not parse is a KeyOptionError naming the option; each caller words it its
 * own way (a usage error, a 400 bad_request).
 */
import { trustedProxies } from '../pipeline/headers.js'
import { hasControl, NO_CONTROLS } from '../text.js'
import { MAX_KEY_ALLOW_IPS, MAX_KEY_NAME } from '../limits.js'
import type { NewKeyOptions } from '../store/types.js'

export type KeyOption = 'expires' | 'name' | 'allow_ips'

export class KeyOptionError extends Error {
  readonly option: KeyOption
  constructor (option: KeyOption, message: string) {
    super(message)
    this.name = 'KeyOptionError'
    this.option = option
  }
}

const DAY_MS = 86_400_000

/** `90d` (from now) or `2027-01-31` (through that day, UTC) → the ISO time the key stops working. */
export function parseExpiry (v: string, now = Date.now()): string {
  if (v.length > 32) throw new KeyOptionError('expires', 'neither a number of days (90d) nor a date (2027-01-31)')
  const days = /^(\d{1,5})d$/.exec(v)
  if (days !== null && Number(days[1]) >= 1) return new Date(now + Number(days[1]) * DAY_MS).toISOString()
  const day = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v)
  if (day !== null) {
    const start = Date.UTC(Number(day[1]), Number(day[2]) - 1, Number(day[3]))
    if (new Date(start).toISOString().slice(0, 10) === v) {
      const end = start + DAY_MS
      if (end <= now) throw new KeyOptionError('expires', `${v} is in the past`)
      return new Date(end).toISOString()
    }
  }
  throw new KeyOptionError('expires', `${JSON.stringify(v)} is neither a number of days (90d) nor a date (2027-01-31)`)
}

/** Addresses and CIDR ranges, IPv4 or IPv6, as server.trusted_proxies reads them; trimmed. */
export function parseAllowIps (list: readonly string[]): string[] {
  const out = list.map((v) => v.trim())
  if (out.length > MAX_KEY_ALLOW_IPS) throw new KeyOptionError('allow_ips', `at most ${MAX_KEY_ALLOW_IPS} entries`)
  const bad = out.filter((v) => { try { trustedProxies([v]); return false } catch { return true } })
  if (bad.length > 0) throw new KeyOptionError('allow_ips', `each must be an IP address or a CIDR range (10.0.0.0/8, fd00::/8), got ${bad.map((x) => JSON.stringify(x)).join(', ')}`)
  return out
}

export function checkKeyName (v: string): string {
  if (v.length > MAX_KEY_NAME) throw new KeyOptionError('name', `at most ${MAX_KEY_NAME} characters`)
  if (hasControl(v)) throw new KeyOptionError('name', NO_CONTROLS)
  return v
}

/** The options as given (each absent or a string; the allow-list a list) → what the store keeps. */
export function keyOptions (
  o: { expires?: string, name?: string, allowIps?: readonly string[] }, now = Date.now()
): NewKeyOptions {
  const out: NewKeyOptions = {}
  if (o.expires !== undefined) out.date_expired = parseExpiry(o.expires, now)
  if (o.name !== undefined && o.name !== '') out.name = checkKeyName(o.name)
  if (o.allowIps !== undefined && o.allowIps.length > 0) out.allow_ips = parseAllowIps(o.allowIps)
  return out
}

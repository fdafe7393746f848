/**
 * A client address as a counting unit: an IPv4 address stands for itself, an
 * IPv6 address for its /prefix network (one host is usually given a whole
 * /64, so counting single IPv6 addresses would give it 2^64 tries). Anything
 * else (an unparseable X-Forwarded-For hop kept as the client) is itself.
 */
import { isIP } from 'node:net'

/**
 * IPv4-mapped IPv6 (`::ffff:10.0.0.1`, how a dual-stack listener on `::`
 * reports IPv4 peers) → plain IPv4; anything else as it is. Every use of a
 * client address (trusted_proxies, access-rule networks, lockouts and rate
 * limits, logs, X-Forwarded-For) sees it through this.
 */
export function unmapIp (ip: string): string {
  // the common case (a plain IPv4 or IPv6 peer) without allocating a lowercase copy
  if (ip.length < 8 || ip.charCodeAt(0) !== 58 /* : */) return ip
  return ip.slice(0, 7).toLowerCase() === '::ffff:' && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip
}

export function addressBucket (ip: string, v6prefix: number): string {
  if (isIP(ip) !== 6 || v6prefix >= 128) return ip
  const groups = expandV6(ip)
  if (groups === null) return ip
  let bits = v6prefix
  const out: string[] = []
  for (const g of groups) {
    const keep = Math.max(0, Math.min(16, bits))
    bits -= keep
    out.push((keep === 0 ? 0 : g & (0xffff << (16 - keep)) & 0xffff).toString(16))
  }
  return `${out.join(':')}/${v6prefix}`
}

/** An IPv6 address (zone dropped, embedded IPv4 allowed) → its eight 16-bit groups. */
function expandV6 (ip: string): number[] | null {
  let s = ip.toLowerCase()
  const zone = s.indexOf('%')
  if (zone >= 0) s = s.slice(0, zone)
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s)
  if (dotted !== null) {
    const [a, b, c, d] = dotted[1].split('.').map(Number)
    s = s.slice(0, dotted.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = s.split('::')
  const h = head === '' ? [] : head.split(':')
  const t = tail === undefined ? [] : tail === '' ? [] : tail.split(':')
  const fill = 8 - h.length - t.length
  if (tail === undefined ? h.length !== 8 : fill < 0) return null
  return [...h, ...Array(tail === undefined ? 0 : fill).fill('0'), ...t].map((x) => parseInt(x, 16))
}

/**
 * The networks a client address belongs to, for the check gate's fair queuing
 * (auth.password_checks): an IPv4 address's /n for each of `v4` and an IPv6
 * address's /n for each of `v6`, in the order given (narrowest first).
 * Anything else (not an IP address) belongs to none.
 */
export function prefixBuckets (ip: string, v4: readonly number[], v6: readonly number[]): string[] {
  const family = isIP(ip)
  if (family === 6) return v6.map((n) => addressBucket(ip, n))
  if (family !== 4) return []
  const parts = ip.split('.').map(Number)
  const n32 = ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) >>> 0
  return v4.map((n) => {
    const masked = n <= 0 ? 0 : (n32 & (0xffffffff << (32 - Math.min(n, 32)))) >>> 0
    return `${masked >>> 24}.${(masked >>> 16) & 255}.${(masked >>> 8) & 255}.${masked & 255}/${n}`
  })
}

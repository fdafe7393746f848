/**
 * Validates a parsed gateway.yml against ./schema.ts: fills in defaults,
 * accepts the strings environment variables give for numbers and booleans,
 * and reports every problem at once, each naming its dotted key, in words a
 * person can act on (`must be a whole number from 0 to 65535, got 99999`).
 * Secrets are never shown; passwords in URLs are masked.
 */
import { isIP } from 'node:net'
import { parsePolicy } from '../auth/rate-limit-policy.js'
import type { TSchema } from '@sinclair/typebox'
import { maskUrl } from '../http/mask.js'
import { globProblem, hostProblem, subjectProblem } from '../access/syntax.js'
import { domainProblem, portalProblem } from '../http/cookie-domains.js'
import { ISSUER_ALGORITHMS } from './issuers.js'

export interface Problem { key: string, message: string }

type Check = (v: string) => string | null

/** A host:port entry: `host`, `host:port`, `[v6]` or `[v6]:port`. */
export const HOST_PORT = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]]+))(?::(\d{1,5}))?$/

function urlCheck (protocols: string[]): Check {
  return (v) => {
    try {
      return protocols.includes(new URL(v).protocol) ? null : `must be a ${protocols.join(' or ')} URL`
    } catch { return 'must be a URL' }
  }
}

/** An address (`10.0.0.7`, `::1`) or a CIDR range (`10.0.0.0/8`, `fd00::/8`). */
export function isIpOrCidr (raw: string): boolean {
  const [addr, bits, ...rest] = raw.trim().split('/')
  const family = isIP(addr)
  if (family === 0 || rest.length > 0) return false
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128))
}

/** Value checks named by a schema node's `check`; each returns why the value is wrong, or null. */
export const CHECKS: Record<string, Check> = {
  httpUrl: urlCheck(['http:', 'https:']),
  redisUrl: urlCheck(['redis:', 'rediss:']),
  abbrev: (v) => /^[A-Za-z][A-Za-z0-9]{0,15}$/.test(v) ? null : 'must be 1 to 16 letters or digits, starting with a letter',
  absolutePath: (v) => v.startsWith('/') ? null : 'each entry must start with "/"',
  hostPort: (v) => {
    const m = HOST_PORT.exec(v.trim())
    const port = m?.[3] === undefined ? 1 : Number(m[3])
    return m === null || port < 1 || port > 65535 ? 'each entry must be host:port' : null
  },
  groupName: (v) => /^[\w.-]{1,64}$/.test(v) ? null : 'must be 1 to 64 letters, digits and _ . -',
  prefix: (v) => /^[\w:.{}-]{1,64}$/.test(v) ? null : 'must be 1 to 64 characters of letters, digits and _ : . { } -',
  secretKey: (v) => v.length >= 32 ? null : 'must be at least 32 characters (use `openssl rand -base64 48`)',
  signatureAlgorithm: (v) => ['hmac-sha1', 'hmac-sha256', 'hmac-sha512'].includes(v) ? null : 'each entry must be hmac-sha1, hmac-sha256 or hmac-sha512',
  ratePolicy: (v) => parsePolicy(v) !== null ? null : 'must be <requests>/<window>, e.g. "100/60s", "5/s", "1000/1h" (1 to 100000 requests, 1 s to 1 day)',
  ipOrCidr: (v) => isIpOrCidr(v) ? null : 'each entry must be an IP address or a CIDR range (10.0.0.0/8, fd00::/8)',
  accessGlob: globProblem,
  accessSubject: subjectProblem,
  accessHost: hostProblem,
  httpMethod: (v) => /^[A-Za-z]{1,20}$/.test(v) ? null : 'each entry must be an HTTP method (GET, POST, …)',
  cookieDomain: (v) => domainProblem(v.trim().toLowerCase()),
  portalUrl: (v) => portalProblem(v.trim()),
  providerId: (v) => /^[a-z0-9][a-z0-9_-]{0,63}$/.test(v) ? null : 'must be 1 to 64 lowercase letters, digits, _ and -, starting with a letter or digit',
  orgId: (v) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v) ? null : 'must be an org id (a UUID: sidegate org list)',
  ldapUrl: (v) => urlCheck(['ldap:', 'ldaps:'])(v) ?? (new URL(v).pathname.length > 1 ? 'must name a server only (no DN after it)' : null),
  issuerAlgorithm: (v) => (ISSUER_ALGORITHMS as readonly string[]).includes(v) ? null : `each entry must be one of ${ISSUER_ALGORITHMS.join(', ')}`,
  issuerUrl: (v) => urlCheck(['https:', 'http:'])(v) ?? (new URL(v).protocol === 'https:' || isLoopback(new URL(v).hostname) ? null : 'must be https (http only on localhost)')
}

function isLoopback (host: string): boolean {
  return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host)
}

/** What a check keeps of a valid value (the rest keep it as written). */
const NORMALIZE: Record<string, (v: string) => string> = {
  ipOrCidr: (v) => v.trim(),
  httpMethod: (v) => v.toUpperCase(),
  cookieDomain: (v) => v.trim().toLowerCase(),
  // an origin: the login path is appended to it
  portalUrl: (v) => new URL(v.trim()).origin,
  orgId: (v) => v.toLowerCase()
}

/** A value as an error message may show it: secrets hidden, URL passwords masked. */
function shown (node: TSchema, v: unknown): string {
  if (node.secret === true) return '(hidden)'
  if (node.url === true && typeof v === 'string') return JSON.stringify(maskUrl(v))
  return JSON.stringify(v)
}

const isMapping = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Returns the document with defaults filled in, and every problem found. */
export function validate (schema: TSchema, doc: unknown): { value: any, problems: Problem[] } {
  const problems: Problem[] = []
  const value = walk(schema, doc, '', problems)
  return { value, problems }
}

function walk (node: TSchema, raw: unknown, key: string, out: Problem[]): unknown {
  const fail = (message: string): undefined => { out.push({ key, message }); return undefined }
  const got = (v: unknown): string => node.secret === true && node.check !== undefined && typeof v === 'string' ? '' : `, got ${shown(node, v)}`

  if (node.type === 'object') {
    if (raw === undefined || raw === null) raw = {}
    if (!isMapping(raw)) return fail('must be a mapping')
    const props = node.properties as Record<string, TSchema>
    const known = Object.keys(props)
    for (const k of Object.keys(raw)) {
      if (!(k in props)) out.push({ key: key === '' ? k : `${key}.${k}`, message: `unknown key (known: ${known.join(', ')})` })
    }
    const res: Record<string, unknown> = {}
    for (const k of known) res[k] = walk(props[k], raw[k], key === '' ? k : `${key}.${k}`, out)
    return res
  }

  if (node.optional === true) {
    if (raw === undefined || raw === null || raw === '') return null
    if (typeof raw !== 'string') return fail(`must be a string${got(raw)}`)
    return checked(node, raw, fail, got)
  }

  const v = raw ?? structuredClone(node.default)
  if (node.anyOf !== undefined && (node.anyOf as TSchema[]).some((x) => x.type === 'integer')) {
    // a whole number in a range, or one of some words (server.workers: 1 to 256 or "auto")
    const range = (node.anyOf as TSchema[]).find((x) => x.type === 'integer')!
    const words = (node.anyOf as TSchema[]).flatMap((x) => x.const === undefined ? [] : [x.const as string])
    if (typeof v === 'string' && words.includes(v.trim())) return v.trim()
    const n = typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v
    if (typeof n === 'number' && Number.isInteger(n) && n >= range.minimum && n <= range.maximum) return n
    return fail(`must be a whole number from ${range.minimum as number} to ${range.maximum as number} or ${words.map((w) => JSON.stringify(w)).join(' or ')}${got(v)}`)
  }
  if (node.anyOf !== undefined) {
    const values = (node.anyOf as TSchema[]).map((x) => x.const as string)
    return values.includes(v as string) ? v : fail(`must be one of ${values.join(', ')}${got(v)}`)
  }
  switch (node.type) {
    case 'integer': {
      const n = typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v
      if (typeof n !== 'number' || !Number.isInteger(n) || n < node.minimum || n > node.maximum) {
        return fail(`must be a whole number from ${node.minimum as number} to ${node.maximum as number}${got(v)}`)
      }
      return n
    }
    case 'boolean':
      if (v === true || v === 'true') return true
      if (v === false || v === 'false') return false
      return fail(`must be true or false${got(v)}`)
    case 'string':
      if (typeof v !== 'string') return fail(`must be a string${got(v)}`)
      return checked(node, v, fail, got)
    case 'array': {
      const item = node.items as TSchema
      if (item.type === 'object') {
        // a list of mappings (access.rules): each one walked as a section, its keys named `key[i].name`
        if (!Array.isArray(v)) return fail(`must be a list${got(v)}`)
        return v.map((x, i) => walk(item, x ?? undefined, `${key}[${i}]`, out))
      }
      if (item.type === 'integer') {
        // a list of whole numbers in a range (auth.password_checks.ipv6_prefixes)
        const ns = Array.isArray(v) ? v.map((x) => typeof x === 'string' && /^\d+$/.test(x.trim()) ? Number(x) : x) : null
        if (ns === null ||
          ns.some((n) => typeof n !== 'number' || !Number.isInteger(n) || n < item.minimum || n > item.maximum)) {
          return fail(`must be a list of whole numbers from ${item.minimum as number} to ${item.maximum as number}${got(v)}`)
        }
        return ns
      }
      if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) return fail(`must be a list of strings${got(v)}`)
      const res: string[] = []
      for (const x of v as string[]) {
        const y = checked(item, x, fail, (w) => `, got ${JSON.stringify(w)}`)
        if (y === undefined) return undefined
        res.push(y)
      }
      return res
    }
  }
  throw new Error(`config schema: no rule for the node at ${key}`)
}

function checked (
  node: TSchema, v: string, fail: (m: string) => undefined, got: (v: unknown) => string
): string | undefined {
  const name = node.check as string | undefined
  if (name === undefined) return v
  const why = CHECKS[name](v)
  if (why !== null) return fail(`${why}${got(v)}`)
  return NORMALIZE[name]?.(v) ?? v
}

/**
 * `Authorization: Signature keyId=…,algorithm="hmac-sha256",headers=…,signature=…`:
 * access-key HTTP signatures (draft-cavage, as JumpServer verifies them). The
 * string to sign is one `name: value` line per declared header, joined by
 * "\n"; `(request-target)` is `<lowercase method> <path and query as sent>`.
 * Algorithms hmac-sha256 and hmac-sha512, hmac-sha1 only when listed in
 * auth.signature.algorithms (JumpServer accepts all three). A keyId is the
 * access key's UUID in any case, with or without hyphens.
 */
import { createHmac } from 'node:crypto'
import { E, GatewayError, mapResult, refusalOf, type Result } from '../errors.js'
import type { AccessKey, Factor, RateLimitPolicy, Store } from '../store/types.js'
import { parseDateHeader } from '../http/date.js'
import { isUuid } from '../http/uuid.js'
import { signedDigests, type ExpectedDigest } from './digest.js'
import { parseSignatureParams } from './parse.js'
import type { Authenticator, Claim, ClaimBase, Credentials } from './types.js'

/** A signed request's claim: the key and what the pipeline checks for it. */
export interface AccessKeyClaim extends ClaimBase<'access_key'> {
  factors?: undefined
  /** the key's id (the identity token's akid) */
  keyId: string
  /** the factors of the owner's sign-in that made it (AccessKey.factors); absent for an operator's key */
  keyFactors?: readonly Factor[]
  /** its own rate limit (src/auth/rate-limit.ts) */
  keyLimit?: RateLimitPolicy
  /** the key's allow-list (addresses, CIDR ranges): checked against the client address by the pipeline */
  keyAllowIps?: string[]
  /** a signature that covers Digest or Content-Digest: what the body must hash to (src/auth/digest.ts) */
  digests?: ExpectedDigest[]
}

declare module './types.js' {
  interface ClaimsByMethod { access_key: AccessKeyClaim }
}
import { equalBytes } from '../crypto.js'

/** The HMAC algorithms a signature may name, and the length of their MACs. */
export const ALGORITHMS = {
  'hmac-sha1': { hash: 'sha1', bytes: 20 },
  'hmac-sha256': { hash: 'sha256', bytes: 32 },
  'hmac-sha512': { hash: 'sha512', bytes: 64 }
} as const
export type Algorithm = keyof typeof ALGORITHMS

export interface SignatureOptions {
  /** seconds the signed Date may be off; 0: no freshness check (as JumpServer) */
  clockSkew: number
  /** accepted algorithms (auth.signature.algorithms) */
  algorithms: readonly Algorithm[]
  requiredHeaders: string[]
  replayCache: boolean
  /**
   * with replayCache: seconds after its first sighting in which
   * the same GET or HEAD signature is accepted again (0: once)
   */
  replayGrace?: number
  /**
   * seconds a signed Date stays accepted after its first (fresh)
   * sighting for the key, once it is older than clockSkew (0: off)
   */
  dateWindow?: number
  /** a signed request with a body must sign Digest or Content-Digest */
  requireDigest?: boolean
  now?: () => number
}

export function stringToSign (c: Pick<Credentials, 'method' | 'url' | 'headers'>, headers: readonly string[]): string {
  return headers.map((h) => {
    if (h === '(request-target)') return `(request-target): ${c.method.toLowerCase()} ${c.url}`
    // own headers only: `constructor` or `__proto__` in the declared list must not reach Object.prototype
    const v = Object.hasOwn(c.headers, h) ? c.headers[h] : undefined
    if (typeof v !== 'string' && !Array.isArray(v)) throw E.invalidSignature()
    return `${h}: ${(Array.isArray(v) ? v.join(', ') : v).trim()}`
  }).join('\n')
}

export function sign (secret: string, text: string, algorithm: Algorithm = 'hmac-sha256'): string {
  return createHmac(ALGORITHMS[algorithm].hash, secret).update(text).digest('base64')
}

export class SignatureAuthenticator implements Authenticator {
  readonly method = 'access_key' as const
  readonly #now: () => number
  readonly #algorithms: ReadonlySet<string>

  /** seconds of auth.signature.date_window; 0 without a freshness check */
  readonly #window: number
  /** `headers` parameters already checked → their declared lists */
  readonly #lists = new Map<string, readonly string[]>()
  /** the replay cache or a Date window: check asks the store on every request */
  readonly #needsStore: boolean

  constructor (private readonly store: Store, private readonly opts: SignatureOptions) {
    this.#now = opts.now ?? Date.now
    this.#algorithms = new Set(opts.algorithms)
    this.#window = opts.clockSkew > 0 ? opts.dateWindow ?? 0 : 0
    this.#needsStore = opts.replayCache || this.#window > 0
  }

  claims (c: Credentials): boolean { return c.authorization?.scheme === 'signature' }

  /**
   * At once when the key is cached and nothing needs the store (no replay
   * cache, no Date window); else as the store answers. Every check in the
   * same order either way, the refusals returned.
   */
  check (c: Credentials): Result<Claim> {
    let p: Parsed
    try {
      p = this.#parse(c)
    } catch (err) {
      return refusalOf(err)
    }
    return mapResult(this.store.accessKeys.lookup(p.id), this.#decide, p)
  }

  readonly #decide = (found: { key: AccessKey, secret: string } | null, p: Parsed): Result<Claim> => {
    if (found === null) return E.invalidSignature()
    const c = p.c
    let digests: ExpectedDigest[] | null
    try {
      digests = this.#verify(c, p, found)
    } catch (err) {
      return refusalOf(err)
    }
    return this.#needsStore ? this.#marked(c, p, found, digests) : this.#claim(found, digests)
  }

  /** The Date window and the replay cache: what the store must be asked on every request. */
  async #marked (
    c: Credentials, p: Parsed, found: { key: AccessKey, secret: string }, digests: ExpectedDigest[] | null
  ): Promise<Claim | GatewayError> {
    const window = this.#window
    if (window > 0) {
      // a fresh Date opens its window for this key (at its first sighting); a stale one needs that window still open
      const instant = p.stale ?? signedInstant(c.headers, p.declared)
      if (instant !== null) {
        const seen = await this.store.limits.markSeen('sig-date', `${found.key.id}:${instant}`, window, p.stale === null)
        if (p.stale !== null && seen === null) return E.signatureExpired()
      }
    }
    // one use per key and MAC: the stored key id (not the keyId as spelled) and the decoded bytes,
    // so a case-changed keyId or another spelling of the same MAC is the same signature
    if (this.opts.replayCache) {
      const mark = `${found.key.id}:${p.mac.toString('hex')}`
      // as long as the Date it carries can be accepted
      const ttl = this.opts.clockSkew > 0
        ? Math.max(this.opts.clockSkew * 2, this.opts.clockSkew + window)
        : REPLAY_WITHOUT_SKEW
      const grace = this.opts.replayGrace ?? 0
      if (grace > 0 && (c.method === 'GET' || c.method === 'HEAD')) {
        // an idempotent read sent again at once (a Date's one-second resolution makes it the same signature)
        const since = await this.store.limits.markSeen('sig', mark, ttl)
        if (since !== null && since > grace * 1000) return E.signatureReplayed()
      } else if (!(await this.store.limits.markOnce('sig', mark, ttl))) {
        return E.signatureReplayed()
      }
    }
    return this.#claim(found, digests)
  }

  /**
   * Everything that needs no key: the parameters, the Date's freshness, the MAC's and keyId's form (before any lookup).
   */
  #parse (c: Credentials): Parsed {
    const p = parseSignatureParams(c.authorization!.credentials)
    const keyId = p.get('keyid')
    const signature = p.get('signature')
    if (!keyId || !signature) throw E.malformedAuthorization('keyId and signature are required')
    const algorithm = (p.get('algorithm') ?? 'hmac-sha256').toLowerCase()
    if (!this.#algorithms.has(algorithm)) throw E.malformedAuthorization(`algorithm must be one of ${[...this.#algorithms].join(', ')}`)
    const alg = ALGORITHMS[algorithm as Algorithm]
    const declared = this.#declared(p.get('headers') ?? 'date')
    // with a Date window, a Date past the skew is decided after the MAC: by whether this key sent it while it was fresh
    let stale: number | null = null
    try {
      checkSignedDate(c.headers, declared, this.#now(), this.opts.clockSkew)
    } catch (err) {
      stale = this.#window > 0 && err instanceof GatewayError && err.code === 'signature_expired'
        ? signedInstant(c.headers, declared)
        : null
      if (stale === null) throw err
    }
    // the MAC as sent: the algorithm's length in canonical Base64 only, checked before any store lookup
    const mac = decodeMac(signature, alg.bytes)
    const id = normalizeKeyId(keyId)
    if (id === null || mac === null) throw E.invalidSignature()
    return { c, declared, hash: alg.hash, mac, id, stale }
  }

  /**
   * The `headers` parameter → the declared list, checked (at most 32, none
   * twice, the required ones present). A client sends the same list every
   * time: the lists that passed are remembered (DECLARED_MAX, then all
   * forgotten), as read-only arrays.
   */
  #declared (param: string): readonly string[] {
    const known = this.#lists.get(param)
    if (known !== undefined) return known
    const declared = param.toLowerCase().split(/\s+/).filter(Boolean)
    if (declared.length > 32 || new Set(declared).size !== declared.length) throw E.malformedAuthorization('bad headers list')
    for (const h of this.opts.requiredHeaders) {
      // x-date stands in for date (clients that cannot set Date, as browsers)
      if (!declared.includes(h) && !(h === 'date' && declared.includes('x-date'))) throw E.malformedAuthorization(`headers must include ${h}`)
    }
    if (this.#lists.size >= DECLARED_MAX) this.#lists.clear()
    this.#lists.set(param, Object.freeze(declared))
    return declared
  }

  /** The MAC, then what only the key's holder may learn (disabled, expired), then the digests it covers. */
  #verify (c: Credentials, p: Parsed, found: { key: AccessKey, secret: string }): ExpectedDigest[] | null {
    if (!macMatches(p.hash, found.secret, stringToSign(c, p.declared), p.mac)) throw E.invalidSignature()
    // after the MAC: only the key's holder learns that it is disabled or expired
    if (!found.key.is_active) throw E.keyDisabled()
    if (found.key.date_expired !== undefined &&
      !(this.#now() < Date.parse(found.key.date_expired))) throw E.keyExpired()
    // only now: a digest header proves something only when the MAC covers it
    return signedDigests(c.headers, p.declared, this.opts.requireDigest === true)
  }

  #claim (found: { key: AccessKey }, digests: ExpectedDigest[] | null): AccessKeyClaim {
    // its last use is recorded by the pipeline, once the key's
    // allow-list admits the client (src/pipeline/steps.ts, keyIp)
    const claim: AccessKeyClaim = { userId: found.key.user_id, method: this.method, keyId: found.key.id }
    if (found.key.rate_limit != null) claim.keyLimit = found.key.rate_limit
    if (found.key.allow_ips !== undefined) claim.keyAllowIps = found.key.allow_ips
    if (found.key.factors !== undefined) claim.keyFactors = found.key.factors
    if (digests !== null) claim.digests = digests
    return claim
  }
}

/** `headers` parameters remembered per authenticator (a client sends one or a few) */
const DECLARED_MAX = 256

/** A signature's parameters as #parse checked them. */
interface Parsed {
  /** the credentials parsed */
  c: Credentials
  declared: readonly string[]
  hash: string
  mac: Buffer
  id: string
  /** with a Date window: the instant of a Date past the skew (decided after the MAC), else null */
  stale: number | null
}

/**
 * The freshness rule over whichever of `date` and `x-date` the signature
 * lists: each one listed must be a valid HTTP date within `skew` seconds of
 * `now`, and when both are listed they must name the same instant (else 401
 * signature_expired). One that is sent but not listed is not looked at: it is
 * not covered by the MAC, so it proves nothing. Any RFC 9110 or RFC 5322 form
 * and zone (parseDateHeader). `skew` 0: nothing is checked (as JumpServer).
 */
export function checkSignedDate (
  headers: Credentials['headers'], declared: readonly string[], now: number, skew: number
): void {
  if (skew === 0) return
  let seen: number | null = null
  for (const name of ['date', 'x-date'] as const) {
    if (!declared.includes(name)) continue
    const t = parseDateHeader(firstValue(headers[name]))
    if (t === null || Math.abs(now - t) > skew * 1000) throw E.signatureExpired()
    if (seen !== null && seen !== t) throw E.signatureExpired('The signed Date and X-Date headers differ.')
    seen = t
  }
}

/** The instant the signed Date (else X-Date) names, or null when neither is signed or it does not parse. */
export function signedInstant (headers: Credentials['headers'], declared: readonly string[]): number | null {
  for (const name of ['date', 'x-date'] as const) {
    if (declared.includes(name)) return parseDateHeader(firstValue(headers[name]))
  }
  return null
}

/** seconds a replay mark lasts when no freshness is checked (clock_skew 0) */
export const REPLAY_WITHOUT_SKEW = 86400

/**
 * A signature as sent → its bytes, or null unless it is the canonical Base64
 * of `bytes` bytes (32: 43 characters and one `=`, the 2 spare bits of the
 * last character zero). Decoding skips what is not Base64 and ignores those
 * bits, so only the canonical spelling encodes back to what was sent: without
 * this one MAC would have four spellings (and four entries in the replay cache).
 */
export function decodeMac (sent: string, bytes = 32): Buffer | null {
  const mac = Buffer.from(sent, 'base64')
  return mac.length === bytes && mac.toString('base64') === sent ? mac : null
}

const HEX32 = /^[0-9a-f]{32}$/

/**
 * A keyId → the key's UUID (lowercase, hyphenated): any case,
 * hyphens or none (as Django's UUIDField reads it); else null.
 */
export function normalizeKeyId (keyId: string): string | null {
  const v = keyId.toLowerCase()
  if (isUuid(v)) return v
  if (!HEX32.test(v)) return null
  return `${v.slice(0, 8)}-${v.slice(8, 12)}-${v.slice(12, 16)}-${v.slice(16, 20)}-${v.slice(20)}`
}

/**
 * Constant-time comparison of the expected MAC with the one sent. Only the
 * (public) format of what the client sent was checked before (decodeMac), so
 * nothing about the expected value leaks.
 */
function macMatches (hash: string, secret: string, text: string, sent: Buffer): boolean {
  return equalBytes(createHmac(hash, secret).update(text).digest(), sent)
}

function firstValue (v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}

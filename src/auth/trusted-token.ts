/**
 * `Authorization: Bearer <JWT>` from a trusted issuer (auth.trusted_issuers,
 * docs/trusted-issuers.md): Kubernetes service-account tokens, identity
 * providers' access tokens. Claimed by shape: a Bearer value with two dots,
 * and only while an issuer is configured; sidegate's own bearer tokens have
 * none (./bearer.ts takes every other Bearer value), so neither is ever tried
 * on the other's behalf.
 *
 * A token is checked with jose against its issuer's keys (./jwks.ts): the
 * algorithm from the issuer's allow-list (never none, never HMAC), the
 * signature, iss, aud, exp and nbf with the issuer's skew, typ where set, and
 * exp - iat within max_lifetime. One seen before is decided from memory: a
 * bounded cache keyed by the SHA-256 of the token, each entry expiring with
 * the token, so a caller's repeated token costs a hash and a lookup.
 *
 * With `review: tokenreview` a verified token is then put to the Kubernetes
 * API server (./token-review.ts), and the entry lives min(exp, review_ttl):
 * the answer, a yes or a no, decides the token within it; after it the
 * token (its claim kept) is reviewed again. One review per token is asked at a
 * time; a review that could not be asked is never remembered (503).
 */
import { createHash } from 'node:crypto'
import type { JWTPayload, ProtectedHeaderParameters } from 'jose'
import { E, GatewayError, type Result } from '../errors.js'
import type { Logger } from '../observability/log.js'
import type { Store, User, UserGroup } from '../store/types.js'
import { issuerKeys, loadJose, type IssuerKeys, type IssuerSettings, type Jose } from './jwks.js'
import { reviewToken, type Review } from './token-review.js'
import type { Authenticator, ClaimBase, Credentials } from './types.js'
import { mapSubject, tokenGroups, workloadOf, type Workload } from './workload.js'

export interface TrustedTokenClaim extends ClaimBase<'trusted_token'> {
  factors?: undefined
  /** the issuer's id in auth.trusted_issuers */
  issuer: string
  /** the caller's name (subject.map) */
  subject: string
  /** as: service: the caller itself, a non-person identity (no store lookup); null: a local user's (userId) */
  service: User | null
  /** the pod and service account of a Kubernetes token */
  workload: Workload | null
  /** as: user: the groups the token names, besides the user's own */
  tokenGroups: readonly UserGroup[] | null
  /** true on the request that verified it (audited once: token.accepted); false when decided from memory */
  firstSight: boolean
}

declare module './types.js' {
  interface ClaimsByMethod { trusted_token: TrustedTokenClaim }
}

/** Bytes a token may take; a larger one is refused before it is parsed. */
export const MAX_TOKEN_BYTES = 8192
/** Tokens remembered at most (the oldest goes first). */
export const CACHE_MAX = 10_000
const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'

/** A Bearer value of a JWT's shape: three parts, two dots. */
export function jwtShaped (v: string): boolean {
  const i = v.indexOf('.')
  if (i <= 0) return false
  const j = v.indexOf('.', i + 1)
  return j > i + 1 && v.indexOf('.', j + 1) === -1
}

/**
 * A token decided: its claim, until when this decides it (its exp; with review, at most review_ttl on),
 * the token's own end, and, when the TokenReview said no, why (refused until `until`).
 */
interface Entry { claim: TrustedTokenClaim, s: IssuerSettings, until: number, exp: number, refused?: string }

// jose's refusals as the detail names them (an algorithm not allowed never reaches jose: #verify refuses it first)
const REASONS: Record<string, string> = {
  ERR_JWT_EXPIRED: 'expired',
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: 'its signature does not verify',
  ERR_JWKS_NO_MATCHING_KEY: 'no key of its issuer matches',
  ERR_JWKS_MULTIPLE_MATCHING_KEYS: 'several keys of its issuer match and it names no kid',
  ERR_JWS_INVALID: 'not a valid JWS',
  ERR_JWT_INVALID: 'not a valid JWT'
}
const FAILED = new Map([['aud', 'not for this audience'], ['nbf', 'not yet valid'], ['typ', 'wrong typ']])

function claimReason (err: { code?: string, claim?: string, reason?: string }): string {
  if (err.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') {
    // jose's reason: missing, invalid (not a number) or check_failed; iss never fails here (unknown issuers are
    // refused before jose), nor iat (no maxTokenAge: exp - iat and iat's skew are checked below)
    const failed = err.reason === 'check_failed' ? FAILED.get(err.claim ?? '') : undefined
    if (failed !== undefined) return failed
    return `its ${err.claim ?? 'claims'} ${err.reason === 'missing' ? 'is missing' : 'does not verify'}`
  }
  return REASONS[err.code ?? ''] ?? 'does not verify'
}

export class TrustedTokenAuthenticator implements Authenticator {
  readonly method = 'trusted_token' as const
  readonly #store: Store
  readonly #byIssuer: Map<string, IssuerKeys>
  readonly #cache = new Map<string, Entry>()
  readonly #max: number
  readonly #log: Logger | undefined
  /** reviews under way, by token hash: one question per token at a time */
  readonly #reviews = new Map<string, Promise<Review>>()
  /** per issuer id, why its last review could not be asked ('' : it answered): logged on each change */
  readonly #reviewFault = new Map<string, string>()
  #jose: Jose | null = null

  constructor (store: Store, issuers: readonly IssuerSettings[], o: { cacheMax?: number, log?: Logger } = {}) {
    this.#store = store
    this.#byIssuer = new Map(issuers.map((s) => [s.issuer, issuerKeys(s)]))
    this.#max = o.cacheMax ?? CACHE_MAX
    this.#log = o.log
  }

  claims (c: Credentials): boolean {
    return this.#byIssuer.size > 0 && c.authorization?.scheme === 'bearer' && jwtShaped(c.authorization.credentials)
  }

  check (c: Credentials): Result<TrustedTokenClaim> {
    const token = c.authorization!.credentials
    if (token.length > MAX_TOKEN_BYTES) return E.tokenRefused(`larger than ${MAX_TOKEN_BYTES} bytes`)
    const key = createHash('sha256').update(token).digest('base64')
    const hit = this.#cache.get(key)
    if (hit !== undefined) {
      const now = Date.now()
      if (hit.until > now) return hit.refused === undefined ? hit.claim : E.tokenRefused(hit.refused)
      this.#cache.delete(key)
      if (hit.exp <= now) return E.tokenRefused('expired')
      // review_ttl is over, the token is not: the API server is asked again (the claim stands, verified)
      return this.#decide(hit.s, token, key, hit.claim, hit.exp)
    }
    return this.#verify(token, key)
  }

  async #verify (token: string, key: string): Promise<TrustedTokenClaim | GatewayError> {
    const j = this.#jose ??= await loadJose()
    let header: ProtectedHeaderParameters
    let unverified: JWTPayload
    try {
      header = j.decodeProtectedHeader(token)
      unverified = j.decodeJwt(token)
    } catch { return E.tokenRefused('not a JWT') }
    const keys = typeof unverified.iss === 'string' ? this.#byIssuer.get(unverified.iss) : undefined
    // before any key is looked at: a token of an issuer not listed is never checked
    if (keys === undefined) return E.tokenRefused('unknown issuer')
    const s = keys.s
    if (typeof header.alg !== 'string' || !s.algorithms.includes(header.alg)) return E.tokenRefused('its algorithm is not accepted')
    if (s.require_kid && typeof header.kid !== 'string') return E.tokenRefused('it names no kid')
    // the first fetch still under way (a token right after the start): wait for it
    if (keys.getKey === null && keys.state === 'starting') await keys.refresh()
    if (keys.getKey === null) {
      if (keys.mayRefetch) keys.refresh().catch(() => {})
      return E.issuerUnavailable()
    }
    if (typeof header.kid === 'string' && !keys.hasKid(header.kid)) {
      // a rotation: read the keys again, at most once per jwks_min_interval
      if (keys.mayRefetch) await keys.refresh()
      if (!keys.hasKid(header.kid)) return E.tokenRefused('unknown key')
    }
    let payload: JWTPayload
    try {
      const r = await j.jwtVerify(token, keys.getKey, {
        algorithms: s.algorithms,
        issuer: s.issuer,
        audience: s.audiences,
        clockTolerance: s.clock_skew,
        requiredClaims: ['exp', 'iat'],
        ...(s.typ === null ? {} : { typ: s.typ })
      })
      payload = r.payload
    } catch (err) {
      return E.tokenRefused(claimReason(err as { code?: string }))
    }
    const now = Date.now() / 1000
    const exp = payload.exp!
    const iat = payload.iat!
    if (exp - iat > s.max_lifetime) return E.tokenRefused(`its lifetime (exp - iat: ${exp - iat} s) is over ${s.max_lifetime} s`)
    if (iat > now + s.clock_skew) return E.tokenRefused('issued in the future')
    return await this.#accept(s, payload, token, key, (exp + s.clock_skew) * 1000)
  }

  async #accept (
    s: IssuerSettings, p: JWTPayload, token: string, key: string, until: number
  ): Promise<TrustedTokenClaim | GatewayError> {
    const raw = p[s.subject.claim]
    if (typeof raw !== 'string' || raw === '') return E.tokenRefused(`no ${s.subject.claim} claim`)
    const workload = workloadOf(p)
    const subject = mapSubject(s.subject.map, raw, workload)
    if (subject === undefined) return E.tokenRefused('its subject cannot be mapped (subject.map)')
    const groups = s.groups_claim === null ? [] : tokenGroups(p[s.groups_claim], s.id)
    let claim: TrustedTokenClaim
    if (s.as === 'service') {
      claim = {
        userId: `issuer:${s.id}:${subject}`,
        method: this.method,
        issuer: s.id,
        subject,
        service: serviceUser(s, subject, groups),
        workload,
        tokenGroups: null,
        firstSight: false
      }
    } else {
      const user = await this.#store.users.byUsername(subject)
      if (user === null) return E.tokenRefused('no local user has its subject')
      if (!user.is_active) return E.userInactive()
      claim = {
        userId: user.id,
        method: this.method,
        issuer: s.id,
        subject,
        service: null,
        workload,
        tokenGroups: groups.length === 0 ? null : groups,
        firstSight: false
      }
    }
    const decided = await this.#decide(s, token, key, claim, until)
    return decided instanceof GatewayError ? decided : { ...decided, firstSight: true }
  }

  /** The verified claim, remembered until `exp`; with review, as the API server answers, for review_ttl. */
  async #decide (
    s: IssuerSettings, token: string, key: string, claim: TrustedTokenClaim, exp: number
  ): Promise<TrustedTokenClaim | GatewayError> {
    if (s.review === 'none') {
      this.#remember(key, { claim, s, until: exp, exp })
      return claim
    }
    let asked = this.#reviews.get(key)
    if (asked === undefined) {
      asked = reviewToken(this.#byIssuer.get(s.issuer)!.http, s.review_url, token, s.audiences)
        .finally(() => this.#reviews.delete(key))
      this.#reviews.set(key, asked)
    }
    const r = await asked
    this.#reviewed(s.id, 'unavailable' in r ? r.unavailable : '')
    if ('unavailable' in r) return E.issuerUnavailable(r.unavailable)
    const until = Math.min(exp, Date.now() + s.review_ttl * 1000)
    if ('refused' in r) {
      this.#remember(key, { claim, s, until, exp, refused: r.refused })
      return E.tokenRefused(r.refused)
    }
    this.#remember(key, { claim, s, until, exp })
    return claim
  }

  /** Logs a review fault when it begins or changes, and its end (never a token). */
  #reviewed (issuer: string, fault: string): void {
    const was = this.#reviewFault.get(issuer) ?? ''
    if (fault === was) return
    this.#reviewFault.set(issuer, fault)
    if (fault !== '') this.#log?.warn({ issuer }, `trusted issuer ${issuer}: ${fault}; its tokens get 503 issuer_unavailable`)
    else this.#log?.info({ issuer }, `trusted issuer ${issuer}: the TokenReview answers again`)
  }

  #remember (key: string, entry: Entry): void {
    if (this.#cache.size >= this.#max) {
      // expired entries first; else the oldest
      const now = Date.now()
      for (const [k, e] of this.#cache) if (e.until <= now) this.#cache.delete(k)
      if (this.#cache.size >= this.#max) this.#cache.delete(this.#cache.keys().next().value!)
    }
    this.#cache.set(key, entry)
  }
}

/** The non-person identity of an `as: service` caller: named by its subject, member of the issuer's orgs. */
function serviceUser (s: IssuerSettings, subject: string, groups: UserGroup[]): User {
  return {
    id: `issuer:${s.id}:${subject}`,
    username: subject,
    name: subject,
    email: '',
    is_active: true,
    is_superuser: false,
    // no orgs configured: the Default org (src/auth/org.ts DEFAULT_ORG_ID), as a new local user
    orgs: Object.fromEntries((s.orgs.length === 0 ? [DEFAULT_ORG] : s.orgs).map((o) => [o.toLowerCase(), 'user' as const])),
    default_org: (s.orgs[0] ?? DEFAULT_ORG).toLowerCase(),
    date_joined: '',
    last_login: null,
    rate_limit: null,
    groups
  }
}

/**
 * Rate limits per authenticated caller, shared by every replica:
 * one atomic store call per request (store.limits.hitRateLimit: a sliding window log
 * in one Redis sorted set, Redis's clock), so N replicas let through exactly
 * `limit` requests per window between them.
 *
 * Which limit applies, first match wins:
 *   1. the access key's own (`sidegate limit set <key id> …`): bucket per key
 *   2. the user's own (`sidegate limit set <username> …`): bucket per user
 *   3. rate_limit.methods.<auth method> in gateway.yml: bucket per user and method
 *   4. rate_limit.limit / rate_limit.window: bucket per user
 * Answers carry the IETF RateLimit-Policy and RateLimit fields
 * (draft-ietf-httpapi-ratelimit-headers-10: `"<policy>";q=<limit>;w=<window>`
 * and `"<policy>";r=<remaining>;t=<seconds to reset>`); a refusal is 429
 * rate_limited with Retry-After.
 */
import type { Identity } from './index.js'
import type { Config } from '../config/index.js'
import { E, GatewayError } from '../errors.js'
import type { Logger } from '../observability/log.js'
import type { RateLimitPolicy, Store } from '../store/types.js'

import { parsePolicy } from './rate-limit-policy.js'

type Methods = Config['rate_limit']['methods']

/** What a request is counted against: the policy's name (as the headers show it), the bucket, the policy. */
export interface Applied { name: string, bucket: string, policy: RateLimitPolicy }

export class RateLimiter {
  readonly #default: RateLimitPolicy
  readonly #methods: Partial<Record<keyof Methods, RateLimitPolicy>> = {}
  #outage = false

  constructor (
    private readonly store: Store,
    private readonly cfg: Config['rate_limit'],
    private readonly log: Logger,
    /** counted once per request the store could not count (metrics) */
    private readonly onStoreError: () => void = () => {}
  ) {
    this.#default = { limit: cfg.limit, window: cfg.window }
    for (const [method, spec] of Object.entries(cfg.methods) as Array<[keyof Methods, string | null]>) {
      const p = spec === null ? null : parsePolicy(spec)
      if (p !== null) this.#methods[method] = p
    }
  }

  /** Which policy and bucket a caller is counted in. */
  applied (who: Identity): Applied {
    if (who.method === 'access_key' && who.keyLimit != null) return { name: 'key', bucket: `key:${who.keyId}`, policy: who.keyLimit }
    if (who.user.rate_limit != null) return { name: 'user', bucket: `user:${who.user.id}`, policy: who.user.rate_limit }
    const m = this.#methods[who.method]
    if (m !== undefined) return { name: who.method, bucket: `${who.method}:${who.user.id}`, policy: m }
    return { name: 'default', bucket: `default:${who.user.id}`, policy: this.#default }
  }

  /**
   * Counts the request: the headers to answer with, or a 429 rate_limited
   * GatewayError carrying them and Retry-After. The store unreachable:
   * on_store_error allow (no headers, logged once per outage) or deny (503).
   */
  async check (who: Identity): Promise<Record<string, string>> {
    const a = this.applied(who)
    const q = a.policy
    let hit
    try {
      hit = await this.store.limits.hitRateLimit(a.bucket, q.limit, q.window)
    } catch (err) {
      if (!(err instanceof GatewayError) || err.code !== 'store_unavailable') throw err
      this.onStoreError()
      if (!this.#outage) {
        this.#outage = true
        this.log.warn({ onStoreError: this.cfg.on_store_error }, `rate limit: the store is unavailable; requests are ${this.cfg.on_store_error === 'allow' ? 'let through uncounted' : 'refused with 503'} until it is back`)
      }
      if (this.cfg.on_store_error === 'allow') return {}
      throw err
    }
    if (this.#outage) {
      this.#outage = false
      this.log.info('rate limit: the store is back; requests are counted again')
    }
    const headers = {
      'ratelimit-policy': `"${a.name}";q=${q.limit};w=${q.window}`,
      ratelimit: `"${a.name}";r=${hit.remaining};t=${hit.reset}`
    }
    if (!hit.allowed) throw E.rateLimited(hit.reset, headers)
    return headers
  }
}

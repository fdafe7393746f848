/**
 * Session cookie (`<abbrev>_sessionid`, legacy `sessionid`): looked up in the
 * store, sliding idle timeout plus an absolute lifetime. Two different ids
 * in one request (the name twice, or both names) are refused, never chosen from. Unsafe methods need
 * the CSRF token (header `X-CSRFToken`, equal to the session's token).
 */
import { E, mapResult, type GatewayError, type Result } from '../errors.js'
import { safeEqual } from '../crypto.js'
import type { Factor, Session, Store } from '../store/types.js'
import { LruCache } from '../store/cache.js'
import type { Authenticator, ClaimBase, Credentials } from './types.js'

export interface SessionClaim extends ClaimBase<'session'> {
  factors: readonly Factor[]
  session: Session
}

declare module './types.js' {
  interface ClaimsByMethod { session: SessionClaim }
}

export interface SessionOptions {
  /** config.names' (typed here: the config schema lists the kinds, src/auth/credentials.ts) */
  names: { sessionCookie: string, legacySessionCookie: string }
  acceptLegacyCookie: boolean
  idleTimeout: number
  absoluteTimeout: number
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE'])
/**
 * A session's idle timer is pushed forward at most this often per process
 * (and at least four times per idle timeout, for short timeouts).
 */
const TOUCH_EVERY_MS = 30_000

export class SessionAuthenticator implements Authenticator {
  readonly method = 'session' as const
  readonly #touched: LruCache<true>

  constructor (private readonly store: Store, private readonly opts: SessionOptions) {
    this.#touched = new LruCache<true>(10_000, Math.min(TOUCH_EVERY_MS, opts.idleTimeout * 250))
  }

  /**
   * The session id the request carries: undefined when it carries none; null
   * when it is ambiguous, that is when a cookie name was sent twice with
   * different values, or the current and the legacy name were both sent with
   * different values (a cookie tossed from a sibling sub-domain must not
   * choose the account; identical copies are fine).
   */
  cookieValue (c: Pick<Credentials, 'cookies'>): string | null | undefined {
    const current = c.cookies[this.opts.names.sessionCookie]
    if (!this.opts.acceptLegacyCookie) return current
    const legacy = c.cookies[this.opts.names.legacySessionCookie]
    if (current === undefined) return legacy
    if (legacy === undefined || legacy === current) return current
    return null
  }

  claims (c: Credentials): boolean {
    return c.authorization === null && this.cookieValue(c) !== undefined
  }

  /**
   * The session: at once when it is cached in process and its idle timeout
   * was pushed back recently; else the store is asked (and told: a session
   * past its absolute timeout is deleted, one not touched lately touched).
   */
  check (c: Credentials): Result<SessionClaim> {
    const id = this.cookieValue(c)
    if (id === null || id === undefined || id === '' || id.length > 256) return E.invalidSession()
    return mapResult(this.store.sessions.lookup(id), this.#decide, c)
  }

  readonly #decide = (s: Session | null, c: Credentials): Result<SessionClaim> => {
    if (s === null) return E.invalidSession()
    const id = s.id
    if (Date.now() - s.created > this.opts.absoluteTimeout * 1000) return this.#end(id)
    if (!SAFE.has(c.method)) {
      const header = c.headers['x-csrftoken']
      if (typeof header !== 'string' || !safeEqual(header, s.csrf)) return E.csrfFailed()
    }
    const claim: SessionClaim = { userId: s.user_id, method: this.method, factors: s.factors, session: s }
    if (this.#touched.get(id) !== undefined) return claim
    this.#touched.set(id, true)
    return this.#touch(id, claim)
  }

  async #end (id: string): Promise<GatewayError> {
    await this.store.sessions.delete(id)
    return E.invalidSession()
  }

  async #touch (id: string, claim: SessionClaim): Promise<SessionClaim> {
    await this.store.sessions.touch(id, this.opts.idleTimeout)
    return claim
  }
}

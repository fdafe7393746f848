/**
 * One OpenID Connect provider of sign_in.oidc as openid-client sees it: its
 * discovery fetched when first needed and kept for DISCOVERY_TTL_MS (a failed
 * refresh keeps the metadata it had, up to STALE_MS), every call bounded by the
 * provider's `timeout`. Plain http is allowed (openid-client's
 * allowInsecureRequests) only for an issuer on a loopback host, which the
 * config check already restricts it to. The JWKS is openid-client's: fetched
 * with the metadata, a token with an unknown `kid` fetching it again (at most
 * once a minute); a sign-in that still finds no key drops the metadata, so the
 * next one discovers the provider afresh.
 */
import type * as oidc from 'openid-client'
import { openidClient } from './lib.js'
import type { OidcProviderConfig } from '../../config/sign-in.js'
import { clientAuth } from './keys.js'

/** How long discovered metadata is used before it is fetched again. */
export const DISCOVERY_TTL_MS = 60 * 60_000
/** How long metadata is still used while the provider cannot be reached for a refresh. */
const STALE_MS = 24 * 60 * 60_000

/** The provider could not be reached (or answered 5xx) within its timeout. */
export class ProviderUnavailable extends Error {
  constructor (readonly provider: string, cause: unknown) {
    super(`OpenID provider ${provider} cannot be reached`, { cause })
  }
}

/** A network failure, a timeout or a 5xx answer: the provider is unavailable (not a refusal). */
export function isUnavailable (err: unknown): boolean {
  if (err instanceof ProviderUnavailable) return true
  if (err instanceof TypeError) return true
  const e = err as { name?: string, code?: string, cause?: unknown }
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.code === 'OAUTH_TIMEOUT') return true
  if (e?.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' && e.cause instanceof Response) return e.cause.status >= 500
  return false
}

const loopback = (host: string): boolean => host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host)

export class OidcClient {
  #config: oidc.Configuration | null = null
  #fetched = 0
  #pending: Promise<oidc.Configuration> | null = null

  constructor (readonly c: OidcProviderConfig) {}

  get id (): string { return this.c.id }
  get label (): string { return this.c.name === '' ? this.c.id : this.c.name }
  /** http allowed: a loopback issuer only (sign_in.oidc[].issuer's check) */
  get insecure (): boolean {
    const u = new URL(this.c.issuer)
    return u.protocol === 'http:' && loopback(u.hostname)
  }

  /** The provider's configuration: cached, refreshed after DISCOVERY_TTL_MS. Throws ProviderUnavailable. */
  async configuration (): Promise<oidc.Configuration> {
    const age = Date.now() - this.#fetched
    if (this.#config !== null && age < DISCOVERY_TTL_MS) return this.#config
    try {
      return await (this.#pending ??= this.#discover().finally(() => { this.#pending = null }))
    } catch (err) {
      if (this.#config !== null && age < STALE_MS && isUnavailable(err)) return this.#config
      throw isUnavailable(err) ? new ProviderUnavailable(this.id, err) : err
    }
  }

  /** The issuer's origin and, once discovered, its authorization endpoint's (the login page's form-action). */
  get origins (): string[] {
    const at = this.#config?.serverMetadata().authorization_endpoint
    return [new URL(this.c.issuer).origin, ...(at === undefined ? [] : [new URL(at).origin])]
  }

  /** The next sign-in discovers the provider again (its keys changed). */
  forget (): void { this.#config = null; this.#fetched = 0 }

  async #discover (): Promise<oidc.Configuration> {
    const { auth, metadata } = await clientAuth(this.c)
    const lib = await openidClient()
    const config = await lib.discovery(new URL(this.c.issuer), this.c.client_id, metadata, auth, {
      timeout: this.c.timeout,
      ...(this.insecure ? { execute: [lib.allowInsecureRequests] } : {})
    })
    this.#config = config
    this.#fetched = Date.now()
    return config
  }
}

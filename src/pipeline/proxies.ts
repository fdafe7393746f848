/**
 * The proxy families that ask for forward-auth decisions (`/_sidegate/auth`),
 * one row each: where the family says the original method and URI, and how a
 * refusal that sends a browser to sign in reaches it. One endpoint serves
 * them all, so a decision is read by the row of the URI header it carries
 * (src/pipeline/headers.ts originalRequest); each row's use is declared here,
 * never inferred elsewhere. Configurations: deploy/forward-auth/.
 */
import type { IncomingHttpHeaders } from 'node:http'

export interface ProxyFamily {
  /** the proxies that ask this way (docs) */
  readonly proxies: string
  /** the header (lower case) with the original method; null: this request's own */
  readonly methodHeader: string | null
  /**
   * the header (lower case) with the original path and query; null:
   * what follows the decision path, else this request's own target
   */
  readonly uriHeader: string | null
  /**
   * How a browser's navigation refused for want of a credential is sent to
   * sign in (session.login_redirect): `redirect`, the 303 itself (the proxy
   * passes a refusal on as it is), absolute from X-Forwarded-Proto and -Host
   * (Traefik resolves a relative one against sidegate's address); `header`,
   * the 401 naming the login page in X-<abbrev>-Login for the proxy's
   * error_page (nginx's auth_request turns any answer but 2xx, 401 and 403 into 500).
   */
  readonly login: 'redirect' | 'header'
}

/** In the order they are recognised: the first whose URI header the request carries; the last carries none. */
export const PROXY_FAMILIES = {
  forwarded: { proxies: 'Traefik ForwardAuth, Caddy forward_auth', methodHeader: 'x-forwarded-method', uriHeader: 'x-forwarded-uri', login: 'redirect' },
  original: { proxies: 'nginx auth_request', methodHeader: 'x-original-method', uriHeader: 'x-original-uri', login: 'header' },
  path: { proxies: 'Envoy ext_authz', methodHeader: null, uriHeader: null, login: 'redirect' }
} as const satisfies Record<string, ProxyFamily>

const FAMILIES: readonly ProxyFamily[] = Object.values(PROXY_FAMILIES)

/** The family of a decision request: the first row whose URI header it carries. */
export function familyOf (h: IncomingHttpHeaders): ProxyFamily {
  for (const f of FAMILIES) if (f.uriHeader === null || h[f.uriHeader] !== undefined) return f
  return PROXY_FAMILIES.path
}

/**
 * The original method a decision request says: the first row's method header
 * it carries, whatever its family (a proxy may be configured with either
 * name); undefined: none sent.
 */
export function sentMethod (h: IncomingHttpHeaders): string | string[] | undefined {
  for (const f of FAMILIES) {
    if (f.methodHeader === null) continue
    const v = h[f.methodHeader]
    if (v !== undefined) return v
  }
  return undefined
}

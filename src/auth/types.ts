import type { IncomingHttpHeaders } from 'node:http'
import type { Factor } from '../store/types.js'
import type { Result } from '../errors.js'

/**
 * Each credential kind's claim, by its method name. An authenticator's file
 * adds its own (`declare module './types.js'`), so a kind's claim is written
 * beside its code; the registry (./credentials.ts CREDENTIALS), keyed by these
 * names, does not compile without an entry for each.
 */
export interface ClaimsByMethod {}

export type AuthMethod = keyof ClaimsByMethod

/** The outcome of a successful authentication, before the user record is loaded: one kind's claim, told by `method`. */
export type Claim = ClaimsByMethod[AuthMethod]

/** What every kind's claim has. */
export interface ClaimBase<M extends string> {
  userId: string
  method: M
  /**
   * what the sign-in behind a person's credential was made with;
   * absent for machine credentials (CredentialKind.machine)
   */
  factors?: readonly Factor[]
}

/** What an authenticator sees of a request: parsed once, shared by all. */
export interface Credentials {
  method: string
  /** path and query exactly as sent */
  url: string
  headers: IncomingHttpHeaders
  /** `Authorization` split into its lowercase scheme and the rest, or null when absent. */
  authorization: { scheme: string, credentials: string } | null
  /** parseCookies: a name sent twice with different values is null */
  cookies: Record<string, string | null>
}

/**
 * One credential kind. `claims` is cheap and synchronous: does this request
 * carry my kind of credential? The first authenticator that claims a request
 * decides it with `check`: the claim, or the refusal returned (a 401, a 403
 * for a session's CSRF token; never thrown, never a rejection), at once when
 * memory decides (a cached credential, a wrong check tag) and else as a
 * promise. A store fault may reject it (503 store_unavailable), which
 * `mapResult` (src/errors.ts) turns into a refusal like any other.
 */
export interface Authenticator {
  readonly method: AuthMethod
  claims (c: Credentials): boolean
  check (c: Credentials): Result<Claim>
}

import type { IncomingHttpHeaders } from 'node:http'
import type { Factor } from '../store/types.js'
import type { GatewayError } from '../errors.js'

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
 * decides it: `authenticate` resolves a Claim or throws a 401 GatewayError.
 */
export interface Authenticator {
  readonly method: AuthMethod
  claims (c: Credentials): boolean
  authenticate (c: Credentials): Promise<Claim>
  /**
   * The claim when in-process state alone decides it (no I/O: the fast path
   * of Authenticators.resolve); a refusal decided from memory is returned, not
   * thrown (a throw makes V8 walk the stack); undefined when only authenticate
   * can tell.
   */
  cached? (c: Credentials): Claim | GatewayError | undefined
}

import type { IncomingHttpHeaders } from 'node:http'
import type { Factor, RateLimitPolicy, Session } from '../store/types.js'
import type { ExpectedDigest } from './digest.js'
import type { GatewayError } from '../errors.js'

export type AuthMethod = 'session' | 'bearer' | 'private_token' | 'access_key'

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

/** The outcome of a successful authentication, before the user record is loaded. */
export interface Claim {
  userId: string
  method: AuthMethod
  /** what the sign-in behind a session or bearer token was made with; absent for machine credentials (private tokens, access keys) */
  factors?: readonly Factor[]
  session?: Session
  /** access keys: the key's id (the identity token's akid) and its own rate limit (src/auth/rate-limit.ts) */
  keyId?: string
  /** access keys: the factors of the owner's sign-in that made it (AccessKey.factors); absent for an operator's key */
  keyFactors?: readonly Factor[]
  keyLimit?: RateLimitPolicy
  /** the key's allow-list (addresses, CIDR ranges): checked against the client address by the pipeline */
  keyAllowIps?: string[]
  /** an access-key signature that covers Digest or Content-Digest: what the body must hash to (src/auth/digest.ts) */
  digests?: ExpectedDigest[]
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

/**
 * The authentication pipeline: parse the credentials once, let the first
 * authenticator that claims the request decide, then load the user.
 * The kinds' claims do not overlap (each its own Authorization schemes; the
 * session cookie only without Authorization), so their order decides nothing.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http'
import { E, GatewayError, mapResult, type Result } from '../errors.js'
import type { Config } from '../config/index.js'
import type { Logger } from '../observability/log.js'
import type { Store, User, UserGroup } from '../store/types.js'
import { parseCookies } from '../http/cookies.js'
import { parseAuthorization } from './parse.js'
import type { SessionAuthenticator } from './session.js'
import { KINDS } from './credentials.js'
import type { AuthMethod, Authenticator, Claim, Credentials } from './types.js'

export { CHALLENGES } from './credentials.js'

/** The caller: a kind's claim and its user. */
export type Identity = Claim & { user: User }

/**
 * `target`: the method and URI the credentials are checked against, when not
 * the request's own (a forward-auth decision is about the request the proxy in
 * front received; src/pipeline/headers.ts originalRequest).
 */
export function readCredentials (req: IncomingMessage, target?: { method: string, url: string }): Credentials {
  const h = req.headers.authorization
  return new RequestCredentials(
    target?.method ?? req.method ?? 'GET',
    target?.url ?? req.url ?? '/',
    req.headers,
    h === undefined ? null : parseAuthorization(h)
  )
}

/**
 * Credentials of one request; the cookies parsed on first use
 * (with an Authorization header no authenticator reads them).
 */
class RequestCredentials implements Credentials {
  #cookies: Record<string, string | null> | undefined = undefined
  constructor (
    readonly method: string,
    readonly url: string,
    readonly headers: IncomingHttpHeaders,
    readonly authorization: Credentials['authorization']
  ) {}

  get cookies (): Record<string, string | null> { return (this.#cookies ??= parseCookies(this.headers.cookie)) }
}

export class Authenticators {
  readonly authenticators: Authenticator[]
  readonly session: SessionAuthenticator

  /** `log`: where an authenticator says what is wrong beyond one request (a trusted issuer's TokenReview) */
  constructor (private readonly store: Store, config: Config, log?: Logger) {
    this.authenticators = KINDS.map((k) => k.create(store, config, log))
    // the login redirect asks it whether a session cookie was sent (src/pipeline/authenticate.ts loginFor)
    this.session = this.authenticators.find((a) => a.method === 'session') as SessionAuthenticator
  }

  /**
   * The caller as a promise, rejected with the refusal (401, 403 for CSRF, 503 when the store is down):
   * for callers that await anyway (the admin API). The request path takes `resolve`.
   * `target`: another method and URI than the request's own (readCredentials).
   * `methods`: the only credentials accepted (the admin API's): any other is 401
   * unsupported_scheme before it is checked (a one-time bearer token is not used up).
   */
  async authenticate (
    req: IncomingMessage, target?: { method: string, url: string }, methods?: readonly AuthMethod[]
  ): Promise<Identity> {
    const who = await this.resolve(req, target, methods)
    if (who instanceof GatewayError) throw who
    return who
  }

  /**
   * The caller, or the refusal returned (never thrown, never a rejection: see
   * Authenticator.check): at once where in-process state decides (a cached
   * private token of a cached user, a token whose check tag is wrong), else a
   * promise. The request path (src/pipeline/chains.ts run) awaits only what is a promise.
   */
  resolve (
    req: IncomingMessage, target?: { method: string, url: string }, methods?: readonly AuthMethod[]
  ): Result<Identity> {
    let c: Credentials
    try {
      c = readCredentials(req, target)
    } catch (err) {
      return err instanceof GatewayError ? err : E.malformedAuthorization('unreadable')
    }
    // `methods` (the admin API): only these credentials, from the Authorization header; nothing else is looked at
    if (methods !== undefined && c.authorization === null) return E.notAuthenticated()
    const a = this.authenticators.find((x) => x.claims(c))
    if (a === undefined) return c.authorization === null ? E.notAuthenticated() : E.unsupportedScheme()
    if (methods !== undefined && !methods.includes(a.method)) return E.adminCredential()
    return mapResult(a.check(c), this.#identify)
  }

  /** The claim's user, at once when cached in process. */
  readonly #identify = (claim: Claim): Result<Identity> => {
    // a trusted issuer's service: the claim is the caller (no local user)
    if (claim.method === 'trusted_token' && claim.service !== null) return identityOf(claim.service, claim)
    return mapResult(this.store.users.lookup(claim.userId), identityOf, claim)
  }
}

/** Every field of every kind's claim (a key of one kind's claim only is undefined on the others'). */
type AnyClaim = { [K in KeysOf<Claim>]: FieldOf<Claim, K> }
type KeysOf<U> = U extends unknown ? keyof U : never
type FieldOf<U, K extends PropertyKey> = U extends unknown ? K extends keyof U ? U[K] : undefined : never

const MERGED = new WeakMap<readonly UserGroup[], WeakMap<User, User>>()

function withGroups (user: User, groups: readonly UserGroup[]): User {
  let byUser = MERGED.get(groups)
  if (byUser === undefined) MERGED.set(groups, byUser = new WeakMap())
  let u = byUser.get(user)
  if (u === undefined) byUser.set(user, u = { ...user, groups: [...(user.groups ?? []), ...groups] })
  return u
}

function identityOf (user: User | null, claim: Claim): Identity | GatewayError {
  if (user === null) return E.authenticationFailed()
  if (!user.is_active) return E.userInactive()
  // every field of every kind named, in one order: one object shape
  // (one hidden class where the pipeline reads it) for all kinds;
  // a kind's claim with a field not named here does not compile
  const {
    userId,
    method,
    factors,
    session,
    keyId,
    keyFactors,
    keyLimit,
    keyAllowIps,
    digests,
    issuer,
    subject,
    service,
    workload,
    tokenGroups,
    firstSight
  } = claim as Partial<AnyClaim>
  const identity: { [K in keyof AnyClaim]: AnyClaim[K] | undefined } & { user: User } = {
    userId,
    method,
    factors,
    session,
    keyId,
    keyFactors,
    keyLimit,
    keyAllowIps,
    digests,
    issuer,
    subject,
    service,
    workload,
    tokenGroups,
    firstSight,
    // as: user with a groups claim: the user's groups and the token's (one record per token and user)
    user: tokenGroups == null ? user : withGroups(user, tokenGroups)
  }
  return identity as Identity
}

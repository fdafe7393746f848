/**
 * The providers of sign_in.oidc: made once per process (a provider's cached
 * discovery outlives a reload whose settings for it are the same), with the
 * authorization code flow openid-client runs: PKCE S256, `state` and `nonce`
 * (./attempt.ts), the code exchanged and the id_token checked by the library
 * (signature against the provider's JWKS, iss, aud, azp, exp, iat, nonce;
 * RFC 9207 `iss` on the callback when the provider says it sends one), then
 * the userinfo for what the id_token lacks, and the person made a local
 * user's by src/auth/external.ts (by (provider, sub) only).
 */
import type { Logger } from 'pino'
import type * as oidc from 'openid-client'
import type { OidcProviderConfig } from '../../config/sign-in.js'
import { E, GatewayError } from '../../errors.js'
import type { AuditContext, AuditRecord, Auditor } from '../../observability/audit.js'
import type { Factor, SsoSignIn, Store, User } from '../../store/types.js'
import { refusal, signInExternal } from '../external.js'
import { newAttempt, sealAttempt, type Attempt } from './attempt.js'
import { factorsOf, identityOf, type Claims } from './claims.js'
import { OidcClient, isUnavailable } from './client.js'
import { loadedOpenidClient, openidClient } from './lib.js'
import { LOGOUT_TOKEN_AGE_S, verifyLogoutToken } from './logout.js'

export { takeAttempt, ATTEMPT_TTL_S, type Attempt } from './attempt.js'
export { OidcClient, ProviderUnavailable } from './client.js'

/** A sign-in the provider vouched for: the user, its factors, and what the session records of the provider's. */
export interface OidcSignIn {
  user: User
  factors: Factor[]
  /** the provider's amr proved a second factor and the operator trusts it (trust_mfa) */
  proven: boolean
  /** the session's names there, its back-channel logout's (sub, and sid when the id_token has one) */
  sso: SsoSignIn
}

/** How far ahead of our clock an id_token's iat may be. */
const IAT_SKEW_S = 60

export class OidcProviders {
  #clients = new Map<string, OidcClient>()

  constructor (
    private readonly store: Store, private readonly audit: Auditor | null, private readonly log: Logger,
    list: readonly OidcProviderConfig[] = []
  ) { this.update(list) }

  /** A reload's providers: a provider whose settings are unchanged keeps its client (and its cached discovery). */
  update (list: readonly OidcProviderConfig[]): void {
    const next = new Map<string, OidcClient>()
    for (const c of list) {
      const had = this.#clients.get(c.id)
      next.set(c.id, had !== undefined && JSON.stringify(had.c) === JSON.stringify(c) ? had : new OidcClient(c))
    }
    this.#clients = next
  }

  get list (): OidcClient[] { return [...this.#clients.values()] }

  /** Where the login page's forms may lead: each provider's issuer, and its authorization endpoint once discovered. */
  formOrigins (): string[] {
    return [...new Set(this.list.flatMap((p) => p.origins))]
  }

  get (id: string): OidcClient | undefined { return this.#clients.get(id) }

  /** The provider a typed `name@domain` is steered to by its email_domains, or undefined. */
  steer (typed: string): OidcClient | undefined {
    const at = typed.lastIndexOf('@')
    if (at <= 0) return undefined
    const domain = typed.slice(at + 1).trim().toLowerCase()
    return this.list.find((p) => p.c.email_domains.some((d) => d.toLowerCase() === domain))
  }

  /** The provider's authorization URL for a new attempt, and the attempt sealed for its cookie. */
  async begin (
    p: OidcClient, redirectUri: string, next: string, loginHint?: string
  ): Promise<{ url: string, sealed: string }> {
    const config = await this.#config(p)
    const { attempt, challenge } = await newAttempt(p.id, redirectUri, next)
    const url = (await openidClient()).buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: p.c.scopes.join(' '),
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: attempt.s,
      nonce: attempt.n,
      ...(loginHint === undefined || loginHint === '' ? {} : { login_hint: loginHint })
    })
    return { url: url.href, sealed: sealAttempt(this.store, attempt) }
  }

  /**
   * The callback: the code exchanged, the id_token checked, the person signed
   * in here. Throws a catalogue error (sso_failed, sso_not_linked,
   * user_inactive, idp_unavailable), each audited as sso.refused.
   */
  async finish (p: OidcClient, callback: URL, a: Attempt, ctx: AuditContext): Promise<OidcSignIn> {
    const source = `oidc:${p.id}`
    const refuse = (err: GatewayError, username?: string): GatewayError => {
      this.audit?.record({ event: 'sso.refused', ctx, source, via: 'callback', reason: err.code, ...(username === undefined ? {} : { username }) })
      return err
    }
    let claims: Claims
    try {
      const config = await this.#config(p)
      const lib = await openidClient()
      const tokens = await lib.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: a.v, expectedState: a.s, expectedNonce: a.n, idTokenExpected: true
      }, { redirect_uri: a.r })
      claims = { ...tokens.claims() }
      // the library checks exp, not an iat ahead of our clock: a token from the future is no token yet
      if (typeof claims.iat === 'number' && claims.iat > Date.now() / 1000 + IAT_SKEW_S) {
        throw E.ssoFailed('The provider\'s answer failed its checks: the id_token\'s iat is in the future.')
      }
      if (config.serverMetadata().userinfo_endpoint !== undefined && typeof tokens.access_token === 'string') {
        const info = await lib.fetchUserInfo(config, tokens.access_token, String(claims.sub))
        // the id_token's claims stand; the userinfo adds what it lacks (groups, often)
        claims = { ...info, ...claims }
      }
    } catch (err) {
      throw refuse(this.#refusal(p, err))
    }
    const identity = identityOf(p.c, claims)
    const audit = this.audit === null ? undefined : { record: (x: AuditRecord) => this.audit!.record(x), ctx }
    const policy = { provision: p.c.provision, matchEmail: p.c.match_email, orgs: p.c.orgs }
    const r = await signInExternal(this.store, identity, policy, audit)
    if (!r.ok) throw refuse(refusal(r), identity.username)
    this.audit?.record({ event: 'sso.succeeded', ctx, user: r.user, source, via: 'callback', authMethod: 'oidc' })
    const { factors, proven } = factorsOf(p.c, claims)
    const sid = typeof claims.sid === 'string' && claims.sid !== '' ? claims.sid : undefined
    const names = [`sub:${String(claims.sub)}`, ...(sid === undefined ? [] : [`sid:${sid}`])]
    return { user: r.user, factors, proven, sso: { source, names } }
  }

  /**
   * A back-channel logout: the logout token checked (./logout.ts), its jti
   * used once on any replica, then every session made through the provider
   * under its sid (or, naming none, its sub) ended everywhere. How many ended.
   * Throws logout_token_invalid or idp_unavailable, audited as sso.logout_refused.
   */
  async logout (p: OidcClient, token: unknown, ctx: AuditContext): Promise<number> {
    const source = `oidc:${p.id}`
    try {
      const names = await verifyLogoutToken(p, token)
      if (!(await this.store.limits.markOnce('oidc logout', `${p.id}\0${names.jti}`, LOGOUT_TOKEN_AGE_S + 60))) {
        throw E.logoutTokenInvalid('its jti was used already')
      }
      const by = names.sid === undefined ? 'sub' : 'sid'
      const users = await this.store.sessions.endTagged(source, by === 'sid' ? `sid:${names.sid!}` : `sub:${names.sub!}`)
      const one = users.length > 0 && users.every((u) => u === users[0]) ? { userId: users[0] } : {}
      this.audit?.record({ event: 'sso.logout', ctx, source, reason: by, count: users.length, ...one })
      return users.length
    } catch (err) {
      const e = err instanceof GatewayError ? err : isUnavailable(err) ? E.idpUnavailable() : E.logoutTokenInvalid('it cannot be checked')
      if (!(err instanceof GatewayError) && !isUnavailable(err)) this.log.error({ provider: p.id, err }, 'back-channel logout failed')
      this.audit?.record({ event: 'sso.logout_refused', ctx, source, reason: e.code })
      throw e
    }
  }

  /** Signing out of a session made through `sso` (its source): the provider's label and endSessionUrl, if any. */
  async signOut (sso: string | undefined, after: () => string): Promise<{ label: string, to: string } | undefined> {
    const p = sso?.startsWith('oidc:') === true ? this.get(sso.slice(5)) : undefined
    const to = p === undefined ? undefined : await this.endSessionUrl(p, after)
    return to === undefined ? undefined : { label: p!.label, to }
  }

  /**
   * Where a browser signing out of a session made through `p` goes next: the
   * provider's end_session_endpoint (RP-initiated logout) with our client id
   * and `after` as its post_logout_redirect_uri, when the provider has one and
   * end_session is on; else undefined (the provider unreachable, a Host that
   * is no host name: the session here is ended all the same).
   */
  async endSessionUrl (p: OidcClient, after: () => string): Promise<string | undefined> {
    if (!p.c.end_session) return undefined
    try {
      const config = await p.configuration()
      if (config.serverMetadata().end_session_endpoint === undefined) return undefined
      const lib = await openidClient()
      return lib.buildEndSessionUrl(config, { client_id: p.c.client_id, post_logout_redirect_uri: after() }).href
    } catch (err) {
      this.log.warn({ provider: p.id, err: (err as Error).message }, 'OpenID provider unavailable: signed out here only')
      return undefined
    }
  }

  async #config (p: OidcClient): Promise<oidc.Configuration> {
    try {
      return await p.configuration()
    } catch (err) {
      throw this.#refusal(p, err)
    }
  }

  /** What a failure of the provider's is to the client: 503 idp_unavailable, or 401 sso_failed saying why. */
  #refusal (p: OidcClient, err: unknown): GatewayError {
    if (err instanceof GatewayError) return err
    if (isUnavailable(err)) {
      this.log.warn({ provider: p.id, err: (err as Error).message }, 'OpenID provider unavailable')
      return E.idpUnavailable()
    }
    // an error of the library's: it was loaded by the call that failed
    const lib = loadedOpenidClient()
    if (lib !== undefined && err instanceof lib.AuthorizationResponseError) return E.ssoFailed(`The provider refused the sign-in: ${err.error}.`)
    if (lib !== undefined && err instanceof lib.ResponseBodyError) return E.ssoFailed(`The provider refused the code: ${err.error}.`)
    const code = (err as { code?: string }).code
    if (code === 'OAUTH_KEY_SELECTION_FAILED') {
      // the provider's keys changed: the next sign-in discovers it (and fetches its JWKS) again
      p.forget()
      return E.ssoFailed('The id_token is signed with a key the provider does not publish; try again.')
    }
    if (typeof code === 'string' && code.startsWith('OAUTH_')) {
      // the library's cause names the check (the nonce, iss, aud, a timestamp)
      const cause = (err as Error).cause
      const why = cause instanceof Error ? cause.message : (err as Error).message
      return E.ssoFailed(`The provider's answer failed its checks: ${why}.`)
    }
    this.log.error({ provider: p.id, err }, 'OpenID sign-in failed')
    return E.ssoFailed('The sign-in through the provider failed.')
  }
}

/**
 * Sign-in through an OpenID Connect provider of sign_in.oidc (src/auth/oidc/):
 * `GET /login/oidc/<id>` starts an attempt (sealed in a cookie only the
 * callback's path sees) and sends the browser to the provider;
 * `GET /login/oidc/<id>/callback` finishes it: the code exchanged, the
 * id_token checked, the person a local user's, then the second step when it is
 * due (as after a password: ./login.ts) or the same session a password sign-in
 * starts, and on to the `next` the attempt began with (checked as /login
 * checks it). A browser gets a refusal as the login page with its error; any
 * other client the catalogue's JSON error. `POST /login/oidc/<id>/backchannel-logout`
 * is the provider's: its logout token ends the sessions it names (src/auth/oidc/logout.ts).
 */
import { Type as T } from '@sinclair/typebox'
import type { Amr } from '../auth/mfa.js'
import { takeAttempt, ATTEMPT_TTL_S, type OidcProviders } from '../auth/oidc/index.js'
import type { Config } from '../config/index.js'
import { E, GatewayError } from '../errors.js'
import { parseCookies } from '../http/cookies.js'
import { queryParam } from '../http/query.js'
import { FORM_TYPE, type BodySpec } from './body.js'
import type { SsoSignIn, Store, User } from '../store/types.js'
import { redirect, sendHtml } from './html.js'
import type { StartSession } from './login-passkey.js'
import { html, redirectTo, ref } from './spec.js'
import { route, type RequestContext, type Route } from './types.js'

export const OIDC_PATH = '/login/oidc'

/** A back-channel logout's form: the provider's logout token. */
const LOGOUT_TOKEN_BODY = {
  name: 'BackchannelLogout',
  schema: T.Object({ logout_token: T.String({ minLength: 1, maxLength: 16384, description: 'The provider\'s logout token (a signed JWT).' }) }),
  types: [FORM_TYPE],
  required: true
} satisfies BodySpec
const PARAMS = T.Object({ id: T.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,63}$', description: 'The provider\'s id (sign_in.oidc[].id).' }) })

export interface OidcLoginDeps {
  config: Config
  store: Store
  providers: OidcProviders
  safeNext: (v: unknown) => string
  /** ./login.ts: the session a sign-in ends in, and its cookies */
  startSession: StartSession
  /** ./login.ts: the second step when one is due (the page sent); false: none */
  secondStep: (
    ctx: RequestContext, user: User, next: string, json: null, amr: Amr[], via: string, sso?: SsoSignIn
  ) => Promise<boolean>
  loginPage: (o: { next: string, error?: string }) => string
  /** ./login.ts: the login page's headers (its form-action names the providers) */
  loginHeaders: (next: string) => Record<string, string>
}

/** A URL of this gateway's own, as the browser reached it (a provider sends the browser back there). */
export function gatewayUrl (ctx: RequestContext, path: string): string {
  const host = ctx.req.headers.host ?? ''
  if (!/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host)) throw E.badRequest('The Host header is not a host name.')
  return `${ctx.https ? 'https' : 'http'}://${host}${path}`
}

const callbackUrl = (ctx: RequestContext, id: string): string => gatewayUrl(ctx, `${OIDC_PATH}/${id}/callback`)

export function oidcLoginRoutes (d: OidcLoginDeps): Route[] {
  const { config, store, providers, safeNext, startSession, secondStep, loginPage, loginHeaders } = d
  // the attempt's cookie: <abbrev>_oidc, beside <abbrev>_mfa
  const cookieName = `${config.names.abbrev.toLowerCase()}_oidc`
  const secure = (ctx: RequestContext): string => (config.session.cookie_secure || ctx.https) ? '; Secure' : ''
  const attemptCookie = (ctx: RequestContext, id: string, value: string, maxAge: number): string =>
    `${cookieName}=${value}; Path=${OIDC_PATH}/${id}/callback; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure(ctx)}`
  const provider = (id: string) => {
    const p = providers.get(id)
    if (p === undefined) throw E.notFound()
    return p
  }
  /** A refusal: the login page with its error for a browser, else the catalogue's error. */
  const refuse = (ctx: RequestContext, err: unknown, next: string, headers: Record<string, string> = {}): void => {
    if (!(err instanceof GatewayError) || !String(ctx.req.headers.accept ?? '').includes('text/html')) {
      if (err instanceof GatewayError) Object.assign(err, { headers: { ...err.headers, ...headers } })
      throw err
    }
    const page = loginPage({ next, error: err.message })
    sendHtml(ctx.res, err.status, page, { ...loginHeaders(next), ...headers })
  }

  const begin = route({
    method: 'GET',
    path: `${OIDC_PATH}/{id}`,
    params: PARAMS,
    auth: 'none',
    docs: {
      tags: ['Browser'],
      operationId: 'oidcSignIn',
      summary: 'Sign in through an OpenID Connect provider',
      description: 'Sends the browser to the provider (the authorization code flow with PKCE S256, `state` and `nonce`), ' +
        `the attempt sealed in the \`${cookieName}\` cookie for the callback (${ATTEMPT_TTL_S / 60} minutes, once). ` +
        '`login_hint` is passed on. See docs/oidc.md.',
      security: 'none',
      parameters: [ref('parameters', 'Next'), { name: 'login_hint', in: 'query', required: false, schema: { type: 'string', maxLength: 320 } }],
      responses: { 302: redirectTo('To the provider\'s authorization endpoint.') },
      errors: { 404: 'NotFound', 503: { description: 'The provider cannot be reached (its discovery).', codes: ['idp_unavailable'], page: true } }
    },
    async handler (ctx, { params }) {
      const p = provider(params.id)
      const url = ctx.req.url ?? ''
      const next = safeNext(queryParam(url, 'next'))
      const hint = (queryParam(url, 'login_hint') ?? '').slice(0, 320)
      try {
        const { url: to, sealed } = await providers.begin(p, callbackUrl(ctx, p.id), next, hint)
        redirect(ctx.res, 302, to, { 'set-cookie': attemptCookie(ctx, p.id, sealed, ATTEMPT_TTL_S) })
      } catch (err) {
        refuse(ctx, err, next)
      }
    }
  })

  const callback = route({
    method: 'GET',
    path: `${OIDC_PATH}/{id}/callback`,
    params: PARAMS,
    auth: 'none',
    docs: {
      tags: ['Browser'],
      operationId: 'oidcCallback',
      summary: 'The provider\'s answer: finishes the sign-in',
      description: 'The code exchanged and the id_token checked (by openid-client), the account found by its link (provider, sub), ' +
        'linked or provisioned (sign_in.oidc[].provision), then the second step when it is due, else the session cookies as POST /login sets them, ' +
        'and on to the `next` the sign-in began with. A browser (`Accept: text/html`) gets the login page with the error instead of JSON.',
      security: 'none',
      parameters: [
        { name: 'code', in: 'query', required: false, schema: { type: 'string' } },
        { name: 'state', in: 'query', required: false, schema: { type: 'string' } },
        { name: 'iss', in: 'query', required: false, schema: { type: 'string' } },
        { name: 'error', in: 'query', required: false, schema: { type: 'string' } }
      ],
      responses: {
        200: html('A second factor is due: its page, with the pending step\'s cookie.'),
        303: { description: 'Signed in: to `next`.', headers: { Location: ref('headers', 'Location'), 'Set-Cookie': ref('headers', 'SetSessionCookies') } }
      },
      errors: {
        400: { description: 'No attempt of this browser\'s matches the callback\'s `state` (unknown, expired, used).', codes: ['sso_state_invalid', 'bad_request'], page: true },
        401: { description: 'The provider refused, or its answer failed a check; or the account\'s user is disabled.', codes: ['sso_failed', 'user_inactive'], page: true },
        403: { description: 'The account is linked to no user here (and is not provisioned).', codes: ['sso_not_linked'], page: true },
        404: 'NotFound',
        503: { description: 'The provider cannot be reached (discovery, token, keys or userinfo).', codes: ['idp_unavailable'], page: true }
      }
    },
    async handler (ctx, { params }) {
      const p = provider(params.id)
      const raw = ctx.req.url ?? ''
      const clear = { 'set-cookie': attemptCookie(ctx, p.id, '', 0) }
      const a = await takeAttempt(store, p.id, parseCookies(ctx.req.headers.cookie)[cookieName], queryParam(raw, 'state'))
      if (a === null) {
        refuse(ctx, E.ssoStateInvalid(), safeNext(undefined), clear)
        return
      }
      const next = safeNext(a.x)
      const url = new URL(a.r)
      url.search = new URL(raw, 'http://x').search
      let signIn
      try {
        signIn = await providers.finish(p, url, a, ctx)
      } catch (err) {
        refuse(ctx, err, next, clear)
        return
      }
      // a provider's proven second factor (trust_mfa) ends the sign-in; else sidegate's own, as after a password
      if (!signIn.proven && await secondStep(ctx, signIn.user, next, null, signIn.factors, 'oidc', signIn.sso)) return
      const cookies = await startSession(ctx, signIn.user, 'oidc', signIn.factors, 'oidc', signIn.sso)
      redirect(ctx.res, 303, next, { 'set-cookie': [...cookies, clear['set-cookie']] })
    }
  })

  const backchannel = route({
    method: 'POST',
    path: `${OIDC_PATH}/{id}/backchannel-logout`,
    params: PARAMS,
    // the provider's signed logout token is the credential, checked here
    auth: 'none',
    body: LOGOUT_TOKEN_BODY,
    docs: {
      tags: ['Browser'],
      operationId: 'oidcBackchannelLogout',
      summary: 'The provider ends sessions (OpenID Connect Back-Channel Logout 1.0)',
      description: 'Register this URL at the provider as the client\'s back-channel logout URI. The logout token is checked ' +
        '(signature against the provider\'s keys, iss, aud, iat at most 5 minutes old, typ, the logout event, sub or sid, no nonce, its jti once), ' +
        'then every session made through the provider under its `sid` (or, naming none, its `sub`) ends on every replica at once. See docs/oidc.md.',
      security: 'none',
      responses: {},
      errors: {
        400: { description: 'The logout token is missing or fails a check (the detail says which).', codes: ['logout_token_invalid', 'required', 'parse_error', 'bad_request'] },
        404: 'NotFound',
        503: { description: 'The provider\'s discovery or keys cannot be fetched.', codes: ['idp_unavailable'] }
      }
    },
    answers: {
      200: {
        description: 'Checked: the sessions it names ended (none may have been live). `Cache-Control: no-store`.',
        schema: T.Object({ detail: T.Literal('Logged out.'), sessions: T.Integer({ minimum: 0, description: 'how many sessions ended' }) })
      }
    },
    async handler (ctx, { params, body, reply }) {
      const p = provider(params.id)
      try {
        const n = await providers.logout(p, body.logout_token, ctx)
        reply(200, { detail: 'Logged out.', sessions: n }, { 'cache-control': 'no-store' })
      } catch (err) {
        if (err instanceof GatewayError) Object.assign(err, { headers: { ...err.headers, 'cache-control': 'no-store' } })
        throw err
      }
    }
  })

  return [begin, callback, backchannel]
}

/**
 * Browser sessions: `GET /login` (the form), `POST /login` (form or JSON),
 * `POST /logout`. A login checks the password with the shared lockout,
 * drops any session the browser already had (the id is rotated), creates a
 * new one and sets two cookies: `<abbrev>_sessionid` (HttpOnly) and
 * `<abbrev>_csrftoken` (readable by scripts, to echo in `X-CSRFToken`):
 * ./session-cookies.ts, with `Domain=` under session.cookies (docs/sso.md).
 * Cross-site posts (src/pipeline/origin.ts: `Sec-Fetch-Site`, else `Origin`,
 * else `Referer`) are refused, so no other site can log a browser in or out.
 */
import type { IncomingMessage } from 'node:http'
import type { Auditor } from '../observability/audit.js'
import type { Authenticators } from '../auth/index.js'
import { parseCookies } from '../http/cookies.js'
import { Type as T, type Static } from '@sinclair/typebox'
import { FORM_TYPE as FORM_MEDIA_TYPE, isJsonType, mediaType } from '../http/content-type.js'
import { queryParam } from '../http/query.js'
import type { Config } from '../config/index.js'
import { safeEqual } from '../crypto.js'
import { E, GatewayError } from '../errors.js'
import { PASSWORD_ONLY, type Factor, type SsoSignIn, type Store, type User } from '../store/types.js'
import { PENDING_TRIES, type Amr, type SecondFactor } from '../auth/mfa.js'
import type { OidcProviders } from '../auth/oidc/index.js'
import type { PasskeyCeremonies } from '../auth/passkeys.js'
import { LOGIN_MFA_PASSKEY_PATH, passkeyLoginRoutes } from './login-passkey.js'
import { gatewayUrl, OIDC_PATH, oidcLoginRoutes } from './login-oidc.js'
import { redirect, sendHtml } from './html.js'
import { loginPages } from './login-pages.js'
import { profile } from './profile.js'
import type { AssetSet } from './static.js'
import type { PasswordChecker } from '../auth/passwords.js'
import { FORM_TYPE, JSON_TYPE, type BodySpec } from './body.js'
import { html, redirectTo, ref, schemaRef } from './spec.js'
import { loginMfaRequired, loginResult, PAGE_ERRORS, signedIn } from './login-answers.js'
import { route, type Route, type RequestContext } from './types.js'
import { HOME, LOGIN_PATH, LOGOUT_PATH, pageHeadersFor } from './next.js'
import type { SessionScope } from '../pipeline/sso.js'
import { sessionCookies } from './session-cookies.js'

export { HOME, JMS_LOGIN_PATH, JMS_LOGOUT_PATH, LOGIN_PATH, LOGOUT_PATH, loginLocation, safeNext } from './next.js'
export const LOGIN_MFA_PATH = '/login/mfa' // the second step of a sign-in: the code (or an enrolment's first) after the password

const isJson = (req: IncomingMessage): boolean => isJsonType(mediaType(req.headers['content-type']))
const isForm = (req: IncomingMessage): boolean => mediaType(req.headers['content-type']) === FORM_MEDIA_TYPE

/**
 * The sign-in: a form (the page's) or JSON. Either field missing or empty is 400
 * `required`, too long 400 `bad_request`; a form post gets the page again instead.
 */
const LOGIN_BODY = {
  name: 'LoginRequest',
  schema: T.Object({
    username: T.String({ minLength: 1, maxLength: 150 }),
    password: T.String({ minLength: 1, maxLength: 1024, format: 'password' }),
    next: T.Optional(T.String({ description: 'Where to go afterwards: a path on this gateway, or with session.cookies an https URL under a listed domain.' }))
  }),
  types: [FORM_TYPE, JSON_TYPE],
  required: true
} satisfies BodySpec

const LOGGED_OUT = 'Logged out (not a form post); or a form post of a session made through an OpenID provider with an ' +
  'end_session_endpoint (sign_in.oidc[].end_session): a page that refreshes to it (`Refresh`), which sends the browser back to the login page.'
/** The page's logout form (JSON and an empty body are taken too). */
const LOGOUT_BODY = {
  name: 'LogoutForm',
  schema: T.Object({ csrfmiddlewaretoken: T.Optional(T.String()) }),
  types: [FORM_TYPE],
  required: false
} satisfies BodySpec

export interface LoginDeps {
  config: Config
  store: Store
  auth: Authenticators
  passwords: PasswordChecker
  assets: AssetSet
  /** src/pipeline/origin.ts: a browser's request from another site */
  crossSite: (req: IncomingMessage) => boolean
  /** session.cookies: the cookies' Domain and where `next` may lead (src/pipeline/sso.ts) */
  sso: SessionScope
  /** records session.revoked (logout, or a login that replaces the browser's session) */
  audit?: Auditor
  /** the second factor (src/auth/mfa.ts) */
  mfa: SecondFactor
  /** passkeys (src/auth/passkeys.ts) */
  passkeys: PasskeyCeremonies
  /** sign_in.oidc (src/auth/oidc/): its routes, the login page's buttons, email_domains steering */
  providers?: OidcProviders | null
}

/** The second step: a one-time password or a recovery code, and `next` carried on. */
const MFA_BODY = {
  name: 'LoginCode',
  schema: T.Object({
    code: T.String({ minLength: 1, maxLength: 64, description: 'The 6-digit one-time password, or a recovery code (not while enrolling).' }),
    next: T.Optional(T.String({ description: 'Where to go afterwards: a path on this gateway, or with session.cookies an https URL under a listed domain.' }))
  }),
  types: [FORM_TYPE, JSON_TYPE],
  required: true
} satisfies BodySpec

export function loginRoutes (d: LoginDeps): Route[] {
  const { config, store, auth, passwords, assets, crossSite, audit, mfa, passkeys, sso } = d
  const providers = d.providers ?? null
  const safeNext = sso.next
  const names = config.names
  const secure = (ctx: RequestContext): string => (config.session.cookie_secure || ctx.https) ? '; Secure' : ''

  const { cookie_secure: cookieSecure, accept_legacy_cookie: acceptLegacy } = config.session
  const jar = sessionCookies(names, { cookieSecure, acceptLegacy }, sso)
  /**
   * Ends a browser's session: audited as session.revoked when there was one (deleting it says whose: no lookup more).
   */
  const endSession = async (ctx: RequestContext, id: string, via: 'login' | 'logout'): Promise<void> => {
    const userId = await store.sessions.delete(id)
    if (userId !== null) audit?.record({ event: 'session.revoked', ctx, userId, authMethod: 'session', via, credential: id })
  }
  const currentSessionId = (req: IncomingMessage): string | undefined => {
    const id = auth.session.cookieValue({ cookies: parseCookies(req.headers.cookie) })
    // ambiguous (null): no session is this browser's for sure, so none is ended
    return id === undefined || id === null || id === '' || id.length > 256 ? undefined : id
  }

  const { loginPage, mfaPage, recoveryPage, signedOutPage } = loginPages(
    assets, config.docs.enabled, { login: LOGIN_PATH, mfa: LOGIN_MFA_PATH },
    (providers?.list ?? []).map((p) => ({ action: `${OIDC_PATH}/${p.id}`, label: p.label, steers: p.c.email_domains.length > 0 }))
  )
  /** The login page's headers: its forms may lead to `next` and to the providers (their buttons, email_domains). */
  const loginHeaders = (next: string): Record<string, string> => pageHeadersFor(next, providers?.formOrigins() ?? [])
  /** The pending second step's cookie: only /login and /login/mfa see it. */
  const mfaCookie = (ctx: RequestContext, value: string, maxAge: number): string =>
    `${names.mfaCookie}=${value}; Path=${LOGIN_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure(ctx)}`

  /**
   * Starts the session a sign-in ends in: the browser's old one ended, the
   * cookies to set. `factors`: what the sign-in was made with (RFC 8176 amr),
   * kept with the session; `authMethod` audited (password, or passkey alone);
   * `sso`: a provider's sign-in, the names its back-channel logout ends it by.
   */
  const startSession = async (
    ctx: RequestContext, user: User, via: string, factors: readonly Factor[], authMethod = 'password', sso?: SsoSignIn
  ): Promise<string[]> => {
    const old = currentSessionId(ctx.req)
    if (old !== undefined) await endSession(ctx, old, 'login')
    const { idle_timeout: idle, absolute_timeout: absolute } = config.session
    const s = await store.sessions.create(user.id, idle, absolute, factors, sso)
    audit?.record({ event: 'session.created', ctx, user, authMethod: factors.includes('pwd') ? 'password' : authMethod, via, credential: s.id })
    await store.users.recordLogin(user.id)
    const set = jar.set(ctx, s.id, s.csrf)
    // a legacy cookie left beside the new one would make every request ambiguous (401)
    const legacy = names.legacySessionCookie
    if (acceptLegacy && legacy in parseCookies(ctx.req.headers.cookie)) set.push(jar.clearLegacy(ctx))
    return set
  }

  /**
   * After a first step (the password, or a provider's sign-in): the second one
   * when it is due (a code, a passkey, or an enrolment), answered as the code
   * page (or, `json` given, `mfa_required`) with the pending step's cookie;
   * false when none is due. `amr`: the first step's factors.
   */
  const secondStep = async (
    ctx: RequestContext, user: User, next: string,
    json: ((x: { body: Static<ReturnType<typeof loginMfaRequired>>, headers: Record<string, string> }) => void) | null,
    amr: Amr[] = ['pwd'], via = 'login', sso?: SsoSignIn
  ): Promise<boolean> => {
    let need = await mfa.need(user)
    let secret: string | undefined
    if (need === 'enrol') {
      if (json !== null) throw E.mfaUnset()
      // one an operator began (`sidegate mfa enroll`) is confirmed as it is: its secret is never shown again
      if ((await store.mfa.factors(user.id)).totp?.operator !== true) {
        const e = await store.mfa.begin(user.id)
        // enrolled meanwhile (another browser): a code, as for anyone enrolled
        if (e === null) need = 'code'
        else secret = e.secret
      }
    }
    if (need === 'none') return false
    audit?.record({ event: 'mfa.required', ctx, user, via })
    const pending = mfaCookie(ctx, mfa.pending(user, ctx.req, ctx, need === 'enrol' ? 'enrol' : 'code', amr, secret, sso), mfa.ttl)
    const passkey = need === 'passkey' || (need === 'code' && (await store.passkeys.list(user.id)).length > 0)
    const choices = [...(need === 'code' ? ['otp' as const] : []), ...(passkey ? ['passkey' as const] : [])]
    const url = need === 'passkey' ? LOGIN_MFA_PASSKEY_PATH : LOGIN_MFA_PATH
    if (json !== null) json({ body: { error: 'mfa_required', msg: 'MFA required', data: { choices, url } }, headers: { 'set-cookie': pending } })
    else sendHtml(ctx.res, 200, mfaPage({ next, user, secret, enrol: need === 'enrol', code: need !== 'passkey', passkey }), { ...pageHeadersFor(next), 'set-cookie': pending })
    return true
  }

  const getLogin = route({
    method: 'GET',
    path: LOGIN_PATH,
    auth: 'session-page',
    docs: {
      tags: ['Browser'],
      operationId: 'loginPage',
      summary: 'The login page',
      security: 'none',
      parameters: [ref('parameters', 'Next')],
      responses: {
        200: html('The login form.'),
        302: redirectTo('Already signed in: to `next`.')
      }
    },
    handler (ctx) {
      const next = safeNext(queryParam(ctx.req.url ?? '', 'next'))
      // already signed in: go on
      if (ctx.identity !== undefined) redirect(ctx.res, 302, next)
      else sendHtml(ctx.res, 200, loginPage({ next }), loginHeaders(next))
    }
  })

  const postLogin = route({
    method: 'POST',
    path: LOGIN_PATH,
    // checks the password itself (with the lockout)
    auth: 'none',
    // a form post gets the form again with its error, a JSON post the catalogue's
    body: { ...LOGIN_BODY, attachValidation: true },
    docs: {
      tags: ['Browser'],
      operationId: 'login',
      summary: 'Sign in and start a browser session',
      description: `Sets \`${names.sessionCookie}\` (HttpOnly) and \`${names.csrfCookie}\` (for \`X-CSRFToken\`), both \`SameSite=Lax; Path=/\`, \`Secure\` over HTTPS. The session id is new at every login. ` +
        'A form post redirects to `next` (a same-origin path, or with session.cookies an https URL under a listed domain; anything else becomes `/account/keys`) and shows errors in the page; a JSON post answers JSON. Cross-site posts are refused.',
      responses: {
        303: { description: 'Form login succeeded: to `next`.', headers: { Location: ref('headers', 'Location'), 'Set-Cookie': ref('headers', 'SetSessionCookies') } },
        // not only an error: a form post gets the form again
        401: { description: 'Wrong credentials: the form again with an error (form post), or `authentication_failed` (JSON).', content: { 'text/html': { schema: { type: 'string' } }, 'application/json': { schema: schemaRef('AuthenticationFailedError') } } }
      },
      errors: PAGE_ERRORS
    },
    answers: {
      200: {
        ...signedIn(names.jumpserver, 'JSON login succeeded (`LoginResult`), or the password passed and a second factor is due: `LoginMfaRequired` (JSON) or the second-factor form (a form post), with the pending step\'s cookie.', true),
        schema: T.Union([loginResult(names.jumpserver), loginMfaRequired(LOGIN_MFA_PATH, LOGIN_MFA_PASSKEY_PATH)])
      }
    },
    preValidation (ctx) { if (crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { body: fields, failures, reply }) {
      const json = isJson(ctx.req)
      // a `next` that is no safe path (not even a string) is the default one, not an error
      const next = safeNext(fields.next)
      const username = typeof fields.username === 'string' ? fields.username : ''
      const password = typeof fields.password === 'string' ? fields.password : ''
      const formError = (status: number, error: string, headers: Record<string, string | string[]> = {}): void =>
        sendHtml(ctx.res, status, loginPage({ next, username: username.slice(0, 150), error }), {
          ...loginHeaders(next), ...headers
        })

      // a username@<domain> of a provider's email_domains: that provider signs the browser in
      // (the password is not read)
      const steered = json ? undefined : providers?.steer(username.trim())
      if (steered !== undefined) {
        const q = new URLSearchParams({ next, login_hint: username.trim().slice(0, 320) })
        redirect(ctx.res, 303, `${OIDC_PATH}/${steered.id}?${q.toString()}`)
        return
      }
      const refused = failures.filter((f) => f.field !== 'next')
      if (refused.length > 0) {
        // JSON: either one missing first, then one too long
        if (json) throw refused.some((f) => f.missing) ? E.missingField(refused.find((f) => f.missing)!.field) : E.badRequest('username or password is too long.')
        formError(400, 'Enter your username and password.')
        return
      }
      let user
      try {
        user = await passwords.login(username, password, ctx, 'login')
      } catch (err) {
        if (json || !(err instanceof GatewayError)) throw err
        if (err.code === 'too_many_attempts') {
          const minutes = Math.max(1, Math.ceil(Number(err.headers?.['retry-after'] ?? 60) / 60))
          formError(429, `Too many failed sign-in attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`, err.headers as Record<string, string>)
        } else if (err.code === 'busy') {
          formError(503, 'Too many sign-ins are being checked right now. Try again in a moment.', err.headers as Record<string, string>)
        } else if (err.code === 'authentication_failed') {
          formError(401, 'Incorrect username or password.')
        } else throw err
        return
      }
      // the second step: the password alone starts nothing
      if (await secondStep(ctx, user, next, json ? (x) => { reply(200, x.body, x.headers) } : null)) return
      const cookies = await startSession(ctx, user, 'login', PASSWORD_ONLY)
      if (json) reply(200, { user: profile(user, undefined, names.jumpserver), next }, { 'set-cookie': cookies })
      else redirect(ctx.res, 303, next, { 'set-cookie': cookies })
    }
  })

  const postLogout = route({
    method: 'POST',
    path: LOGOUT_PATH,
    // ends the session its cookie names, with its own CSRF check (the header or the form field)
    auth: 'none',
    // a form field that is no string is no token: 403 when there is a session to end, as a missing one
    body: { ...LOGOUT_BODY, attachValidation: true },
    docs: {
      tags: ['Browser'],
      operationId: 'logout',
      summary: 'End the browser session',
      description: 'Deletes the session and clears the cookies. Needs the CSRF token in `X-CSRFToken`, or in the form field `csrfmiddlewaretoken`.',
      security: 'session',
      parameters: [ref('parameters', 'CsrfToken')],
      responses: {
        303: { description: 'Logged out (form post): to the login page.', headers: { Location: ref('headers', 'Location') } }
      },
      errors: { 403: 'CsrfFailed', 503: 'Unavailable' }
    },
    answers: {
      200: { description: LOGGED_OUT, schema: T.Object({ detail: T.Literal('Logged out.') }), page: true }
    },
    preValidation (ctx) { if (crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { body: fields, reply }) {
      const form = isForm(ctx.req)
      const id = currentSessionId(ctx.req)
      let provider: { label: string, to: string } | undefined
      if (id !== undefined) {
        const s = await store.sessions.get(id)
        if (s !== null) {
          // the session authenticator's rule, plus Django's form field for pages without scripts
          const h = ctx.req.headers['x-csrftoken']
          const token = typeof h === 'string' ? h : fields.csrfmiddlewaretoken
          if (typeof token !== 'string' || !safeEqual(token, s.csrf)) throw E.csrfFailed()
          await endSession(ctx, id, 'logout')
          // made through a provider: signed out there too (RP-initiated logout), back to our login page
          if (form) provider = await providers?.signOut(s.sso, () => gatewayUrl(ctx, LOGIN_PATH))
        }
      }
      const clear = { 'set-cookie': jar.clear(ctx) }
      // on to the provider by a page that refreshes to it: a form's redirect elsewhere is held to form-action
      const p = provider
      if (p !== undefined) sendHtml(ctx.res, 200, signedOutPage(p.label, p.to), { ...clear, refresh: `0; url=${p.to}` })
      else if (form) redirect(ctx.res, 303, LOGIN_PATH, clear)
      else reply(200, { detail: 'Logged out.' }, clear)
    }
  })

  const postMfa = route({
    method: 'POST',
    path: LOGIN_MFA_PATH,
    // the pending cookie from POST /login is the credential, checked here
    auth: 'none',
    body: { ...MFA_BODY, attachValidation: true },
    docs: {
      tags: ['Browser'],
      operationId: 'loginSecondFactor',
      summary: 'The second step of a sign-in: the code after the password',
      description: `After POST ${LOGIN_PATH} answered with the code page (a form post) or \`mfa_required\` (JSON), with the \`${names.mfaCookie}\` cookie (valid ${mfa.ttl} s, for the client address and User-Agent it was given to): ` +
        'the 6-digit one-time password or a recovery code starts the session (the cookies as POST /login sets them). ' +
        'A user sent to enrol (auth.mfa.required) confirms their new factor with its first code here, and sees their ten recovery codes once. ' +
        'A form post gets the page again with an error; a JSON post the catalogue\'s error. Wrong codes (an enrolment\'s first code too) count toward the per-user code lockout, and the pending step is spent after ' + `${PENDING_TRIES} codes (the password again). See docs/mfa.md.`,
      responses: {
        303: { description: 'Form post: signed in, to `next`.', headers: { Location: ref('headers', 'Location'), 'Set-Cookie': ref('headers', 'SetSessionCookies') } },
        401: { description: 'A wrong code, or no pending password step: the page again with an error (form post), or `mfa_failed` / `mfa_pending_missing` (JSON).', content: { 'text/html': { schema: { type: 'string' } }, 'application/json': { schema: { type: 'object', properties: { detail: { type: 'string' }, code: { enum: ['mfa_failed', 'mfa_pending_missing'] } } } } } }
      },
      errors: { ...PAGE_ERRORS, 503: 'Unavailable' }
    },
    answers: { 200: signedIn(names.jumpserver, 'JSON: signed in; or a form post that enrolled: the recovery codes page (the session cookies set).', true) },
    preValidation (ctx) { if (crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { body: fields, failures, reply }) {
      const json = isJson(ctx.req)
      const next = safeNext(fields.next)
      const p = mfa.open(ctx.req, names.mfaCookie, ctx)
      // read uncached: a user disabled, or whose password changed, since the password step cannot finish it
      const user = p === null || p.amr.includes('otp') ? null : await mfa.user(p)
      const expired = (error = 'Your sign-in expired. Sign in again.'): void => {
        if (json) throw E.mfaPendingMissing()
        sendHtml(ctx.res, 401, loginPage({ next, error }), { ...loginHeaders(next), 'set-cookie': mfaCookie(ctx, '', 0) })
      }
      if (p === null || user === null) { expired(); return }
      const code = typeof fields.code === 'string' ? fields.code.trim() : ''
      const state = p.w === 'enrol' ? 'none' : await store.mfa.state(user.id)
      const withPasskey = state === 'passkey' || (state === 'enrolled' && (await store.passkeys.list(user.id)).length > 0)
      const again = (status: number, error: string, headers: Record<string, string> = {}): void =>
        sendHtml(ctx.res, status, mfaPage({ next, user, error, secret: p.w === 'enrol' ? p.s : undefined, enrol: p.w === 'enrol', code: state !== 'passkey', passkey: withPasskey }), { ...pageHeadersFor(next), ...headers })
      if (failures.some((f) => f.field === 'code') || code === '') {
        if (json) throw E.missingField('code')
        again(400, 'Enter the code.')
        return
      }
      // a pending step is worth PENDING_TRIES codes, an enrolment's first code included
      if (!(await mfa.tries(p))) { expired('Too many wrong codes. Sign in again.'); return }
      let recovery: string[] | null = null
      try {
        // an enrolment's first code (the user's, or one an operator
        // began) counts toward the same per-user lockout as any code
        if (p.w === 'enrol') recovery = await mfa.confirm(user, code, ctx, 'login')
        else await mfa.check(user, code, ctx, 'login')
      } catch (err) {
        if (json || !(err instanceof GatewayError)) throw err
        if (err.code === 'too_many_attempts') again(429, 'Too many wrong codes. Try again later.', err.headers as Record<string, string>)
        else if (err.code === 'mfa_failed') again(401, p.w === 'enrol' ? 'That code is not right. Check the time on your device and try the next code.' : 'That code is not right.')
        else throw err
        return
      }
      if (!(await mfa.consume(p))) { expired(); return }
      // the password step's factors and the code just given (an
      // enrolment's first code, a code or a recovery code: `otp`)
      const cookies = [...(await startSession(ctx, user, 'login', [...p.amr, 'otp'], undefined, p.o)), mfaCookie(ctx, '', 0)]
      if (json) reply(200, { user: profile(user, undefined, names.jumpserver), next, ...(recovery === null ? {} : { recovery_codes: recovery }) }, { 'set-cookie': cookies })
      else if (recovery !== null) sendHtml(ctx.res, 200, recoveryPage(next, recovery), { 'set-cookie': cookies })
      else redirect(ctx.res, 303, next, { 'set-cookie': cookies })
    }
  })

  return [
    getLogin,
    postLogin,
    postMfa,
    postLogout,
    ...passkeyLoginRoutes({ config, store, mfa, passkeys, crossSite, startSession, mfaCookie, safeNext }),
    ...(providers === null || providers.list.length === 0
      ? []
      : oidcLoginRoutes({ config, store, providers, safeNext, startSession, secondStep, loginPage, loginHeaders }))
  ]
}

/** Without an upstream, the gateway's address leads a person to sign in (and on to the keys page). */
export function homeRoute (): Route {
  return {
    method: 'GET',
    path: '/',
    auth: 'none',
    docs: { tags: ['Browser'], operationId: 'home', summary: 'Without an upstream: to the API keys page (and so to sign-in)', responses: { 302: redirectTo('To /account/keys.') } },
    handler (ctx) { redirect(ctx.res, 302, HOME) }
  }
}

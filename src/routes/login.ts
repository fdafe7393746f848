/**
 * Browser sessions: `GET /login` (the form), `POST /login` (form or JSON),
 * `POST /logout`. A login checks the password with the shared lockout,
 * drops any session the browser already had (the id is rotated), creates a
 * new one and sets two cookies: `<abbrev>_sessionid` (HttpOnly) and
 * `<abbrev>_csrftoken` (readable by scripts, to echo in `X-CSRFToken`).
 * Both are SameSite=Lax, Path=/, and Secure over HTTPS or with
 * `session.cookie_secure`. Cross-site posts (src/pipeline/origin.ts: `Sec-Fetch-Site`,
 * else `Origin`, else `Referer`) are refused, so no other site can log a
 * browser in or out.
 */
import type { IncomingMessage } from 'node:http'
import type { Auditor } from '../observability/audit.js'
import type { Authenticators } from '../auth/index.js'
import { parseCookies } from '../http/cookies.js'
import { Type as T } from '@sinclair/typebox'
import { FORM_TYPE as FORM_MEDIA_TYPE, isJsonType, mediaType } from '../http/content-type.js'
import { queryParam } from '../http/query.js'
import type { Config } from '../config/index.js'
import { safeEqual } from '../crypto.js'
import { E, GatewayError } from '../errors.js'
import { sendJson } from '../respond.js'
import type { Store } from '../store/types.js'
import { redirect, sendHtml, Template } from './html.js'
import { profile, profileSchemas } from './profile.js'
import type { AssetSet } from './static.js'
import type { PasswordChecker } from '../auth/passwords.js'
import { FORM_TYPE, JSON_TYPE, type BodySpec } from './body.js'
import { BODY_ERRORS, html, json, redirectTo, ref, schemaRef } from './spec.js'
import { route, type Route, type RequestContext } from './types.js'

export const LOGIN_PATH = '/login'
export const LOGOUT_PATH = '/logout'
/** Where a login lands when `next` is missing or unsafe. */
export const HOME = '/account/keys'

const BASE = 'http://sidegate.invalid'

/**
 * `next` if it is a same-origin path, else the fallback. Refused: anything
 * not starting with one "/" (absolute URLs, schemes, `//host`), backslashes
 * (`/\host`), control characters and whitespace (browsers drop tabs and
 * newlines, turning `/\t/host` into `//host`), and the login page itself.
 */
export function safeNext (v: unknown, fallback = HOME): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > 2048) return fallback
  if (v[0] !== '/' || v[1] === '/' || /[\\\s\x00-\x1f\x7f]/.test(v)) return fallback
  let u: URL
  try { u = new URL(v, BASE) } catch { return fallback }
  if (u.origin !== BASE || u.pathname === LOGIN_PATH || u.pathname === LOGOUT_PATH) return fallback
  const out = u.pathname + u.search + u.hash
  return out.startsWith('//') ? fallback : out
}

/**
 * The login page for a browser sent to sign in from `original` (a request
 * target as received: latin1, so a raw UTF-8 byte is read back as UTF-8):
 * back there afterwards when it is a safe `next`, else to "/" (a target such
 * as `//evil.example/` or `/\evil` never leaves the site). `origin`: a
 * proxy's origin to make it absolute (src/pipeline/headers.ts forwardedOrigin), or ''.
 */
export function loginLocation (original: string, origin = ''): string {
  const target = /[\x80-\xff]/.test(original) ? Buffer.from(original, 'latin1').toString('utf8') : original
  return `${origin}${LOGIN_PATH}?next=${encodeURIComponent(safeNext(target, '/'))}`
}

function isJson (req: IncomingMessage): boolean {
  return isJsonType(mediaType(req.headers['content-type']))
}

function isForm (req: IncomingMessage): boolean {
  return mediaType(req.headers['content-type']) === FORM_MEDIA_TYPE
}

/** The sign-in: a form (the page's) or JSON. Either field missing or empty is 400 `required`, too long 400 `bad_request`; a form post gets the page again instead. */
const LOGIN_BODY = {
  name: 'LoginRequest',
  schema: T.Object({
    username: T.String({ minLength: 1, maxLength: 150 }),
    password: T.String({ minLength: 1, maxLength: 1024, format: 'password' }),
    next: T.Optional(T.String({ description: 'A path on this gateway to go to afterwards.' }))
  }),
  types: [FORM_TYPE, JSON_TYPE],
  required: true
} satisfies BodySpec

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
  /** records session.revoked (logout, or a login that replaces the browser's session) */
  audit?: Auditor
}

export function loginRoutes (d: LoginDeps): Route[] {
  const { config, store, auth, passwords, assets, crossSite, audit } = d
  const names = config.names
  const secure = (ctx: RequestContext): string => (config.session.cookie_secure || ctx.https) ? '; Secure' : ''

  const sessionCookies = (ctx: RequestContext, id: string, csrf: string): string[] => [
    `${names.sessionCookie}=${id}; Path=/; HttpOnly; SameSite=Lax${secure(ctx)}`,
    `${names.csrfCookie}=${csrf}; Path=/; SameSite=Lax${secure(ctx)}`
  ]
  const clearCookies = (ctx: RequestContext): string[] => [
    `${names.sessionCookie}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax${secure(ctx)}`,
    `${names.csrfCookie}=; Path=/; Max-Age=0; SameSite=Lax${secure(ctx)}`,
    ...(config.session.accept_legacy_cookie ? [`${names.legacySessionCookie}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax${secure(ctx)}`] : [])
  ]
  /** Ends a browser's session: audited as session.revoked when there was one (deleting it says whose: no lookup more). */
  const endSession = async (ctx: RequestContext, id: string, via: 'login' | 'logout'): Promise<void> => {
    const userId = await store.deleteSession(id)
    if (userId !== null) audit?.record({ event: 'session.revoked', ctx, userId, authMethod: 'session', via, credential: id })
  }
  const currentSessionId = (req: IncomingMessage): string | undefined => {
    const id = auth.session.cookieValue({ cookies: parseCookies(req.headers.cookie) })
    // ambiguous (null): no session is this browser's for sure, so none is ended
    return id === undefined || id === null || id === '' || id.length > 256 ? undefined : id
  }

  const template = Template.load<{ css: string, action: string, next: string, username: string, error: string, docs: boolean }>('login.html')
  const loginPage = (o: { next: string, username?: string, error?: string }): string =>
    template.render({ css: assets.url('sidegate.css'), action: LOGIN_PATH, next: o.next, username: o.username ?? '', error: o.error ?? '', docs: config.docs.enabled })

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
      else sendHtml(ctx.res, 200, loginPage({ next }))
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
        'A form post redirects to `next` (a same-origin path; anything else becomes `/account/keys`) and shows errors in the page; a JSON post answers JSON. Cross-site posts are refused.',
      responses: {
        200: { description: 'JSON login succeeded.', headers: { 'Set-Cookie': ref('headers', 'SetSessionCookies') }, content: json(schemaRef('LoginResult')) },
        303: { description: 'Form login succeeded: to `next`.', headers: { Location: ref('headers', 'Location'), 'Set-Cookie': ref('headers', 'SetSessionCookies') } },
        // not only an error: a form post gets the form again
        401: { description: 'Wrong credentials: the form again with an error (form post), or `authentication_failed` (JSON).', content: { 'text/html': { schema: { type: 'string' } }, 'application/json': { schema: schemaRef('AuthenticationFailedError') } } }
      },
      errors: { ...BODY_ERRORS, 403: 'CsrfFailed', 429: 'TooManyAttempts', 503: 'Unavailable' },
      schemas: {
        LoginResult: {
          type: 'object',
          required: ['user', 'next'],
          properties: { user: schemaRef('Profile'), next: { type: 'string', description: '`next`, made safe.' } }
        },
        ...profileSchemas(config.names.jumpserver)
      }
    },
    preValidation (ctx) { if (crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { body: fields, failures }) {
      const json = isJson(ctx.req)
      // a `next` that is no safe path (not even a string) is the default one, not an error
      const next = safeNext(fields.next)
      const username = typeof fields.username === 'string' ? fields.username : ''
      const password = typeof fields.password === 'string' ? fields.password : ''
      const formError = (status: number, error: string, headers: Record<string, string | string[]> = {}): void =>
        sendHtml(ctx.res, status, loginPage({ next, username: username.slice(0, 150), error }), headers)

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
      const old = currentSessionId(ctx.req)
      if (old !== undefined) await endSession(ctx, old, 'login')
      const s = await store.createSession(user.id, config.session.idle_timeout, config.session.absolute_timeout)
      audit?.record({ event: 'session.created', ctx, user, authMethod: 'password', via: 'login', credential: s.id })
      await store.recordLogin(user.id)
      const cookies = sessionCookies(ctx, s.id, s.csrf)
      // a legacy cookie left beside the new one would make every request ambiguous (401)
      const legacy = names.legacySessionCookie
      if (config.session.accept_legacy_cookie && legacy in parseCookies(ctx.req.headers.cookie)) {
        cookies.push(`${legacy}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax${secure(ctx)}`)
      }
      if (json) sendJson(ctx.res, 200, { user: profile(user, undefined, names.jumpserver), next }, { 'set-cookie': cookies })
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
        200: { description: 'Logged out (JSON or empty body).', content: json({ type: 'object', properties: { detail: { type: 'string' } } }) },
        303: { description: 'Logged out (form post): to the login page.', headers: { Location: ref('headers', 'Location') } }
      },
      errors: { 403: 'CsrfFailed', 503: 'Unavailable' }
    },
    preValidation (ctx) { if (crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { body: fields }) {
      const form = isForm(ctx.req)
      const id = currentSessionId(ctx.req)
      if (id !== undefined) {
        const s = await store.getSession(id)
        if (s !== null) {
          // the session authenticator's rule, plus Django's form field for pages without scripts
          const h = ctx.req.headers['x-csrftoken']
          const token = typeof h === 'string' ? h : fields.csrfmiddlewaretoken
          if (typeof token !== 'string' || !safeEqual(token, s.csrf)) throw E.csrfFailed()
          await endSession(ctx, id, 'logout')
        }
      }
      if (form) redirect(ctx.res, 303, LOGIN_PATH, { 'set-cookie': clearCookies(ctx) })
      else sendJson(ctx.res, 200, { detail: 'Logged out.' }, { 'set-cookie': clearCookies(ctx) })
    }
  })

  return [getLogin, postLogin, postLogout]
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

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
import { FORM_TYPE, isJsonType, mediaType } from '../http/content-type.js'
import { queryParam } from '../http/query.js'
import { decodeFields, readBody } from '../body.js'
import type { Config } from '../config/index.js'
import { safeEqual } from '../crypto.js'
import { E, GatewayError } from '../errors.js'
import { sendJson } from '../respond.js'
import type { Store } from '../store/types.js'
import { esc, page, redirect, sendHtml } from './html.js'
import { profile, profileSchemas } from './profile.js'
import type { AssetSet } from './static.js'
import type { PasswordChecker } from '../auth/passwords.js'
import { BODY_ERRORS, html, json, redirectTo, ref, schemaRef } from './spec.js'
import type { Route, RequestContext } from './types.js'

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
  return mediaType(req.headers['content-type']) === FORM_TYPE
}

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
  const docsLink = config.docs.enabled ? '<a href="/api/docs/">API documentation</a>' : ''

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

  const loginPage = (o: { next: string, username?: string, error?: string }): string => page({
    title: 'Sign in · sidegate',
    styles: [assets.url('sidegate.css')],
    bodyClass: 'center'
  }, `<main class="card" aria-labelledby="title">
  <p class="brand">sidegate</p>
  <h1 id="title">Sign in</h1>
  ${o.error === undefined ? '' : `<p class="error" role="alert" id="login-error">${esc(o.error)}</p>`}
  <form method="post" action="${LOGIN_PATH}" class="stack">
    <input type="hidden" name="next" value="${esc(o.next)}">
    <div class="field">
      <label for="username">Username</label>
      <input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required maxlength="150" value="${esc(o.username ?? '')}"${o.error === undefined ? ' autofocus' : ' aria-describedby="login-error"'}>
    </div>
    <div class="field">
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024"${o.error === undefined ? '' : ' autofocus aria-describedby="login-error" aria-invalid="true"'}>
    </div>
    <button type="submit" class="primary">Sign in</button>
  </form>
  <p class="links">${docsLink}</p>
</main>`)

  const getLogin: Route = {
    methods: ['GET', 'HEAD'],
    path: LOGIN_PATH,
    auth: 'session-page',
    docs: {
      operations: {
        get: {
          tags: ['Browser'],
          operationId: 'loginPage',
          summary: 'The login page',
          security: 'none',
          parameters: [ref('parameters', 'Next')],
          responses: {
            200: html('The login form.'),
            302: redirectTo('Already signed in: to `next`.')
          }
        }
      }
    },
    handle (ctx) {
      const next = safeNext(queryParam(ctx.req.url ?? '', 'next'))
      // already signed in: go on
      if (ctx.identity !== undefined) redirect(ctx.res, 302, next)
      else sendHtml(ctx.res, 200, loginPage({ next }))
    }
  }

  const postLogin: Route = {
    methods: ['POST'],
    path: LOGIN_PATH,
    // checks the password itself (with the lockout)
    auth: 'none',
    docs: {
      operations: {
        post: {
          tags: ['Browser'],
          operationId: 'login',
          summary: 'Sign in and start a browser session',
          description: `Sets \`${names.sessionCookie}\` (HttpOnly) and \`${names.csrfCookie}\` (for \`X-CSRFToken\`), both \`SameSite=Lax; Path=/\`, \`Secure\` over HTTPS. The session id is new at every login. ` +
            'A form post redirects to `next` (a same-origin path; anything else becomes `/account/keys`) and shows errors in the page; a JSON post answers JSON. Cross-site posts are refused.',
          requestBody: {
            required: true,
            content: {
              'application/x-www-form-urlencoded': { schema: schemaRef('LoginRequest') },
              'application/json': { schema: schemaRef('LoginRequest') }
            }
          },
          responses: {
            200: { description: 'JSON login succeeded.', headers: { 'Set-Cookie': ref('headers', 'SetSessionCookies') }, content: json(schemaRef('LoginResult')) },
            303: { description: 'Form login succeeded: to `next`.', headers: { Location: ref('headers', 'Location'), 'Set-Cookie': ref('headers', 'SetSessionCookies') } },
            // not only an error: a form post gets the form again
            401: { description: 'Wrong credentials: the form again with an error (form post), or `authentication_failed` (JSON).', content: { 'text/html': { schema: { type: 'string' } }, 'application/json': { schema: schemaRef('AuthenticationFailedError') } } }
          },
          errors: { ...BODY_ERRORS, 403: 'CsrfFailed', 429: 'TooManyAttempts', 503: 'Unavailable' }
        }
      },
      schemas: {
        LoginRequest: {
          type: 'object',
          required: ['username', 'password'],
          properties: {
            username: { type: 'string', maxLength: 150 },
            password: { type: 'string', maxLength: 1024, format: 'password' },
            next: { type: 'string', description: 'A path on this gateway to go to afterwards.' }
          }
        },
        LoginResult: {
          type: 'object',
          required: ['user', 'next'],
          properties: { user: schemaRef('Profile'), next: { type: 'string', description: '`next`, made safe.' } }
        },
        ...profileSchemas(config.names.jumpserver)
      }
    },
    async handle (ctx) {
      if (crossSite(ctx.req)) throw E.crossSite()
      const json = isJson(ctx.req)
      const fields = decodeFields(ctx.req.headers['content-type'], await readBody(ctx.req, config.server.body_limit))
      const next = safeNext(fields.next)
      const username = typeof fields.username === 'string' ? fields.username : ''
      const password = typeof fields.password === 'string' ? fields.password : ''
      const formError = (status: number, error: string, headers: Record<string, string | string[]> = {}): void =>
        sendHtml(ctx.res, status, loginPage({ next, username: username.slice(0, 150), error }), headers)

      if (username === '' || password === '' || username.length > 150 || password.length > 1024) {
        if (json) throw username === '' ? E.missingField('username') : password === '' ? E.missingField('password') : E.badRequest('username or password is too long.')
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
  }

  const postLogout: Route = {
    methods: ['POST'],
    path: LOGOUT_PATH,
    // ends the session its cookie names, with its own CSRF check (the header or the form field)
    auth: 'none',
    docs: {
      operations: {
        post: {
          tags: ['Browser'],
          operationId: 'logout',
          summary: 'End the browser session',
          description: 'Deletes the session and clears the cookies. Needs the CSRF token in `X-CSRFToken`, or in the form field `csrfmiddlewaretoken`.',
          security: 'session',
          parameters: [ref('parameters', 'CsrfToken')],
          requestBody: { required: false, content: { 'application/x-www-form-urlencoded': { schema: schemaRef('LogoutForm') } } },
          responses: {
            200: { description: 'Logged out (JSON or empty body).', content: json({ type: 'object', properties: { detail: { type: 'string' } } }) },
            303: { description: 'Logged out (form post): to the login page.', headers: { Location: ref('headers', 'Location') } }
          },
          errors: { 403: 'CsrfFailed', 503: 'Unavailable' }
        }
      },
      schemas: { LogoutForm: { type: 'object', properties: { csrfmiddlewaretoken: { type: 'string' } } } }
    },
    async handle (ctx) {
      if (crossSite(ctx.req)) throw E.crossSite()
      const form = isForm(ctx.req)
      const body = await readBody(ctx.req, config.server.body_limit)
      const fields = body.length === 0 ? {} : decodeFields(ctx.req.headers['content-type'], body)
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
  }

  return [getLogin, postLogin, postLogout]
}

/** Without an upstream, the gateway's address leads a person to sign in (and on to the keys page). */
export function homeRoute (): Route {
  return {
    methods: ['GET', 'HEAD'],
    path: '/',
    auth: 'none',
    docs: {
      operations: {
        get: { tags: ['Browser'], operationId: 'home', summary: 'Without an upstream: to the API keys page (and so to sign-in)', responses: { 302: redirectTo('To /account/keys.') } }
      }
    },
    handle (ctx) { redirect(ctx.res, 302, HOME) }
  }
}

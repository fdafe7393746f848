/**
 * A user's own password: changed on /account/password with the current one
 * (the login lockout counts it), or set once through a link an operator made
 * (`sidegate user reset-link`, /login/reset?token=…: sealed, an hour, void once
 * any password is set; nothing stored). Either ends the user's sessions and
 * unused bearer tokens everywhere; a change on the account page renews the
 * browser's own session, so the person who changed it stays signed in.
 */
import type { IncomingMessage } from 'node:http'
import { Type as T } from '@sinclair/typebox'
import type { Config } from '../config/index.js'
import type { Authenticators } from '../auth/index.js'
import type { PasswordChecker } from '../auth/passwords.js'
import { E, GatewayError } from '../errors.js'
import type { Auditor } from '../observability/audit.js'
import type { SessionScope } from '../pipeline/sso.js'
import type { Session, Store, User } from '../store/types.js'
import { MIN_PASSWORD } from '../limits.js'
import { FORM_TYPE, type BodySpec } from './body.js'
import { browserSession } from './browser-session.js'
import { redirect, sendHtml, Template } from './html.js'
import { LOGIN_PATH, LOGOUT_PATH, PASSWORD_PATH, RESET_PATH } from './next.js'
import { sessionCookies } from './session-cookies.js'
import { BODY_ERRORS, html, redirectTo, ref } from './spec.js'
import type { AssetSet } from './static.js'
import { route, type RequestContext, type Route } from './types.js'

export interface PasswordDeps {
  config: Config
  store: Store
  auth: Authenticators
  assets: AssetSet
  passwords: PasswordChecker
  audit?: Auditor
  crossSite: (req: IncomingMessage) => boolean
  sso: SessionScope
}

const pw = (description: string) => T.String({ maxLength: 1024, format: 'password', description })
/** What every form that sets a password has: the new one twice, and the username for a password manager. */
const NEW_PASSWORD = {
  password: pw(`The new password: at least ${MIN_PASSWORD} characters.`),
  again: pw('The new password again.'),
  username: T.Optional(T.String({ maxLength: 256, description: 'Ignored (for password managers).' }))
}
const CHANGE_FORM = {
  name: 'PasswordChangeForm',
  schema: T.Object({ csrfmiddlewaretoken: T.String({ maxLength: 256 }), current: pw('The password now.'), ...NEW_PASSWORD }),
  types: [FORM_TYPE],
  required: true
} satisfies BodySpec
const RESET_FORM = {
  name: 'PasswordResetForm',
  schema: T.Object({ token: T.String({ maxLength: 1024, description: 'The link\'s token.' }), ...NEW_PASSWORD }),
  types: [FORM_TYPE],
  required: true
} satisfies BodySpec

type ChangeValues = {
  css: string,
  docs: boolean,
  logout: string,
  action: string,
  csrf: string,
  username: string,
  error: string,
  done: boolean,
  local: boolean,
  min: number,
  newHelp: string
}
type ResetValues = {
  css: string,
  action: string,
  login: string,
  token: string,
  username: string,
  error: string,
  done: boolean,
  form: boolean,
  min: number,
  newHelp: string
}

/** The new password's own checks: its length and the second copy; the page's error, or '' when fine. */
function newPasswordProblem (password: string, again: string): string {
  if (password.length < MIN_PASSWORD) return `The new password needs at least ${MIN_PASSWORD} characters.`
  return password === again ? '' : 'The two new passwords differ.'
}

const NO_REFERRER = { 'referrer-policy': 'no-referrer' }

export function passwordRoutes (d: PasswordDeps): Route[] {
  const { config, store, auth, assets, passwords, audit, crossSite } = d
  const change = Template.load<ChangeValues>('account-password.html')
  const reset = Template.load<ResetValues>('reset.html')
  const jar = sessionCookies(
    config.names,
    { cookieSecure: config.session.cookie_secure, acceptLegacy: config.session.accept_legacy_cookie },
    d.sso
  )
  const changePage = (user: User, s: Session, o: Partial<ChangeValues> = {}): ChangeValues => ({
    css: assets.url('sidegate.css'),
    docs: config.docs.enabled,
    logout: LOGOUT_PATH,
    action: PASSWORD_PATH,
    csrf: s.csrf,
    username: user.username,
    error: '',
    done: false,
    local: true,
    min: MIN_PASSWORD,
    newHelp: 'Signs you out everywhere else.',
    ...o
  })
  const resetPage = (o: Partial<ResetValues>): string => reset.render({
    css: assets.url('sidegate.css'),
    action: RESET_PATH,
    login: LOGIN_PATH,
    token: '',
    username: '',
    error: '',
    done: false,
    form: false,
    min: MIN_PASSWORD,
    newHelp: 'This link works once.',
    ...o
  })
  const failed = (ctx: RequestContext, user: User | undefined, via: string, reason: string): void => {
    audit?.record({ event: 'password.change_failed', ctx, ...(user === undefined ? {} : { user }), via, reason })
  }

  const getChange = route({
    method: 'GET',
    path: PASSWORD_PATH,
    auth: 'session-page',
    docs: {
      tags: ['Browser'],
      operationId: 'passwordPage',
      summary: 'The page where a signed-in user changes their password',
      responses: { 200: html('The page.'), 302: redirectTo(`No session: to \`/login?next=${PASSWORD_PATH}\`.`) }
    },
    async handler (ctx) {
      const who = ctx.identity
      if (who?.method !== 'session') {
        redirect(ctx.res, 302, `${LOGIN_PATH}?next=${encodeURIComponent(PASSWORD_PATH)}`)
        return
      }
      const local = (await store.passwords.hash(who.user.id)) !== null
      sendHtml(ctx.res, 200, change.render(changePage(who.user, who.session, { local })))
    }
  })

  const postChange = route({
    method: 'POST',
    path: PASSWORD_PATH,
    // the session and its CSRF token (the form field) are checked here, as POST /logout does
    auth: 'none',
    body: CHANGE_FORM,
    docs: {
      tags: ['Browser'],
      operationId: 'changePassword',
      summary: 'Change the signed-in user\'s password (the current one required)',
      description: 'The current password is checked as a sign-in\'s is (the login lockout counts it). The user\'s other sessions and unused bearer tokens end; this browser gets a new session. Needs the browser session and its CSRF token in `csrfmiddlewaretoken`. A user without a password of their own (a directory\'s or a provider\'s) changes it there.',
      security: 'session',
      responses: { 200: html('The page, saying it was changed.') },
      errors: {
        ...BODY_ERRORS,
        400: { description: 'A bad body; or the page with its error (the new password too short, the two differ, no password of their own).', codes: ['required', 'parse_error', 'bad_request'], page: true },
        401: { description: 'No browser session.', codes: ['not_authenticated', 'invalid_session'] },
        403: { description: 'No or a wrong CSRF token; or the page with its error: the current password is wrong.', codes: ['csrf_failed', 'password_incorrect'], page: true },
        429: { description: 'Locked out for a while: the page with its error.', codes: ['too_many_attempts'], headers: { 'Retry-After': ref('headers', 'RetryAfter') }, page: true },
        503: 'Unavailable'
      }
    },
    preValidation (ctx) { if (crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { body }) {
      const { user, s } = await browserSession(store, auth, ctx, body.csrfmiddlewaretoken)
      const page = (status: number, o: Partial<ChangeValues>, headers?: Record<string, string | string[]>): void =>
        sendHtml(ctx.res, status, change.render(changePage(user, s, o)), headers)
      if ((await store.passwords.hash(user.id)) === null) {
        page(400, { local: false })
        return
      }
      const problem = newPasswordProblem(body.password, body.again)
      if (problem !== '') {
        failed(ctx, user, 'account', 'password_invalid')
        page(400, { error: problem })
        return
      }
      try {
        // a directory may answer for another user of that name: only the signed-in one's password counts
        if ((await passwords.login(user.username, body.current, ctx, 'confirm')).id !== user.id) throw E.passwordIncorrect()
      } catch (err) {
        if (!(err instanceof GatewayError) || !['authentication_failed', 'sso_not_linked', 'password_incorrect', 'too_many_attempts'].includes(err.code)) throw err
        const locked = err.code === 'too_many_attempts'
        failed(ctx, user, 'account', locked ? err.code : 'password_incorrect')
        page(locked ? 429 : 403, { error: locked ? 'Too many failed attempts. Try again later.' : 'The current password is incorrect.' }, err.headers as Record<string, string> | undefined)
        return
      }
      await store.passwords.set(user.id, body.password)
      audit?.record({ event: 'password.changed', ctx, user, via: 'account' })
      // every session ended with the old password; this browser's person proved it just now
      const { idle_timeout: idle, absolute_timeout: absolute } = config.session
      const fresh = await store.sessions.create(user.id, idle, absolute, s.factors)
      audit?.record({ event: 'session.created', ctx, user, authMethod: 'password', via: 'account', credential: fresh.id })
      page(200, { done: true, csrf: fresh.csrf }, { 'set-cookie': jar.set(ctx, fresh.id, fresh.csrf) })
    }
  })

  const getReset = route({
    method: 'GET',
    path: RESET_PATH,
    auth: 'none',
    docs: {
      tags: ['Browser'],
      operationId: 'resetPage',
      summary: 'The page of a password-reset link (`sidegate user reset-link`)',
      parameters: [{ name: 'token', in: 'query', required: true, schema: { type: 'string' }, description: 'The link\'s token.' }],
      responses: { 200: html('The form for the new password.') },
      errors: { 400: { description: 'The page with its error: the link expired, was used, or the password changed since.', codes: ['reset_link_invalid'], page: true } }
    },
    async handler (ctx) {
      const token = new URL(ctx.req.url ?? '/', 'http://x').searchParams.get('token') ?? ''
      const id = await store.passwords.resetUser(token)
      const user = id === null ? null : await store.users.get(id)
      if (user === null) {
        sendHtml(ctx.res, 400, resetPage({ error: E.resetLinkInvalid().message }), NO_REFERRER)
        return
      }
      sendHtml(ctx.res, 200, resetPage({ form: true, token, username: user.username }), NO_REFERRER)
    }
  })

  const postReset = route({
    method: 'POST',
    path: RESET_PATH,
    auth: 'none',
    body: RESET_FORM,
    docs: {
      tags: ['Browser'],
      operationId: 'resetPassword',
      summary: 'Set a new password with a reset link\'s token',
      description: 'Once: the link is void when any password has been set since it was made. Ends the user\'s sessions and unused bearer tokens; the user then signs in with the new password.',
      security: 'none',
      responses: { 200: html('The page, saying it is set.') },
      errors: {
        ...BODY_ERRORS,
        400: { description: 'A bad body; or the page with its error (the link not valid, the password too short, the two differ).', codes: ['required', 'parse_error', 'bad_request', 'reset_link_invalid'], page: true }
      }
    },
    preValidation (ctx) { if (crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { body }) {
      const problem = newPasswordProblem(body.password, body.again)
      if (problem !== '') {
        const valid = (await store.passwords.resetUser(body.token)) !== null
        sendHtml(ctx.res, 400, resetPage(valid ? { form: true, token: body.token, username: body.username ?? '', error: problem } : { error: E.resetLinkInvalid().message }), NO_REFERRER)
        return
      }
      const id = await store.passwords.resetWith(body.token, body.password)
      const user = id === null ? null : await store.users.get(id)
      if (user === null) {
        failed(ctx, undefined, 'reset_link', 'reset_link_invalid')
        sendHtml(ctx.res, 400, resetPage({ error: E.resetLinkInvalid().message }), NO_REFERRER)
        return
      }
      audit?.record({ event: 'password.changed', ctx, user, via: 'reset_link' })
      sendHtml(ctx.res, 200, resetPage({ done: true }), NO_REFERRER)
    }
  })

  return [getChange, postChange, getReset, postReset]
}

/**
 * The account's second factor, a page without scripts (`/account/mfa`):
 * turn on an authenticator app (the otpauth:// URI as a QR code, its key and
 * URI, confirmed with a first code before it counts), and make new recovery
 * codes (with a current code); passkeys: register one (the page's only
 * script, static/passkeys.js, runs the browser's ceremony against the two
 * JSON routes below), list, rename and remove them (forms). Form posts carry the session's CSRF token in
 * `csrfmiddlewaretoken`, as the logout form does. Every change to the
 * account's factors (adding a passkey, setting up an authenticator app,
 * removing a passkey) needs the same re-proof (reprove below): a sign-in less
 * than FRESH_LOGIN_MS ago, else the password; removing the last second factor
 * needs a sign-in with a second factor less than FRESH_LOGIN_MS ago. Turning
 * the authenticator app off is an operator's (`sidegate mfa reset`).
 */
import type { IncomingMessage } from 'node:http'
import { Type as T } from '@sinclair/typebox'
import type { Authenticators } from '../auth/index.js'
import { otpauthUri, qrDataUri, type SecondFactor } from '../auth/mfa.js'
import { passkeyName, type PasskeyCeremonies } from '../auth/passkeys.js'
import type { Config } from '../config/index.js'
import { TOTP } from '../crypto.js'
import { FRESH_LOGIN_MS } from '../limits.js'
import type { PasswordChecker } from '../auth/passwords.js'
import { E, GatewayError } from '../errors.js'
import type { Auditor } from '../observability/audit.js'
import { isTwoFactor, type Session, type Store, type User } from '../store/types.js'
import { FORM_TYPE, JSON_TYPE, type BodySpec } from './body.js'
import { Html, redirect, sendHtml, Template } from './html.js'
import { LOGIN_PATH, LOGOUT_PATH } from './next.js'
import { CEREMONY, PASSKEY } from './login-answers.js'
import { BODY_ERRORS, html, redirectTo, ref } from './spec.js'
import { browserSession } from './browser-session.js'
import type { AssetSet } from './static.js'
import { route, type RequestContext, type Route } from './types.js'

export const ACCOUNT_MFA_PATH = '/account/mfa'
/** Registering a passkey: the options for navigator.credentials.create(), then the answer */
export const ACCOUNT_PASSKEY_OPTIONS_PATH = '/account/mfa/passkeys/options'
export const ACCOUNT_PASSKEYS_PATH = '/account/mfa/passkeys'
const ISSUER = 'sidegate'
const ENROLMENT = 'totp enrolment'

const FORM = {
  name: 'AccountMfaForm',
  schema: T.Object({
    csrfmiddlewaretoken: T.String({ maxLength: 256 }),
    action: T.Union([T.Literal('begin'), T.Literal('confirm'), T.Literal('recovery'), T.Literal('passkey-rename'), T.Literal('passkey-remove')]),
    code: T.Optional(T.String({ maxLength: 64 })),
    credential: T.Optional(T.String({ maxLength: 1400, description: 'passkey-rename, passkey-remove: the passkey\'s credential id (base64url).' })),
    name: T.Optional(T.String({ maxLength: 256, description: 'passkey-rename: the new name (64 characters kept).' })),
    enrolment: T.Optional(T.String({ maxLength: 4096, description: 'The enrolment being confirmed, sealed (from the page).' })),
    password: T.Optional(T.String({ maxLength: 1024, format: 'password', description: `begin, passkey-remove: the user's password, required unless the session signed in less than ${FRESH_LOGIN_MS / 60_000} minutes ago.` }))
  }),
  types: [FORM_TYPE],
  required: true
} satisfies BodySpec

export interface AccountMfaDeps {
  config: Config
  store: Store
  auth: Authenticators
  assets: AssetSet
  mfa: SecondFactor
  audit?: Auditor
  /** src/pipeline/origin.ts: a browser's request from another site */
  crossSite: (req: IncomingMessage) => boolean
  /** passkeys (src/auth/passkeys.ts) */
  passkeys: PasskeyCeremonies
  /** the password that confirms a new passkey when the session is not fresh (the login lockout counts it) */
  passwords: PasswordChecker
}

/** A passkey's registration begins: the password, unless the session signed in less than FRESH_LOGIN_MS ago. */
const OPTIONS_BODY = {
  name: 'PasskeyRegistrationOptions',
  schema: T.Object({
    password: T.Optional(T.String({ maxLength: 1024, format: 'password', description: `The user's password: required unless the browser session signed in less than ${FRESH_LOGIN_MS / 60_000} minutes ago (a passkey signs in alone, so a stolen session must not add one).` }))
  }),
  types: [JSON_TYPE],
  required: false
} satisfies BodySpec

/** A passkey's registration: the options' state, the name, and the credential (WebAuthn's RegistrationResponseJSON). */
const REGISTER_BODY = {
  name: 'PasskeyRegistration',
  schema: T.Object({
    state: T.String({ minLength: 1, maxLength: 4096, description: 'The `state` the options came with (sealed; single-use).' }),
    name: T.Optional(T.String({ maxLength: 256, description: 'What to call it (64 characters kept; empty: "Passkey").' })),
    response: T.Object({}, { additionalProperties: true, description: 'The credential navigator.credentials.create() gave, as WebAuthn\'s JSON form (RegistrationResponseJSON).' })
  }),
  types: [JSON_TYPE],
  required: true
} satisfies BodySpec

// a type alias (not an interface): Template wants an index signature
type PageValues = {
  css: string,
  action: string,
  csrf: string,
  username: string,
  docs: boolean,
  logout: string,
  copyScript: string,
  state: string,
  notice: string,
  error: string,
  on: boolean,
  off: boolean,
  left: number,
  enrol: boolean,
  qr: string,
  secret: string,
  uri: string,
  enrolment: string,
  codes: string,
  script: string,
  passkeys: Html,
  passkeyAction: string,
  passkeyOptions: string
}

type RowValues = { id: string, name: string, kind: string, created: string, used: string, action: string, csrf: string }

export function accountMfaRoutes (d: AccountMfaDeps): Route[] {
  const { store, auth, assets, mfa, audit, crossSite, passkeys, passwords } = d
  const template = Template.load<PageValues>('account-mfa.html')
  const row = Template.load<RowValues>('account-passkey.html')
  const day = (iso: string | null): string => iso === null || iso === '' ? 'never' : iso.slice(0, 10)
  const page = async (user: User, s: Session, o: Partial<PageValues> = {}): Promise<string> => {
    const f = await store.mfa.factors(user.id)
    const rows = Html.join(f.passkeys.map((p) => row.fragment({
      id: p.id,
      name: p.name,
      kind: p.device_type === 'multiDevice' ? 'synced' : 'this device only',
      created: day(p.created),
      used: day(p.last_used),
      action: ACCOUNT_MFA_PATH,
      csrf: s.csrf
    })))
    const on = f.totp?.confirmed === true
    const showing = o.enrol === true || o.codes !== undefined
    return template.render({
      css: assets.url('sidegate.css'),
      action: ACCOUNT_MFA_PATH,
      csrf: s.csrf,
      username: user.username,
      docs: d.config.docs.enabled,
      logout: LOGOUT_PATH,
      copyScript: assets.url('copy.js'),
      state: factorState(user.username, on, f.passkeys.length),
      notice: '',
      error: '',
      on: on && !showing,
      off: !on && !showing,
      left: f.recovery_codes,
      enrol: false,
      qr: '',
      secret: '',
      uri: '',
      enrolment: '',
      codes: '',
      script: assets.url('passkeys.js'),
      passkeys: rows,
      passkeyAction: ACCOUNT_PASSKEYS_PATH,
      passkeyOptions: ACCOUNT_PASSKEY_OPTIONS_PATH,
      ...o
    })
  }
  const enrolPage = async (user: User, s: Session, secret: string, error = ''): Promise<string> => {
    const uri = otpauthUri(
      ISSUER, user.username, { secret, period: TOTP.period, digits: TOTP.digits, algorithm: TOTP.algorithm }
    )
    const enrolment = store.state.seal(ENROLMENT, JSON.stringify({ u: user.id, s: secret }))
    return await page(user, s, { enrol: true, qr: qrDataUri(uri), secret, uri, enrolment, error })
  }

  const getPage = route({
    method: 'GET',
    path: ACCOUNT_MFA_PATH,
    auth: 'session-page',
    docs: {
      tags: ['Browser'],
      operationId: 'accountMfaPage',
      summary: 'The second-factor page (turn on an authenticator app, new recovery codes)',
      responses: { 200: html('The page.'), 302: redirectTo('No session: to `/login?next=/account/mfa`.') }
    },
    async handler (ctx) {
      const who = ctx.identity
      if (who?.method !== 'session') {
        redirect(ctx.res, 302, `${LOGIN_PATH}?next=${encodeURIComponent(ACCOUNT_MFA_PATH)}`)
        return
      }
      // the page's script comes back here after adding a passkey
      const added = new URL(ctx.req.url ?? '/', 'http://x').searchParams.has('added')
      sendHtml(ctx.res, 200, await page(who.user, who.session, added ? { notice: 'Passkey added.' } : {}))
    }
  })

  /** The browser's session and its user, with the form's CSRF token checked; else the refusal. */
  const signedIn = async (ctx: RequestContext, token: string): Promise<{ user: User, s: Session }> =>
    await browserSession(store, auth, ctx, token)

  /**
   * The one re-proof before a change to the account's factors (adding a
   * passkey, setting up an authenticator app, removing a passkey): a session
   * signed in less than FRESH_LOGIN_MS ago, else the password (checked by the
   * login's lockout and audited by it, `via` confirm). password_required,
   * password_incorrect or too_many_attempts otherwise.
   */
  const reprove = async (ctx: RequestContext, user: User, s: Session, password: string | undefined): Promise<void> => {
    const given = password ?? ''
    if (Date.now() - s.created < FRESH_LOGIN_MS && given === '') return
    if (given === '') throw E.passwordRequired()
    try {
      // a directory may answer for another user of that name: only the signed-in one confirms
      if ((await passwords.login(user.username, given, ctx, 'confirm')).id !== user.id) throw E.passwordIncorrect()
    } catch (err) {
      if (err instanceof GatewayError && (err.code === 'authentication_failed' || err.code === 'sso_not_linked')) throw E.passwordIncorrect()
      throw err
    }
  }
  /** reprove for the page's forms: the refusal shown in the page (audited as mfa.failed), false; true when proven. */
  const reprovePage = async (
    ctx: RequestContext, user: User, s: Session, password: string | undefined
  ): Promise<boolean> => {
    try {
      await reprove(ctx, user, s, password)
      return true
    } catch (err) {
      if (!(err instanceof GatewayError) || !['password_required', 'password_incorrect', 'too_many_attempts'].includes(err.code)) throw err
      audit?.record({ event: 'mfa.failed', ctx, user, via: 'account', reason: err.code })
      const error = err.code === 'password_required'
        ? `Enter your password: you signed in more than ${FRESH_LOGIN_MS / 60_000} minutes ago.`
        : err.code === 'password_incorrect' ? 'The password is incorrect.' : 'Too many failed sign-in attempts. Try again later.'
      sendHtml(ctx.res, err.status, await page(user, s, { error }), err.headers as Record<string, string> | undefined)
      return false
    }
  }

  const postPage = route({
    method: 'POST',
    path: ACCOUNT_MFA_PATH,
    // the session and its CSRF token (the form field) are checked here, as POST /logout does
    auth: 'none',
    body: FORM,
    docs: {
      tags: ['Browser'],
      operationId: 'accountMfa',
      summary: 'The second-factor page\'s forms: begin, confirm with a first code, new recovery codes',
      description: '`action=begin` shows a new secret (QR code, key, otpauth:// URI); `action=confirm` with `code` and the page\'s `enrolment` turns it on and shows ten recovery codes once; `action=recovery` with a current `code` replaces the recovery codes; `action=passkey-rename` and `action=passkey-remove` with `credential`. Needs the browser session and its CSRF token in `csrfmiddlewaretoken`. ' +
        `\`begin\` and \`passkey-remove\` also need \`password\` unless the session signed in less than ${FRESH_LOGIN_MS / 60_000} minutes ago (as adding a passkey does); removing the last second factor needs a session signed in with a second factor less than ${FRESH_LOGIN_MS / 60_000} minutes ago. See docs/mfa.md.`,
      security: 'session',
      responses: { 200: html('The page, with the new secret, the recovery codes or an error.') },
      errors: {
        ...BODY_ERRORS,
        400: { description: 'A bad body; or the page with its error (a name or passkey missing, an enrolment to start again).', codes: ['required', 'parse_error', 'bad_request'], page: true },
        401: { description: 'No browser session; or the page with its error (a wrong code).', codes: ['not_authenticated', 'invalid_session'], page: true },
        403: { description: 'No or a wrong CSRF token; or (the page, with its error) the password needed or wrong, or the last second factor removed without a sign-in with it just now.', codes: ['csrf_failed', 'password_required', 'password_incorrect'], page: true },
        429: { description: 'Locked out for a while: the page with its error.', codes: ['too_many_attempts'], headers: { 'Retry-After': ref('headers', 'RetryAfter') }, page: true },
        503: 'Unavailable'
      }
    },
    preValidation (ctx) { if (crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { body }) {
      const { user, s } = await signedIn(ctx, body.csrfmiddlewaretoken)
      const code = (body.code ?? '').trim()
      if (body.action === 'passkey-rename' || body.action === 'passkey-remove') {
        const id = body.credential ?? ''
        if (body.action === 'passkey-rename') {
          const name = passkeyName(body.name)
          if (name === '') { sendHtml(ctx.res, 400, await page(user, s, { error: 'Give the passkey a name.' })); return }
          const ok = await store.passkeys.rename(user.id, id, name)
          sendHtml(ctx.res, ok ? 200 : 400, await page(user, s, ok ? { notice: 'Passkey renamed.' } : { error: 'No such passkey.' }))
          return
        }
        const f = await store.mfa.factors(user.id)
        if (!f.passkeys.some((p) => p.id === id)) { sendHtml(ctx.res, 400, await page(user, s, { error: 'No such passkey.' })); return }
        // a passkey signs in alone: a stolen session must not turn a passkey-only user into a password-only one
        if (!(await reprovePage(ctx, user, s, body.password))) return
        // the last second factor: only a sign-in with a second factor
        // just now (the password alone is what a second factor is for)
        if (f.totp?.confirmed !== true && f.passkeys.length === 1 &&
          !(Date.now() - s.created < FRESH_LOGIN_MS && isTwoFactor(s.factors))) {
          audit?.record({ event: 'mfa.failed', ctx, user, via: 'account', reason: 'last_factor' })
          sendHtml(ctx.res, 403, await page(user, s, { error: `This is your last second factor: to remove it, sign out, sign in with it, and remove it within ${FRESH_LOGIN_MS / 60_000} minutes.` }))
          return
        }
        const ok = await store.passkeys.remove(user.id, id)
        if (ok) audit?.record({ event: 'passkey.removed', ctx, user, keyId: id, via: 'account' })
        sendHtml(ctx.res, ok ? 200 : 400, await page(user, s, ok ? { notice: 'Passkey removed.' } : { error: 'No such passkey.' }))
        return
      }
      if (body.action === 'begin') {
        // the same re-proof as adding a passkey: a stolen session must not add a factor of its own
        if (!(await reprovePage(ctx, user, s, body.password))) return
        const e = await store.mfa.begin(user.id)
        if (e === null) { sendHtml(ctx.res, 200, await page(user, s, { error: 'A second factor is already on.' })); return }
        sendHtml(ctx.res, 200, await enrolPage(user, s, e.secret))
        return
      }
      if (body.action === 'confirm') {
        const opened = body.enrolment === undefined ? null : store.state.open(ENROLMENT, body.enrolment)
        const enrolment = opened === null ? null : JSON.parse(opened) as { u: string, s: string }
        if (enrolment === null || enrolment.u !== user.id) {
          sendHtml(ctx.res, 400, await page(user, s, { error: 'Start again.' })); return
        }
        let codes: string[]
        try {
          // counted toward the per-user code lockout, as every code is
          codes = await mfa.confirm(user, code, ctx, 'account')
        } catch (err) {
          if (!(err instanceof GatewayError) || (err.code !== 'mfa_failed' && err.code !== 'too_many_attempts')) throw err
          sendHtml(
            ctx.res,
            err.status,
            await enrolPage(user, s, enrolment.s, err.code === 'mfa_failed' ? 'That code is not right (or this setup was replaced). Check the time on your device and try the next code.' : 'Too many wrong codes. Try again later.'),
            err.headers as Record<string, string> | undefined
          )
          return
        }
        sendHtml(ctx.res, 200, await page(user, s, { codes: codes.join('\n'), notice: 'The authenticator app is on.' }))
        return
      }
      // a code from the app: a recovery code (perhaps from a stolen list) does not make new ones
      if (!/^[0-9]{6}$/.test(code)) { sendHtml(ctx.res, 401, await page(user, s, { error: 'Enter the 6-digit code from your app.' })); return }
      try {
        await mfa.check(user, code, ctx, 'account')
      } catch (err) {
        if (!(err instanceof GatewayError) || (err.code !== 'mfa_failed' && err.code !== 'too_many_attempts')) throw err
        sendHtml(
          ctx.res,
          err.status,
          await page(user, s, { error: err.code === 'mfa_failed' ? 'That code is not right.' : 'Too many wrong codes. Try again later.' }),
          err.headers as Record<string, string> | undefined
        )
        return
      }
      const codes = await store.mfa.regenerate(user.id)
      if (codes === null) { sendHtml(ctx.res, 400, await page(user, s, { error: 'No second factor is on.' })); return }
      audit?.record({ event: 'mfa.recovery_codes', ctx, user, via: 'account' })
      sendHtml(ctx.res, 200, await page(user, s, { codes: codes.join('\n'), notice: 'Ten new recovery codes: the old ones no longer work.' }))
    }
  })

  /** The session and its user, with the CSRF token of the X-CSRFToken header. */
  const fromHeader = async (ctx: RequestContext): Promise<{ user: User, s: Session }> => {
    const h = ctx.req.headers['x-csrftoken']
    return await signedIn(ctx, typeof h === 'string' ? h : '')
  }
  const SESSION_ERRORS = { 401: { description: 'No browser session.', codes: ['not_authenticated', 'invalid_session'] }, 403: 'CsrfFailed', 503: 'Unavailable' } as const

  const postOptions = route({
    method: 'POST',
    path: ACCOUNT_PASSKEY_OPTIONS_PATH,
    auth: 'none',
    body: OPTIONS_BODY,
    docs: {
      tags: ['Browser'],
      operationId: 'accountPasskeyOptions',
      summary: 'Register a passkey: the options for navigator.credentials.create()',
      description: '`options` is WebAuthn\'s PublicKeyCredentialCreationOptionsJSON (a discoverable credential, user verification required, the user\'s other passkeys excluded); `state` (sealed, single-use, for this user, valid 300 s) goes back with the answer. Needs the browser session and its CSRF token in `X-CSRFToken`, and `password` unless the session signed in less than ' + `${FRESH_LOGIN_MS / 60_000} minutes ago. See docs/mfa.md.`,
      security: 'session',
      responses: {},
      errors: {
        ...BODY_ERRORS,
        ...SESSION_ERRORS,
        400: { description: 'Reached by an IP address without auth.webauthn.rp_id; or a bad body.', codes: ['bad_request', 'parse_error'] },
        401: { description: 'No browser session.', codes: ['not_authenticated', 'invalid_session'] },
        403: { description: 'No or a wrong CSRF token; the password needed or wrong.', codes: ['csrf_failed', 'password_required', 'password_incorrect'] },
        429: 'TooManyAttempts'
      }
    },
    answers: { 200: { description: 'The options and their state.', schema: CEREMONY } },
    preValidation (ctx) { if (crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { body, reply }) {
      const { user, s } = await fromHeader(ctx)
      // a passkey signs in alone: a session older than a fresh sign-in confirms with the password, as for access keys
      await reprove(ctx, user, s, body.password)
      reply(200, await passkeys.registrationOptions(user, ctx.req, ctx.https))
    }
  })

  const postRegister = route({
    method: 'POST',
    path: ACCOUNT_PASSKEYS_PATH,
    auth: 'none',
    body: REGISTER_BODY,
    docs: {
      tags: ['Browser'],
      operationId: 'accountPasskeyRegister',
      summary: 'Register a passkey: the answer',
      description: 'The credential navigator.credentials.create() gave for the options of POST ' + ACCOUNT_PASSKEY_OPTIONS_PATH + ', with their `state` and a name. Checked (origin, RP id, challenge, user verification) and stored: its public key, counter, transports and device type, never a secret. Needs the browser session and its CSRF token in `X-CSRFToken`.',
      security: 'session',
      responses: {},
      errors: {
        ...BODY_ERRORS,
        ...SESSION_ERRORS,
        400: { description: 'No, an expired, a used or another user\'s `state`; or a bad body.', codes: ['passkey_challenge_invalid', 'required', 'parse_error', 'bad_request'] },
        401: {
          description: 'No browser session, or the passkey was refused.',
          codes: ['not_authenticated', 'invalid_session', 'passkey_failed']
        }
      }
    },
    answers: { 200: { description: 'The passkey, as the page lists it.', schema: T.Object({ passkey: PASSKEY }) } },
    preValidation (ctx) { if (crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { body, reply }) {
      const { user } = await fromHeader(ctx)
      const passkey = await passkeys.register(
        user, body.state, body.response, passkeyName(body.name), ctx.req, ctx.https, ctx
      )
      reply(200, { passkey })
    }
  })

  return [getPage, postPage, postOptions, postRegister]
}

/** What the page says of the user's second factors: the truth, whichever kind they have. */
function factorState (username: string, app: boolean, passkeys: number): string {
  const keys = passkeys === 1 ? 'a passkey' : `${passkeys} passkeys`
  if (!app && passkeys === 0) return `No second factor is set up for ${username}. Add an authenticator app or a passkey below.`
  const what = app && passkeys > 0 ? `an authenticator app and ${keys}` : app ? 'an authenticator app' : keys
  return `A second factor is on for ${username}: ${what}.`
}

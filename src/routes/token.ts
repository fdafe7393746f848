/**
 * POST /api/v1/authentication/auth/ (and /tokens/, JumpServer's other path
 * for the same operation): username + password → bearer token. 201 with
 * {token, keyword, date_expired, user} as JumpServer answers. One-time unless
 * auth.bearer.single_use is false. JSON, form or multipart bodies.
 * Unknown user, wrong password and inactive user are one answer, and cost the
 * same (a dummy hash is checked for unknown users). Repeated failures lock
 * the (username, client IP) pair out for a while (429 too_many_attempts).
 * A browser's post from another site is refused (403 csrf_failed) and not
 * counted, so no page can lock a user out through a visitor's browser.
 */
import type { IncomingMessage } from 'node:http'
import type { Auditor } from '../observability/audit.js'
import { E, GatewayError } from '../errors.js'
import { Type as T } from '@sinclair/typebox'
import { jmsDate } from '../http/date.js'
import { sendJson } from '../respond.js'
import type { PasswordChecker } from '../auth/passwords.js'
import { PASSWORD_ONLY, type Factor, type Store, type User } from '../store/types.js'

import { profile, profileSchema } from './profile.js'
import { FORM_TYPE, JSON_TYPE, type BodySpec } from './body.js'
import { BODY_ERRORS, ref, type ErrorAnswer } from './spec.js'
import { route, type RequestContext, type Route } from './types.js'
import type { SecondFactor } from '../auth/mfa.js'

export const TOKEN_PATH = '/api/v1/authentication/auth/'
/** A token obtained with the password and a code (TOTP or a recovery code). */
const PASSWORD_AND_CODE: readonly Factor[] = Object.freeze(['pwd', 'otp'])
/** JumpServer's MFA challenge: the code after the token endpoint answered mfa_required */
export const MFA_CHALLENGE_PATH = '/api/v1/authentication/mfa/challenge/'
/** Where the pending second factor's cookie is sent: the token endpoint and the challenge only */
const MFA_COOKIE_PATH = '/api/v1/authentication/'
/** JumpServer serves the same operation here too (koko and several SDKs use it) */
export const TOKENS_PATH = '/api/v1/authentication/tokens/'

/**
 * A username and password: JSON, a form, or (as JumpServer takes
 * it) multipart. Either missing or empty is 400 `required`.
 */
const CREDENTIALS = {
  name: 'Credentials',
  schema: T.Object({
    username: T.String({ minLength: 1, maxLength: 150 }),
    password: T.String({ minLength: 1, maxLength: 1024, format: 'password' }),
    code: T.Optional(T.String({ maxLength: 64, description: 'The one-request form: a one-time password (or a recovery code) with the password, for a user with a second factor (docs/mfa.md).' })),
    mfa_code: T.Optional(T.String({ maxLength: 64, description: 'The same as `code`.' }))
  }),
  types: [JSON_TYPE, FORM_TYPE],
  multipart: true,
  required: true
} satisfies BodySpec

export interface TokenRouteOptions {
  ttl: number
  /** auth.bearer.single_use */
  singleUse: boolean
  /** names.abbrev JMS: a wrong password is JumpServer's 400 {error: "password_failed", msg} */
  jumpserver: boolean
  /**
   * src/pipeline/origin.ts: a browser's post from another site (refused before the body is read or the attempt counted)
   */
  crossSite: (req: IncomingMessage) => boolean
  /** records token.issued */
  audit?: Auditor
  store: Store
  /** the second factor (src/auth/mfa.ts) */
  mfa: SecondFactor
  /** the pending second factor's cookie name */
  mfaCookie: string
  /** session.cookie_secure */
  cookieSecure: boolean
}

/** JumpServer's MFA answer (authentication/errors: mfa_required_msg) */
export const JMS_MFA_REQUIRED = 'MFA required'

/** The wrong-password answer of JumpServer's token endpoint (users/exceptions: reason_password_failed) */
export const JMS_PASSWORD_FAILED = 'The username or password you entered is incorrect, please enter it again.'

export function tokenRoutes (store: Store, passwords: PasswordChecker, opts: TokenRouteOptions): Route[] {
  return [
    tokenRoute(store, passwords, opts, TOKEN_PATH),
    tokenRoute(store, passwords, opts, TOKENS_PATH),
    challengeRoute(opts)
  ]
}

const pendingCookie = (opts: TokenRouteOptions, ctx: RequestContext, value: string, maxAge: number): string =>
  `${opts.mfaCookie}=${value}; Path=${MFA_COOKIE_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${opts.cookieSecure || ctx.https ? '; Secure' : ''}`

/** The refusal of a code: JumpServer's `{error, msg}` (names.abbrev JMS), else the catalogue's `{detail, code}`. */
function sendMfaFailure (opts: TokenRouteOptions, ctx: RequestContext, err: GatewayError): void {
  ;(ctx.res as typeof ctx.res & { errorCode?: string }).errorCode = err.code
  const headers = err.headers as Record<string, string> | undefined
  if (opts.jumpserver) sendJson(ctx.res, err.status, { error: err.code, msg: err.detail }, headers)
  else sendJson(ctx.res, err.status, err.toJSON(), headers)
}

/** The code checked (SecondFactor.check); false when it was refused, and the refusal answered. */
async function checkCode (
  opts: TokenRouteOptions, ctx: RequestContext, user: User, code: string, via: string
): Promise<boolean> {
  try {
    await opts.mfa.check(user, code, ctx, via)
    return true
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err
    sendMfaFailure(opts, ctx, err)
    return false
  }
}

const CHALLENGE = {
  name: 'MfaChallenge',
  schema: T.Object({
    type: T.Optional(T.String({ maxLength: 32, description: '`otp` (the only type; a recovery code is sent as an otp code).' })),
    code: T.String({ minLength: 1, maxLength: 64, description: 'The 6-digit one-time password, or a recovery code.' })
  }),
  types: [JSON_TYPE, FORM_TYPE],
  required: true
} satisfies BodySpec

/**
 * POST /api/v1/authentication/mfa/challenge/: the code for the password step
 * the token endpoint's cookie remembers. `{"msg": "ok"}` and a new cookie
 * that remembers both steps; the token endpoint then issues the token.
 */
function challengeRoute (opts: TokenRouteOptions): Route {
  return route({
    method: 'POST',
    path: MFA_CHALLENGE_PATH,
    // the pending cookie is the credential, checked in the handler
    auth: 'none',
    body: CHALLENGE,
    docs: {
      tags: ['Authentication'],
      operationId: 'mfaChallenge',
      summary: 'Give the second factor after the token endpoint answered mfa_required',
      description: `JumpServer's MFA challenge. Needs the \`${opts.mfaCookie}\` cookie the token endpoint set with \`mfa_required\` (valid ${opts.mfa.ttl} s, for the client address and User-Agent it was given to). ` +
        `A right code answers \`{"msg": "ok"}\` and replaces the cookie; then POST ${TOKEN_PATH} again (same username and password, with the cookie) issues the token. ` +
        'A wrong, reused or out-of-window code is 401 `mfa_failed` (names.abbrev JMS: JumpServer\'s `{"error": "mfa_failed", "msg": …}`) and counts toward the per-user code lockout (429). See docs/mfa.md.',
      responses: {},
      errors: {
        ...BODY_ERRORS,
        401: { description: 'A wrong code, or no pending password step (the cookie missing, expired, used or another client\'s).', codes: ['mfa_failed', 'mfa_pending_missing'], jumpserver: opts.jumpserver },
        403: 'CsrfFailed',
        429: { description: 'Locked out for a while.', codes: ['too_many_attempts'], headers: { 'Retry-After': ref('headers', 'RetryAfter') }, jumpserver: opts.jumpserver },
        503: 'Unavailable'
      }
    },
    answers: {
      200: {
        description: 'The code was right.',
        headers: { 'Set-Cookie': { description: 'The pending state, now with both steps.', schema: { type: 'string' } } },
        schema: T.Object({ msg: T.Literal('ok') })
      }
    },
    preValidation (ctx) { if (opts.crossSite(ctx.req)) throw E.crossSite(); return undefined },
    async handler (ctx, { body: { code }, reply }) {
      const p = opts.mfa.open(ctx.req, opts.mfaCookie, ctx)
      const user = p === null || p.w !== 'code' || p.amr.includes('otp') ? null : await opts.mfa.user(p)
      if (p === null || user === null) { sendMfaFailure(opts, ctx, E.mfaPendingMissing()); return }
      // a pending step is worth PENDING_TRIES codes (then the password again)
      if (!(await opts.mfa.tries(p))) { sendMfaFailure(opts, ctx, E.mfaPendingMissing()); return }
      if (!(await checkCode(opts, ctx, user, code, 'challenge'))) return
      // the old state is used up: only the new one (both steps) leads to a token
      if (!(await opts.mfa.consume(p))) { sendMfaFailure(opts, ctx, E.mfaPendingMissing()); return }
      const next = opts.mfa.pending(user, ctx.req, ctx, 'code', ['pwd', 'otp'])
      reply(200, { msg: 'ok' }, { 'set-cookie': pendingCookie(opts, ctx, next, opts.mfa.ttl) })
    }
  })
}

/** The token endpoint's answer: the token and who it is for. */
const tokenResult = (opts: TokenRouteOptions) => T.Object({
  token: T.String({ description: opts.singleUse ? 'The one-time bearer token.' : 'The bearer token (reusable until date_expired).' }),
  keyword: T.Literal('Bearer'),
  date_expired: T.String({ description: '`%Y/%m/%d %H:%M:%S %z`, UTC.', examples: ['2026/11/23 10:25:33 +0000'] }),
  user: profileSchema(opts.jumpserver)
})

/** A second factor is due (JumpServer's answer, as its clients read it). */
const MFA_REQUIRED = T.Object({
  error: T.Literal('mfa_required'),
  msg: T.Literal(JMS_MFA_REQUIRED),
  data: T.Object({ choices: T.Array(T.Literal('otp')), url: T.Literal(MFA_CHALLENGE_PATH) })
})

/** The body's refusals, and a user who must enrol a second factor first. */
const MFA_BAD_REQUEST = { description: 'Bad request body; or (`mfa_unset`) the user must enrol a second factor first; or (`mfa_passkey_only`) the user\'s only second factor is a passkey, which needs the login page.', codes: ['required', 'parse_error', 'bad_request', 'mfa_unset', 'mfa_passkey_only'] } as const satisfies ErrorAnswer

function tokenRoute (store: Store, passwords: PasswordChecker, opts: TokenRouteOptions, path: string): Route {
  const lifetime = opts.singleUse ? `valid for ${opts.ttl} s and for exactly one request` : `valid for ${opts.ttl} s, for any number of requests (auth.bearer.single_use: false)`
  const failed = opts.jumpserver
    ? 'A wrong password, unknown user or disabled account gives JumpServer\'s `400 {"error": "password_failed", "msg": …, "code": "authentication_failed"}` (schema PasswordFailed; names.abbrev JMS).'
    : 'Unknown user, wrong password and disabled account give the same 401.'
  return route({
    method: 'POST',
    path,
    // the password is the credential, checked in the handler
    auth: 'none',
    body: CREDENTIALS,
    docs: {
      tags: ['Authentication'],
      operationId: path === TOKEN_PATH ? 'createBearerToken' : 'createBearerTokenAtTokens',
      summary: path === TOKEN_PATH ? 'Exchange a username and password for a bearer token' : `The same as POST ${TOKEN_PATH} (JumpServer's second path for it)`,
      description: `The token is ${lifetime}. ${failed} ` +
        'A browser\'s post from another site (`Sec-Fetch-Site`, else `Origin`, else `Referer`) is refused with 403 and not counted by the lockout; clients that send none of these headers are not browsers and are served.',
      responses: {},
      // names.abbrev JMS: a wrong password is 400 with the PasswordFailed schema (in the description) instead of 401
      errors: opts.jumpserver
        ? { ...BODY_ERRORS, 400: { ...MFA_BAD_REQUEST, jumpserver: true }, 401: { description: 'A wrong second factor in the one-request form (`code`).', codes: ['mfa_failed'], jumpserver: true }, 403: 'SignInForbidden', 429: { description: 'Locked out for a while.', codes: ['too_many_attempts'], headers: { 'Retry-After': ref('headers', 'RetryAfter') }, jumpserver: true }, 503: 'CheckUnavailable' }
        : { ...BODY_ERRORS, 400: MFA_BAD_REQUEST, 401: { description: 'Wrong credentials, or a wrong second factor in the one-request form (`code`).', codes: ['authentication_failed', 'mfa_failed'] }, 403: 'SignInForbidden', 429: 'TooManyAttempts', 503: 'CheckUnavailable' },
      schemas: {
        ...(opts.jumpserver
          ? {
              PasswordFailed: {
                type: 'object',
                required: ['error', 'msg', 'code'],
                properties: {
                  error: { const: 'password_failed' },
                  msg: { type: 'string', examples: [JMS_PASSWORD_FAILED] },
                  code: { const: 'authentication_failed' }
                }
              }
            }
          : {}),
      }
    },
    answers: {
      201: { description: 'Token issued.', schema: tokenResult(opts), name: 'TokenResult' },
      200: {
        description: `The password was right and the user has a second factor: give the code to POST ${MFA_CHALLENGE_PATH} (with the cookie set here), then post here again; or post here again with \`code\`.`,
        headers: { 'Set-Cookie': { description: 'The pending password step (HttpOnly, Path=/api/v1/authentication/).', schema: { type: 'string' } } },
        schema: MFA_REQUIRED,
        name: 'MfaRequired'
      }
    },
    // A form post needs no CORS preflight: without this, any page could
    // spend the lockout's failures for a username and lock its owner out.
    preValidation (ctx) { if (opts.crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { body: { username, password, code: c1, mfa_code: c2 }, reply }) {
      let user
      try {
        user = await passwords.login(username, password, ctx, 'token')
      } catch (err) {
        if (!opts.jumpserver || !(err instanceof GatewayError) || err.code !== 'authentication_failed') throw err
        sendJson(ctx.res, 400, { error: 'password_failed', msg: JMS_PASSWORD_FAILED, code: err.code })
        ;(ctx.res as typeof ctx.res & { errorCode?: string }).errorCode = err.code
        return
      }
      const headers: Record<string, string> = {}
      const need = await opts.mfa.need(user)
      let factors: readonly Factor[] = PASSWORD_ONLY
      if (need === 'enrol') {
        // a user who must enrol does so in a browser (the account page), never through the token endpoint
        opts.audit?.record({ event: 'mfa.failed', ctx, user, via: 'token', reason: 'mfa_unset' })
        sendMfaFailure(opts, ctx, E.mfaUnset())
        return
      }
      if (need === 'passkey') {
        // WebAuthn needs a browser: the challenge takes one-time
        // passwords only, so no choice is offered that it cannot take
        opts.audit?.record({ event: 'mfa.failed', ctx, user, via: 'token', reason: 'mfa_passkey_only' })
        sendMfaFailure(opts, ctx, E.mfaPasskeyOnly())
        return
      }
      if (need === 'code') {
        const p = opts.mfa.open(ctx.req, opts.mfaCookie, ctx)
        const code = c1 ?? c2
        factors = PASSWORD_AND_CODE
        if (p !== null && p.u === user.id && p.amr.includes('otp') && (await opts.mfa.user(p)) !== null &&
          (await opts.mfa.consume(p))) {
          // the challenge was passed for this user: the token, and the cookie is spent
        } else if (code !== undefined && code !== '') {
          if (!(await checkCode(opts, ctx, user, code, 'token'))) return
        } else {
          opts.audit?.record({ event: 'mfa.required', ctx, user, via: 'token' })
          const pending = opts.mfa.pending(user, ctx.req, ctx, 'code')
          reply(
            200,
            { error: 'mfa_required', msg: JMS_MFA_REQUIRED, data: { choices: ['otp'], url: MFA_CHALLENGE_PATH } },
            { 'set-cookie': pendingCookie(opts, ctx, pending, opts.mfa.ttl) }
          )
          return
        }
        headers['set-cookie'] = pendingCookie(opts, ctx, '', 0)
      }
      const { token, expires } = await store.bearerTokens.issue(user.id, opts.ttl, factors)
      opts.audit?.record({ event: 'token.issued', ctx, user, authMethod: 'password', credential: token, expires: expires.toISOString() })
      await store.users.recordLogin(user.id)
      reply(
        201,
        { token, keyword: 'Bearer', date_expired: jmsDate(expires), user: profile(user, undefined, opts.jumpserver) },
        headers
      )
    }
  })
}

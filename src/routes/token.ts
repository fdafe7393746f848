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
import type { Store } from '../store/types.js'
import { profile, profileSchemas } from './profile.js'
import { FORM_TYPE, JSON_TYPE, type BodySpec } from './body.js'
import { BODY_ERRORS, json, schemaRef } from './spec.js'
import { route, type Route } from './types.js'

export const TOKEN_PATH = '/api/v1/authentication/auth/'
/** JumpServer serves the same operation here too (koko and several SDKs use it) */
export const TOKENS_PATH = '/api/v1/authentication/tokens/'

/** A username and password: JSON, a form, or (as JumpServer takes it) multipart. Either missing or empty is 400 `required`. */
const CREDENTIALS = {
  name: 'Credentials',
  schema: T.Object({ username: T.String({ minLength: 1, maxLength: 150 }), password: T.String({ minLength: 1, maxLength: 1024, format: 'password' }) }),
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
  /** src/pipeline/origin.ts: a browser's post from another site (refused before the body is read or the attempt counted) */
  crossSite: (req: IncomingMessage) => boolean
  /** records token.issued */
  audit?: Auditor
}

/** The wrong-password answer of JumpServer's token endpoint (users/exceptions: reason_password_failed) */
export const JMS_PASSWORD_FAILED = 'The username or password you entered is incorrect, please enter it again.'

export function tokenRoutes (store: Store, passwords: PasswordChecker, opts: TokenRouteOptions): Route[] {
  return [tokenRoute(store, passwords, opts, TOKEN_PATH), tokenRoute(store, passwords, opts, TOKENS_PATH)]
}

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
      responses: { 201: { description: 'Token issued.', content: json(schemaRef('TokenResult')) } },
      // names.abbrev JMS: a wrong password is 400 with the PasswordFailed schema (in the description) instead of 401
      errors: opts.jumpserver
        ? { ...BODY_ERRORS, 403: 'CsrfFailed', 429: 'TooManyAttempts', 503: 'Unavailable' }
        : { ...BODY_ERRORS, 401: 'LoginFailed', 403: 'CsrfFailed', 429: 'TooManyAttempts', 503: 'Unavailable' },
      schemas: {
        ...(opts.jumpserver
          ? {
              PasswordFailed: {
                type: 'object',
                required: ['error', 'msg', 'code'],
                properties: { error: { const: 'password_failed' }, msg: { type: 'string', examples: [JMS_PASSWORD_FAILED] }, code: { const: 'authentication_failed' } }
              }
            }
          : {}),
        TokenResult: {
          type: 'object',
          required: ['token', 'keyword', 'date_expired', 'user'],
          properties: {
            token: { type: 'string', description: opts.singleUse ? 'The one-time bearer token.' : 'The bearer token (reusable until date_expired).' },
            keyword: { const: 'Bearer' },
            date_expired: { type: 'string', description: '`%Y/%m/%d %H:%M:%S %z`, UTC.', examples: ['2026/11/23 10:25:33 +0000'] },
            user: schemaRef('Profile')
          }
        },
        ...profileSchemas(opts.jumpserver)
      }
    },
    // A form post needs no CORS preflight: without this, any page could
    // spend the lockout's failures for a username and lock its owner out.
    preValidation (ctx) { if (opts.crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { body: { username, password } }) {
      let user
      try {
        user = await passwords.login(username, password, ctx, 'token')
      } catch (err) {
        if (!opts.jumpserver || !(err instanceof GatewayError) || err.code !== 'authentication_failed') throw err
        sendJson(ctx.res, 400, { error: 'password_failed', msg: JMS_PASSWORD_FAILED, code: err.code })
        ;(ctx.res as typeof ctx.res & { errorCode?: string }).errorCode = err.code
        return
      }
      const { token, expires } = await store.issueBearerToken(user.id, opts.ttl)
      opts.audit?.record({ event: 'token.issued', ctx, user, authMethod: 'password', credential: token, expires: expires.toISOString() })
      await store.recordLogin(user.id)
      sendJson(ctx.res, 201, { token, keyword: 'Bearer', date_expired: jmsDate(expires), user: profile(user, undefined, opts.jumpserver) })
    }
  })
}

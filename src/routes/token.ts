/**
 * POST /api/v1/authentication/auth/: username + password → one-time bearer
 * token. 201 with {token, keyword, date_expired, user} as JumpServer answers.
 * Unknown user, wrong password and inactive user are one answer, and cost the
 * same (a dummy hash is checked for unknown users). Repeated failures lock
 * the (username, client IP) pair out for a while (429 too_many_attempts).
 * A browser's post from another site is refused (403 csrf_failed) and not
 * counted, so no page can lock a user out through a visitor's browser.
 */
import type { IncomingMessage } from 'node:http'
import { E } from '../errors.js'
import { decodeFields, readBody, requireString } from '../body.js'
import { sendJson } from '../respond.js'
import type { PasswordChecker } from '../auth/passwords.js'
import type { Store } from '../store/types.js'
import { PROFILE_SCHEMAS, profile } from './profile.js'
import { BODY_ERRORS, bodyOf, json, schemaRef } from './spec.js'
import type { Route, RequestContext } from './types.js'

export const TOKEN_PATH = '/api/v1/authentication/auth/'

/** `%Y/%m/%d %H:%M:%S %z` in UTC, as JumpServer formats date_expired. */
export function jmsDate (d: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0')
  return `${d.getUTCFullYear()}/${p(d.getUTCMonth() + 1)}/${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`
}

export interface LoginFields { username: string, password: string }

export async function readLogin (ctx: RequestContext, limit: number): Promise<LoginFields> {
  const fields = decodeFields(ctx.req.headers['content-type'], await readBody(ctx.req, limit))
  return { username: requireString(fields, 'username', 150), password: requireString(fields, 'password', 1024) }
}

export interface TokenRouteOptions {
  ttl: number
  bodyLimit: number
  /** src/origin.ts: a browser's post from another site (refused before the body is read or the attempt counted) */
  crossSite: (req: IncomingMessage) => boolean
}

export function tokenRoute (store: Store, passwords: PasswordChecker, opts: TokenRouteOptions): Route {
  return {
    methods: ['POST'],
    path: TOKEN_PATH,
    // the password is the credential, checked in the handler
    auth: 'none',
    docs: {
      operations: {
        post: {
          tags: ['Authentication'],
          operationId: 'createBearerToken',
          summary: 'Exchange a username and password for a one-time bearer token',
          description: `The token is valid for ${opts.ttl} s and for exactly one request. Unknown user, wrong password and disabled account give the same 401. ` +
            'A browser\'s post from another site (`Sec-Fetch-Site`, else `Origin`, else `Referer`) is refused with 403 and not counted by the lockout; clients that send none of these headers are not browsers and are served.',
          requestBody: bodyOf('Credentials'),
          responses: { 201: { description: 'Token issued.', content: json(schemaRef('TokenResult')) } },
          errors: { ...BODY_ERRORS, 401: 'LoginFailed', 403: 'CsrfFailed', 429: 'TooManyAttempts', 503: 'Unavailable' }
        }
      },
      schemas: {
        Credentials: {
          type: 'object',
          required: ['username', 'password'],
          properties: { username: { type: 'string', maxLength: 150 }, password: { type: 'string', maxLength: 1024, format: 'password' } }
        },
        TokenResult: {
          type: 'object',
          required: ['token', 'keyword', 'date_expired', 'user'],
          properties: {
            token: { type: 'string', description: 'The one-time bearer token.' },
            keyword: { const: 'Bearer' },
            date_expired: { type: 'string', description: '`%Y/%m/%d %H:%M:%S %z`, UTC.', examples: ['2026/11/23 10:25:33 +0000'] },
            user: schemaRef('Profile')
          }
        },
        ...PROFILE_SCHEMAS
      }
    },
    async handle (ctx) {
      // A form post needs no CORS preflight: without this, any page could
      // spend the lockout's failures for a username and lock its owner out.
      if (opts.crossSite(ctx.req)) throw E.crossSite()
      const { username, password } = await readLogin(ctx, opts.bodyLimit)
      const user = await passwords.login(username, password, ctx.clientIp)
      const { token, expires } = await store.issueBearerToken(user.id, opts.ttl)
      await store.recordLogin(user.id)
      sendJson(ctx.res, 201, { token, keyword: 'Bearer', date_expired: jmsDate(expires), user: profile(user) })
    }
  }
}

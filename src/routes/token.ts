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
import { hashPassword, verifyPassword } from '../crypto.js'
import { decodeFields, readBody, requireString } from '../body.js'
import { sendJson } from '../respond.js'
import type { Store, User } from '../store/types.js'
import { profile } from './profile.js'
import type { Route, RouteContext } from './types.js'

export const TOKEN_PATH = '/api/v1/authentication/auth/'

/** `%Y/%m/%d %H:%M:%S %z` in UTC, as JumpServer formats date_expired. */
export function jmsDate (d: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0')
  return `${d.getUTCFullYear()}/${p(d.getUTCMonth() + 1)}/${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`
}

export interface LockoutOptions {
  /** failures per (username, client IP) before 429; 0 turns the lockout off */
  max_failures: number
  /** seconds */
  window: number
}

export class PasswordChecker {
  #dummy: Promise<string> | undefined
  constructor (private readonly store: Store, private readonly lockout: LockoutOptions = { max_failures: 0, window: 1 }) {}

  /**
   * The password check behind the login form and the token endpoint, with
   * the lockout: after `max_failures` failures for one (username, client IP)
   * within `window` seconds, attempts get 429 too_many_attempts with
   * Retry-After, even with the right password, until a full window has
   * passed; a success resets the count. Each attempt is counted before its
   * password is checked, so a burst of parallel guesses gets no more than
   * `max_failures` checks. The counter does not depend on whether the user exists.
   */
  async login (username: string, password: string, clientIp: string): Promise<User> {
    const { max_failures: max, window } = this.lockout
    const subject = `${username.toLowerCase()}\n${clientIp}`
    if (max > 0) {
      const a = await this.store.countLoginAttempt(subject, window, max)
      if (a.count > max) throw E.tooManyAttempts(a.retryAfter)
    }
    const user = await this.check(username, password)
    if (user === null) throw E.authenticationFailed()
    if (max > 0) await this.store.resetLoginFailures(subject)
    return user
  }

  /** The user when username and password match an active account, else null, in about the same time. */
  async check (username: string, password: string): Promise<User | null> {
    this.#dummy ??= hashPassword('sidegate-dummy-password')
    const user = await this.store.getUserByUsername(username)
    const hash = user === null ? null : await this.store.getPasswordHash(user.id)
    const ok = await verifyPassword(password, hash ?? await this.#dummy)
    return ok && hash !== null && user !== null && user.is_active ? user : null
  }
}

export interface LoginFields { username: string, password: string }

export async function readLogin (ctx: RouteContext, limit: number): Promise<LoginFields> {
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
    public: true,
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

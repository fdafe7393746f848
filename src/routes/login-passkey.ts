/**
 * Passkeys on the login page (src/auth/passkeys.ts): sign in with a passkey
 * alone (a discoverable credential, no username: POST /login/passkey/options,
 * then /login/passkey), or as the second step after the password (the
 * pending cookie: POST /login/mfa/passkey/options, then /login/mfa/passkey).
 * Each ends in the same session start as a password sign-in (./login.ts).
 */
import type { IncomingMessage } from 'node:http'
import { Type as T } from '@sinclair/typebox'
import type { Amr, Pending, SecondFactor } from '../auth/mfa.js'
import { signInFactors, type PasskeyCeremonies } from '../auth/passkeys.js'
import type { Config } from '../config/index.js'
import { E } from '../errors.js'
import type { SsoSignIn, Store, User } from '../store/types.js'
import { JSON_TYPE, type BodySpec } from './body.js'
import { profile } from './profile.js'
import type { ErrorAnswer } from './spec.js'
import { CEREMONY, signedIn } from './login-answers.js'
import { route, type RequestContext, type Route } from './types.js'

/** A passkey alone: the ceremony's options, then its answer (src/auth/passkeys.ts) */
export const LOGIN_PASSKEY_OPTIONS_PATH = '/login/passkey/options'
export const LOGIN_PASSKEY_PATH = '/login/passkey'
/** A passkey as the second step after the password */
export const LOGIN_MFA_PASSKEY_OPTIONS_PATH = '/login/mfa/passkey/options'
export const LOGIN_MFA_PASSKEY_PATH = '/login/mfa/passkey'
/**
 * A passkey ceremony's answer: the state its options came with,
 * the browser's credential (WebAuthn's JSON form), and `next`.
 */
const PASSKEY_BODY = {
  name: 'PasskeyAnswer',
  schema: T.Object({
    state: T.String({ minLength: 1, maxLength: 4096, description: 'The `state` the options came with (sealed; single-use).' }),
    response: T.Object({}, { additionalProperties: true, description: 'The credential as WebAuthn\'s JSON form (AuthenticationResponseJSON): id, rawId, type, response {clientDataJSON, authenticatorData, signature, userHandle}.' }),
    next: T.Optional(T.String({ description: 'Where to go afterwards: a path on this gateway, or with session.cookies an https URL under a listed domain.' }))
  }),
  types: [JSON_TYPE],
  required: true
} satisfies BodySpec

/** The options' request: nothing to send. */
const EMPTY_BODY = {
  name: 'PasskeyOptionsRequest',
  schema: T.Object({}),
  types: [JSON_TYPE],
  required: false
} satisfies BodySpec

/** ./login.ts: the session a sign-in ends in, and its cookies (`sso`: a provider's sign-in, for its logout). */
export type StartSession = (
  ctx: RequestContext, user: User, via: string, factors: Amr[], authMethod?: string, sso?: SsoSignIn
) => Promise<string[]>

export interface PasskeyLoginDeps {
  config: Config
  store: Store
  mfa: SecondFactor
  passkeys: PasskeyCeremonies
  crossSite: (req: IncomingMessage) => boolean
  /** ./login.ts: the session a sign-in ends in, and its cookies */
  startSession: StartSession
  /** ./login.ts: the pending step's cookie (value '' and 0: cleared) */
  mfaCookie: (ctx: RequestContext, value: string, maxAge: number) => string
  safeNext: (v: unknown) => string
}

export function passkeyLoginRoutes (d: PasskeyLoginDeps): Route[] {
  const { config, mfa, passkeys, crossSite, startSession, mfaCookie, safeNext } = d
  const names = config.names
  const LOGIN_PATH = '/login'
  /**
   * The pending password step of this browser (a code or passkey
   * awaited), with its active user; else mfa_pending_missing.
   */
  const pendingOf = async (ctx: RequestContext): Promise<{ p: Pending, user: User }> => {
    const p = mfa.open(ctx.req, names.mfaCookie, ctx)
    // read uncached: void once the user was disabled, or their
    // password changed or sessions ended, since the password step
    const user = p === null || p.w !== 'code' || p.amr.length !== 1 ? null : await mfa.user(p)
    if (p === null || user === null) throw E.mfaPendingMissing()
    return { p, user }
  }
  const PASSKEY_ERRORS: Record<number, ErrorAnswer> = {
    400: { description: 'No, an expired, a used or another ceremony\'s `state`; or a body that is not JSON.', codes: ['passkey_challenge_invalid', 'required', 'parse_error', 'bad_request'] },
    403: 'CsrfFailed',
    429: 'TooManyAttempts',
    503: 'Unavailable'
  }

  const postPasskeyOptions = route({
    method: 'POST',
    path: LOGIN_PASSKEY_OPTIONS_PATH,
    auth: 'none',
    body: EMPTY_BODY,
    docs: {
      tags: ['Browser'],
      operationId: 'loginPasskeyOptions',
      summary: 'Sign in with a passkey alone: the options for navigator.credentials.get()',
      description: `Any passkey of this site (a discoverable credential: no username), user verification required. \`options\` is WebAuthn's PublicKeyCredentialRequestOptionsJSON; \`state\` (sealed, single-use, valid ${300} s) goes back with the answer to POST ${LOGIN_PASSKEY_PATH}. See docs/mfa.md.`,
      security: 'none',
      responses: {},
      errors: { 400: { description: 'The gateway is reached by an IP address (an RP id must be a host name) and auth.webauthn.rp_id is not set.', codes: ['bad_request'] }, 403: 'CsrfFailed', 503: 'Unavailable' }
    },
    answers: { 200: { description: 'The options and their state.', schema: CEREMONY } },
    preValidation (ctx) { if (crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { reply }) {
      reply(200, await passkeys.authenticationOptions(ctx.req, ctx.https, 'signin'))
    }
  })

  const postPasskey = route({
    method: 'POST',
    path: LOGIN_PASSKEY_PATH,
    auth: 'none',
    body: PASSKEY_BODY,
    docs: {
      tags: ['Browser'],
      operationId: 'loginPasskey',
      summary: 'Sign in with a passkey alone: the answer',
      description: 'The credential navigator.credentials.get() gave for the options of POST ' + LOGIN_PASSKEY_OPTIONS_PATH + ', with their `state`. A passkey with user verification is two factors: the session starts as after a password and a code (the cookies as POST /login sets them). See docs/mfa.md.',
      security: 'none',
      responses: {},
      errors: { ...PASSKEY_ERRORS, 401: { description: 'The passkey was refused.', codes: ['passkey_failed', 'passkey_cloned'] } }
    },
    answers: { 200: signedIn(names.jumpserver) },
    preValidation (ctx) { if (crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { body, reply }) {
      const next = safeNext(body.next)
      const { user, passkey } = await passkeys.authenticate('signin', body.state, body.response, ctx.req, ctx.https, ctx)
      const cookies = await startSession(ctx, user, 'passkey', signInFactors(passkey, false), 'passkey')
      reply(200, { user: profile(user, undefined, names.jumpserver), next }, { 'set-cookie': cookies })
    }
  })

  const postMfaPasskeyOptions = route({
    method: 'POST',
    path: LOGIN_MFA_PASSKEY_OPTIONS_PATH,
    auth: 'none',
    body: EMPTY_BODY,
    docs: {
      tags: ['Browser'],
      operationId: 'loginSecondFactorPasskeyOptions',
      summary: 'A passkey as the second step: the options for navigator.credentials.get()',
      description: `After POST ${LOGIN_PATH} asked for the second step, with the \`${names.mfaCookie}\` cookie: the user's passkeys, user verification required; \`state\` is bound to that password step. See docs/mfa.md.`,
      security: 'none',
      responses: {},
      errors: { 400: { description: 'Reached by an IP address without auth.webauthn.rp_id.', codes: ['bad_request'] }, 401: { description: 'No pending password step.', codes: ['mfa_pending_missing'] }, 403: 'CsrfFailed', 503: 'Unavailable' }
    },
    answers: { 200: { description: 'The options and their state.', schema: CEREMONY } },
    preValidation (ctx) { if (crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { reply }) {
      const { p, user } = await pendingOf(ctx)
      reply(200, await passkeys.authenticationOptions(ctx.req, ctx.https, 'second', { user, pending: p.n }))
    }
  })

  const postMfaPasskey = route({
    method: 'POST',
    path: LOGIN_MFA_PASSKEY_PATH,
    auth: 'none',
    body: PASSKEY_BODY,
    docs: {
      tags: ['Browser'],
      operationId: 'loginSecondFactorPasskey',
      summary: 'A passkey as the second step: the answer',
      description: `With the \`${names.mfaCookie}\` cookie: the credential for the options of POST ${LOGIN_MFA_PASSKEY_OPTIONS_PATH}, with their \`state\`. One of the user's passkeys starts the session (the cookies as POST /login sets them). Refusals count toward the per-user code lockout. See docs/mfa.md.`,
      security: 'none',
      responses: {},
      errors: { ...PASSKEY_ERRORS, 401: { description: 'The passkey was refused, or no pending password step.', codes: ['passkey_failed', 'passkey_cloned', 'mfa_pending_missing'] } }
    },
    answers: { 200: signedIn(names.jumpserver) },
    preValidation (ctx) { if (crossSite(ctx.req)) throw E.crossSite() },
    async handler (ctx, { body, reply }) {
      const next = safeNext(body.next)
      const { p, user } = await pendingOf(ctx)
      const { passkey } = await passkeys.authenticate(
        'second', body.state, body.response, ctx.req, ctx.https, ctx, { user, pending: p.n }
      )
      if (!(await mfa.consume(p))) throw E.mfaPendingMissing()
      const cookies = [...(await startSession(ctx, user, 'login', signInFactors(passkey, true), undefined, p.o)), mfaCookie(ctx, '', 0)]
      reply(200, { user: profile(user, undefined, names.jumpserver), next }, { 'set-cookie': cookies })
    }
  })

  return [postPasskeyOptions, postPasskey, postMfaPasskeyOptions, postMfaPasskey]
}

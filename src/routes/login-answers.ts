/**
 * What the sign-in routes (./login.ts) answer, as the OpenAPI document
 * publishes it: the JSON sign-in's results and the forms' errors (a form post
 * gets its page again with the error, a JSON post the catalogue's).
 */
import { Type as T } from '@sinclair/typebox'
import { profileSchema } from './profile.js'
import { ref, type ErrorAnswer } from './spec.js'

const SESSION_COOKIES = { 'Set-Cookie': ref('headers', 'SetSessionCookies') }

const RETRY = { 'Retry-After': ref('headers', 'RetryAfter') }
/** The sign-in forms' errors. */
export const PAGE_ERRORS = {
  400: { description: 'A bad body; a form post: the form again with its error.', codes: ['required', 'parse_error', 'bad_request'], page: true },
  403: 'SignInForbidden',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
  429: { description: 'Locked out for a while; a form post: the form again with its error.', codes: ['too_many_attempts'], headers: RETRY, page: true },
  503: 'CheckUnavailable'
} as const satisfies Record<number, ErrorAnswer>

/** Signed in (JSON): who, and where the page would have gone. */
export const loginResult = (jumpserver: boolean) => T.Object({
  user: profileSchema(jumpserver),
  next: T.String({ description: '`next`, made safe.' }),
  recovery_codes: T.Optional(T.Array(T.String(), { description: 'A sign-in that enrolled a second factor: its recovery codes, shown this once.' }))
}, { $id: 'LoginResult' })

/** The password passed and a second factor is due (JSON); `mfaPath`, `passkeyPath`: where the second step goes. */
export const loginMfaRequired = (mfaPath: string, passkeyPath: string) => T.Object({
  error: T.Literal('mfa_required'),
  msg: T.String(),
  data: T.Object({
    choices: T.Array(T.Union([T.Literal('otp'), T.Literal('passkey')])),
    url: T.Union([T.Literal(mfaPath), T.Literal(passkeyPath)], { description: 'Where the second step goes.' })
  })
}, { $id: 'LoginMfaRequired' })

/** A passkey ceremony's options and the state that goes back with its answer. */
export const CEREMONY = T.Object({ options: T.Object({}), state: T.String() })

/** The answer that starts a session (its cookies). */
export const signedIn = (jumpserver: boolean, description = 'Signed in.', page = false) => ({
  description, headers: SESSION_COOKIES, schema: loginResult(jumpserver), page
})

/** A registered passkey as the account page lists it (never its key). */
export const PASSKEY = T.Object({
  id: T.String(),
  name: T.String(),
  created: T.String({ format: 'date-time' }),
  last_used: T.Union([T.String({ format: 'date-time' }), T.Null()]),
  device_type: T.Union([T.Literal('singleDevice'), T.Literal('multiDevice')]),
  backed_up: T.Boolean()
})

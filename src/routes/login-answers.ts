/**
 * What the sign-in routes (./login.ts) answer, as the OpenAPI document
 * publishes it: the JSON sign-in's results and the forms' errors (a form post
 * gets its page again with the error, a JSON post the catalogue's).
 */
import { ref, schemaRef, type ErrorAnswer, type Json } from './spec.js'

const RETRY = { 'Retry-After': ref('headers', 'RetryAfter') }
/** The sign-in forms' errors. */
export const PAGE_ERRORS = {
  400: { description: 'A bad body; a form post: the form again with its error.', codes: ['required', 'parse_error', 'bad_request'], page: true },
  403: 'CsrfFailed',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
  429: { description: 'Locked out for a while; a form post: the form again with its error.', codes: ['too_many_attempts'], headers: RETRY, page: true },
  503: 'CheckUnavailable'
} as const satisfies Record<number, ErrorAnswer>

/** A JSON sign-in's answers: signed in, or a second factor due (`mfaPath`, `passkeyPath`: where it goes). */
export function loginSchemas (mfaPath: string, passkeyPath: string): Record<string, Json> {
  return {
    LoginResult: {
      type: 'object',
      required: ['user', 'next'],
      properties: { user: schemaRef('Profile'), next: { type: 'string', description: '`next`, made safe.' } }
    },
    LoginMfaRequired: {
      type: 'object',
      required: ['error', 'msg', 'data'],
      properties: {
        error: { const: 'mfa_required' },
        msg: { type: 'string' },
        data: {
          type: 'object',
          required: ['choices', 'url'],
          properties: {
            choices: { type: 'array', items: { enum: ['otp', 'passkey'] } },
            url: { enum: [mfaPath, passkeyPath], description: 'Where the second step goes.' }
          }
        }
      }
    }
  }
}

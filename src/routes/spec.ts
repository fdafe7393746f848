/**
 * The OpenAPI pieces a route declares beside its handler (Route.docs): its
 * operation (summary, parameters, answers, the errors it can answer by code)
 * and the schemas of its answers; its request body is its body schema
 * (Route.body, src/routes/body.ts), the one that validates it.
 * src/routes/openapi.ts puts them together with what the route's `auth` mode
 * implies (security, the org and CSRF parameters, the authentication errors)
 * and the error catalogue (src/errors.ts) into the document served under
 * /api/docs/.
 */
import type { ErrorCode } from '../errors.js'

export type Json = Record<string, unknown>

export const ref = (kind: 'schemas' | 'parameters' | 'headers' | 'responses', name: string): { $ref: string } => ({ $ref: `#/components/${kind}/${name}` })
export const schemaRef = (name: string): { $ref: string } => ref('schemas', name)

/** An `application/json` content map. */
export const json = (schema: unknown, example?: unknown): Json => ({
  'application/json': { schema, ...(example === undefined ? {} : { example }) }
})

/** An HTML page as an answer. */
export const html = (description: string): Json => ({ description, content: { 'text/html': { schema: { type: 'string' } } } })

/** A redirect as an answer. */
export const redirectTo = (description: string): Json => ({ description, headers: { Location: ref('headers', 'Location') } })

/**
 * The error answers shared by many operations (components/responses in the
 * document; openapi.ts lists the codes of each).
 */
export type SharedErrors = 'BadRequest' | 'BadOrg' | 'Unauthorized' | 'LoginFailed' | 'Forbidden' | 'CsrfFailed' |
'CredentialForbidden' | 'IpNotAllowed' | 'CheckUnavailable' | 'SignInForbidden' | 'NotFound' | 'OrgNotFound' |
'PayloadTooLarge' | 'UnsupportedMediaType' | 'TooManyAttempts' | 'RateLimited' | 'Unavailable' | 'UpstreamUnavailable' |
'UpstreamTimeout'

/**
 * An error answer: a shared one by name, or this operation's own (a description and the catalogue codes it may carry).
 */
export type ErrorAnswer = SharedErrors | {
  description: string,
  codes: ErrorCode[],
  headers?: Json,
  /** a page's form: a form post gets the page again with its error (text/html), a JSON client the error */
  page?: boolean
  /** names.abbrev JMS: JumpServer's `{"error", "msg"}` body instead of the catalogue's */
  jumpserver?: boolean
}

/** The errors of an operation that takes a body (src/routes/body.ts). */
export const BODY_ERRORS = { 400: 'BadRequest', 413: 'PayloadTooLarge', 415: 'UnsupportedMediaType' } as const satisfies Record<number, ErrorAnswer>

export interface Operation {
  tags: string[]
  operationId: string
  summary: string
  description?: string
  /**
   * The credentials it takes, when its route's auth mode does not say: the
   * sign-in page takes none (it only looks for a session), /logout's
   * session is its own check.
   */
  security?: 'none' | 'session'
  /** besides those its auth mode implies (the org header and ?oid=, X-CSRFToken) */
  parameters?: Json[]
  /** its answers other than errors, by status */
  responses: Record<number, Json>
  /** the errors it can answer besides those of its auth mode (a status given here replaces that one's) */
  errors?: Record<number, ErrorAnswer>
}

export type DocumentedMethod = 'get' | 'post' | 'put' | 'patch' | 'delete'

/**
 * A route's operation; a route of any method (`*`) is documented as each
 * of the five, its operationId followed by the method (`forwardAuthGet`).
 */
export interface RouteDocs extends Operation {
  /** components/schemas its answers refer to */
  schemas?: Record<string, Json>
}

/**
 * Every error a client can see is a GatewayError: an HTTP status, a stable
 * machine-readable `code` and a human `detail`. Nothing else (no stack, no
 * internal message) ever reaches a response body.
 */
export class GatewayError extends Error {
  readonly status: number
  readonly code: string
  readonly headers: Record<string, string | string[]> | undefined

  constructor (status: number, code: string, detail: string, headers?: Record<string, string | string[]>) {
    // No stack trace: these are expected outcomes (a wrong token, a missing
    // header), created on every rejected request, and a stack never reaches a
    // response or a log. Capturing one is most of the cost of an Error.
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    super(detail)
    Error.stackTraceLimit = limit
    this.name = 'GatewayError'
    this.status = status
    this.code = code
    this.headers = headers
  }

  get detail (): string { return this.message }

  toJSON (): { detail: string, code: string } {
    return { detail: this.message, code: this.code }
  }
}

/** Stable error codes, one place. Clients may switch on these strings. */
export const E = {
  notAuthenticated: () => new GatewayError(401, 'not_authenticated', 'Authentication credentials were not provided.'),
  authenticationFailed: () => new GatewayError(401, 'authentication_failed', 'Unable to log in with provided credentials.'),
  invalidToken: () => new GatewayError(401, 'invalid_token', 'Invalid or expired token.'),
  malformedAuthorization: (why: string) => new GatewayError(401, 'malformed_authorization', `Malformed Authorization header: ${why}.`),
  unsupportedScheme: () => new GatewayError(401, 'unsupported_scheme', 'Unsupported authorization scheme.'),
  invalidSignature: () => new GatewayError(401, 'invalid_signature', 'Signature verification failed.'),
  signatureExpired: () => new GatewayError(401, 'signature_expired', 'Date header is missing, malformed or outside the allowed clock skew.'),
  signatureReplayed: () => new GatewayError(401, 'signature_replayed', 'This signature was already used.'),
  invalidSession: () => new GatewayError(401, 'invalid_session', 'Session is invalid or expired.'),
  invalidOrg: () => new GatewayError(400, 'invalid_org', 'Organization header must be a UUID, "default" or "root".'),
  orgForbidden: () => new GatewayError(403, 'org_forbidden', 'You are not a member of this organization.'),
  orgNotFound: () => new GatewayError(404, 'org_not_found', 'No such organization.'),
  permissionDenied: () => new GatewayError(403, 'permission_denied', 'You do not have permission to perform this action.'),
  badRequest: (detail: string) => new GatewayError(400, 'bad_request', detail),
  missingField: (field: string) => new GatewayError(400, 'required', `${field}: This field is required.`),
  expectationFailed: () => new GatewayError(417, 'expectation_failed', 'Only "Expect: 100-continue" is supported.'),
  payloadTooLarge: () => new GatewayError(413, 'payload_too_large', 'Request body is too large.'),
  unsupportedMediaType: () => new GatewayError(415, 'unsupported_media_type', 'Content-Type must be application/json or application/x-www-form-urlencoded.'),
  tooManyAttempts: (retryAfter: number) => new GatewayError(429, 'too_many_attempts', 'Too many failed login attempts; try again later.', { 'retry-after': String(Math.max(1, retryAfter)) }),
  csrfFailed: () => new GatewayError(403, 'csrf_failed', 'CSRF token missing or incorrect.'),
  crossSite: () => new GatewayError(403, 'csrf_failed', 'Cross-site request refused.'),
  passwordRequired: () => new GatewayError(403, 'password_required', 'Confirm with your password (field "password") to create or replace a permanent credential.'),
  passwordIncorrect: () => new GatewayError(403, 'password_incorrect', 'The password is incorrect.'),
  tooManyKeys: (max: number) => new GatewayError(400, 'too_many_keys', `A user can have at most ${max} access keys; delete one first.`),
  notFound: () => new GatewayError(404, 'not_found', 'Not found.'),
  methodNotAllowed: (allow: string) => new GatewayError(405, 'method_not_allowed', 'Method not allowed.', { allow }),
  storeUnavailable: () => new GatewayError(503, 'store_unavailable', 'The credential store is unavailable; try again shortly.'),
  upstreamUnavailable: () => new GatewayError(502, 'upstream_unavailable', 'The upstream service is unavailable.'),
  upstreamTimeout: () => new GatewayError(504, 'upstream_timeout', 'The upstream service did not answer in time.'),
  shuttingDown: () => new GatewayError(503, 'shutting_down', 'The gateway is shutting down.'),
  internal: () => new GatewayError(500, 'internal_error', 'Internal error.')
} as const

/**
 * Errors of the CLI and of configuration: a message, an exit code (2 usage,
 * 1 not found or failed) and a `code` from the API's vocabulary where one fits
 * (`--json` prints `{detail, code}`).
 */
export class UsageError extends Error {
  readonly exitCode: number
  readonly code: string
  constructor (message: string, exitCode = 2, code = exitCode === 2 ? 'bad_request' : 'failed') {
    super(message)
    this.name = 'UsageError'
    this.exitCode = exitCode
    this.code = code
  }
}

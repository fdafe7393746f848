/**
 * Every error a client can see is a GatewayError: an HTTP status, a stable
 * machine-readable `code` and a human `detail`. Nothing else (no stack, no
 * internal message) ever reaches a response body.
 *
 * ERRORS is the one catalogue of codes: status, the detail as sent (an example
 * where the detail carries a value) and when it happens. A GatewayError can
 * only carry a catalogue code, and takes its status from there; the `E`
 * factories below are the only place one is made (test/unit/architecture.test.ts).
 * The OpenAPI document (src/routes/openapi.ts) and docs/errors.md's table
 * (test/unit/docs.test.ts) are built from the catalogue.
 */
import { FRESH_LOGIN_MS, MAX_ACCESS_KEYS, MFA_PENDING_TRIES, PASSKEY_CREDENTIAL_FAILURES } from './limits.js'

export interface ErrorSpec {
  status: number
  /** the detail as sent; for a detail that carries a value, an example */
  detail: string
  /** when a client gets it */
  when: string
  /**
   * only administration meets it (the store's conflicts and lookups): the command
   * line and the admin API (src/admin/), never a client of the public port
   */
  cliOnly?: true
}

/**
 * Every error code sidegate answers with, in the order the
 * documentation lists them. Clients may switch on these strings.
 */
export const ERRORS = {
  not_authenticated: { status: 401, detail: 'Authentication credentials were not provided.', when: 'No Authorization header and no session cookie.' },
  authentication_failed: { status: 401, detail: 'Unable to log in with provided credentials.', when: 'Wrong username or password, unknown user or disabled account (one answer for all), or a credential whose user no longer exists.' },
  invalid_token: { status: 401, detail: 'Invalid or expired token.', when: 'Unknown, expired or already used bearer token; unknown private token; a JWT from a trusted issuer (auth.trusted_issuers) that does not verify: unknown issuer or key, a bad signature, an algorithm not allowed, another audience, expired or not yet valid, a lifetime over max_lifetime, too large, or (review: tokenreview) refused by the API server\'s TokenReview, its pod or service account deleted (the detail says which; its answer carries `WWW-Authenticate: Bearer error="invalid_token"`), or an as: user token whose user is unknown.' },
  malformed_authorization: { status: 401, detail: 'Malformed Authorization header: token missing.', when: 'The Authorization header cannot be parsed for its scheme.' },
  unsupported_scheme: { status: 401, detail: 'Unsupported authorization scheme.', when: 'An Authorization scheme other than Bearer, Token, PrivateToken or Signature; on the admin API, any credential but an access-key signature or a private token.' },
  invalid_signature: { status: 401, detail: 'Signature verification failed.', when: 'Unknown access key, a signature that is not the canonical Base64 of 32 bytes, or one that does not match.' },
  signature_expired: { status: 401, detail: 'Date header is missing, malformed or outside the allowed clock skew.', when: 'A signed Date or X-Date is missing, malformed or further than auth.signature.clock_skew from now (and, with auth.signature.date_window, not sent fresh by this key within the window); or (detail "The signed Date and X-Date headers differ.") both are signed and name different times.' },
  invalid_digest: { status: 401, detail: 'The request body does not match its signed digest.', when: 'A signature lists `digest` or `content-digest` and the body does not match it, or the header is malformed or names no SHA-256/SHA-512 digest; or, with auth.signature.require_digest, a signed request with a body signs neither.' },
  key_expired: { status: 401, detail: 'This access key has expired.', when: 'A correctly signed request with an access key past its expiry (`sidegate key create --expires`).' },
  key_disabled: { status: 401, detail: 'This access key is disabled.', when: 'A correctly signed request with an access key that is disabled: by its owner (the API keys page, PATCH `is_active`), by an operator (`sidegate key disable`) or by auth.keys.disable_after because it went unused; `sidegate key enable` (or the admin API) turns it back on, the page only after its owner\'s own disable.' },
  signature_replayed: { status: 401, detail: 'This signature was already used.', when: 'auth.signature.replay_cache is on and the same signature (same key, same MAC) came again (a GET or HEAD: later than auth.signature.replay_grace after its first use).' },
  invalid_session: { status: 401, detail: 'Session is invalid or expired.', when: 'Unknown, logged-out, idle-expired or too old session cookie.' },
  user_inactive: { status: 401, detail: 'User account is disabled.', when: 'The credential is valid but its user is disabled.' },
  csrf_failed: { status: 403, detail: 'CSRF token missing or incorrect.', when: 'Unsafe method with a session cookie and no matching X-CSRFToken; or (detail "Cross-site request refused.") a browser\'s request from another site (Sec-Fetch-Site, else Origin, else Referer) to the token endpoint, /login or /logout, or a WebSocket upgrade authenticated by the session cookie.' },
  org_forbidden: { status: 403, detail: 'You are not a member of this organization.', when: 'The requested organization is not one of the user\'s (superusers excepted; root is for superusers only).' },
  untrusted_proxy: { status: 403, detail: 'Only a proxy listed in server.trusted_proxies may ask for a forward-auth decision.', when: 'A request to /_sidegate/auth from a peer that is not in server.trusted_proxies (logged once per peer).' },
  access_denied: { status: 403, detail: 'You may not reach this path.', when: 'An access rule (`access.rules`, or `access.default_policy` when none matches) refused an authenticated request: policy deny; two_factor for a sign-in without a second factor, or for a machine credential the rule does not name in its subjects. A deny rule that names no subjects refuses before any credential is looked at. The rule\'s index is in the debug log and the audit trail (`access.denied`), never in the answer.' },
  ip_not_allowed: { status: 403, detail: 'This access key may not be used from this address.', when: 'A correctly signed request from a client address (server.trusted_proxies decides which) outside the access key\'s allow-list (`--allow-ip`).' },
  permission_denied: { status: 403, detail: 'You do not have permission to perform this action.', when: 'Listing users without being a superuser or an admin of the organization; reading the private token with a bearer token or an access key; any admin API call by a user who is not a superuser.' },
  password_required: { status: 403, detail: 'Confirm with your password (field "password") to create or replace a permanent credential.', when: `Creating an access key, creating or resetting the private token, adding a passkey (its options, POST /account/mfa/passkeys/options), setting up an authenticator app or removing a passkey (the /account/mfa form, which shows it in the page), without \`password\` in the body, by any caller but a browser session signed in less than ${FRESH_LOGIN_MS / 60_000} minutes ago.` },
  key_disabled_by_operator: { status: 403, detail: 'This access key was disabled by an operator or because it went unused; only an operator can enable it again.', when: 'Its owner tried to enable (PATCH `is_active: true`) an access key that an operator (`sidegate key disable`, the admin API, an import) or auth.keys.disable_after disabled; `sidegate key enable` or the admin API can.' },
  reset_link_invalid: { status: 400, detail: 'This password-reset link is not valid: it expired, was used, or the password changed since.', when: 'A link of `sidegate user reset-link` used after its hour, a second time, after the password was set another way, for a disabled user, or altered.' },
  password_incorrect: { status: 403, detail: 'The password is incorrect.', when: 'The `password` sent to confirm creating an access key or a private token, adding a passkey, setting up an authenticator app or removing a passkey, is wrong (counted by the login lockout).' },
  invalid_org: { status: 400, detail: 'Organization must be a UUID, "default", "root" or "system".', when: 'A malformed organization header, cookie or ?oid=, several ?oid= naming different organizations, or two different organization cookies.' },
  required: { status: 400, detail: 'username: This field is required.', when: 'A required body field is missing or empty.' },
  parse_error: { status: 400, detail: 'JSON parse error: the body is not valid JSON.', when: 'A JSON body that does not parse, or is not an object.' },
  bad_request: { status: 400, detail: 'Malformed HTTP request.', when: 'A field with a wrong type or length, or an HTTP request that does not parse.' },
  too_many_keys: { status: 400, detail: `A user can have at most ${MAX_ACCESS_KEYS} access keys; delete one first.`, when: `Creating an access key when the user already has ${MAX_ACCESS_KEYS}.` },
  org_not_found: { status: 404, detail: 'No such organization.', when: 'The requested organization (a well-formed UUID) does not exist.' },
  not_found: { status: 404, detail: 'Not found.', when: 'No such path (without an upstream), or no such access key of the caller; on the admin API, no such path, user, access key, private token or session.' },
  method_not_allowed: { status: 405, detail: 'Method not allowed.', when: 'A method the endpoint does not have; see the Allow header.' },
  request_timeout: { status: 408, detail: 'Request timed out.', when: 'The client did not send its request within server.request_timeout.' },
  expectation_failed: { status: 417, detail: 'Only "Expect: 100-continue" is supported.', when: 'An Expect header other than 100-continue.' },
  payload_too_large: { status: 413, detail: 'Request body is too large.', when: 'A body larger than server.body_limit on sidegate\'s own endpoints, or than auth.signature.max_body on a request whose signature covers a digest.' },
  unsupported_media_type: { status: 415, detail: 'Content-Type must be application/json or application/x-www-form-urlencoded.', when: 'Any other body type on sidegate\'s own endpoints; on the admin API (detail "Content-Type must be application/json."), any body type but JSON.' },
  mfa_failed: { status: 401, detail: 'One-time password invalid, You can also try 4 times (The account will be temporarily locked for 30 minutes)', when: 'A wrong, reused (its 30 s step already accepted) or out-of-window (more than one step of drift) one-time password, or an unknown or used recovery code, after the right password (the MFA challenge, the one-request form of the token endpoint, the login page\'s second step, the first code confirming an enrolment); counted toward the per-user code lockout (auth.lockout.max_failures within auth.lockout.window). JumpServer\'s `{"error": "mfa_failed", "msg"}` on the token endpoint and the challenge.' },
  mfa_unset: { status: 400, detail: 'MFA not set, please set it first', when: 'The token endpoint (or a JSON POST /login), with the right password, for a user who must use a second factor (auth.mfa.required, or `sidegate mfa require`) and has not enrolled one: enrol on the account page (sign in at /login), or ask an operator for `sidegate mfa enroll`. JumpServer\'s `{"error": "mfa_unset", "msg"}`.' },
  mfa_pending_missing: { status: 401, detail: 'No session found, check your cookie', when: `POST /api/v1/authentication/mfa/challenge/ (or a JSON POST /login/mfa, or the passkey second step) without the cookie the token endpoint (or POST /login) set after the password, or with one that expired after auth.mfa.pending_ttl, was used, came from another client address or user agent, was spent by ${MFA_PENDING_TRIES} wrong codes, or was given before the user's password was changed, the user disabled or their sessions ended: sign in with the password again.` },
  mfa_passkey_only: { status: 400, detail: 'This account\'s second factor is a passkey, which this API cannot take: sign in on the login page, or set up an authenticator app there', when: 'The token endpoint (or a JSON POST /login), with the right password, for a user whose only second factor is a passkey: WebAuthn needs a browser, so a passkey cannot be given there (the MFA challenge takes one-time passwords only). Sign in on the login page; for API clients, add an authenticator app (TOTP) on the account page. JumpServer\'s `{"error", "msg"}` shape.' },
  passkey_failed: { status: 401, detail: 'The passkey was not accepted.', when: 'A passkey sign-in or registration was refused: an unknown or removed passkey, another user\'s, a signature or user handle that does not verify, no user verification, or an origin or RP id other than auth.webauthn allows. A refusal after the signature verified (no user verification, another user handle) counts toward the per-user code lockout; one before it counts per client address and per credential id, never per user.' },
  passkey_challenge_invalid: { status: 400, detail: 'The passkey challenge is missing, expired or already used; start again.', when: 'A passkey ceremony\'s answer without the challenge state its options gave, with one that expired (5 minutes), was already answered once (each challenge is single-use, on every replica), or was given for another ceremony, user or sign-in.' },
  passkey_cloned: { status: 401, detail: 'The passkey was not accepted: its signature counter did not increase (a cloned authenticator?).', when: 'A passkey whose signature counter did not increase since its last use (when either is not 0): the authenticator may have been copied. Refused, and audited as passkey.cloned; the passkey is kept (its owner or an operator removes it).' },
  too_many_attempts: { status: 429, detail: 'Too many failed login attempts; try again later.', when: `auth.lockout.max_failures failed passwords for this username from this client address within auth.lockout.window, or auth.lockout.address_max_failures from this address for any usernames, or more than auth.password_checks.per_address_waiting of its passwords (or auth.password_checks.per_prefix_waiting of those of its network: ipv4_prefixes, ipv6_prefixes) waiting to be checked; or auth.lockout.max_failures wrong second-factor codes (and passkey assertions refused after their signature verified) for one user within the window (whatever the address: the password was right), even for a right code or a valid passkey; or auth.lockout.address_max_failures passkey assertions from this address refused before their signature verified; or (a refusal only: a valid assertion still passes) more than ${PASSKEY_CREDENTIAL_FAILURES} such refusals naming one passkey; see Retry-After. IPv6 clients count by their auth.lockout.ipv6_prefix network.` },
  rate_limited: { status: 429, detail: 'Rate limit exceeded; try again in 7 seconds.', when: 'rate_limit is enabled and the caller used up its limit (the access key\'s, the user\'s, the auth method\'s or the default) within the window; see Retry-After and the RateLimit fields.' },
  headers_too_large: { status: 431, detail: 'Request headers are too large.', when: 'The request line and headers exceed server.max_header_size bytes.' },
  internal_error: { status: 500, detail: 'Internal error.', when: 'A bug; logged with the request id.' },
  upstream_unavailable: { status: 502, detail: 'The upstream service is unavailable.', when: 'The protected service refused or dropped the connection.' },
  store_unavailable: { status: 503, detail: 'The credential store is unavailable; try again shortly.', when: 'Redis does not answer within redis.command_timeout.' },
  shutting_down: { status: 503, detail: 'The gateway is shutting down.', when: 'The gateway is draining after SIGTERM.' },
  busy: { status: 503, detail: 'Too many passwords are being checked; try again in a moment.', when: 'The token endpoint, /login or a password confirmation while auth.password_checks.concurrency checks run and auth.password_checks.queue more wait (a login flood; for a client address that has not signed in successfully within auth.password_checks.known_ttl, the queue less its reserved places); see Retry-After. Counted in sidegate_password_checks_refused_total.' },
  worker_unavailable: { status: 503, detail: 'No worker process is available; try again shortly.', when: 'With `sidegate start --workers N`: an admin API call found no running worker to relay it to (every worker restarting).' },
  upstream_timeout: { status: 504, detail: 'The upstream service did not answer in time.', when: 'No answer from the protected service within upstream.timeout.' },
  sso_failed: { status: 401, detail: 'Sign-in through the identity provider failed.', when: 'An answer of an OIDC provider or an LDAP directory that does not verify or does not sign the user in: a callback with an error, a code the provider refuses, an id_token that fails its checks, a directory password that does not bind. The detail says which; the audit event sso.refused too.' },
  sso_state_invalid: { status: 400, detail: 'The sign-in attempt is unknown or has expired; start again.', when: 'An OIDC callback whose `state` is missing, does not match the attempt this browser started, was used already, or is older than 10 minutes.' },
  sso_not_linked: { status: 403, detail: 'No account here is linked to this identity.', when: 'A first sign-in through a provider (OIDC, LDAP) that matches no user: provisioning is `link` or `off` and no operator\'s link or verified email matched, or the username it sends is a local user\'s and the distinct name `<username>@<provider>` is taken too. An operator links it: `sidegate user link`.' },
  logout_token_invalid: { status: 400, detail: 'The logout token is not valid.', when: 'A provider\'s back-channel logout (POST /login/oidc/<id>/backchannel-logout) whose logout_token is missing or fails a check: its signature against the provider\'s keys, iss, aud, iat (at most 5 minutes old), typ, the logout event, sub or sid, no nonce, a jti not seen before. The detail says which; the audit event sso.logout_refused too. No session ends.' },
  idp_unavailable: { status: 503, detail: 'The identity provider cannot be reached; try again later.', when: 'An OIDC provider\'s discovery, keys or token endpoint did not answer within its timeout.' },
  issuer_unavailable: { status: 503, detail: 'The token\'s issuer has no usable keys yet; try again shortly.', when: 'A JWT from a trusted issuer (auth.trusted_issuers) whose keys (discovery, JWKS) could not be fetched, or held no usable key, since the gateway started: retried with backoff; /readyz names the issuer. Or, with review: tokenreview, the Kubernetes API server could not be asked (unreachable, no answer within timeout, a 5xx, or it refused sidegate\'s own token_file credential: 401, or its RBAC: 403): never admitted unconfirmed; logged once per cause.' },
  directory_unavailable: { status: 503, detail: 'The directory cannot be reached; try again later.', when: 'No LDAP server of the directory answered within its timeout (each is tried in order; a failed one is skipped for `retry_after`).' },
  user_exists: { status: 409, detail: 'A user named alice already exists.', when: 'Creating a user (`sidegate user add`, the admin API) with a username that is taken.', cliOnly: true },
  org_exists: { status: 409, detail: 'An organization with id 00000000-0000-0000-0000-000000000002 already exists.', when: 'Creating an organization (`sidegate org add --id`, the admin API) with an id that is taken.', cliOnly: true },
  user_not_found: { status: 404, detail: 'No such user.', when: 'Changing or deleting a user that does not exist.', cliOnly: true },
  group_exists: { status: 409, detail: 'A group named admins already exists.', when: 'Creating a group (`sidegate group add`, the admin API) whose name the org (or, for a global group, the global groups) already has, in any case; or with an id that is taken.', cliOnly: true },
  group_not_found: { status: 404, detail: 'No such group.', when: 'A group named by an id or a name (global, or in the org given) that does not exist: `sidegate group …`, the admin API\'s groups/{id}.', cliOnly: true },
  link_exists: { status: 409, detail: 'This account is linked already.', when: 'Linking (`sidegate user link`, the admin API) an account elsewhere that is linked to a user already, or a user that already has a link of that provider (one per provider: unlink it first).', cliOnly: true },
  link_not_found: { status: 404, detail: 'No such link.', when: 'Unlinking a provider the user has no link of.', cliOnly: true }
} as const satisfies Record<string, ErrorSpec>

export type ErrorCode = keyof typeof ERRORS

/** The codes an HTTP client can get, in catalogue order. */
export const HTTP_ERROR_CODES: readonly ErrorCode[] = (Object.keys(ERRORS) as ErrorCode[]).filter(
  (c) => !(ERRORS[c] as ErrorSpec).cliOnly
)

export class GatewayError extends Error {
  readonly status: number
  readonly code: ErrorCode
  readonly headers: Record<string, string | string[]> | undefined

  /**
   * Made only by the `E` factories below: a catalogue code, its
   * status, the catalogue's detail unless the factory gives one.
   */
  constructor (code: ErrorCode, detail?: string, headers?: Record<string, string | string[]>) {
    // No stack trace: these are expected outcomes (a wrong token, a missing
    // header), created on every rejected request, and a stack never reaches a
    // response or a log. Capturing one is most of the cost of an Error.
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    const spec: ErrorSpec = ERRORS[code]
    super(detail ?? spec.detail)
    Error.stackTraceLimit = limit
    this.name = 'GatewayError'
    this.status = spec.status
    this.code = code
    this.headers = headers
  }

  get detail (): string { return this.message }

  toJSON (): { detail: string, code: string } {
    return { detail: this.message, code: this.code }
  }
}

/**
 * What a check answers: a value, or a refusal returned (a GatewayError,
 * never thrown: a throw makes V8 walk the stack); a promise of either only
 * where I/O must decide. The request path awaits only what is a promise.
 */
export type Result<T> = T | GatewayError | Promise<T | GatewayError>

/**
 * The one way to go on from a Result: `ok` applied to its value (and `with`,
 * so that a caller needs no closure per call), at once when it is one now (no
 * promise made), else when the promise settles; a refusal goes to `refused`
 * (by default handed on as it is). A promise rejected with a GatewayError (the
 * store unavailable) is that refusal too, so nothing after it throws or
 * rejects for one; anything else (a bug) still rejects.
 */
export function mapResult<T, U, W = undefined> (
  r: Result<T>, ok: (v: T, w: W) => Result<U>, w?: W, refused?: (e: GatewayError, w: W) => Result<U>
): Result<U> {
  // small, so that it is inlined wherever it is called: the promise's branch is a function of its own
  if (r instanceof Promise) return mapLater(r, ok, w as W, refused)
  if (r instanceof GatewayError) return refused === undefined ? r : refused(r, w as W)
  return ok(r, w as W)
}

function mapLater<T, U, W> (
  r: Promise<T | GatewayError>, ok: (v: T, w: W) => Result<U>, w: W, refused?: (e: GatewayError, w: W) => Result<U>
): Promise<U | GatewayError> {
  return r.then(
    (v) => v instanceof GatewayError ? (refused === undefined ? v : refused(v, w)) : ok(v, w),
    (err: unknown) => refused === undefined ? refusalOf(err) : refused(refusalOf(err), w)
  )
}

/** A GatewayError caught (a parser's, the store's) as the refusal it is; anything else thrown on. */
export function refusalOf (err: unknown): GatewayError {
  if (err instanceof GatewayError) return err
  throw err
}

/** One factory per way sidegate refuses; those with a parameter put it into the detail (or a header). */
/** The error of a catalogue code a client names (/_sidegate/error/<code>), with its default detail; else null. */
export function errorOfCode (code: string): GatewayError | null {
  return Object.hasOwn(ERRORS, code) ? new GatewayError(code as ErrorCode) : null
}

export const E = {
  notAuthenticated: () => new GatewayError('not_authenticated'),
  authenticationFailed: () => new GatewayError('authentication_failed'),
  invalidToken: () => new GatewayError('invalid_token'),
  malformedAuthorization: (why: string) => new GatewayError('malformed_authorization', `Malformed Authorization header: ${why}.`),
  unsupportedScheme: () => new GatewayError('unsupported_scheme'),
  invalidSignature: () => new GatewayError('invalid_signature'),
  signatureExpired: (detail?: string) => new GatewayError('signature_expired', detail),
  invalidDigest: (detail?: string) => new GatewayError('invalid_digest', detail),
  keyExpired: () => new GatewayError('key_expired'),
  keyDisabled: () => new GatewayError('key_disabled'),
  keyDisabledByOperator: () => new GatewayError('key_disabled_by_operator'),
  ipNotAllowed: () => new GatewayError('ip_not_allowed'),
  accessDenied: () => new GatewayError('access_denied'),
  untrustedProxy: () => new GatewayError('untrusted_proxy'),
  signatureReplayed: () => new GatewayError('signature_replayed'),
  invalidSession: () => new GatewayError('invalid_session'),
  userInactive: () => new GatewayError('user_inactive'),
  invalidOrg: () => new GatewayError('invalid_org'),
  orgForbidden: () => new GatewayError('org_forbidden'),
  orgNotFound: () => new GatewayError('org_not_found'),
  permissionDenied: () => new GatewayError('permission_denied'),
  badRequest: (detail: string) => new GatewayError('bad_request', detail),
  /** a request Node could not parse (answered on the raw socket) */
  malformedRequest: () => new GatewayError('bad_request'),
  missingField: (field: string) => new GatewayError('required', `${field}: This field is required.`),
  notJson: () => new GatewayError('parse_error'),
  notJsonObject: () => new GatewayError('parse_error', 'The JSON body must be an object.'),
  expectationFailed: () => new GatewayError('expectation_failed'),
  payloadTooLarge: () => new GatewayError('payload_too_large'),
  unsupportedMediaType: () => new GatewayError('unsupported_media_type'),
  /** the admin API takes JSON only */
  jsonOnly: () => new GatewayError('unsupported_media_type', 'Content-Type must be application/json.'),
  mfaFailed: (detail?: string) => new GatewayError('mfa_failed', detail),
  mfaUnset: () => new GatewayError('mfa_unset'),
  mfaPendingMissing: () => new GatewayError('mfa_pending_missing'),
  mfaPasskeyOnly: () => new GatewayError('mfa_passkey_only'),
  passkeyFailed: (detail?: string) => new GatewayError('passkey_failed', detail),
  passkeyChallengeInvalid: () => new GatewayError('passkey_challenge_invalid'),
  passkeyCloned: () => new GatewayError('passkey_cloned'),
  tooManyAttempts: (retryAfter: number) => new GatewayError('too_many_attempts', undefined, { 'retry-after': String(Math.max(1, retryAfter)) }),
  rateLimited: (retryAfter: number, headers: Record<string, string>) => new GatewayError('rate_limited', `Rate limit exceeded; try again in ${Math.max(1, retryAfter)} second${Math.max(1, retryAfter) === 1 ? '' : 's'}.`, { ...headers, 'retry-after': String(Math.max(1, retryAfter)) }),
  csrfFailed: () => new GatewayError('csrf_failed'),
  crossSite: () => new GatewayError('csrf_failed', 'Cross-site request refused.'),
  passwordRequired: () => new GatewayError('password_required'),
  passwordIncorrect: () => new GatewayError('password_incorrect'),
  resetLinkInvalid: () => new GatewayError('reset_link_invalid'),
  tooManyKeys: (max: number) => new GatewayError('too_many_keys', `A user can have at most ${max} access keys; delete one first.`),
  notFound: () => new GatewayError('not_found'),
  methodNotAllowed: (allow: string) => new GatewayError('method_not_allowed', undefined, { allow }),
  requestTimeout: () => new GatewayError('request_timeout'),
  headersTooLarge: () => new GatewayError('headers_too_large'),
  storeUnavailable: () => new GatewayError('store_unavailable'),
  busy: (retryAfter: number) => new GatewayError('busy', undefined, { 'retry-after': String(Math.max(1, retryAfter)) }),
  workerUnavailable: () => new GatewayError('worker_unavailable'),
  upstreamUnavailable: () => new GatewayError('upstream_unavailable'),
  upstreamTimeout: () => new GatewayError('upstream_timeout'),
  shuttingDown: () => new GatewayError('shutting_down'),
  internal: () => new GatewayError('internal_error'),
  userExists: (username: string) => new GatewayError('user_exists', `A user named ${username} already exists.`),
  orgExists: (id: string) => new GatewayError('org_exists', `An organization with id ${id} already exists.`),
  userNotFound: () => new GatewayError('user_not_found'),
  groupExists: (name: string) => new GatewayError('group_exists', `A group named ${name} already exists.`),
  groupNotFound: () => new GatewayError('group_not_found'),
  ssoFailed: (detail: string) => new GatewayError('sso_failed', detail),
  ssoStateInvalid: () => new GatewayError('sso_state_invalid'),
  ssoNotLinked: (detail?: string) => new GatewayError('sso_not_linked', detail),
  logoutTokenInvalid: (why: string) => new GatewayError('logout_token_invalid', `The logout token is not valid: ${why}.`),
  idpUnavailable: () => new GatewayError('idp_unavailable', undefined, { 'retry-after': '30' }),
  directoryUnavailable: (retryAfter: number) => new GatewayError('directory_unavailable', undefined, { 'retry-after': String(Math.max(1, retryAfter)) }),
  /** a trusted issuer's JWT that does not verify (RFC 6750's challenge, the reason in the detail) */
  tokenRefused: (why: string) => new GatewayError('invalid_token', `Invalid token: ${why}.`, { 'www-authenticate': 'Bearer realm="sidegate", error="invalid_token"' }),
  /** `why`: the TokenReview could not be asked (its detail); else the catalogue's (no keys yet) */
  issuerUnavailable: (why?: string) =>
    new GatewayError('issuer_unavailable', why === undefined ? undefined : `The token's issuer could not confirm it: ${why}; try again shortly.`, { 'retry-after': '5' }),
  linkExists: (detail?: string) => new GatewayError('link_exists', detail),
  linkNotFound: () => new GatewayError('link_not_found'),
  /** the admin API: a credential other than an access-key signature or a private token */
  adminCredential: () => new GatewayError('unsupported_scheme', 'The admin API takes an access-key signature or a private token.'),
  /** the admin API: a user who is not a superuser */
  notSuperuser: () => new GatewayError('permission_denied', 'The admin API is for superusers.'),
  /** an administration operation's refusal (src/admin/ops.ts, a UsageError) as the admin API answers it */
  fromUsage: (err: UsageError) => new GatewayError(err.code === 'org_not_found' || err.code === 'not_found' ? err.code : 'bad_request', err.message)
} as const

/**
 * Errors of the CLI, of configuration and of administration (src/admin/): a
 * message and a `code` from the API's vocabulary where one fits (bad input:
 * `bad_request`, the default; `not_found`, `org_not_found`; else the CLI's
 * own, such as `failed`). `--json` prints `{detail, code}`; the exit code is
 * the code's (src/cli/exit-codes.ts), and the admin API answers it as a
 * catalogue error (E.fromUsage).
 */
export class UsageError extends Error {
  readonly code: string
  constructor (message: string, code = 'bad_request') {
    super(message)
    this.name = 'UsageError'
    this.code = code
  }
}

/** The text of anything thrown: an Error's message, anything else as a string. */
export function messageOf (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

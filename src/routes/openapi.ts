/**
 * The OpenAPI 3.1 document of everything sidegate serves, built from the
 * configuration (header and cookie names follow `names.abbrev`). Served as
 * JSON and YAML under /api/docs/ and rendered there by Swagger UI.
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Config } from '../config.js'
import { ERRORS, HTTP_ERROR_CODES, type ErrorCode } from '../errors.js'
import { FRESH_LOGIN_MS, MAX_ACCESS_KEYS } from '../limits.js'
import { ACCESS_KEYS_PATH, ACCOUNT_PAGE_PATH, PRIVATE_TOKEN_PATH } from './account.js'
import { LOGIN_PATH, LOGOUT_PATH } from './login.js'
import { TOKEN_PATH } from './token.js'

export const VERSION: string = (JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'package.json'), 'utf8')) as { version: string }).version

/**
 * The README's error table (section Errors), from the catalogue: every code an
 * HTTP client can get, by status. `npm run docs:errors` writes it into the
 * README; test/docs.test.ts fails when the README's copy differs.
 */
export function errorTable (): string {
  const rows = [...HTTP_ERROR_CODES].sort((a, b) => ERRORS[a].status - ERRORS[b].status)
    .map((c) => `| ${ERRORS[c].status} | \`${c}\` | ${ERRORS[c].when.replace(/\|/g, '\\|')} |`)
  return ['| status | code | when |', '| ---: | --- | --- |', ...rows].join('\n')
}

const schemaName = (code: string): string => code.split('_').map((w) => w[0].toUpperCase() + w.slice(1)).join('') + 'Error'
const ref = (kind: string, name: string): { $ref: string } => ({ $ref: `#/components/${kind}/${name}` })

/** A response whose body is one of the given error codes. */
function errorResponse (description: string, codes: ErrorCode[], headers?: Record<string, unknown>): Record<string, unknown> {
  const schema = codes.length === 1 ? ref('schemas', schemaName(codes[0])) : { oneOf: codes.map((c) => ref('schemas', schemaName(c))) }
  return {
    description: `${description} Codes: ${codes.map((c) => `\`${c}\``).join(', ')}.`,
    ...(headers === undefined ? {} : { headers }),
    content: { 'application/json': { schema, example: { detail: ERRORS[codes[0]].detail, code: codes[0] } } }
  }
}

export function buildOpenApi (config: Config): Record<string, unknown> {
  const n = config.names
  const codesWith = (status: number): ErrorCode[] => HTTP_ERROR_CODES.filter((c) => ERRORS[c].status === status)
  const anyCredential = [{ Bearer: [] }, { PrivateToken: [] }, { AccessKey: [] }, { Session: [] }]
  const r = (name: string): { $ref: string } => ref('responses', name)
  const json = (schema: unknown, example?: unknown): Record<string, unknown> => ({ 'application/json': { schema, ...(example === undefined ? {} : { example }) } })
  const html = (description: string): Record<string, unknown> => ({ description, content: { 'text/html': { schema: { type: 'string' } } } })
  /** the errors every authenticated operation can answer */
  const authErrors = (unsafe: boolean, org: boolean): Record<string, unknown> => ({
    ...(org ? { 400: r('BadOrg') } : {}),
    401: r('Unauthorized'),
    403: org ? r('Forbidden') : unsafe ? r('CsrfFailed') : undefined,
    503: r('Unavailable')
  })
  const clean = (o: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined))
  const bodyErrors = { 400: r('BadRequest'), 413: r('PayloadTooLarge'), 415: r('UnsupportedMediaType') }
  const keyId = { name: 'id', in: 'path', required: true, description: 'The AccessKeyID.', schema: { type: 'string', format: 'uuid' } }
  const fresh = `${FRESH_LOGIN_MS / 60_000} minutes`
  /** creating a permanent credential: the password again, unless a fresh browser session */
  const confirmBody = {
    required: false,
    description: `\`password\`: the caller's password. Required unless the request is authenticated by a browser session signed in less than ${fresh} ago; a password sent is always checked, and counted by the login lockout.`,
    content: {
      // empty by default: Swagger UI's "Try it out" then works for a fresh session as is
      'application/json': { schema: ref('schemas', 'PasswordConfirmation'), example: {} },
      'application/x-www-form-urlencoded': { schema: ref('schemas', 'PasswordConfirmation') }
    }
  }
  const confirmErrors = {
    400: r('BadRequest'),
    403: errorResponse('No or a wrong password, or a CSRF failure.', ['password_required', 'password_incorrect', 'csrf_failed']),
    413: r('PayloadTooLarge'),
    415: r('UnsupportedMediaType'),
    429: r('TooManyAttempts')
  }
  const orgParams = [ref('parameters', 'OrgHeader'), ref('parameters', 'Oid')]
  const builtIn = config.upstream.url === null
    ? 'Served by sidegate\'s built-in demo API (no upstream is configured).'
    : 'Forwarded to the protected service with the resolved identity; sidegate answers only its own errors.'
  const proxyErrors = config.upstream.url === null ? {} : { 502: r('UpstreamUnavailable'), 504: r('UpstreamTimeout') }

  const errorSchemas = Object.fromEntries(HTTP_ERROR_CODES.map((code) => [code, ERRORS[code]] as const).map(([code, e]) => [schemaName(code), {
    type: 'object',
    description: `HTTP ${e.status}. ${e.when}`,
    required: ['detail', 'code'],
    properties: { detail: { type: 'string', examples: [e.detail] }, code: { const: code } },
    examples: [{ detail: e.detail, code }]
  }]))

  return {
    openapi: '3.1.0',
    info: {
      title: 'sidegate',
      version: VERSION,
      summary: 'Authentication gateway speaking JumpServer\'s API authentication.',
      description: [
        'sidegate authenticates every request with one of four credentials, resolves the organization, and forwards the request to the protected service.',
        '',
        `**Credentials.** \`Authorization\` decides when present (Signature, then Token/PrivateToken, then Bearer); otherwise the session cookie \`${n.sessionCookie}\`${config.session.accept_legacy_cookie ? ` (or the legacy \`${n.legacySessionCookie}\`)` : ''}. ` +
          `Unsafe methods (POST, PUT, PATCH, DELETE) authenticated by the session cookie also need \`X-CSRFToken\` equal to the \`${n.csrfCookie}\` cookie.`,
        '',
        `**Organization.** \`?oid=\`, else the \`${n.orgHeader}\` header, else the user's default organization. A UUID, \`default\` or \`root\`.`,
        '',
        `**Errors.** Every error sidegate returns is JSON \`{"detail": "…", "code": "…"}\`; 401s carry \`WWW-Authenticate\`. Each code is a schema under components.`,
        '',
        `**Lockout.** ${config.auth.lockout.max_failures > 0 ? `${config.auth.lockout.max_failures} failed passwords for one username from one client IP within ${config.auth.lockout.window} s` : 'Off in this deployment; when on, repeated failed passwords for one username from one client IP'} give \`429 too_many_attempts\` with \`Retry-After\`, on the token endpoint and on \`/login\`.`
      ].join('\n'),
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' }
    },
    servers: [{ url: '/', description: 'This gateway' }],
    tags: [
      { name: 'Authentication', description: 'Tokens and the caller\'s own credentials.' },
      { name: 'Users', description: builtIn },
      { name: 'Browser', description: 'Pages and the session login.' },
      { name: 'Health' },
      { name: 'Documentation' }
    ],
    paths: {
      [TOKEN_PATH]: {
        post: {
          tags: ['Authentication'],
          operationId: 'createBearerToken',
          summary: 'Exchange a username and password for a one-time bearer token',
          description: `The token is valid for ${config.auth.bearer.ttl} s and for exactly one request. Unknown user, wrong password and disabled account give the same 401. ` +
            'A browser\'s post from another site (`Sec-Fetch-Site`, else `Origin`, else `Referer`) is refused with 403 and not counted by the lockout; clients that send none of these headers are not browsers and are served.',
          security: [],
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: ref('schemas', 'Credentials') },
              'application/x-www-form-urlencoded': { schema: ref('schemas', 'Credentials') }
            }
          },
          responses: {
            201: { description: 'Token issued.', content: json(ref('schemas', 'TokenResult')) },
            ...bodyErrors,
            401: r('LoginFailed'),
            403: r('CsrfFailed'),
            429: r('TooManyAttempts'),
            503: r('Unavailable')
          }
        }
      },
      '/api/v1/users/profile/': {
        get: {
          tags: ['Users'],
          operationId: 'getProfile',
          summary: 'The calling user\'s profile',
          description: builtIn,
          security: anyCredential,
          parameters: orgParams,
          responses: clean({ 200: { description: 'The profile.', content: json(ref('schemas', 'Profile')) }, ...authErrors(false, true), ...proxyErrors })
        }
      },
      '/api/v1/users/users/': {
        get: {
          tags: ['Users'],
          operationId: 'listUsers',
          summary: 'Users of the organization',
          description: `${builtIn} Superusers and organization admins only; in the root organization, every user.`,
          security: anyCredential,
          parameters: orgParams,
          responses: clean({ 200: { description: 'The users.', content: json({ type: 'array', items: ref('schemas', 'Profile') }) }, ...authErrors(false, true), ...proxyErrors })
        }
      },
      [ACCESS_KEYS_PATH]: {
        get: {
          tags: ['Authentication'],
          operationId: 'listAccessKeys',
          summary: 'The caller\'s access keys',
          security: anyCredential,
          responses: clean({ 200: { description: 'Oldest first; secrets are never listed.', content: json({ type: 'array', items: ref('schemas', 'AccessKey') }) }, ...authErrors(false, false) })
        },
        post: {
          tags: ['Authentication'],
          operationId: 'createAccessKey',
          summary: 'Create an access key',
          description: `The response is the only time the secret is shown (\`Cache-Control: no-store\`). At most ${MAX_ACCESS_KEYS} keys per user. ` +
            `Needs the password in the body, unless the caller is a browser session signed in less than ${fresh} ago.`,
          security: anyCredential,
          parameters: [ref('parameters', 'CsrfToken')],
          requestBody: confirmBody,
          responses: clean({
            201: { description: 'Created.', headers: { 'Cache-Control': ref('headers', 'NoStore') }, content: json(ref('schemas', 'AccessKeyCreated')) },
            ...authErrors(true, false),
            ...confirmErrors,
            400: errorResponse('Limit reached, or a bad body.', ['too_many_keys', 'required', 'parse_error', 'bad_request'])
          })
        }
      },
      [`${ACCESS_KEYS_PATH}{id}/`]: {
        parameters: [keyId],
        get: {
          tags: ['Authentication'],
          operationId: 'getAccessKey',
          summary: 'One of the caller\'s access keys',
          security: anyCredential,
          responses: clean({ 200: { description: 'The key.', content: json(ref('schemas', 'AccessKey')) }, 404: r('NotFound'), ...authErrors(false, false) })
        },
        patch: {
          tags: ['Authentication'],
          operationId: 'updateAccessKey',
          summary: 'Enable or disable an access key',
          security: anyCredential,
          parameters: [ref('parameters', 'CsrfToken')],
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: ref('schemas', 'AccessKeyUpdate') },
              'application/x-www-form-urlencoded': { schema: ref('schemas', 'AccessKeyUpdate') }
            }
          },
          responses: clean({ 200: { description: 'The key, updated.', content: json(ref('schemas', 'AccessKey')) }, 404: r('NotFound'), ...bodyErrors, ...authErrors(true, false) })
        },
        delete: {
          tags: ['Authentication'],
          operationId: 'deleteAccessKey',
          summary: 'Delete an access key',
          description: 'Every replica refuses the key at once.',
          security: anyCredential,
          parameters: [ref('parameters', 'CsrfToken')],
          responses: clean({ 204: { description: 'Deleted.' }, 404: r('NotFound'), ...authErrors(true, false) })
        }
      },
      [PRIVATE_TOKEN_PATH]: {
        get: {
          tags: ['Authentication'],
          operationId: 'getPrivateToken',
          summary: 'Read the caller\'s private token',
          description: 'Not with a bearer token or an access key (403 `permission_denied`): those could otherwise turn into the permanent token.',
          security: anyCredential,
          responses: clean({
            200: { description: '`token` is null when the caller has none.', headers: { 'Cache-Control': ref('headers', 'NoStore') }, content: json(ref('schemas', 'PrivateTokenOrNone')) },
            ...authErrors(false, false),
            403: errorResponse('A bearer token or an access key.', ['permission_denied'])
          })
        },
        post: {
          tags: ['Authentication'],
          operationId: 'createPrivateToken',
          summary: 'Create or reset the caller\'s private token',
          description: `A previous token stops working. Needs the password in the body, unless the caller is a browser session signed in less than ${fresh} ago.`,
          security: anyCredential,
          parameters: [ref('parameters', 'CsrfToken')],
          requestBody: confirmBody,
          responses: clean({
            201: { description: 'The new token.', headers: { 'Cache-Control': ref('headers', 'NoStore') }, content: json(ref('schemas', 'PrivateToken')) },
            ...authErrors(true, false),
            ...confirmErrors
          })
        },
        delete: {
          tags: ['Authentication'],
          operationId: 'revokePrivateToken',
          summary: 'Revoke the caller\'s private token',
          security: anyCredential,
          parameters: [ref('parameters', 'CsrfToken')],
          responses: clean({ 204: { description: 'Revoked.' }, 404: r('NotFound'), ...authErrors(true, false) })
        }
      },
      [LOGIN_PATH]: {
        get: {
          tags: ['Browser'],
          operationId: 'loginPage',
          summary: 'The login page',
          security: [],
          parameters: [ref('parameters', 'Next')],
          responses: {
            200: html('The login form.'),
            302: { description: 'Already signed in: to `next`.', headers: { Location: ref('headers', 'Location') } }
          }
        },
        post: {
          tags: ['Browser'],
          operationId: 'login',
          summary: 'Sign in and start a browser session',
          description: `Sets \`${n.sessionCookie}\` (HttpOnly) and \`${n.csrfCookie}\` (for \`X-CSRFToken\`), both \`SameSite=Lax; Path=/\`, \`Secure\` over HTTPS. The session id is new at every login. ` +
            `A form post redirects to \`next\` (a same-origin path; anything else becomes \`/account/keys\`) and shows errors in the page; a JSON post answers JSON. Cross-site posts are refused.`,
          security: [],
          requestBody: {
            required: true,
            content: {
              'application/x-www-form-urlencoded': { schema: ref('schemas', 'LoginRequest') },
              'application/json': { schema: ref('schemas', 'LoginRequest') }
            }
          },
          responses: {
            200: { description: 'JSON login succeeded.', headers: { 'Set-Cookie': ref('headers', 'SetSessionCookies') }, content: json(ref('schemas', 'LoginResult')) },
            303: { description: 'Form login succeeded: to `next`.', headers: { Location: ref('headers', 'Location'), 'Set-Cookie': ref('headers', 'SetSessionCookies') } },
            ...bodyErrors,
            401: { description: 'Wrong credentials: the form again with an error (form post), or `authentication_failed` (JSON).', content: { 'text/html': { schema: { type: 'string' } }, 'application/json': { schema: ref('schemas', 'AuthenticationFailedError') } } },
            403: r('CsrfFailed'),
            429: r('TooManyAttempts'),
            503: r('Unavailable')
          }
        }
      },
      [LOGOUT_PATH]: {
        post: {
          tags: ['Browser'],
          operationId: 'logout',
          summary: 'End the browser session',
          description: 'Deletes the session and clears the cookies. Needs the CSRF token in `X-CSRFToken`, or in the form field `csrfmiddlewaretoken`.',
          security: [{ Session: [] }],
          parameters: [ref('parameters', 'CsrfToken')],
          requestBody: { required: false, content: { 'application/x-www-form-urlencoded': { schema: ref('schemas', 'LogoutForm') } } },
          responses: {
            200: { description: 'Logged out (JSON or empty body).', content: json({ type: 'object', properties: { detail: { type: 'string' } } }) },
            303: { description: 'Logged out (form post): to the login page.', headers: { Location: ref('headers', 'Location') } },
            403: r('CsrfFailed'),
            503: r('Unavailable')
          }
        }
      },
      [ACCOUNT_PAGE_PATH]: {
        get: {
          tags: ['Browser'],
          operationId: 'accountKeysPage',
          summary: 'The API keys page (access keys and private token)',
          security: [{ Session: [] }],
          responses: {
            200: html('The page.'),
            302: { description: 'No session: to `/login?next=/account/keys`.', headers: { Location: ref('headers', 'Location') } }
          }
        }
      },
      '/healthz': {
        get: { tags: ['Health'], operationId: 'healthz', summary: 'Liveness', security: [], responses: { 200: { description: 'The process answers.', content: json({ type: 'object', properties: { status: { const: 'ok' } } }) } } }
      },
      '/readyz': {
        get: {
          tags: ['Health'],
          operationId: 'readyz',
          summary: 'Readiness: the store answers and the gateway is not draining',
          security: [],
          responses: { 200: { description: 'Ready.', content: json({ type: 'object', properties: { status: { const: 'ready' } } }) }, 503: r('Unavailable') }
        }
      },
      '/api/docs/': {
        get: { tags: ['Documentation'], operationId: 'docsPage', summary: 'This documentation (Swagger UI)', security: [], responses: { 200: html('Swagger UI.') } }
      },
      '/api/docs/openapi.json': {
        get: { tags: ['Documentation'], operationId: 'openapiJson', summary: 'This document, JSON', security: [], responses: { 200: { description: 'OpenAPI 3.1.', content: json({ type: 'object' }) } } }
      },
      '/api/docs/openapi.yaml': {
        get: { tags: ['Documentation'], operationId: 'openapiYaml', summary: 'This document, YAML', security: [], responses: { 200: { description: 'OpenAPI 3.1.', content: { 'application/yaml': { schema: { type: 'string' } } } } } }
      },
      '/api/docs': {
        get: { tags: ['Documentation'], operationId: 'docsNoSlash', summary: 'Redirects to /api/docs/', security: [], responses: { 302: { description: 'To /api/docs/.', headers: { Location: ref('headers', 'Location') } } } }
      },
      '/docs': {
        get: { tags: ['Documentation'], operationId: 'docsLegacy', summary: 'The pre-2.0 location: redirects to /api/docs/', security: [], responses: { 302: { description: 'To /api/docs/.', headers: { Location: ref('headers', 'Location') } } } }
      },
      ...(config.upstream.url === null
        ? { '/': { get: { tags: ['Browser'], operationId: 'home', summary: 'Without an upstream: to the API keys page (and so to sign-in)', security: [], responses: { 302: { description: 'To /account/keys.', headers: { Location: ref('headers', 'Location') } } } } } }
        : {})
    },
    components: {
      securitySchemes: {
        Bearer: {
          type: 'http',
          scheme: 'bearer',
          description: `\`Authorization: Bearer <token>\`, the \`token\` from \`POST ${TOKEN_PATH}\`. One-time: valid for one request within ${config.auth.bearer.ttl} s.`
        },
        PrivateToken: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: '`Authorization: Token <private token>` (the scheme word `PrivateToken` works too). Permanent until reset. In Authorize, enter the whole value: `Token <private token>`.'
        },
        AccessKey: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: [
            'Access-key HTTP signature:',
            '`Authorization: Signature keyId="<AccessKeyID>",algorithm="hmac-sha256",headers="(request-target) accept date",signature="<base64>"`,',
            'with `Accept` and `Date` (`%a, %d %b %Y %H:%M:%S GMT`, UTC) headers.',
            'The signature is Base64(HMAC-SHA256(AccessKeySecret, string to sign)); the string to sign has one line per listed header, joined by `\\n`:',
            '`(request-target): <lowercase method> <path and query>`, `accept: <Accept>`, `date: <Date>`.',
            `\`headers\` must include ${config.auth.signature.required_headers.map((h) => `\`${h}\``).join(' and ')}; \`Date\` must be within ${config.auth.signature.clock_skew} s of the gateway's clock.`,
            'Swagger UI cannot compute signatures: use a client.'
          ].join(' ')
        },
        Session: {
          type: 'apiKey',
          in: 'cookie',
          name: n.sessionCookie,
          description: `The browser session from \`POST ${LOGIN_PATH}\`${config.session.accept_legacy_cookie ? ` (legacy name \`${n.legacySessionCookie}\` accepted)` : ''}. ` +
            `Ends after ${config.session.idle_timeout} s without requests, ${config.session.absolute_timeout} s after login, at logout, when the user is disabled, or when their password is changed. Two different session ids in one request (the name twice, or both names) are refused. ` +
            `Unsafe methods also need \`X-CSRFToken\` equal to the \`${n.csrfCookie}\` cookie.`
        }
      },
      parameters: {
        OrgHeader: {
          name: n.orgHeader,
          in: 'header',
          required: false,
          description: 'The organization to act in: a UUID, `default` or `root` (superusers). Absent: the user\'s default organization.',
          schema: { type: 'string', examples: ['00000000-0000-0000-0000-000000000002'] }
        },
        Oid: {
          name: 'oid',
          in: 'query',
          required: false,
          description: `The organization, like \`${n.orgHeader}\`; wins over the header. Any parameter a framework reads as \`oid\` counts (percent-encoded, any case, \`;\`-separated, \`oid[]\`); several naming different orgs are 400 \`invalid_org\`. The upstream gets \`oid=<resolved org id>\` once in their place.`,
          schema: { type: 'string' }
        },
        CsrfToken: {
          name: 'X-CSRFToken',
          in: 'header',
          required: false,
          description: `Required when the request is authenticated by the session cookie: the value of the \`${n.csrfCookie}\` cookie.`,
          schema: { type: 'string' }
        },
        Next: {
          name: 'next',
          in: 'query',
          required: false,
          description: 'Where to go after signing in: a path on this gateway.',
          schema: { type: 'string', examples: ['/account/keys'] }
        }
      },
      headers: {
        Location: { description: 'A path on this gateway.', schema: { type: 'string' } },
        NoStore: { description: '`no-store`: the body carries a secret.', schema: { const: 'no-store' } },
        RetryAfter: { description: 'Seconds to wait.', schema: { type: 'integer', minimum: 1 } },
        WwwAuthenticate: { description: 'One challenge per scheme.', schema: { type: 'string' } },
        SetSessionCookies: {
          description: `\`${n.sessionCookie}=…; Path=/; HttpOnly; SameSite=Lax[; Secure]\` and \`${n.csrfCookie}=…; Path=/; SameSite=Lax[; Secure]\`.`,
          schema: { type: 'string' }
        }
      },
      responses: {
        BadRequest: errorResponse('Bad request body.', ['required', 'parse_error', 'bad_request']),
        BadOrg: errorResponse('Malformed organization.', ['invalid_org']),
        Unauthorized: errorResponse('Not authenticated.', [...codesWith(401).filter((c) => c !== 'authentication_failed'), 'authentication_failed'], { 'WWW-Authenticate': ref('headers', 'WwwAuthenticate') }),
        LoginFailed: errorResponse('Wrong credentials.', ['authentication_failed'], { 'WWW-Authenticate': ref('headers', 'WwwAuthenticate') }),
        Forbidden: errorResponse('Forbidden.', ['org_forbidden', 'permission_denied', 'csrf_failed']),
        CsrfFailed: errorResponse('CSRF check failed.', ['csrf_failed']),
        NotFound: errorResponse('No such resource of the caller.', ['not_found']),
        PayloadTooLarge: errorResponse('Body too large.', ['payload_too_large']),
        UnsupportedMediaType: errorResponse('Unsupported body type.', ['unsupported_media_type']),
        TooManyAttempts: errorResponse('Locked out for a while.', ['too_many_attempts'], { 'Retry-After': ref('headers', 'RetryAfter') }),
        Unavailable: errorResponse('Try again shortly.', ['store_unavailable', 'shutting_down'], { 'Retry-After': ref('headers', 'RetryAfter') }),
        UpstreamUnavailable: errorResponse('The protected service is down.', ['upstream_unavailable']),
        UpstreamTimeout: errorResponse('The protected service is slow.', ['upstream_timeout'])
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
            user: ref('schemas', 'Profile')
          }
        },
        Profile: {
          type: 'object',
          properties: {
            id: { type: 'string', format: 'uuid' },
            name: { type: 'string' },
            username: { type: 'string' },
            email: { type: 'string' },
            source: { type: 'string', examples: ['local'] },
            is_active: { type: 'boolean' },
            is_valid: { type: 'boolean' },
            is_superuser: { type: 'boolean' },
            last_login: { type: ['string', 'null'], format: 'date-time' },
            date_joined: { type: 'string', format: 'date-time' },
            system_roles: { type: 'array', items: ref('schemas', 'Role') },
            org_roles: { type: 'array', items: ref('schemas', 'Role') }
          }
        },
        Role: { type: 'object', properties: { name: { type: 'string', examples: ['SystemAdmin', 'User', 'OrgAdmin', 'OrgUser'] } } },
        AccessKey: {
          type: 'object',
          required: ['id', 'is_active', 'date_created', 'date_last_used'],
          properties: {
            id: { type: 'string', format: 'uuid', description: 'The AccessKeyID (`keyId` in signatures).' },
            is_active: { type: 'boolean' },
            date_created: { type: 'string', format: 'date-time' },
            date_last_used: { type: ['string', 'null'], format: 'date-time', description: 'Updated at most once a minute.' }
          }
        },
        AccessKeyCreated: {
          allOf: [ref('schemas', 'AccessKey')],
          type: 'object',
          required: ['secret'],
          properties: { secret: { type: 'string', description: 'The AccessKeySecret, shown only in this response.' } }
        },
        AccessKeyUpdate: { type: 'object', required: ['is_active'], properties: { is_active: { type: 'boolean' } } },
        PasswordConfirmation: { type: 'object', properties: { password: { type: 'string', maxLength: 1024, format: 'password' } } },
        PrivateToken: { type: 'object', required: ['token'], properties: { token: { type: 'string' } } },
        PrivateTokenOrNone: { type: 'object', required: ['token'], properties: { token: { type: ['string', 'null'] } } },
        LoginRequest: {
          type: 'object',
          required: ['username', 'password'],
          properties: {
            username: { type: 'string', maxLength: 150 },
            password: { type: 'string', maxLength: 1024, format: 'password' },
            next: { type: 'string', description: 'A path on this gateway to go to afterwards.' }
          }
        },
        LoginResult: {
          type: 'object',
          required: ['user', 'next'],
          properties: { user: ref('schemas', 'Profile'), next: { type: 'string', description: '`next`, made safe.' } }
        },
        LogoutForm: { type: 'object', properties: { csrfmiddlewaretoken: { type: 'string' } } },
        Error: {
          type: 'object',
          description: 'Every error sidegate itself returns.',
          required: ['detail', 'code'],
          properties: { detail: { type: 'string' }, code: ref('schemas', 'ErrorCode') }
        },
        ErrorCode: {
          type: 'string',
          enum: HTTP_ERROR_CODES,
          description: HTTP_ERROR_CODES.map((c) => `- \`${c}\` (${ERRORS[c].status}): ${ERRORS[c].when}`).join('\n')
        },
        ...errorSchemas
      }
    }
  }
}

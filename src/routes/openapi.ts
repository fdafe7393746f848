/**
 * The OpenAPI 3.1 document of everything sidegate serves, assembled from the
 * routes (each declares its operation and schemas beside its handler:
 * Route.docs, src/routes/spec.ts; its request body is the schema that
 * validates it, Route.body) and the error catalogue (src/errors.ts).
 * What a route's `auth` mode implies is added here, the same for every route:
 * the security requirement, the org header and ?oid= ('user+org'),
 * X-CSRFToken (unsafe methods), and the authentication errors. Names follow
 * the configuration (`names.abbrev`). Served as JSON and YAML under
 * /api/docs/ and rendered there by Swagger UI.
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Config } from '../config/index.js'
import { CREDENTIALS, KINDS, countOf } from '../auth/credentials.js'
import { ERRORS, HTTP_ERROR_CODES, type ErrorCode } from '../errors.js'
import { LOGIN_PATH } from './login.js'
import { publishedSchema, requestBodyOf } from './body.js'
import { ref, type DocumentedMethod, type ErrorAnswer, type Json, type Operation, type SharedErrors } from './spec.js'
import { TOKEN_PATH } from './token.js'
import type { Answer, Route, RouteAuth } from './types.js'
import type { TObject } from '@sinclair/typebox'
import { isTemplate } from '../http/path-template.js'

export const VERSION: string = (JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'package.json'), 'utf8')) as { version: string }).version

/**
 * docs/errors.md's error table, from the catalogue: every code an
 * HTTP client can get, by status. `npm run docs:errors` writes it into the
 * docs; test/unit/docs.test.ts fails when its copy differs.
 */
export function errorTable (): string {
  const rows = [...HTTP_ERROR_CODES].sort((a, b) => ERRORS[a].status - ERRORS[b].status)
    .map((c) => `| ${ERRORS[c].status} | \`${c}\` | ${ERRORS[c].when.replace(/\|/g, '\\|')} |`)
  return ['| status | code | when |', '| ---: | --- | --- |', ...rows].join('\n')
}

const schemaName = (code: string): string => code.split('_').map((w) => w[0].toUpperCase() + w.slice(1)).join('') + 'Error'

/** A response whose body is one of the given error codes (their schemas: errorSchemas). */
export function errorResponse (
  description: string, codes: ErrorCode[], headers?: Json, page = false, jumpserver = false
): Json {
  const refs = [...codes.map((c) => ref('schemas', schemaName(c))), ...(jumpserver ? [JMS_ERROR] : [])]
  const schema = refs.length === 1 ? refs[0] : { oneOf: refs }
  return {
    description: `${description} Codes: ${codes.map((c) => `\`${c}\``).join(', ')}.`,
    ...(headers === undefined ? {} : { headers }),
    content: {
      'application/json': { schema, example: { detail: ERRORS[codes[0]].detail, code: codes[0] } },
      ...(page ? { 'text/html': { schema: { type: 'string' } } } : {})
    }
  }
}

/** components/schemas for these error codes, one per code (what errorResponse refers to). */
export function errorSchemasOf (codes: readonly ErrorCode[]): Record<string, Json> {
  return Object.fromEntries(codes.map((code) => [code, ERRORS[code]] as const).map(([code, e]) => [schemaName(code), {
    type: 'object',
    description: `HTTP ${e.status}. ${e.when}`,
    required: ['detail', 'code'],
    properties: { detail: { type: 'string', examples: [e.detail] }, code: { const: code } },
    examples: [{ detail: e.detail, code }]
  }]))
}

/** names.abbrev JMS: JumpServer's own error body on the token endpoint and its MFA challenge. */
const JMS_ERROR: Json = {
  type: 'object',
  description: 'JumpServer\'s error body (names.abbrev JMS): `error` the code (`password_failed` for a wrong password), `msg` its text.',
  required: ['error', 'msg'],
  properties: { error: { type: 'string' }, msg: { type: 'string' }, code: { type: 'string' } }
}

const codesWith = (status: number): ErrorCode[] => HTTP_ERROR_CODES.filter((c) => ERRORS[c].status === status)

const WWW_AUTHENTICATE = { 'WWW-Authenticate': ref('headers', 'WwwAuthenticate') }
const RETRY_AFTER = { 'Retry-After': ref('headers', 'RetryAfter') }

/** The shared error answers (components/responses): what each means, the catalogue codes it may carry, its headers. */
const SHARED_ERRORS: Record<SharedErrors, { description: string, codes: ErrorCode[], headers?: Json }> = {
  BadRequest: { description: 'Bad request body.', codes: ['required', 'parse_error', 'bad_request'] },
  BadOrg: { description: 'Malformed organization.', codes: ['invalid_org'] },
  Unauthorized: {
    description: 'Not authenticated.',
    codes: [...codesWith(401).filter((c) => c !== 'authentication_failed'), 'authentication_failed'],
    headers: WWW_AUTHENTICATE
  },
  LoginFailed: { description: 'Wrong credentials.', codes: ['authentication_failed'], headers: WWW_AUTHENTICATE },
  Forbidden: { description: 'Forbidden.', codes: ['org_forbidden', 'permission_denied', 'csrf_failed', 'ip_not_allowed'] },
  CsrfFailed: { description: 'CSRF check failed.', codes: ['csrf_failed'] },
  SignInForbidden: { description: 'CSRF check failed, or a directory (sign_in.ldap) vouched for an account that may not sign in here.', codes: ['csrf_failed', 'sso_not_linked'] },
  CredentialForbidden: { description: 'CSRF check failed, or an access key used from an address it does not allow.', codes: ['csrf_failed', 'ip_not_allowed'] },
  IpNotAllowed: { description: 'An access key used from an address it does not allow.', codes: ['ip_not_allowed'] },
  NotFound: { description: 'No such resource of the caller.', codes: ['not_found'] },
  OrgNotFound: { description: 'No such organization.', codes: ['org_not_found'] },
  PayloadTooLarge: { description: 'Body too large.', codes: ['payload_too_large'] },
  UnsupportedMediaType: { description: 'Unsupported body type.', codes: ['unsupported_media_type'] },
  TooManyAttempts: { description: 'Locked out for a while.', codes: ['too_many_attempts'], headers: RETRY_AFTER },
  CheckUnavailable: {
    description: 'Try again shortly: the store, a drain, too many passwords being checked at once (the check gate), or no server of a directory (sign_in.ldap) answering.',
    codes: ['store_unavailable', 'shutting_down', 'busy', 'directory_unavailable'],
    headers: RETRY_AFTER
  },
  RateLimited: { description: 'Over the rate limit (rate_limit on).', codes: ['rate_limited'], headers: RETRY_AFTER },
  Unavailable: { description: 'Try again shortly.', codes: ['store_unavailable', 'shutting_down'], headers: RETRY_AFTER },
  UpstreamUnavailable: { description: 'The protected service is down.', codes: ['upstream_unavailable'] },
  UpstreamTimeout: { description: 'The protected service is slow.', codes: ['upstream_timeout'] }
}

function sharedErrors (): Record<SharedErrors, Json> {
  return Object.fromEntries(Object.entries(SHARED_ERRORS).map(
    // any refusal may be a browser's navigation: then a page (src/routes/error-page.ts)
    ([name, e]) => [name, errorResponse(e.description, e.codes, e.headers, true)]
  )) as Record<SharedErrors, Json>
}

/**
 * Two error answers of one status (the auth mode's and the operation's own) as one:
 * both descriptions, every code of either.
 */
const BAD_SEGMENT: ErrorAnswer = { description: 'A path segment that is not valid percent-encoding.', codes: ['bad_request'] }

function mergedError (a: ErrorAnswer, b: ErrorAnswer): ErrorAnswer {
  if (a === b) return a
  const x = typeof a === 'string' ? SHARED_ERRORS[a] : a
  const y = typeof b === 'string' ? SHARED_ERRORS[b] : b
  const headers = x.headers === undefined && y.headers === undefined ? undefined : { ...x.headers, ...y.headers }
  return {
    description: `${y.description} ${x.description}`,
    codes: [...new Set([...y.codes, ...x.codes])],
    ...(headers === undefined ? {} : { headers }),
    ...(typeof b !== 'string' && b.page === true ? { page: true } : {}),
    ...(typeof b !== 'string' && b.jumpserver === true ? { jumpserver: true } : {})
  }
}

/** The kinds as the document lists them: those sent in Authorization, then the cookie */
const DOCUMENTED = [...KINDS.filter((k) => k.carrier !== 'cookie'), ...KINDS.filter((k) => k.carrier === 'cookie')]
const ANY_CREDENTIAL = DOCUMENTED.map((k) => ({ [k.openapi.name]: [] }))
const SESSION_ONLY = [{ [CREDENTIALS.session.openapi.name]: [] }]
const SAFE = new Set(['get', 'head', 'options'])

/** What a route's auth mode implies for one of its operations: security, parameters, errors. */
function implied (auth: RouteAuth, method: string, op: Operation): {
  security: unknown[],
  parameters: Json[],
  errors: Record<number, SharedErrors>,
  responses: Record<number, Json>
} {
  // the org is asked for (?oid= and the header; a decision: the header, ?oid= being in the original URI)
  const withOrg = auth === 'user+org' || auth === 'user+org-if-member' || auth === 'decision'
  // …and refused when the user may not act in it (the profile's is not: user+org-if-member)
  const orgRefused = auth === 'user+org' || auth === 'decision'
  const user = auth === 'user' || withOrg
  const unsafe = !SAFE.has(method)
  const security = op.security === 'none'
    ? []
    : op.security === 'session' || auth === 'session-page' ? SESSION_ONLY : user ? ANY_CREDENTIAL : []
  const parameters = [
    ...(withOrg ? (auth === 'decision' ? [ref('parameters', 'OrgHeader')] : [ref('parameters', 'OrgHeader'), ref('parameters', 'Oid')]) : []),
    ...(user && unsafe ? [ref('parameters', 'CsrfToken')] : [])
  ]
  const errors: Record<number, SharedErrors> = {}
  const responses: Record<number, Json> = {}
  if (user) {
    if (withOrg) errors[400] = 'BadOrg'
    errors[401] = 'Unauthorized'
    // an access key's allow-list refuses on any method, a session's CSRF check on unsafe ones
    errors[403] = orgRefused ? 'Forbidden' : unsafe ? 'CredentialForbidden' : 'IpNotAllowed'
    if (orgRefused) errors[404] = 'OrgNotFound'
    errors[429] = 'RateLimited'
    errors[503] = 'Unavailable'
    // session.login_redirect: a browser's navigation without a credential is sent to sign in
    if (method === 'get') responses[303] = { description: 'A browser\'s navigation without a credential (session.login_redirect): to sign in.', headers: { Location: ref('headers', 'Location') } }
  }
  return { security, parameters, errors, responses }
}

const ANY_METHOD: readonly DocumentedMethod[] = ['get', 'post', 'put', 'patch', 'delete']

/** A route's path parameters as OpenAPI has them: each required, its schema the one Route.params checks. */
export function pathParameters (params: TObject): Json[] {
  return Object.entries(params.properties).map(([name, schema]) => {
    const { description, ...rest } = JSON.parse(JSON.stringify(schema)) as Json
    return { name, in: 'path', required: true, ...(description === undefined ? {} : { description }), schema: rest }
  })
}

/** A route's declared answers (Route.answers) as responses; a named schema goes to components/schemas. */
function answersOf (route: Route, declare: (name: string, schema: Json) => void): Record<number, Json> {
  const out: Record<number, Json> = {}
  for (const [status, a] of Object.entries(route.answers ?? {}) as Array<[string, Answer]>) {
    const schema = hoisted(JSON.parse(JSON.stringify(a.schema)), declare) as Json
    if (a.name !== undefined) declare(a.name, schema)
    const content: Json = {
      'application/json': { schema: a.name === undefined ? schema : ref('schemas', a.name) }
    }
    if (a.page === true) content['text/html'] = { schema: { type: 'string' } }
    const headers = a.headers === undefined ? {} : { headers: a.headers }
    out[Number(status)] = { description: a.description, ...headers, content }
  }
  return out
}

/** `schema` with each sub-schema that has an `$id` (TypeBox's) declared under that name and referred to. */
function hoisted (schema: unknown, declare: (name: string, schema: Json) => void): unknown {
  if (Array.isArray(schema)) return schema.map((x) => hoisted(x, declare))
  if (schema === null || typeof schema !== 'object') return schema
  const out: Json = {}
  for (const [k, v] of Object.entries(schema)) if (k !== '$id') out[k] = hoisted(v, declare)
  const id = (schema as Json).$id
  if (typeof id !== 'string') return out
  declare(id, out)
  return ref('schemas', id)
}

/** The document's `paths` and the schemas the routes declare (their bodies' schemas among them). */
function assemble (routes: readonly Route[]): { paths: Record<string, Json>, schemas: Record<string, Json> } {
  const paths: Record<string, Json> = {}
  const schemas: Record<string, Json> = {}
  const answer = (e: ErrorAnswer): Json => typeof e === 'string'
    ? ref('responses', e)
    : errorResponse(e.description, e.codes, e.headers, true, e.jumpserver)
  const declare = (name: string, schema: Json): void => {
    if (schemas[name] !== undefined && JSON.stringify(schemas[name]) !== JSON.stringify(schema)) throw new Error(`schema ${name}: two routes declare it differently`)
    schemas[name] = schema
  }
  for (const route of routes) {
    const op = route.docs
    if (op === null) continue
    const path = route.path
    const item: Json = paths[path] ??= {}
    // a template's parameters, from the schema the router checks them with (every route of the path declares the same)
    if (route.params !== undefined) item.parameters = pathParameters(route.params)
    const any = route.method === '*'
    for (const method of any ? ANY_METHOD : [route.method.toLowerCase() as DocumentedMethod]) {
      if (item[method] !== undefined) throw new Error(`${path}: ${method} documented twice`)
      const i = implied(route.auth, method, op)
      const parameters = [...i.parameters, ...(op.parameters ?? [])]
      const errors: Record<number, ErrorAnswer> = { ...i.errors }
      // a template's parameter that is not valid percent-encoding (the router finds the route, its params refuse)
      const declared = !isTemplate(route.path)
        ? op.errors
        : { ...op.errors, 400: op.errors?.[400] === undefined ? BAD_SEGMENT : mergedError(BAD_SEGMENT, op.errors[400]) }
      for (const [status, e] of Object.entries(declared ?? {})) {
        errors[Number(status)] = errors[Number(status)] === undefined ? e : mergedError(errors[Number(status)], e)
      }
      item[method] = {
        tags: op.tags,
        operationId: any ? `${op.operationId}${method[0].toUpperCase()}${method.slice(1)}` : op.operationId,
        summary: op.summary,
        ...(op.description === undefined ? {} : { description: op.description }),
        security: i.security,
        ...(parameters.length === 0 ? {} : { parameters }),
        ...(route.body === undefined ? {} : { requestBody: requestBodyOf(route.body) }),
        responses: {
          ...i.responses,
          ...answersOf(route, declare),
          ...op.responses,
          ...Object.fromEntries(Object.entries(errors).map(([status, e]) => [status, answer(e)]))
        }
      }
    }
    if (route.body !== undefined) declare(route.body.name, publishedSchema(route.body))
    for (const [name, schema] of Object.entries(op.schemas ?? {})) declare(name, schema)
  }
  return { paths, schemas }
}

/**
 * `routes`: every route to document, in order (src/routes/index.ts: the
 * served ones and, with an upstream, the JumpServer paths it serves).
 */
export function buildOpenApi (config: Config, routes: readonly Route[]): Json {
  const n = config.names
  const builtIn = config.upstream.url === null
    ? 'Served by sidegate\'s built-in demo API (no upstream is configured).'
    : 'Forwarded to the protected service with the resolved identity; sidegate answers only its own errors.'
  const { paths, schemas } = assemble(routes)

  const errorSchemas = errorSchemasOf(HTTP_ERROR_CODES)

  return {
    openapi: '3.1.0',
    info: {
      title: 'sidegate',
      version: VERSION,
      summary: 'Authentication gateway speaking JumpServer\'s API authentication.',
      description: [
        `sidegate authenticates every request with one of ${countOf(KINDS)} credentials, resolves the organization, and forwards the request to the protected service.`,
        '',
        `**Credentials.** \`Authorization\` decides when present (Signature, then Token/PrivateToken, then Bearer); otherwise the session cookie \`${n.sessionCookie}\`${config.session.accept_legacy_cookie ? ` (or the legacy \`${n.legacySessionCookie}\`)` : ''}. ` +
          `Unsafe methods (POST, PUT, PATCH, DELETE) authenticated by the session cookie also need \`X-CSRFToken\` equal to the \`${n.csrfCookie}\` cookie.`,
        '',
        `**Organization.** \`?oid=\`, else the \`${n.orgHeader}\` header, else the user's default organization. A UUID, \`default\` or \`root\`.`,
        '',
        '**Errors.** Every error sidegate returns is JSON `{"detail": "…", "code": "…"}`; 401s carry `WWW-Authenticate`. Each code is a schema under components. A browser\'s navigation (`Sec-Fetch-Mode: navigate`, or `Accept: text/html` without Fetch Metadata; never a request with `Authorization`) gets the same status, code and headers as an HTML page.',
        '',
        `**Lockout.** ${config.auth.lockout.max_failures > 0 ? `${config.auth.lockout.max_failures} failed passwords for one username from one client IP within ${config.auth.lockout.window} s` : 'Off in this deployment; when on, repeated failed passwords for one username from one client IP'} give \`429 too_many_attempts\` with \`Retry-After\`, on the token endpoint and on \`/login\`.`,
        '',
        `**Rate limits.** ${config.rate_limit.enabled ? `On: ${config.rate_limit.limit} requests per ${config.rate_limit.window} s per user unless the auth method, the user or the access key has its own limit.` : 'Off in this deployment; when on, authenticated requests are counted per user (or access key) across all replicas.'} Counted answers carry \`RateLimit-Policy: "<policy>";q=<quota>;w=<window>\` and \`RateLimit: "<policy>";r=<remaining>;t=<seconds>\` (draft-ietf-httpapi-ratelimit-headers); over the limit, \`429 rate_limited\` with \`Retry-After\`.`
      ].join('\n'),
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' }
    },
    servers: [{ url: '/', description: 'This gateway' }],
    tags: [
      { name: 'Authentication', description: 'Tokens and the caller\'s own credentials.' },
      { name: 'Users', description: builtIn },
      { name: 'Browser', description: 'Pages and the session login.' },
      { name: 'Forward auth', description: 'Decisions for a proxy in front (nginx auth_request, Caddy forward_auth, Traefik ForwardAuth, Envoy ext_authz).' },
      { name: 'Health' },
      { name: 'Documentation' },
      ...(config.identity.jwt.enabled ? [{ name: 'Identity', description: `The signed identity (${n.identityHeader}) every forwarded request carries, and its public keys.` }] : [])
    ],
    paths,
    components: {
      securitySchemes: Object.fromEntries(DOCUMENTED.map((k) => [
        k.openapi.name,
        k.openapi.scheme(config, { tokenPath: TOKEN_PATH, loginPath: LOGIN_PATH })
      ])),
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
          description: 'Where to go after signing in: a path on this gateway, or with session.cookies an https URL on a host under a listed domain (docs/sso.md).',
          schema: { type: 'string', examples: ['/account/keys'] }
        }
      },
      headers: {
        Location: { description: 'A path on this gateway.', schema: { type: 'string' } },
        NoStore: { description: '`no-store`: the body carries a secret.', schema: { const: 'no-store' } },
        RetryAfter: { description: 'Seconds to wait.', schema: { type: 'integer', minimum: 1 } },
        WwwAuthenticate: { description: 'One challenge per scheme.', schema: { type: 'string' } },
        SetSessionCookies: {
          description: `\`${n.sessionCookie}=…; Path=/[; Domain=…]; HttpOnly; SameSite=Lax[; Secure]\` and \`${n.csrfCookie}=…; Path=/; SameSite=Lax[; Secure]\` ` +
            '(Domain: the session.cookies domain covering the host, docs/sso.md).',
          schema: { type: 'string' }
        }
      },
      responses: sharedErrors(),
      schemas: {
        ...schemas,
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

/**
 * The admin API's OpenAPI 3.1 document (GET /admin/v1/openapi.json on the
 * admin listener), assembled from the operations' declarations
 * (src/admin/api.ts ADMIN_ROUTES: their body schemas are the ones the API
 * validates with) and the error catalogue (src/errors.ts), with the error
 * answers and schemas of the public document (src/routes/openapi.ts).
 */
import type { Config } from '../config/index.js'
import { ADMIN_KINDS, KINDS } from '../auth/credentials.js'
import { ERRORS, type ErrorCode } from '../errors.js'
import { VERSION, errorResponse, errorSchemasOf } from '../routes/openapi.js'
import { json, schemaRef, type Json } from '../routes/spec.js'
import type { TSchema } from '@sinclair/typebox'
import { OperatorAccessKey, published } from './key-json.js'

/** What the document needs of an admin API operation (src/admin/api.ts DocumentedRoute). */
export interface DocumentedRoute {
  method: string
  /** under /admin/v1/, with `{name}` segments */
  path: string
  status: number
  tag: string
  operationId: string
  summary: string
  description?: string
  /** the JSON body (a TypeBox object schema: validated by the API, published as is) */
  body?: TSchema
  /** query parameters: name → description */
  query?: Record<string, string>
  /** components/schemas name of the answer */
  answer: string
  /** errors besides those every call can get (400 bad body, 401, 403, 503) */
  errors: ErrorCode[]
}

const PREFIX = '/admin/v1/'
const BODY_CODES: ErrorCode[] = ['required', 'parse_error', 'bad_request']
const UNAUTHORIZED: ErrorCode[] = (Object.keys(ERRORS) as ErrorCode[]).filter(
  (c) => ERRORS[c].status === 401 && c !== 'invalid_session'
)
const FORBIDDEN: ErrorCode[] = ['permission_denied', 'ip_not_allowed']

const iso = { type: 'string', format: 'date-time' }
const uuid = { type: 'string', format: 'uuid' }
const policy = {
  type: 'object',
  required: ['limit', 'window'],
  properties: { limit: { type: 'integer' }, window: { type: 'integer', description: 'seconds' } }
}

/** The answers' schemas (the CLI's `--json` output of the same operation). */
const SCHEMAS: Record<string, Json> = {
  User: {
    type: 'object',
    required: ['id', 'username', 'is_active', 'is_superuser', 'orgs'],
    properties: {
      id: uuid,
      username: { type: 'string' },
      name: { type: 'string' },
      email: { type: 'string' },
      is_active: { type: 'boolean' },
      is_superuser: { type: 'boolean' },
      orgs: { type: 'object', description: 'org id → role', additionalProperties: { enum: ['admin', 'user'] } },
      default_org: { type: ['string', 'null'] },
      date_joined: iso,
      last_login: { type: ['string', 'null'], format: 'date-time' }
    }
  },
  UserList: { type: 'array', items: schemaRef('User') },
  UserRef: { type: 'object', required: ['id', 'username'], properties: { id: uuid, username: { type: 'string' } } },
  UserActive: { type: 'object', required: ['id', 'username', 'is_active'], properties: { id: uuid, username: { type: 'string' }, is_active: { type: 'boolean' } } },
  Org: { type: 'object', required: ['id', 'name', 'date_created'], properties: { id: uuid, name: { type: 'string' }, date_created: iso } },
  OrgList: { type: 'array', items: schemaRef('Org') },
  AdminAccessKey: published(OperatorAccessKey),
  AccessKeyList: { type: 'array', items: schemaRef('AdminAccessKey') },
  AccessKeyCreated: {
    allOf: [schemaRef('AdminAccessKey')],
    type: 'object',
    required: ['secret'],
    properties: { secret: { type: 'string', description: 'The AccessKeySecret, shown only in this answer.' } }
  },
  AccessKeyActive: { type: 'object', required: ['id', 'is_active'], properties: { id: uuid, is_active: { type: 'boolean' } } },
  Revoked: { type: 'object', required: ['id', 'revoked'], properties: { id: { type: 'string' }, revoked: { const: true } } },
  PrivateTokenCreated: { type: 'object', required: ['username', 'token'], properties: { username: { type: 'string' }, token: { type: 'string', description: 'Shown only in this answer.' } } },
  TokenRevoked: { type: 'object', required: ['username', 'revoked'], properties: { username: { type: 'string' }, revoked: { const: true } } },
  Session: {
    type: 'object',
    required: ['id', 'date_created', 'date_expires'],
    properties: {
      id: { type: 'string', description: 'The session\'s keyed hash (not its cookie).' },
      date_created: iso,
      date_expires: { ...iso, description: 'When it ends unless used before (session.idle_timeout), or at the latest (session.absolute_timeout).' }
    }
  },
  SessionList: { type: 'array', items: schemaRef('Session') },
  MfaFactors: {
    type: 'object',
    required: ['username', 'totp', 'required', 'recovery_codes', 'passkeys'],
    properties: {
      username: { type: 'string' },
      totp: { oneOf: [{ type: 'null' }, { type: 'object', required: ['confirmed', 'created'], properties: { confirmed: { type: 'boolean', description: 'false: begun, counts once confirmed with a first code' }, created: { type: 'string', format: 'date-time' } } }] },
      required: { type: 'boolean', description: 'An operator required enrolment (`sidegate mfa require`).' },
      recovery_codes: { type: 'integer', description: 'Unused recovery codes.' },
      passkeys: {
        type: 'array',
        description: 'The user\'s passkeys, oldest first: never a key.',
        items: {
          type: 'object',
          required: ['id', 'name', 'created', 'last_used', 'device_type', 'backed_up'],
          properties: {
            id: { type: 'string', description: 'The credential id (base64url).' },
            name: { type: 'string', description: 'As the user named it.' },
            created: { type: 'string', format: 'date-time' },
            last_used: { oneOf: [{ type: 'null' }, { type: 'string', format: 'date-time' }] },
            device_type: { enum: ['singleDevice', 'multiDevice'], description: 'singleDevice: bound to one authenticator (amr hwk); multiDevice: synced by a passkey provider (amr swk).' },
            backed_up: { type: 'boolean', description: 'A synced passkey that is backed up.' }
          }
        }
      }
    }
  },
  TotpEnrolment: { type: 'object', required: ['username', 'uri', 'secret'], properties: { username: { type: 'string' }, uri: { type: 'string', description: 'otpauth://totp/sidegate:<username>?secret=…&issuer=sidegate&algorithm=SHA1&digits=6&period=30; shown only in this answer.' }, secret: { type: 'string', description: 'The base32 secret the URI carries; shown only in this answer.' } } },
  AccessCheck: {
    type: 'object',
    required: ['request', 'caller', 'decided_by', 'rule', 'policy', 'status', 'why', 'passed_over'],
    properties: {
      request: { type: 'object', required: ['method', 'path', 'normalised', 'ambiguous', 'ip'], properties: { method: { type: 'string' }, path: { type: 'string' }, normalised: { type: 'string', description: 'The path as the rules match it.' }, ambiguous: { type: 'boolean', description: 'Its meaning depends on who decodes it: no bypass rule matches it.' }, ip: { type: 'string' } } },
      caller: { oneOf: [{ type: 'null' }, { type: 'object', required: ['username', 'method', 'org'], properties: { username: { type: 'string' }, method: { enum: KINDS.map((k) => k.method) }, factors: { type: 'array', items: { type: 'string' } }, made_with: { type: 'array', items: { type: 'string' }, description: 'An access key its owner made: the factors of the sign-in that made it (absent for an operator\'s key).' }, org: { type: ['string', 'null'], description: 'The org the request acts in, or `refused: <code>` when the org step would refuse it.' } } }] },
      decided_by: { enum: ['public_path', 'rules'] },
      rule: { type: ['integer', 'null'], description: 'The deciding rule\'s index in access.rules; null: default_policy, or a public path.' },
      policy: { enum: ['bypass', 'one_factor', 'two_factor', 'deny'] },
      status: { enum: [200, 401, 403], description: 'What the request would get from the rules.' },
      why: { type: 'string' },
      passed_over: {
        type: 'array',
        description: 'The rules before the deciding one whose paths match the request\'s, and why each was passed over (method, network, subjects, an ambiguous path and a bypass rule).',
        items: {
          type: 'object',
          required: ['rule', 'why'],
          properties: { rule: { type: 'integer' }, why: { type: 'string' } }
        }
      }
    }
  },
  MfaReset: { type: 'object', required: ['username', 'reset'], properties: { username: { type: 'string' }, reset: { type: 'boolean', description: 'false: there was nothing to remove (no TOTP factor, recovery code, passkey or requirement).' } } },
  MfaRequired: { type: 'object', required: ['username', 'required'], properties: { username: { type: 'string' }, required: { const: true } } },
  SessionRevoked: { type: 'object', required: ['username', 'id', 'revoked'], properties: { username: { type: 'string' }, id: { type: 'string' }, revoked: { const: true } } },
  SessionsRevoked: { type: 'object', required: ['username', 'revoked'], properties: { username: { type: 'string' }, revoked: { type: 'integer', description: 'How many sessions were live.' } } },
  RateLimits: {
    type: 'object',
    required: ['configured', 'overrides'],
    properties: {
      configured: {
        type: 'object',
        description: 'gateway.yml\'s rate_limit.',
        required: ['enabled', 'default', 'methods'],
        properties: {
          enabled: { type: 'boolean' },
          default: policy,
          methods: { type: 'object', additionalProperties: { type: 'string' } }
        }
      },
      overrides: {
        type: 'array',
        items: {
          type: 'object',
          required: ['kind', 'username', 'id', 'limit', 'window'],
          properties: {
            kind: { enum: ['user', 'key'] },
            username: { type: 'string' },
            id: uuid,
            limit: { type: 'integer' },
            window: { type: 'integer' }
          }
        }
      }
    }
  },
  RateLimitSet: {
    type: 'object',
    description: '`user` (the username) or `key` (the key id) names the target.',
    required: ['id', 'limit', 'window'],
    properties: { user: { type: 'string' }, key: { type: 'string' }, id: uuid, limit: { type: 'integer' }, window: { type: 'integer' } }
  },
  RateLimitCleared: {
    type: 'object',
    required: ['id', 'cleared'],
    properties: { user: { type: 'string' }, key: { type: 'string' }, id: uuid, cleared: { const: true } }
  }
}

/** Errors of one operation, grouped by status. */
function errorAnswers (r: DocumentedRoute): Record<string, Json> {
  const byStatus = new Map<number, ErrorCode[]>()
  const add = (codes: ErrorCode[]): void => {
    for (const c of codes) byStatus.set(ERRORS[c].status, [...(byStatus.get(ERRORS[c].status) ?? []), c])
  }
  add(r.body === undefined ? [] : [...BODY_CODES, 'payload_too_large', 'unsupported_media_type'])
  // a query parameter that does not parse (an org that is not a UUID)
  if (r.body === undefined && r.query !== undefined) add(['bad_request'])
  add(UNAUTHORIZED)
  add(FORBIDDEN)
  add(r.errors)
  add(['store_unavailable'])
  const description: Record<number, string> = { 400: 'Bad input.', 401: 'No or a bad credential, or one the admin API does not take.', 403: 'Not a superuser, or an access key used from outside its allow-list.', 404: 'No such record.', 409: 'Already exists.', 413: 'Body too large.', 415: 'Not JSON.', 503: 'Try again shortly.' }
  return Object.fromEntries(
    [...byStatus]
      .sort(([a], [b]) => a - b)
      .map(([s, codes]) => [String(s), errorResponse(description[s] ?? 'Refused.', [...new Set(codes)])])
  )
}

export function adminOpenApi (config: Config, routes: readonly DocumentedRoute[]): Json {
  const paths: Record<string, Json> = {
    [`${PREFIX}openapi.json`]: {
      get: {
        tags: ['Documentation'],
        operationId: 'adminOpenapiJson',
        summary: 'This document (no credential needed)',
        security: [],
        responses: { 200: { description: 'OpenAPI 3.1.', content: json({ type: 'object' }) } }
      }
    }
  }
  const codes = new Set<ErrorCode>([...BODY_CODES, ...UNAUTHORIZED, ...FORBIDDEN, 'payload_too_large', 'unsupported_media_type', 'store_unavailable'])
  const security = ADMIN_KINDS.map((k) => ({ [k.openapi.name]: [] }))
  for (const r of routes) {
    const path = PREFIX + r.path
    const item: Json = paths[path] ??= {}
    const pathParams = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }))
    const query = Object.entries(r.query ?? {}).map(
      ([name, description]) => ({ name, in: 'query', required: false, description, schema: { type: 'string' } })
    )
    for (const c of r.errors) codes.add(c)
    item[r.method.toLowerCase()] = {
      tags: [r.tag],
      operationId: r.operationId,
      summary: r.summary,
      ...(r.description === undefined ? {} : { description: r.description }),
      security,
      ...(pathParams.length + query.length === 0 ? {} : { parameters: [...pathParams, ...query] }),
      ...(r.body === undefined ? {} : { requestBody: { required: true, content: json(r.body) } }),
      responses: {
        [r.status]: { description: r.status === 201 ? 'Created.' : 'Done.', content: json(schemaRef(r.answer)) },
        ...errorAnswers(r)
      }
    }
  }
  const tags = [...new Set(routes.map((r) => r.tag))].map((name) => ({ name }))
  return {
    openapi: '3.1.0',
    info: {
      title: 'sidegate admin API',
      version: VERSION,
      summary: 'Users, organizations, memberships, access keys, private tokens, sessions and rate limits: the operations of the sidegate CLI, over JSON.',
      description: [
        `Served on the admin listener (admin.host:admin.port, ${config.admin.host}:${config.admin.port}) when admin.enabled is true; never on the public port (${config.listen.port}) nor the metrics port.`,
        '',
        '**Credentials.** Every operation needs a superuser\'s private token (`Authorization: Token <token>`) or access-key signature (as on the public port, but always with the replay cache, and a call with a body must sign `Digest` or `Content-Digest`); any other credential is `401 unsupported_scheme`, a user who is not a superuser `403 permission_denied`.',
        '',
        '**Bodies** are JSON objects; an unknown field is `400 bad_request`. Secrets (an access key\'s, a private token) are in the answer that creates them and never again.',
        '',
        '**Errors** are JSON `{"detail": "…", "code": "…"}`, codes from the same catalogue as the public API.'
      ].join('\n'),
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' }
    },
    servers: [{ url: '/', description: 'This admin listener' }],
    tags: [...tags, { name: 'Documentation' }],
    paths,
    components: {
      securitySchemes: Object.fromEntries(ADMIN_KINDS.map((k) => [k.openapi.name, k.openapi.admin])),
      schemas: { ...SCHEMAS, ...errorSchemasOf([...codes]) }
    }
  }
}

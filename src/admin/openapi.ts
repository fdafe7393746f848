/**
 * The admin API's OpenAPI 3.1 document (GET /admin/v1/openapi.json on the
 * admin listener), assembled from the operations' declarations
 * (src/admin/api.ts ADMIN_ROUTES: their body schemas are the ones the API
 * validates with) and the error catalogue (src/errors.ts), with the error
 * answers and schemas of the public document (src/routes/openapi.ts).
 */
import type { Config } from '../config/index.js'
import { ADMIN_KINDS } from '../auth/credentials.js'
import { ERRORS, type ErrorCode } from '../errors.js'
import { VERSION, errorResponse, errorSchemasOf } from '../routes/openapi.js'
import { json, schemaRef, type Json } from '../routes/spec.js'
import type { TSchema } from '@sinclair/typebox'
import { nameOf } from './operation.js'

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
  /** the answer's schema, named (./operation.ts `named`): published in components/schemas */
  answer: TSchema
  /** errors besides those every call can get (400 bad body, 401, 403, 503) */
  errors: ErrorCode[]
}

const PREFIX = '/admin/v1/'
const BODY_CODES: ErrorCode[] = ['required', 'parse_error', 'bad_request']
const UNAUTHORIZED: ErrorCode[] = (Object.keys(ERRORS) as ErrorCode[]).filter(
  (c) => ERRORS[c].status === 401 && c !== 'invalid_session'
)
const FORBIDDEN: ErrorCode[] = ['permission_denied', 'ip_not_allowed']

/**
 * An answer's schema as the document publishes it: plain JSON (without
 * TypeBox's markers), each named schema within it (./operation.ts `named`) a
 * reference to components/schemas, where `declare` puts it.
 */
function published (schema: TSchema, declare: (name: string, schema: Json) => void, top = true): Json {
  const name = nameOf(schema)
  if (name !== undefined && !top) {
    declare(name, published(schema, declare))
    return schemaRef(name)
  }
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk)
    if (v === null || typeof v !== 'object') return v
    if (nameOf(v as TSchema) !== undefined) return published(v as TSchema, declare, false)
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]))
  }
  return JSON.parse(JSON.stringify(walk({ ...schema }))) as Json
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
  const schemas: Record<string, Json> = {}
  const declare = (name: string, schema: Json): void => { schemas[name] = schema }
  for (const r of routes) {
    const answer = nameOf(r.answer)
    if (answer === undefined) throw new Error(`${r.operationId}: its answer schema has no name (named)`)
    published(r.answer, declare, false)
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
        [r.status]: { description: r.status === 201 ? 'Created.' : 'Done.', content: json(schemaRef(answer)) },
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
      schemas: { ...schemas, ...errorSchemasOf([...codes]) }
    }
  }
}

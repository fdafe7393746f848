/**
 * A route's request body, declared once (Route.body): a TypeBox object schema
 * that both validates the body before the handler runs (src/routes/index.ts)
 * and documents it (src/routes/openapi.ts publishes it under
 * components/schemas, the operation's requestBody refers to it), as the
 * admin API's operations declare theirs (src/admin/operations.ts).
 *
 * A body is read with server.body_limit (413), decoded as JSON or a form
 * (src/body.ts: 415 for another type, 400 parse_error for JSON that does not
 * parse or is not an object), then checked field by field in the schema's
 * property order. The first field that fails is the answer, from the error
 * catalogue (src/errors.ts):
 * - absent (a required field), or not a non-empty string where the schema
 *   asks for one (`minLength: 1`): 400 `required`, "<field>: This field is
 *   required.";
 * - anything else: 400 `bad_request`, "<field>: <message>.", the message
 *   the body declares for the field (`invalid`), else one for the keyword
 *   that failed (a type, a maximum length).
 * What the schema cannot say (an expiry that does not parse, an unknown
 * address) stays the handler's, with the messages the CLI gives too.
 */
import { FormatRegistry, Kind, type Static, type TObject, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors'
import { decodeFields, decodeFieldsOf, readBody } from '../body.js'
import { E, type GatewayError } from '../errors.js'
import type { RequestContext } from '../pipeline/context.js'
import { schemaRef, type Json } from './spec.js'

// OpenAPI's `password` format is a hint to user interfaces: any string is one
if (!FormatRegistry.Has('password')) FormatRegistry.Set('password', () => true)

export const JSON_TYPE = 'application/json'
export const FORM_TYPE = 'application/x-www-form-urlencoded'
export type BodyType = typeof JSON_TYPE | typeof FORM_TYPE

export interface BodySpec<S extends TObject = TObject> {
  /** its name under components/schemas */
  name: string
  schema: S
  /** the media types the document lists, in its order (JSON and forms are decoded either way) */
  types: readonly BodyType[]
  /** also `multipart/form-data` (its text fields; JumpServer's token endpoint takes it), not documented */
  multipart?: boolean
  /** false: no body, or an empty one, is `{}` (of any Content-Type) */
  required: boolean
  /** the requestBody's description */
  description?: string
  /** the JSON example (Swagger UI's "Try it out" starts from it) */
  example?: unknown
  /** a field's message when it fails its schema (after "<field>: "), instead of the keyword's */
  invalid?: { readonly [K in keyof Static<S>]?: string }
  /**
   * Fastify's attachValidation: a body that fails is not refused here; the
   * handler gets the fields as decoded and the failures, and answers them
   * itself (the sign-in form shows them in the page).
   */
  attachValidation?: boolean
}

/** A field that fails the body's schema. */
export interface FieldFailure {
  field: string
  /** absent, or not the non-empty string the schema asks for: 400 `required` */
  missing: boolean
  /** what failed, when not `missing` */
  error?: ValueError
}

/** The body as declared: read, decoded, form values made booleans where the schema says so, and checked. */
export async function readValidBody (ctx: RequestContext, spec: BodySpec, limit: number): Promise<{
  fields: Record<string, unknown>,
  failures: FieldFailure[]
}> {
  const raw = await readBody(ctx.req, limit)
  const type = ctx.req.headers['content-type']
  let fields: Record<string, unknown>
  if (!spec.required && raw.length === 0) fields = {}
  else fields = spec.multipart === true ? await decodeFieldsOf(type, raw) : decodeFields(type, raw)
  const failures = validate(spec.schema, coerce(spec.schema, fields))
  return { fields, failures }
}

/**
 * A form carries only strings: `true` and `false` are booleans where the schema asks for one (in JSON too, as before).
 */
function coerce (schema: TObject, fields: Record<string, unknown>): Record<string, unknown> {
  for (const [name, s] of Object.entries(schema.properties)) {
    if ((s as TSchema)[Kind] !== 'Boolean') continue
    if (fields[name] === 'true') fields[name] = true
    else if (fields[name] === 'false') fields[name] = false
  }
  return fields
}

/** The fields that fail, in the schema's property order. */
export function validate (schema: TObject, fields: Record<string, unknown>): FieldFailure[] {
  const required = new Set(schema.required ?? [])
  const failures: FieldFailure[] = []
  for (const [field, s] of Object.entries(schema.properties) as Array<[string, TSchema]>) {
    const v = Object.hasOwn(fields, field) ? fields[field] : undefined
    if (v === undefined) {
      if (required.has(field)) failures.push({ field, missing: true })
      continue
    }
    const error = Value.Errors(s, v).First()
    if (error === undefined) continue
    const nonEmpty = typeof s.minLength === 'number' && s.minLength >= 1
    failures.push(
      nonEmpty && (typeof v !== 'string' || v === '') ? { field, missing: true } : { field, missing: false, error }
    )
  }
  return failures
}

/** The answer to a failing field (the first one): 400 `required` or `bad_request`. */
export function refusal (spec: BodySpec, f: FieldFailure): GatewayError {
  if (f.missing) return E.missingField(f.field)
  const declared = (spec.invalid as Record<string, string> | undefined)?.[f.field]
  return E.badRequest(`${f.field}: ${declared ?? keywordMessage(f.error!)}`)
}

function keywordMessage (e: ValueError): string {
  switch (e.type) {
    case ValueErrorType.StringMaxLength: return `Ensure this field has no more than ${String(e.schema.maxLength)} characters.`
    case ValueErrorType.String: return 'Must be a string.'
    case ValueErrorType.Boolean: return 'Must be a valid boolean.'
    default: return `${e.message}.`
  }
}

/** The operation's requestBody: the schema by name, in each documented media type. */
export function requestBodyOf (spec: BodySpec): Json {
  return {
    required: spec.required,
    ...(spec.description === undefined ? {} : { description: spec.description }),
    content: Object.fromEntries(spec.types.map((t) => [t, {
      schema: schemaRef(spec.name),
      ...(t === JSON_TYPE && spec.example !== undefined ? { example: spec.example } : {})
    }]))
  }
}

/** The schema as the document publishes it: plain JSON (TypeBox's own symbols dropped). */
export function publishedSchema (spec: BodySpec): Json {
  return JSON.parse(JSON.stringify(spec.schema)) as Json
}

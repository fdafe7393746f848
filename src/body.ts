/** Reads a small request body with a hard size limit, and decodes JSON or form bodies. */
import type { IncomingMessage } from 'node:http'
import { E, GatewayError } from './errors.js'
import { FORM_TYPE, MULTIPART_TYPE, isJsonType, mediaType } from './http/content-type.js'

/**
 * Called (once) on a request just before its body is first read: the server
 * sends `100 Continue` there to a client that asked for it.
 */
export const BEFORE_BODY = Symbol('sidegate.beforeBody')

/**
 * A body already read whole (to check a signed digest, src/pipeline/steps.ts):
 * readBody returns it, the forwarder sends these same bytes.
 */
export const READ_BODY = Symbol('sidegate.readBody')
type WithBody = IncomingMessage & { [READ_BODY]?: Buffer }

/** The body read whole before, or undefined. */
export function bufferedBody (req: IncomingMessage): Buffer | undefined {
  return (req as WithBody)[READ_BODY]
}

/**
 * The whole body, at most `limit` bytes: a larger declared or streamed body is
 * 413 payload_too_large (a declared one before `100 Continue`); a body cut off
 * before its end (the client aborted or reset the connection) is 400
 * bad_request, never an internal error.
 */
export async function readBody (req: IncomingMessage, limit: number): Promise<Buffer> {
  const read = bufferedBody(req)
  if (read !== undefined) {
    if (read.length > limit) throw E.payloadTooLarge()
    return read
  }
  const declared = Number(req.headers['content-length'])
  if (declared > limit) throw E.payloadTooLarge()
  const hook = (req as IncomingMessage & { [BEFORE_BODY]?: () => void })[BEFORE_BODY]
  if (hook !== undefined) hook()
  const chunks: Buffer[] = []
  let size = 0
  try {
    for await (const chunk of req) {
      size += (chunk as Buffer).length
      if (size > limit) throw E.payloadTooLarge()
      chunks.push(chunk as Buffer)
    }
  } catch (err) {
    if (err instanceof GatewayError) throw err
    throw E.badRequest('The request body was cut off.')
  }
  if (req.complete === false) throw E.badRequest('The request body was cut off.')
  return Buffer.concat(chunks)
}

/** Reads the body whole (readBody's limits) and keeps it on the request for readBody and the forwarder. */
export async function keepBody (req: IncomingMessage, limit: number): Promise<Buffer> {
  const body = await readBody(req, limit)
  ;(req as WithBody)[READ_BODY] = body
  return body
}

/** A flat object of strings from `application/json` or `application/x-www-form-urlencoded`. */
export function decodeFields (contentType: string | undefined, body: Buffer): Record<string, unknown> {
  const type = mediaType(contentType)
  const text = body.toString('utf8')
  if (isJsonType(type) || (type === '' && text.trimStart().startsWith('{'))) {
    let v: unknown
    try { v = JSON.parse(text) } catch { throw E.notJson() }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw E.notJsonObject()
    return v as Record<string, unknown>
  }
  if (type === FORM_TYPE || (type === '' && text === '')) {
    return Object.fromEntries(new URLSearchParams(text))
  }
  throw E.unsupportedMediaType()
}

/**
 * decodeFields, and `multipart/form-data` as well (JumpServer's token endpoint
 * takes it; parsed by undici's FormData, the fetch implementation in Node):
 * its text fields, files ignored. A multipart body that does not parse is 400.
 */
export async function decodeFieldsOf (contentType: string | undefined, body: Buffer): Promise<Record<string, unknown>> {
  if (mediaType(contentType) !== MULTIPART_TYPE) return decodeFields(contentType, body)
  let form: FormData
  try {
    form = await new Response(
      body.buffer.slice(body.byteOffset, body.byteOffset + body.length) as ArrayBuffer,
      { headers: { 'content-type': contentType! } }
    ).formData()
  } catch {
    throw E.badRequest('The multipart body does not parse.')
  }
  // own properties only (a field named __proto__ stays a field), the first of a repeated name
  const fields = new Map<string, string>()
  for (const [name, value] of form) if (typeof value === 'string' && !fields.has(name)) fields.set(name, value)
  return Object.fromEntries(fields)
}

export function requireString (fields: Record<string, unknown>, name: string, max = 1024): string {
  const v = fields[name]
  if (typeof v !== 'string' || v === '') throw E.missingField(name)
  if (v.length > max) throw E.badRequest(`${name}: Ensure this field has no more than ${max} characters.`)
  return v
}

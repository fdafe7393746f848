/** Writing sidegate's own responses: JSON with safe headers, errors as {detail, code}. */
import { STATUS_CODES, type ServerResponse } from 'node:http'
import { E, GatewayError } from './errors.js'
import { CHALLENGES } from './auth/index.js'

export function sendJson (
  res: ServerResponse, status: number, body: unknown, headers: Record<string, string | string[]> = {}
): void {
  if (res.headersSent || res.destroyed) return
  const payload = JSON.stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
    ...headers
  })
  res.end(payload)
}

/** The serialized body and fixed headers of one kind of error, built once (also as a flat name, value list). */
interface Prepared {
  payload: string,
  headers: Record<string, string | string[] | number>,
  list: Array<string | string[] | number>
}
const prepared = new Map<string, Prepared>()

function prepare (e: GatewayError): Prepared {
  const key = `${e.status}\u0000${e.code}\u0000${e.message}`
  let p = prepared.get(key)
  if (p !== undefined) return p
  const payload = JSON.stringify(e.toJSON())
  const headers: Prepared['headers'] = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store'
  }
  if (e.status === 401) headers['www-authenticate'] = CHALLENGES as string[]
  if (e.status === 413) headers.connection = 'close'
  if (e.status === 503) headers['retry-after'] = '1'
  p = { payload, headers, list: Object.entries(headers).flat() }
  // bounded: the codes are a fixed set, but a detail may carry a value (a field name)
  if (prepared.size < 256) prepared.set(key, p)
  return p
}

/**
 * Turns any thrown value into a response; only GatewayErrors say anything
 * specific. `challenges`: a 401's WWW-Authenticate, when not every scheme's
 * (the admin API takes only some). The body and headers of each kind of error are serialized once:
 * a flood of bad credentials costs as little as possible to refuse.
 * `requestId`: the X-Request-Id to answer with, when not already set on `res`;
 * given as a list with the rest, Node writes the head in one pass.
 */
export function sendError (res: ServerResponse, err: unknown, requestId?: string, challenges?: string[]): GatewayError {
  const e = err instanceof GatewayError ? err : E.internal()
  if (res.headersSent || res.destroyed) return e
  const p = prepare(e)
  if (e.headers === undefined && (challenges === undefined || e.status !== 401)) {
    const list = requestId === undefined ? p.list : [...p.list, 'x-request-id', requestId]
    res.writeHead(e.status, list as string[])
  } else {
    const headers: Record<string, string | number | string[]> = e.headers === undefined
      ? { ...p.headers }
      : { ...p.headers, ...e.headers }
    if (challenges !== undefined && e.status === 401) headers['www-authenticate'] = challenges
    if (requestId !== undefined) headers['x-request-id'] = requestId
    res.writeHead(e.status, headers)
  }
  res.end(p.payload)
  return e
}

/** An error's headers besides its body's (WWW-Authenticate, Retry-After, Connection, the error's own). */
export function errorHeaders (e: GatewayError): Record<string, string | string[] | number> {
  const { 'content-type': _t, 'content-length': _l, ...rest } = prepare(e).headers
  return e.headers === undefined ? rest : { ...rest, ...e.headers }
}

/**
 * The same error as a whole HTTP/1.1 response, for a raw socket that has no
 * ServerResponse (a refused upgrade, a request Node could not parse); the
 * connection closes after it.
 */
export function rawErrorResponse (e: GatewayError): string {
  const p = prepare(e)
  let out = `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? ''}\r\n`
  for (const [name, value] of Object.entries({ ...p.headers, ...e.headers, connection: 'close' })) {
    const canonical = name === 'www-authenticate' ? 'WWW-Authenticate' : name.replace(/(^|-)([a-z])/g, (m) => m.toUpperCase())
    for (const v of Array.isArray(value) ? value : [value]) out += `${canonical}: ${v}\r\n`
  }
  return `${out}\r\n${p.payload}`
}

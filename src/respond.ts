/** Writing sidegate's own responses: JSON with safe headers, errors as {detail, code}. */
import type { ServerResponse } from 'node:http'
import { E, GatewayError } from './errors.js'
import { CHALLENGES } from './auth/index.js'

export function sendJson (res: ServerResponse, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
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

/** Turns any thrown value into a response; only GatewayErrors say anything specific. */
export function sendError (res: ServerResponse, err: unknown): GatewayError {
  const e = err instanceof GatewayError ? err : E.internal()
  const headers: Record<string, string | string[]> = { ...e.headers }
  if (e.status === 401) headers['www-authenticate'] = CHALLENGES
  if (e.status === 413) headers.connection = 'close'
  if (e.status === 503) headers['retry-after'] = '1'
  sendJson(res, e.status, e.toJSON(), headers)
  return e
}

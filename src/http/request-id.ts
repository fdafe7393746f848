/** The request id: the client's or proxy's X-Request-ID when it looks like one, else a UUID of ours. */
import type { IncomingMessage } from 'node:http'
import { randomUUID } from 'node:crypto'

// what proxies and tracers send (UUIDs, `edge/7+Zq=`): never markup, a quote or a header break
const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/

/** Whether `v` may stand as a request id, in a header or a page. */
export function isRequestId (v: unknown): v is string {
  return typeof v === 'string' && REQUEST_ID.test(v)
}

export function requestId (req: IncomingMessage): string {
  const v = req.headers['x-request-id']
  return isRequestId(v) ? v : randomUUID()
}

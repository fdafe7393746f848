/**
 * The one per-request state, made when a request arrives (src/pipeline/pipeline.ts,
 * receive) and filled in by the steps: the route's handler and the access
 * log read it. A WebSocket upgrade has the same fields but no `res` (it is
 * answered on the socket): StepContext, which is what the steps take.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Identity } from '../auth/index.js'
import type { RequestTrace } from '../observability/tracing.js'

export interface RequestContext {
  req: IncomingMessage
  res: ServerResponse
  /** path without the query string */
  path: string
  requestId: string
  clientIp: string
  /** the client reached us over HTTPS (own TLS, or a trusted proxy said so) */
  https: boolean
  /** set by the authenticate step (routes with auth 'user', 'user+org', 'user+org-if-member', a valid session on 'session-page'; the upstream's protected paths) */
  identity?: Identity
  /** set by the resolveOrg step (routes with auth 'user+org', 'user+org-if-member' when a member; the upstream's protected paths) */
  orgId?: string
  /**
   * set by the pipeline for a forward-auth decision ('decision' routes): the
   * identity headers to answer with (src/pipeline/headers.ts identityHeaders), empty
   * when the original request is on a public path
   */
  decision?: Record<string, string>
  /** the client sent `Expect: 100-continue` and has not been sent `100 Continue` yet */
  expectsContinue?: boolean
  /** the request's server span when tracing is on (src/observability/tracing.ts) */
  trace?: RequestTrace
}

/** What the pipeline's steps read and write: a RequestContext without the response, all a WebSocket upgrade has. */
export type StepContext = Omit<RequestContext, 'res' | 'expectsContinue' | 'decision'>

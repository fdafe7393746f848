/**
 * The one per-request state, made when a request arrives (src/pipeline/receive.ts)
 * and filled in by the steps of its chain (src/pipeline/chains.ts): the route's
 * handler and the access log read it. A WebSocket upgrade has the same fields
 * but no `res` (it is answered on the socket): StepContext.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Identity } from '../auth/index.js'
import type { RequestTrace } from '../observability/tracing.js'
import type { HeaderList, OriginalRequest } from './headers.js'
import type { MatchPath } from '../access/path.js'

export interface RequestContext {
  req: IncomingMessage
  res: ServerResponse
  /** path without the query string */
  path: string
  requestId: string
  clientIp: string
  /** the client reached us over HTTPS (own TLS, or a trusted proxy said so) */
  https: boolean
  /**
   * set by the authenticate step (routes with auth 'user', 'user+org', 'user+org-if-member',
   * a valid session on 'session-page'; the upstream's protected paths)
   */
  identity?: Identity
  /**
   * set by the org step (routes with auth 'user+org',
   * 'user+org-if-member' when a member; the upstream's protected paths)
   */
  orgId?: string
  /**
   * set by the decision step for a forward-auth decision ('decision' routes): the
   * answer's head, name then value (src/pipeline/decide.ts), the identity headers
   * among them unless the original request is on a public path
   */
  decision?: string[]
  /** the client sent `Expect: 100-continue` and has not been sent `100 Continue` yet */
  expectsContinue?: boolean
  /** the request's server span when tracing is on (src/observability/tracing.ts) */
  trace?: RequestTrace
}

/** What the pipeline's steps read and write: a RequestContext without the response, all a WebSocket upgrade has. */
export type StepContext = Omit<RequestContext, 'res' | 'expectsContinue' | 'decision'>

/** What the chain state needs of an own route (src/routes/types.ts Route). */
interface OwnRoute {
  path: string
  handle (ctx: RequestContext): Promise<void> | void
}

/** What the steps pass on to each other, besides the context. */
interface Passed {
  /** when it arrived (process.hrtime.bigint): the metrics and the access log */
  start: bigint
  /** the path admission is about: the request's own, or a decision's original (the `original` step) */
  target: string
  /** answered before the end of its chain (sent to sign in): the runner stops there */
  answered: boolean
  /** the headers the upstream gets (the upstreamHeaders step) */
  upstream: HeaderList | undefined
  /** `target` normalised for the access rules (the authenticate step, when rules are on) */
  matchPath: MatchPath | undefined
}

/**
 * A plain request on its way through its chain. Every field is set when it is
 * made (receive), so every request's context has the one shape.
 */
export interface Live extends RequestContext, Passed {
  /** its own route; null: the upstream's */
  route: OwnRoute | null
  /** a decision's original request (the `original` step) */
  original: OriginalRequest | undefined
}

/** A WebSocket upgrade on its way through its chain: answered on its socket. */
export interface Handshake extends StepContext, Passed {
  socket: Duplex
  head: Buffer
  original: undefined
}

/** What a step shared by requests and upgrades takes. */
export type Flow = Live | Handshake

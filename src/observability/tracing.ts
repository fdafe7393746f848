/**
 * What the request path sees of tracing (docs/observability.md): types only. The
 * OpenTelemetry SDK is in ./otel.ts, which `sidegate start` imports
 * dynamically, only when tracing is on; when it is off the pipeline holds
 * null and each step that would trace costs one null check.
 */
import type { IncomingMessage } from 'node:http'
import type { HeaderList } from '../pipeline/headers.js'

export interface Tracer {
  /**
   * The SERVER span of a request. `trustedPeer`: the connection comes from
   * one of server.trusted_proxies, whose traceparent/tracestate are
   * continued; anyone else's start a new trace.
   */
  request (req: IncomingMessage, trustedPeer: boolean): RequestTrace
  /** Exports what is still queued, then stops. */
  shutdown (): Promise<void>
}

export interface RequestTrace {
  /** the W3C trace id (32 hex digits), for the access log */
  readonly traceId: string
  /** Runs `fn` with the server span as the active context: the Redis commands it sends become the span's children. */
  run<T> (fn: () => T): T
  /** The route the request took: an own route's path template, or 'upstream'. */
  route (name: string): void
  /**
   * The upstream call begins: a CLIENT span, child of the server span, whose
   * traceparent (and the trusted tracestate) replace any the client sent in
   * the headers the upstream gets.
   */
  upstream (headers: HeaderList): UpstreamCall
  /** The answer is done (or the client left): the span's attributes from the context, then its end. */
  end (status: number, ctx: TracedFacts, code: string | undefined): void
}

/** What the server span records of a request (src/pipeline/context.ts StepContext has these): never a credential. */
export interface TracedFacts {
  path: string
  https: boolean
  clientIp: string
  identity?: { method: string, user: { id: string } }
  orgId?: string
}

/** The upstream call's span: ended by the forwarder with the upstream's status, or its error. */
export interface UpstreamCall {
  end (status: number, err?: Error): void
}

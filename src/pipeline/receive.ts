/**
 * Receive: the request's context (path, request id, client IP, HTTPS), the
 * access log line and the metrics once the answer is done, a request without
 * Host answered 400; and the two answers every step may need: `fail` (any
 * error as JSON, or as a page to a browser's navigation) and `proceed` (`100 Continue`).
 */
import type http from 'node:http'
import type { Live, RequestContext } from './context.js'
import { E, GatewayError } from '../errors.js'
import { clientIp, fromTrustedPeer, isHttps } from './headers.js'
import { requestId } from '../http/request-id.js'
import { pathOf } from '../http/query.js'
import { adoptOriginForm, TARGET_REFUSED } from '../http/target.js'
import { accessLogger, redactHeaders, redactUrl } from '../observability/log.js'
import { RefusalLines } from '../observability/refusals.js'
import { sendRefusal } from '../routes/error-page.js'
import type { PipelineOptions } from './options.js'

export interface Receive {
  request (req: http.IncomingMessage, res: http.ServerResponse, expectsContinue?: boolean): void
  /** Any error of any step: its JSON answer; logged when it is a bug (or a 5xx). */
  fail (ctx: RequestContext, err: unknown): void
  /** `100 Continue` now, if the client waits for it (see below). */
  proceed (ctx: RequestContext): void
}

/** `dispatch`: what follows receive (route, then the chain); what it throws or rejects with is answered by `fail`. */
export function createReceive (
  o: PipelineOptions, dispatch: (ctx: Live) => void | GatewayError | Promise<void>
): Receive {
  const { log, policy } = o
  const tracer = o.tracer ?? null
  const access = accessLogger(log)
  const refusals = new RefusalLines(o.config.log.refusals_per_second, (left) => log.warn({ not_logged: left }, 'refused requests not logged (log.refusals_per_second)'))

  function request (req: http.IncomingMessage, res: http.ServerResponse, expectsContinue = false): void {
    // absolute-form made origin-form here, once: every step and the forwarder read req.url
    const usable = adoptOriginForm(req)
    const url = req.url ?? '/'
    const path = pathOf(url)
    const ctx: Live = {
      req,
      res,
      path,
      requestId: requestId(req),
      clientIp: clientIp(req, policy),
      https: isHttps(req, policy),
      identity: undefined,
      orgId: undefined,
      decision: undefined,
      expectsContinue,
      trace: undefined,
      start: process.hrtime.bigint(),
      route: null,
      target: path,
      original: undefined,
      answered: false,
      upstream: undefined,
      matchPath: undefined
    }
    // X-Request-Id: set here for sidegate's own routes (the route step), else written with the
    // head: the upstream's answer (src/forward/proxy.ts) or an error (fail), so Node writes it in one pass
    // tracing: the server span (an incoming traceparent is continued only from a trusted peer)
    const trace = tracer === null ? undefined : (ctx.trace = tracer.request(req, fromTrustedPeer(req, policy)))
    if (o.draining() || expectsContinue) res.setHeader('connection', 'close')
    // Query values and headers named like a credential are redacted (src/observability/log.ts), only when debug is on.
    if (log.isLevelEnabled('debug')) log.debug({ reqId: ctx.requestId, req: { method: req.method, url: redactUrl(url), headers: redactHeaders(req.headers) }, ip: ctx.clientIp }, 'request received')
    // one listener made once for all requests ('close' is emitted once): no closure per request
    ;(res as LiveRes)[CTX] = ctx
    res.on('close', onClose)
    // HTTP/1.1 requires Host (RFC 9112 §3.2); Node would answer plain text, we answer JSON.
    if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) {
      fail(ctx, E.badRequest('The Host header is required.'))
      return
    }
    if (!usable) {
      fail(ctx, E.badRequest(TARGET_REFUSED))
      return
    }
    if (trace === undefined) begin(ctx)
    else trace.run(() => begin(ctx))
  }

  /** Route and chain: no promise unless a step made one; a refusal returned or thrown is answered. */
  function begin (ctx: Live): void {
    let pending: void | GatewayError | Promise<void>
    try {
      pending = dispatch(ctx)
    } catch (err) {
      fail(ctx, err)
      return
    }
    if (pending instanceof Promise) pending.catch((err: unknown) => fail(ctx, err))
    else if (pending instanceof GatewayError) fail(ctx, pending)
  }

  function onClose (this: LiveRes): void {
    done(this[CTX])
  }

  /** The answer is done (or the client left): metrics and the access log line. */
  function done (ctx: Live): void {
    const res = ctx.res
    // a client that left before any answer was sent: 499 (as nginx), not Node's default 200
    const status = res.headersSent ? res.statusCode : 499
    const ns = Number(process.hrtime.bigint() - ctx.start)
    const code = (res as ResWithCode).errorCode
    const authMethod = ctx.identity?.method
    o.metrics?.request(status, authMethod, code, ns / 1e9)
    ctx.trace?.end(status, ctx, code)
    if (!access.enabled || !refusals.admit(status)) return
    // only these fields: the access line is not redacted (no credential may be added here)
    access.write({
      reqId: ctx.requestId,
      method: ctx.req.method,
      path: ctx.path,
      status,
      ms: ns / 1e6,
      userId: ctx.identity?.user.id,
      authMethod,
      code,
      ip: ctx.clientIp,
      aborted: res.writableFinished ? undefined : true,
      trace_id: ctx.trace?.traceId
    })
  }

  /**
   * `Expect: 100-continue`: the client waits for `100 Continue` before it sends
   * the body. Sent once the request is routed and authenticated: before it is
   * forwarded, or when one of sidegate's routes starts reading the body (the
   * token endpoint's and /login's body is the credential), so a refused client
   * never uploads its body; Node would send it at once. Until then the answer
   * carries `Connection: close` (set in request): answered without 100, the
   * client may or may not send the body, so the connection cannot be reused
   * (RFC 9110 10.1.1).
   */
  function proceed (ctx: RequestContext): void {
    if (ctx.expectsContinue !== true) return
    ctx.expectsContinue = false
    if (ctx.res.headersSent || ctx.res.destroyed) return
    if (!o.draining()) ctx.res.removeHeader('connection')
    ctx.res.writeContinue()
  }

  function fail (ctx: RequestContext, err: unknown): void {
    // nginx's auth_request drops a decision's body: the code lets its config fetch the page (or the JSON)
    if ((ctx as Partial<Live>).original?.family.login === 'header' && !ctx.res.headersSent) {
      ctx.res.setHeader(policy.errorHeader, err instanceof GatewayError ? err.code : 'internal_error')
    }
    const e = sendRefusal(ctx.req, ctx.res, err, ctx.requestId)
    if (!(err instanceof GatewayError)) log.error({ err, reqId: ctx.requestId }, 'unhandled error')
    else if (e.status >= 500) {
      log.warn(
        { reqId: ctx.requestId, code: e.code, cause: (err as { cause?: Error }).cause?.message }, e.detail
      )
    }
    ;(ctx.res as ResWithCode).errorCode = e.code
  }

  return { request, fail, proceed }
}

const CTX = Symbol('sidegate.context')
type LiveRes = http.ServerResponse & { [CTX]: Live }

/** The error code a response was answered with, for the access log and the metrics. */
export type ResWithCode = http.ServerResponse & { errorCode?: string }

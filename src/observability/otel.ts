/**
 * OpenTelemetry tracing (docs/observability.md), loaded by `sidegate start` with a
 * dynamic import only when tracing is on. Built from config.tracing alone
 * (src/config/otel.ts reads the OTEL_* environment), with no global
 * registration: its own AsyncLocalStorage context manager, the W3C
 * traceparent/tracestate propagator used directly, no monkey-patching.
 *
 * - a SERVER span per request (./tracing.ts RequestTrace), continuing the
 *   incoming traceparent only from a trusted peer (server.trusted_proxies);
 * - a CLIENT span per Redis command sent while a request's span is active:
 *   ioredis 6 publishes every command on the node:diagnostics_channel
 *   tracing channel `ioredis:command` (no subscriber when tracing is off: it
 *   costs ioredis one check). Only the command name is recorded, never its
 *   arguments (keys hold hashes of credentials, values hold records);
 * - a CLIENT span for the upstream call, whose traceparent the upstream gets.
 *
 * No attribute ever holds a credential: no header, cookie, query string or
 * key id; the user is `enduser.id`, the user's id.
 */
import diagnostics from 'node:diagnostics_channel'
import type { IncomingMessage } from 'node:http'
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, defaultTextMapGetter, defaultTextMapSetter, trace, type Span } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator, setGlobalErrorHandler } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider,
  type Sampler
} from '@opentelemetry/sdk-trace'
import type { TracingConfig } from '../config/index.js'
import type { Logger } from './log.js'
import type { RequestTrace, Tracer, UpstreamCall } from './tracing.js'
import { messageOf } from '../errors.js'

export interface TracerOptions {
  /** the service's version (service.version) */
  version: string
  /** upstream.url: server.address and server.port of the upstream spans */
  upstream: string | null
}

/** Methods a span may be named after; any other is _OTHER (its name is not the client's to choose). */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'])

function sampler (s: TracingConfig['sampler']): Sampler {
  const ratio = new TraceIdRatioBasedSampler(s.ratio)
  switch (s.name) {
    case 'always_on': return new AlwaysOnSampler()
    case 'always_off': return new AlwaysOffSampler()
    case 'traceidratio': return ratio
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: ratio })
    default: return new ParentBasedSampler({ root: new AlwaysOnSampler() })
  }
}

/** What ioredis publishes on `ioredis:command` (src: ioredis built/Redis.js _buildCommandContext); the span is ours. */
interface CommandMessage {
  command: string,
  database: number,
  serverAddress?: string,
  serverPort?: number,
  span?: Span,
  error?: unknown
}

export function createTracer (c: TracingConfig, log: Logger, o: TracerOptions): Tracer {
  if (c.url === null) throw new Error('tracing is off (no endpoint)')
  const contexts = new AsyncLocalStorageContextManager().enable()
  const propagator = new W3CTraceContextPropagator()
  const provider = new TracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ ...c.resource, 'service.name': c.serviceName, 'service.version': o.version })),
    sampler: sampler(c.sampler),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url: c.url, headers: c.headers, timeoutMillis: c.timeoutMs }),
        ...c.batch
      })
    ]
  })
  const tracer = provider.getTracer('sidegate', o.version)
  // an unreachable collector: one line per distinct failure, not one per batch
  let lastError = ''
  setGlobalErrorHandler((err) => {
    const msg = messageOf(err)
    if (msg === lastError) return
    lastError = msg
    log.warn({ err: msg }, 'tracing: spans could not be exported')
  })
  const upstream = o.upstream === null ? null : new URL(o.upstream)
  const upstreamAttributes = upstream === null
    ? {}
    : { 'server.address': upstream.hostname, 'server.port': Number(upstream.port || (upstream.protocol === 'https:' ? 443 : 80)) }

  // ── Redis commands ──
  const commands = diagnostics.tracingChannel<unknown, CommandMessage>('ioredis:command')
  const redisHandlers = {
    start (m: CommandMessage) {
      const active = contexts.active()
      if (trace.getSpan(active)?.isRecording() !== true) return // not inside a sampled request
      const name = m.command.toUpperCase()
      m.span = tracer.startSpan(name, {
        kind: SpanKind.CLIENT,
        attributes: { 'db.system.name': 'redis', 'db.operation.name': name, 'db.namespace': String(m.database), 'server.address': m.serverAddress, 'server.port': m.serverPort }
      }, active)
    },
    end () {},
    asyncStart () {},
    asyncEnd (m: CommandMessage) { m.span?.end() },
    error (m: CommandMessage) {
      // the error's name only: a Redis error message may quote what was sent
      m.span?.setStatus({ code: SpanStatusCode.ERROR, message: (m.error as Error | undefined)?.name })
    }
  }
  commands.subscribe(redisHandlers)

  function request (req: IncomingMessage, trustedPeer: boolean): RequestTrace {
    const parent = trustedPeer ? propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter) : ROOT_CONTEXT
    const raw = req.method ?? 'GET'
    const method = METHODS.has(raw) ? raw : '_OTHER'
    const span = tracer.startSpan(method, {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': method, 'network.protocol.version': req.httpVersion }
    }, parent)
    const active = trace.setSpan(parent, span)
    let route: string | null = null
    let call: (UpstreamCall & { open: boolean }) | null = null
    return {
      traceId: span.spanContext().traceId,
      run: (fn) => contexts.with(active, fn),
      route (name) { route = name },
      upstream (headers) {
        const client = tracer.startSpan(method, {
          kind: SpanKind.CLIENT,
          attributes: { 'http.request.method': method, ...upstreamAttributes }
        }, active)
        // the client's own traceparent and tracestate never reach the upstream as sent
        for (let i = headers.length - 2; i >= 0; i -= 2) {
          if (headers[i] === 'traceparent' || headers[i] === 'tracestate') headers.splice(i, 2)
        }
        const carrier: Record<string, string> = {}
        propagator.inject(trace.setSpan(active, client), carrier, defaultTextMapSetter)
        for (const name in carrier) headers.push(name, carrier[name])
        call = {
          open: true,
          end (status, err) {
            if (!this.open) return
            this.open = false
            if (status > 0) client.setAttribute('http.response.status_code', status)
            if (err !== undefined) {
              client.setAttribute('error.type', (err as { code?: string }).code ?? err.name)
              client.setStatus({ code: SpanStatusCode.ERROR })
            } else if (status >= 400) client.setStatus({ code: SpanStatusCode.ERROR })
            client.end()
          }
        }
        return call
      },
      end (status, ctx, code) {
        // still open: the answer failed (its error code), or the client left before the upstream answered
        if (call?.open === true) call.end(0, Object.assign(new Error(code ?? 'client gone'), { code: code ?? 'client_gone' }))
        span.updateName(route === null ? method : `${method} ${route}`)
        span.setAttributes({
          'url.path': ctx.path,
          'url.scheme': ctx.https ? 'https' : 'http',
          'client.address': ctx.clientIp,
          'http.response.status_code': status
        })
        if (route !== null && route !== 'upstream') span.setAttribute('http.route', route)
        const who = ctx.identity
        if (who !== undefined) span.setAttributes({ 'sidegate.auth.method': who.method, 'enduser.id': who.user.id })
        if (ctx.orgId !== undefined) span.setAttribute('sidegate.org', ctx.orgId)
        if (code !== undefined) span.setAttributes({ 'error.type': code, 'sidegate.error.code': code })
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
        span.end()
      }
    }
  }

  return {
    request,
    async shutdown () {
      commands.unsubscribe(redisHandlers)
      try { await provider.shutdown() } catch {}
      contexts.disable()
    }
  }
}

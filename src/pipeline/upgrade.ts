/**
 * WebSocket upgrades: the `upgrade` chain (src/pipeline/chains.ts) over a
 * context without a response, answered on the socket (a refusal as a raw
 * HTTP answer), forwarded by forwarder.ws.
 */
import type http from 'node:http'
import type { Duplex } from 'node:stream'
import { run, type Impl, type Step } from './chains.js'
import type { Handshake, StepContext } from './context.js'
import { E, GatewayError } from '../errors.js'
import { clientIp, fromTrustedPeer, headerObject, isHttps } from './headers.js'
import { requestId } from '../http/request-id.js'
import { pathOf } from '../http/query.js'
import { rawErrorResponse } from '../respond.js'
import type { PipelineOptions } from './options.js'

export function upgradeSteps (o: PipelineOptions) {
  const { log, policy, forwarder } = o
  const tracer = o.tracer ?? null

  /** The entry point, once the chain is built. */
  function entry (chain: ReadonlyArray<Step<Handshake>>) {
    return async function upgrade (req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
      const trace = tracer?.request(req, fromTrustedPeer(req, policy))
      if (trace === undefined) return await handshake(chain, req, socket, head)
      return await trace.run(async () => await handshake(chain, req, socket, head, trace))
    }
  }

  async function handshake (
    chain: ReadonlyArray<Step<Handshake>>,
    req: http.IncomingMessage,
    socket: Duplex,
    head: Buffer,
    trace?: StepContext['trace']
  ): Promise<void> {
    const start = process.hrtime.bigint()
    socket.on('error', () => socket.destroy())
    const path = pathOf(req.url ?? '/')
    const ctx: Handshake = {
      req,
      socket,
      head,
      path,
      requestId: requestId(req),
      clientIp: clientIp(req, policy),
      https: isHttps(req, policy),
      trace,
      identity: undefined,
      orgId: undefined,
      start,
      target: path,
      original: undefined,
      answered: false,
      upstream: undefined,
      matchPath: undefined
    }
    try {
      const refused = await run(chain, ctx)
      if (refused instanceof GatewayError) rejectUpgrade(refused, ctx)
    } catch (err) {
      rejectUpgrade(err, ctx)
    }
  }

  /** A new upgrade while draining would hold its connection past the drain. */
  function draining (): void {
    if (o.draining()) throw E.shuttingDown()
  }

  function websocket (ctx: Handshake): void {
    const { req, trace, start } = ctx
    const call = trace?.upstream(ctx.upstream!)
    // http-proxy sends req.headers
    req.headers = headerObject(ctx.upstream!)
    // counted like any request: 101 once the upstream switched protocols, else the error
    forwarder!.ws(req, ctx.socket, ctx.head, (err) => rejectUpgrade(err, ctx), () => {
      o.metrics?.request(101, ctx.identity?.method, undefined, secondsSince(start))
      if (call !== undefined) { call.end(101); trace!.end(101, ctx, undefined) }
    })
    log.info(
      { reqId: ctx.requestId, path: ctx.path, userId: ctx.identity?.user.id, authMethod: ctx.identity?.method },
      'websocket'
    )
  }

  function rejectUpgrade (err: unknown, ctx: Handshake): void {
    const e = err instanceof GatewayError ? err : E.internal()
    o.metrics?.request(e.status, ctx.identity?.method, e.code, secondsSince(ctx.start))
    ctx.trace?.end(e.status, ctx, e.code)
    ctx.socket.end(rawErrorResponse(e))
  }

  return { entry, steps: { draining, websocket } satisfies Partial<Impl> }
}

function secondsSince (start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9
}

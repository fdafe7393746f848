/**
 * WebSocket upgrades: the same steps as a request for the upstream, answered
 * on the socket (a refusal as a raw HTTP answer), forwarded by forwarder.ws.
 */
import type http from 'node:http'
import type { Duplex } from 'node:stream'
import type { StepContext } from './context.js'
import { E, GatewayError } from '../errors.js'
import { clientIp, fromTrustedPeer, isHttps, requestId } from './headers.js'
import { pathOf } from '../http/query.js'
import { rawErrorResponse } from '../respond.js'
import type { PipelineOptions } from './options.js'
import type { steps } from './steps.js'

type Admit = (ctx: StepContext, path: string, body: 'upgrade') => Promise<void>

export function upgradeEntry (o: PipelineOptions, admit: Admit, s: ReturnType<typeof steps>) {
  const { log, policy, forwarder } = o
  const tracer = o.tracer ?? null

  async function upgrade (req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const trace = tracer?.request(req, fromTrustedPeer(req, policy))
    if (trace === undefined) return await upgradeSteps(req, socket, head)
    return await trace.run(async () => await upgradeSteps(req, socket, head, trace))
  }

  async function upgradeSteps (req: http.IncomingMessage, socket: Duplex, head: Buffer, trace?: StepContext['trace']): Promise<void> {
    const start = process.hrtime.bigint()
    socket.on('error', () => socket.destroy())
    const ctx: StepContext = { req, path: pathOf(req.url ?? '/'), requestId: requestId(req), clientIp: clientIp(req, policy), https: isHttps(req, policy), trace }
    try {
      if (forwarder === null) throw E.notFound()
      trace?.route('upstream')
      if (o.draining()) throw E.shuttingDown()
      await admit(ctx, ctx.path, 'upgrade')
      await s.signingKeys(ctx)
      s.stripAndInject(ctx)
      s.setForwarded(ctx)
      const call = trace?.upstream(req)
      // counted like any request: 101 once the upstream switched protocols, else the error
      forwarder.ws(req, socket, head, (err) => rejectUpgrade(socket, err, start, ctx), () => {
        o.metrics?.request(101, ctx.identity?.method, undefined, secondsSince(start))
        if (call !== undefined) { call.end(101); trace!.end(101, ctx, undefined) }
      })
      log.info({ reqId: ctx.requestId, path: ctx.path, userId: ctx.identity?.user.id, authMethod: ctx.identity?.method }, 'websocket')
    } catch (err) {
      rejectUpgrade(socket, err, start, ctx)
    }
  }

  function rejectUpgrade (socket: Duplex, err: unknown, start: bigint, ctx: StepContext): void {
    const e = err instanceof GatewayError ? err : E.internal()
    o.metrics?.request(e.status, ctx.identity?.method, e.code, secondsSince(start))
    ctx.trace?.end(e.status, ctx, e.code)
    socket.end(rawErrorResponse(e))
  }

  return upgrade
}

function secondsSince (start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9
}

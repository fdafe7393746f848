/**
 * The request path. Every request sidegate receives is received (receive.ts:
 * the context, the access log line and the metrics once answered), routed,
 * and then takes the chain of its mode: the steps CHAINS in chains.ts lists
 * for it, in that order, over the one request context (context.ts). The
 * modes: an own route by its `auth` mode (src/routes/types.ts), the
 * forward-auth decision (about a request, or about a WebSocket handshake),
 * a request for the upstream, a WebSocket upgrade (upgrade.ts). Forwarded,
 * upgraded or decided, a request for the upstream takes the same admission
 * steps, and where the modes differ the table says so and why
 * (docs/architecture.md shows it; test/http/verdicts.test.ts runs one table of
 * requests through proxy mode and the decision).
 *
 * A step refuses with a GatewayError (src/errors.ts), returned (authentication
 * always: a Result, gone on from with mapResult) or thrown: `fail` answers it
 * as JSON, an upgrade's is answered on the socket. A step that can decide from
 * memory returns at once and only a promise is awaited (chains.ts run): a
 * request with a cached private token, on a public path, or refused with 401
 * costs no promise and no closure beyond what the work needs.
 *
 * The steps are functions made once per gateway: a live reload
 * (src/app/reload.ts) makes them anew from the new config and the server
 * swaps one reference (src/pipeline/server.ts apply): what they derive from
 * the config (rate_limit and identity.jwt on or off among it) is fixed per
 * pipeline.
 *
 * Tracing (src/observability/tracing.ts, on only with an endpoint): receive
 * starts the request's server span and runs the chain in its context, the
 * route step names it, forward starts the upstream call's span, done ends it
 * and logs its trace id. Off, each of these is a null check.
 *
 * The audit trail (src/observability/audit.ts) hears from authenticate (a
 * bearer token used or refused) and keyIp (an access key's first use, known
 * from the last-use write the request makes anyway, at most once a minute per
 * key). Nothing else on this path writes to it, and it never waits for Redis.
 */
import { buildChains, run, type Chains } from './chains.js'
import type { GatewayError } from '../errors.js'
import type { Live } from './context.js'
import { isUpgradeOf } from './headers.js'
import type { PipelineOptions, Pipeline } from './options.js'
import { createReceive } from './receive.js'
import { authenticateSteps } from './authenticate.js'
import { accessGate } from './access.js'
import { orgSteps } from './org.js'
import { steps } from './steps.js'
import { decisionSteps } from './decide.js'
import { upgradeSteps } from './upgrade.js'

export type { PipelineOptions, Pipeline } from './options.js'
export type { ResWithCode } from './receive.js'

export function createPipeline (o: PipelineOptions): Pipeline {
  const { router } = o
  const { request, fail, proceed } = createReceive(o, dispatch)
  const u = upgradeSteps(o)
  // access rules, compiled from this pipeline's config (a reload makes a new pipeline)
  const access = accessGate(o)
  const chains: Chains = buildChains({
    ...steps(o, { proceed, fail }),
    ...authenticateSteps(o, access),
    access: access === null ? null : access.step,
    ...orgSteps(o),
    ...decisionSteps(o),
    ...u.steps
  })

  /** Route: an own route's chain by its auth mode, else the upstream's. */
  function dispatch (ctx: Live): void | GatewayError | Promise<void> {
    const route = router.find(ctx.path, ctx.req.method ?? '')
    if (route === null) return run(chains.upstream, ctx)
    ctx.route = route
    // a decision about a WebSocket handshake is admitted as the upgrade would be
    if (route.auth === 'decision' && isUpgradeOf(ctx.req)) return run(chains['decision-upgrade'], ctx)
    return run(chains[route.auth], ctx)
  }

  return { request, upgrade: u.entry(chains.upgrade) }
}

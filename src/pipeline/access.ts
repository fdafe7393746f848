/**
 * Access rules in the request chains (src/access/rules.ts; chains.ts STEPS:
 * `authenticate` asks `before`, the `access` step `decide`s). Off (no rules
 * and default_policy one_factor, what a config without an `access` section
 * has): null, and neither is in the chains.
 */
import { AccessRules, type AccessRequest, type Verdict } from '../access/rules.js'
import { requestHost } from '../access/hosts.js'
import { fromTrustedPeer } from './headers.js'
import { peerSubject } from './tls.js'
import { E, type GatewayError } from '../errors.js'
import type { Flow } from './context.js'
import { auditOf, type PipelineOptions } from './options.js'

export interface AccessGate {
  /**
   * Before authentication, for a request the rules decide (not on
   * upstream.public_paths): `bypass` (no credential looked at), `auth`,
   * `optional` (authenticate; no credential at all falls through to a
   * bypass), or the refusal of a deny rule that names no subjects.
   */
  before (ctx: Flow): 'bypass' | 'auth' | 'optional' | GatewayError
  /** The `access` step: after org, the rule that decides for this caller. */
  step (ctx: Flow): void | GatewayError
}

export function accessGate (o: PipelineOptions): AccessGate | null {
  const rules = new AccessRules(o.config.access)
  if (!rules.active) return null
  const audit = auditOf(o)
  const { log } = o

  // the client certificate only where a rule names one (cert:): nothing more per request otherwise.
  // A forward-auth decision's TLS peer is the proxy, not the client: it has none.
  const certs = rules.usesCerts
  const hosts = rules.usesHosts
  const { policy } = o
  /**
   * The method the rules see: a decision's original request's; its host, where
   * rules name hosts: a decision's proxy is trusted, its X-Forwarded-Host the original's.
   */
  const hostOf = (ctx: Flow): string | null =>
    requestHost(ctx.req.headers, fromTrustedPeer(ctx.req, policy), ctx.original === undefined ? ctx.req.url : undefined)
  const requestOf = (ctx: Flow): AccessRequest => ({
    method: ctx.original?.method ?? ctx.req.method ?? 'GET',
    target: ctx.target,
    clientIp: ctx.clientIp,
    host: hosts ? hostOf(ctx) : undefined,
    cert: certs && ctx.original === undefined ? peerSubject(ctx.req.socket) : null
  })

  function denied (ctx: Flow, v: Verdict): GatewayError {
    // counted from 1, as docs/access-rules.md and `sidegate access check` count them
    const rule = v.rule === -1 ? 'default' : v.rule + 1
    log.debug({ reqId: ctx.requestId, rule, policy: v.policy, why: v.why }, 'access denied')
    audit?.record({ event: 'access.denied', ctx, user: ctx.identity?.user, rule, reason: v.policy, via: `${requestOf(ctx).method} ${ctx.matchPath?.path ?? ctx.target}` })
    return E.accessDenied()
  }

  return {
    before (ctx) {
      const p = ctx.matchPath = rules.matchPath(ctx.target)
      const req = requestOf(ctx)
      // no rule for a host may be met, nor passed over, without knowing the host
      if (req.host === null) return E.badRequest('No usable Host: the access rules are per host.')
      const b = rules.before(req, p)
      return b === 'deny' ? denied(ctx, rules.decide(req, null, p)) : b
    },
    step (ctx) {
      const id = ctx.identity
      // a public path, a bypass, or no credential where a bypass follows: nothing to decide
      if (id === undefined) return undefined
      const v = rules.decide(requestOf(ctx), { identity: id, orgId: ctx.orgId }, ctx.matchPath)
      if (v.policy === 'bypass') {
        // a bypass rule after subject rules that did not match this caller: no identity goes on
        ctx.identity = undefined
        ctx.orgId = undefined
        return undefined
      }
      return v.allowed ? undefined : denied(ctx, v)
    }
  }
}

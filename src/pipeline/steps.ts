/**
 * The steps between authenticate and the answer: the access key's
 * allow-list, the rate limit, a signed body digest, the signing keys of
 * identity.jwt, and for the upstream what it is sent (the identity headers,
 * X-Forwarded-*) and the forward itself.
 */
import { keyUsed } from '../observability/audit.js'
import { bodyMatches } from '../auth/digest.js'
import { keepBody } from '../body.js'
import type { RequestContext, StepContext } from './context.js'
import { E } from '../errors.js'
import { identityHeaders, injectIdentity, setForwarded as setForwardedHeaders, stripInjected, trustedProxies } from './headers.js'
import { RateLimiter } from '../auth/rate-limit.js'
import { auditOf, type PipelineOptions } from './options.js'
import type { Receive } from './receive.js'

export function steps (o: PipelineOptions, { proceed, fail }: Pick<Receive, 'proceed' | 'fail'>) {
  const { store, log, policy, forwarder } = o
  const audit = auditOf(o)
  const maxBody = o.config.auth.signature.max_body
  /** allow-lists as matchers, by their text (a key's list is fixed when it is created) */
  const allowLists = new Map<string, (ip: string) => boolean>()
  const allowList = (entries: string[]): ((ip: string) => boolean) => {
    const k = entries.join(',')
    let m = allowLists.get(k)
    if (m === undefined) {
      if (allowLists.size > 10_000) allowLists.clear()
      m = trustedProxies(entries)
      allowLists.set(k, m)
    }
    return m
  }
  const limiter = o.config.rate_limit.enabled ? new RateLimiter(store, o.config.rate_limit, log, () => o.metrics?.rateLimitStoreError?.()) : null

  /**
   * An access key with an allow-list (`--allow-ip`): the real client address
   * (trusted_proxies) must be in it, else 403 ip_not_allowed. Then, and only
   * then, the key counts as used (date_last_used, which auth.keys.disable_after
   * reads): a request refused here does not keep a key alive. No Redis round
   * trip on the request: the store writes at most once per key a minute, after.
   */
  function checkKeyIp (ctx: StepContext): void {
    const who = ctx.identity
    if (who?.keyId === undefined) return
    if (who.keyAllowIps !== undefined && !allowList(who.keyAllowIps)(ctx.clientIp)) throw E.ipNotAllowed()
    // the request's own context is the audit context (no object made per request)
    keyUsed(store, audit, ctx, who.user, who.keyId)
  }

  /**
   * rate_limit (src/auth/rate-limit.ts): one store call counts the request; the
   * RateLimit fields go on the answer, whatever it is; over the limit, 429.
   */
  async function rateLimit (ctx: RequestContext): Promise<void> {
    if (limiter === null) return
    const headers = await limiter.check(ctx.identity!)
    for (const name in headers) ctx.res.setHeader(name, headers[name])
  }

  /**
   * A signature that covers Digest or Content-Digest (src/auth/digest.ts):
   * the body is read whole, at most auth.signature.max_body bytes (413 above,
   * never buffered past that), checked (401 invalid_digest), and kept for the
   * route or the forwarder, which send these same bytes. The client that
   * waits for `100 Continue` gets it now: it is authenticated.
   */
  async function checkDigest (ctx: RequestContext): Promise<void> {
    const digests = ctx.identity?.digests
    if (digests === undefined) return
    proceed(ctx)
    const body = await keepBody(ctx.req, maxBody)
    if (!bodyMatches(body, digests)) throw E.invalidDigest()
  }

  /** identity.jwt: the signing keys read recently enough to sign (a store read only at start or when stale; 503 when it fails). */
  async function signingKeys (ctx: StepContext): Promise<void> {
    if (needsKeys(ctx)) await o.identity!.ready()
  }

  /** signingKeys has to read the store first (checked before awaiting it: most requests need not) */
  function needsKeys (ctx: StepContext): boolean {
    return ctx.identity !== undefined && o.identity != null && !o.identity.fresh
  }

  /**
   * The identity headers of the authenticated caller in its resolved org
   * (with the signed identity token when identity.jwt is on): what a
   * forwarded request carries and what a decision answers with.
   */
  function identityHeadersOf (ctx: StepContext): Record<string, string> {
    return identityHeaders(policy, ctx.identity!, ctx.orgId!, ctx.requestId)
  }

  /** The upstream sees exactly the resolved identity (none on a public path) and none of sidegate's credentials. */
  function stripAndInject (ctx: StepContext): void {
    if (ctx.identity === undefined) stripInjected(ctx.req, policy)
    else injectIdentity(ctx.req, policy, identityHeadersOf(ctx), ctx.orgId!)
  }

  /** X-Forwarded-For, -Proto, -Host (a trusted proxy's kept) and X-Request-Id. */
  function setForwarded (ctx: StepContext): void {
    setForwardedHeaders(ctx.req, policy, ctx.requestId)
  }

  /** The request and its body to the upstream, its answer back; 502/504 when it fails. */
  function forward (ctx: RequestContext): void {
    proceed(ctx)
    // tracing: the upstream call's span, whose traceparent the upstream gets
    forwarder!.web(ctx.req, ctx.res, (err) => fail(ctx, err), ctx.trace?.upstream(ctx.req))
  }

  return { limiter, checkKeyIp, rateLimit, checkDigest, signingKeys, needsKeys, identityHeadersOf, stripAndInject, setForwarded, forward }
}

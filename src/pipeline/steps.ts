/**
 * The steps around authenticate and org (src/pipeline/chains.ts STEPS): the
 * route's, the access key's allow-list, the rate limit, a signed body digest,
 * the cross-site check, identity.jwt's signing keys, and for the upstream
 * what it is sent and the forward itself; an own route's handler.
 */
import { keyUsed } from '../observability/audit.js'
import { bodyMatches, type ExpectedDigest } from '../auth/digest.js'
import { BEFORE_BODY, keepBody } from '../body.js'
import type { Impl } from './chains.js'
import type { Flow, Handshake, Live } from './context.js'
import type { Identity } from '../auth/index.js'
import { E } from '../errors.js'
import { identityHeaders, trustedProxies, upstreamHeaders } from './headers.js'
import { withResolvedOid } from '../auth/org.js'
import { RateLimiter } from '../auth/rate-limit.js'
import { auditOf, type PipelineOptions } from './options.js'
import type { Receive } from './receive.js'

export function steps (o: PipelineOptions, { proceed, fail }: Pick<Receive, 'proceed' | 'fail'>) {
  const { store, log, policy, forwarder, crossSite } = o
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
  const limiter = o.config.rate_limit.enabled
    ? new RateLimiter(store, o.config.rate_limit, log, () => o.metrics?.rateLimitStoreError?.())
    : null
  const signer = o.identity ?? null
  const EMPTY = Buffer.alloc(0)

  function ownRoute (ctx: Live): void {
    ctx.trace?.route(ctx.route!.path)
    ctx.res.setHeader('x-request-id', ctx.requestId)
  }

  function decisionRoute (ctx: Live): void {
    ctx.trace?.route(ctx.route!.path)
  }

  function upstreamRoute (ctx: Flow): void {
    if (forwarder === null) throw E.notFound()
    ctx.trace?.route('upstream')
  }

  /**
   * An access key with an allow-list (`--allow-ip`): the real client address
   * (trusted_proxies) must be in it, else 403 ip_not_allowed. Then, and only
   * then, the key counts as used (date_last_used, which auth.keys.disable_after
   * reads): a request refused here does not keep a key alive. No Redis round
   * trip on the request: the store writes at most once per key a minute, after.
   */
  function keyIp (ctx: Flow): void {
    const who = ctx.identity
    if (who?.method !== 'access_key') return
    if (who.keyAllowIps !== undefined && !allowList(who.keyAllowIps)(ctx.clientIp)) throw E.ipNotAllowed()
    // the request's own context is the audit context (no object made per request)
    keyUsed(store, audit, ctx, who.user, who.keyId)
  }

  /**
   * rate_limit (src/auth/rate-limit.ts): one store call counts the request; the
   * RateLimit fields go on the answer, whatever it is; over the limit, 429.
   */
  function rateLimitHeaders (ctx: Live): void | Promise<void> {
    if (ctx.identity !== undefined) return counted(ctx, ctx.identity)
  }

  async function counted (ctx: Live, who: Identity): Promise<void> {
    const headers = await limiter!.check(who)
    for (const name in headers) ctx.res.setHeader(name, headers[name])
  }

  function rateLimitCount (ctx: Flow): void | Promise<unknown> {
    if (ctx.identity !== undefined) return limiter!.check(ctx.identity)
  }

  /**
   * A signature that covers Digest or Content-Digest (src/auth/digest.ts):
   * the body is read whole, at most auth.signature.max_body bytes (413 above,
   * never buffered past that), checked (401 invalid_digest), and kept for the
   * route or the forwarder, which send these same bytes. The client that
   * waits for `100 Continue` gets it now: it is authenticated.
   */
  function digestRead (ctx: Live): void | Promise<void> {
    const id = ctx.identity
    if (id?.method === 'access_key' && id.digests !== undefined) return readAndCheck(ctx, id.digests)
  }

  async function readAndCheck (ctx: Live, digests: ExpectedDigest[]): Promise<void> {
    proceed(ctx)
    const body = await keepBody(ctx.req, maxBody)
    if (!bodyMatches(body, digests)) throw E.invalidDigest()
  }

  function digestEmpty (ctx: Flow): void {
    const id = ctx.identity
    if (id?.method === 'access_key' && id.digests !== undefined && !bodyMatches(EMPTY, id.digests)) throw E.invalidDigest()
  }

  function digestRefused (ctx: Live): void {
    const id = ctx.identity
    if (id?.method === 'access_key' && id.digests !== undefined) throw E.badRequest('A signature that covers Digest or Content-Digest cannot be decided here (the body stays at the proxy): send it through sidegate\'s proxy mode.')
  }

  /**
   * Browsers send cookies with a cross-origin WebSocket handshake and no
   * CORS applies; SameSite does not help against a sibling sub-domain.
   * Header credentials cannot be sent by another site's page.
   */
  function crossSiteCheck (ctx: Flow): void {
    if (ctx.identity?.method === 'session' && crossSite(ctx.req)) throw E.crossSite()
  }

  /**
   * identity.jwt: the signing keys read recently enough to sign (a
   * store read only at start or when stale; 503 when it fails).
   */
  function signingKeys (ctx: Flow): void | Promise<void> {
    if (ctx.identity !== undefined && !signer!.fresh) return signer!.ready()
  }

  /**
   * What the upstream gets (headers.ts upstreamHeaders, one pass): exactly the
   * resolved identity (none on a public path), none of sidegate's credentials,
   * the forwarding headers; a query `oid` (any spelling) names the resolved org.
   * After authentication: a signature covers the target as the client sent it.
   */
  function upstreamHeadersStep (ctx: Flow): void {
    const id = ctx.identity
    const upgrade = (ctx as Partial<Handshake>).socket !== undefined
    if (id === undefined) { ctx.upstream = upstreamHeaders(ctx.req, policy, ctx.requestId, undefined, upgrade); return }
    const orgId = ctx.orgId!
    const identity: string[] = []
    identityHeaders(policy, id, orgId, ctx.requestId, identity)
    ctx.upstream = upstreamHeaders(ctx.req, policy, ctx.requestId, identity, upgrade)
    if (ctx.req.url !== undefined) ctx.req.url = withResolvedOid(ctx.req.url, orgId)
  }

  /** The request and its body to the upstream, its answer back; 502/504 when it fails. */
  function forward (ctx: Live): void {
    proceed(ctx)
    // tracing: the upstream call's span, whose traceparent the upstream gets
    forwarder!.web(
      ctx.req, ctx.res, ctx.upstream!, ctx.requestId, (err) => fail(ctx, err), ctx.trace?.upstream(ctx.upstream!)
    )
  }

  function handler (ctx: Live): void | Promise<void> {
    // 100 Continue when the route starts reading the body (readBody), after its own checks
    if (ctx.expectsContinue === true) (ctx.req as ContinueHook)[BEFORE_BODY] = () => proceed(ctx)
    return ctx.route!.handle(ctx)
  }

  return {
    'route:own': ownRoute,
    'route:upstream': upstreamRoute,
    'route:decision': decisionRoute,
    keyIp,
    'rateLimit:headers': limiter === null ? null : rateLimitHeaders,
    'rateLimit:count': limiter === null ? null : rateLimitCount,
    'digest:read': digestRead,
    'digest:empty': digestEmpty,
    'digest:refused': digestRefused,
    crossSite: crossSiteCheck,
    signingKeys: signer === null ? null : signingKeys,
    upstreamHeaders: upstreamHeadersStep,
    forward,
    handler
  } satisfies Partial<Impl>
}

type ContinueHook = Live['req'] & { [BEFORE_BODY]?: () => void }

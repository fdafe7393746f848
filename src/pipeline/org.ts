/**
 * The org steps (src/pipeline/chains.ts STEPS.org): the org the authenticated
 * caller acts in, from `?oid=`, the org header or the user's default
 * (src/auth/org.ts), or 400 invalid_org / 403 org_forbidden / 404 org_not_found.
 */
import type { Impl } from './chains.js'
import type { Flow, Live, StepContext } from './context.js'
import { GatewayError } from '../errors.js'
import { memberOrg, requestedOrg, resolveOrg as resolveOrgOf } from '../auth/org.js'
import { PROFILE_PATH } from '../routes/users.js'
import type { PipelineOptions } from './options.js'

export function orgSteps (o: PipelineOptions) {
  const { store } = o
  const orgHeader = o.config.names.orgHeader
  const orgHeaderLower = orgHeader.toLowerCase()
  const unknownOrg = o.config.org.unknown

  /**
   * `own`: the user's default org, whatever the request asked for; `url`: whose
   * `?oid=` counts (a decision's original request).
   */
  function resolveOrg (ctx: StepContext, o: { own?: boolean, url?: string } = {}): Promise<string> {
    return resolveOrgOf(
      store,
      ctx.identity!.user,
      o.own === true ? undefined : requestedOrg(ctx.req, orgHeaderLower, orgHeader, o.url),
      unknownOrg
    )
  }

  /** resolveOrg, but undefined where it would be 403 or 404 (a malformed org is still 400). */
  async function orgIfMember (ctx: StepContext, url?: string): Promise<string | undefined> {
    try {
      return await resolveOrg(ctx, { url })
    } catch (err) {
      if (err instanceof GatewayError && (err.status === 403 || err.status === 404)) return undefined
      throw err
    }
  }

  /** The org asked for: at once (no promise) when the user is a member of it, the common case. */
  function member (ctx: Flow): void | Promise<void> {
    const url = ctx.original?.url
    const id = memberOrg(ctx.identity!.user, requestedOrg(ctx.req, orgHeaderLower, orgHeader, url))
    if (id !== undefined) ctx.orgId = id
    else return settle(ctx, resolveOrg(ctx, { url }))
  }

  async function settle (ctx: Flow, org: Promise<string | undefined>): Promise<void> {
    ctx.orgId = await org
  }

  /**
   * An upstream path's (none on a public one): the profile needs no
   * membership (as in JumpServer), the user's own org is sent instead.
   */
  function upstream (ctx: Flow): void | Promise<void> {
    if (ctx.identity === undefined) return
    if (ctx.target !== PROFILE_PATH) return member(ctx)
    return settle(ctx, profileOrg(ctx, ctx.original?.url))
  }

  async function profileOrg (ctx: StepContext, url?: string): Promise<string> {
    return await orgIfMember(ctx, url) ?? await resolveOrg(ctx, { own: true })
  }

  return {
    'org:member': member,
    'org:if-member': (ctx: Live) => settle(ctx, orgIfMember(ctx)),
    'org:upstream': upstream
  } satisfies Partial<Impl>
}

/**
 * The org the authenticated caller acts in: `?oid=`, the org header or the
 * user's default (src/auth/org.ts), or 400 invalid_org / 403 org_forbidden /
 * 404 org_not_found.
 */
import type { StepContext } from './context.js'
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
    return resolveOrgOf(store, ctx.identity!.user, o.own === true ? undefined : requestedOrg(ctx.req, orgHeaderLower, orgHeader, o.url), unknownOrg)
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

  /**
   * The org of an upstream path: the profile needs no membership (as in JumpServer), the user's own org is injected instead.
   * At once (no promise) when the user is a member of the org asked for, the common case.
   */
  function upstreamOrg (ctx: StepContext, path: string, url?: string): string | Promise<string> {
    if (path !== PROFILE_PATH) {
      const member = memberOrg(ctx.identity!.user, requestedOrg(ctx.req, orgHeaderLower, orgHeader, url))
      if (member !== undefined) return member
      return resolveOrg(ctx, { url })
    }
    return profileOrg(ctx, url)
  }

  async function profileOrg (ctx: StepContext, url?: string): Promise<string> {
    return await orgIfMember(ctx, url) ?? await resolveOrg(ctx, { own: true })
  }

  return { resolveOrg, orgIfMember, upstreamOrg }
}

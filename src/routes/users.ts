/**
 * Built-in demo API, served when no upstream is configured, so that
 * `npm start` works end to end: the caller's profile, and the users of the
 * resolved org (superusers and org admins only). With an upstream these are
 * JumpServer's paths on the protected service: not served, but documented
 * (src/routes/index.ts), as forwarded.
 */
import { E } from '../errors.js'
import { Type as T } from '@sinclair/typebox'
import { ROOT_ORG_ID } from '../auth/org.js'
import type { Store } from '../store/types.js'
import { profile, profileSchema } from './profile.js'
import type { ErrorAnswer } from './spec.js'
import { route, type Route } from './types.js'

export const PROFILE_PATH = '/api/v1/users/profile/'

/** `forwarded`: an upstream is configured and these paths are its (for the documentation). */
export function userRoutes (store: Store, forwarded = false, jumpserver = false): Route[] {
  const builtIn = forwarded
    ? 'Forwarded to the protected service with the resolved identity; sidegate answers only its own errors.'
    : 'Served by sidegate\'s built-in demo API (no upstream is configured).'
  const upstreamErrors: Record<number, ErrorAnswer> = forwarded ? { 502: 'UpstreamUnavailable', 504: 'UpstreamTimeout' } : {}
  const schema = profileSchema(jumpserver)
  return [route({
    method: 'GET',
    path: PROFILE_PATH,
    // as JumpServer: any user may read their profile in any org (org_roles are those of the org, if a member)
    auth: 'user+org-if-member',
    docs: {
      tags: ['Users'],
      operationId: 'getProfile',
      summary: 'The calling user\'s profile',
      description: builtIn,
      responses: {},
      errors: upstreamErrors
    },
    answers: { 200: { description: 'The profile.', schema } },
    handler (ctx, { reply }) {
      reply(200, profile(ctx.identity!.user, ctx.orgId, jumpserver))
    }
  }), route({
    method: 'GET',
    path: '/api/v1/users/users/',
    auth: 'user+org',
    docs: {
      tags: ['Users'],
      operationId: 'listUsers',
      summary: 'Users of the organization',
      description: `${builtIn} Superusers and organization admins only; in the root organization, every user.`,
      responses: {},
      errors: upstreamErrors
    },
    answers: { 200: { description: 'The users.', schema: T.Array(schema) } },
    async handler (ctx, { reply }) {
      const u = ctx.identity!.user
      const orgId = ctx.orgId!
      if (!u.is_superuser && u.orgs[orgId] !== 'admin') throw E.permissionDenied()
      const users = await store.users.list(orgId === ROOT_ORG_ID ? undefined : orgId)
      reply(200, users.map((x) => profile(x, orgId, jumpserver)))
    }
  })]
}

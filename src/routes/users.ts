/**
 * Built-in demo API, served when no upstream is configured, so that
 * `npm start` works end to end: the caller's profile, and the users of the
 * resolved org (superusers and org admins only).
 */
import { E } from '../errors.js'
import { sendJson } from '../respond.js'
import { ROOT_ORG_ID } from '../org.js'
import type { Store } from '../store/types.js'
import { profile } from './profile.js'
import type { Route } from './types.js'

export function userRoutes (store: Store): Route[] {
  return [{
    methods: ['GET', 'HEAD'],
    path: '/api/v1/users/profile/',
    auth: 'user+org',
    handle (ctx) {
      sendJson(ctx.res, 200, profile(ctx.identity!.user, ctx.orgId))
    }
  }, {
    methods: ['GET', 'HEAD'],
    path: '/api/v1/users/users/',
    auth: 'user+org',
    async handle (ctx) {
      const u = ctx.identity!.user
      const orgId = ctx.orgId!
      if (!u.is_superuser && u.orgs[orgId] !== 'admin') throw E.permissionDenied()
      const users = await store.listUsers(orgId === ROOT_ORG_ID ? undefined : orgId)
      sendJson(ctx.res, 200, users.map((x) => profile(x, orgId)))
    }
  }]
}

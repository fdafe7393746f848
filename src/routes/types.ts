import type { RequestContext } from '../pipeline/context.js'
import type { RouteDocs } from './spec.js'

export type { RequestContext }

/**
 * What the pipeline does before a route's handler runs (the chain of the
 * mode, src/pipeline/chains.ts CHAINS):
 * - `none`: nothing; no credential is looked at. Health checks, the token
 *   endpoint and `POST /login` (they check a password), `POST /logout` (it
 *   ends the session its cookie names, with its own CSRF check), the
 *   documentation and static files.
 * - `user`: the authenticate step: one of the four credentials, else 401
 *   (403 for a session's missing CSRF token); `ctx.identity` is set.
 *   The caller's own credentials: no organization is involved.
 * - `user+org`: `user`, then the org step (400 or 403 when the
 *   requested organization is malformed or not the user's); `ctx.orgId` is set.
 * - `user+org-if-member`: `user`, then the org as `user+org` resolves it when
 *   the user may act in it; an org the user may not act in (403) or that does
 *   not exist (404) leaves `ctx.orgId` unset instead (the profile, which
 *   JumpServer serves in any org).
 * - `session-page`: an HTML page for browsers. Only a browser session counts
 *   (a request with an Authorization header has none); `ctx.identity` is set
 *   when the session is valid and left unset otherwise, and the page decides
 *   (the keys page sends the browser to sign in, the sign-in page goes on when
 *   already signed in). Only a failing store refuses the request.
 * - `decision`: a forward-auth decision (/_sidegate/auth): `user+org` over
 *   the original request the proxy in front describes (its method and URI;
 *   nothing on a public path); `ctx.decision` is set to the identity headers.
 */
export type RouteAuth = 'none' | 'user' | 'user+org' | 'user+org-if-member' | 'session-page' | 'decision'

export interface Route {
  /** `['*']`: any method */
  methods: string[]
  path: string
  /** `path` is a prefix (ending in "/"): the route serves every path under it */
  prefix?: boolean
  auth: RouteAuth
  /** its OpenAPI operations and schemas (src/routes/spec.ts); null for what is not API (static files) */
  docs: RouteDocs | null
  handle (ctx: RequestContext): Promise<void> | void
}

import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Identity } from '../auth/index.js'

export interface RouteContext {
  req: IncomingMessage
  res: ServerResponse
  /** path without the query string */
  path: string
  requestId: string
  clientIp: string
  /** the client reached us over HTTPS (own TLS, or a trusted proxy said so) */
  https: boolean
  /** set on protected routes */
  identity?: Identity
  orgId?: string
}

export interface Route {
  methods: string[]
  path: string
  /** `path` is a prefix (ending in "/"): the route serves every path under it */
  prefix?: boolean
  /** public routes run before authentication */
  public: boolean
  /** protected routes that do not act in an organization skip org resolution (ctx.orgId stays unset) */
  noOrg?: boolean
  handle (ctx: RouteContext): Promise<void> | void
}

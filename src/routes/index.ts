/**
 * The router: sidegate's own routes, in one list, and the lookup. A path is
 * one of three things: one of these routes (its `auth` mode says what the
 * pipeline checks first), an upstream path in `upstream.public_paths` (no
 * credential), or any other upstream path (a credential and an organization).
 * Without an upstream, a path that is none of the routes is 404.
 */
import { publicUpstream } from '../access/public.js'
import type { IncomingMessage } from 'node:http'
import { configWarningList, type Config } from '../config/index.js'
import { E } from '../errors.js'
import type { Auditor } from '../observability/audit.js'
import type { Authenticators } from '../auth/index.js'
import { PasswordChecker } from '../auth/passwords.js'
import type { Store } from '../store/types.js'
import { accountApiRoutes, accountPageRoute } from './account.js'
import { accountMfaRoutes } from './account-mfa.js'
import { passwordRoutes } from './account-password.js'
import { decisionRoutes } from './decision.js'
import { docsRoutes } from './docs.js'
import { errorPageRoute } from './error-page.js'
import { healthRoutes } from './health.js'
import type { IdentitySigner } from '../forward/identity.js'
import { jwksRoute } from './jwks.js'
import { buildOpenApi } from './openapi.js'
import type { SessionScope } from '../pipeline/sso.js'
import { homeRoute, JMS_LOGIN_PATH, JMS_LOGOUT_PATH, LOGIN_PATH, LOGOUT_PATH, loginRoutes } from './login.js'
import { docsAssets, ownAssets } from './static.js'
import { tokenRoutes } from './token.js'
import { SecondFactor } from '../auth/mfa.js'
import { PasskeyCeremonies } from '../auth/passkeys.js'
import type { RequestContext, Route, ServedRoute } from './types.js'
import { userRoutes } from './users.js'
import { readValidBody, refusal } from './body.js'
import { sendJson } from '../respond.js'
import { isTemplate, matchTemplate, parseTemplate, type PathTemplate } from '../http/path-template.js'
import { Router as PathRouter } from '../http/router.js'
import { FormatRegistry, type TObject } from '@sinclair/typebox'
import { isUuid } from '../http/uuid.js'
import { Value } from '@sinclair/typebox/value'
import type { Directories } from '../auth/ldap/index.js'
import type { OidcProviders } from '../auth/oidc/index.js'

export type { Route, RouteAuth, RequestContext, ServedRoute } from './types.js'

export interface RouterOptions {
  config: Config
  store: Store
  auth: Authenticators
  /** src/pipeline/origin.ts: a browser's request from another site */
  crossSite: (req: IncomingMessage) => boolean
  /** session.cookies as requests see them (src/pipeline/sso.ts) */
  sso: SessionScope
  /** the gateway is draining (/readyz answers 503) */
  draining: () => boolean
  /** a further condition of /readyz (the first-start bootstrap) */
  ready?: () => Promise<void>
  /** identity.jwt enabled: its signer (the JWKS route) */
  identity?: IdentitySigner | null
  /** the audit trail (src/observability/audit.ts) */
  audit?: Auditor
  /** sign_in.ldap (made once per process: its servers' state outlives a reload) */
  directories?: Directories | null
  /** sign_in.oidc (made once per process: a provider's discovery outlives a reload) */
  oidc?: OidcProviders | null
}

export interface Router {
  /** sidegate's own routes, in lookup order */
  readonly routes: readonly ServedRoute[]
  /**
   * The route for this path and method (HEAD: the GET route); null when sidegate
   * does not serve the path; throws 405 for a known path and another method.
   */
  find (path: string, method: string): ServedRoute | null
  /** An upstream path that needs no credential (upstream.public_paths, and no dot segment). */
  isPublicUpstream (path: string): boolean
}

export function createRouter (o: RouterOptions): Router {
  const { config, store, auth, crossSite } = o
  const upstream = config.upstream.url !== null
  // off (audit.log and audit.stream false): the routes do not even look up what an event would name
  const audit = o.audit?.off === false ? o.audit : undefined
  const passwords = new PasswordChecker(store, config.auth.lockout, audit, config.auth.password_checks, o.directories)
  const mfa = new SecondFactor(store, config.auth.mfa, config.auth.lockout, audit ?? null)
  const passkeys = new PasskeyCeremonies(store, config.auth.webauthn, config.auth.lockout, audit ?? null)
  const assets = ownAssets()
  const bodyLimit = config.server.body_limit
  const users = userRoutes(store, upstream, config.names.jumpserver)
  let document: Record<string, unknown> | undefined
  const declared: Route[] = [
    ...healthRoutes(store, o.draining, o.ready, configWarningList(config).filter((w) => w.code.startsWith('signature_')).map((w) => w.code)),
    ...decisionRoutes(config),
    errorPageRoute(),
    ...tokenRoutes(store, passwords, {
      ttl: config.auth.bearer.ttl,
      singleUse: config.auth.bearer.single_use,
      jumpserver: config.names.jumpserver,
      crossSite,
      audit,
      store,
      mfa,
      mfaCookie: config.names.mfaCookie,
      cookieSecure: config.session.cookie_secure
    }),
    ...jumpServerPaths(
      config,
      loginRoutes({
        config, store, auth, passwords, assets, crossSite, audit, mfa, passkeys, sso: o.sso, providers: o.oidc
      })
    ),
    accountPageRoute(config, assets),
    ...accountMfaRoutes({ config, store, auth, assets, mfa, audit, crossSite, passkeys, passwords }),
    ...passwordRoutes({ config, store, auth, assets, passwords, audit, crossSite, sso: o.sso }),
    ...accountApiRoutes(store, passwords, audit),
    assets.route(),
    ...(o.identity != null ? [jwksRoute(o.identity, config.names.identityHeader)] : []),
    ...(config.docs.enabled ? docsRoutes(config, docsAssets(), () => document!) : []),
    // without an upstream: a small built-in API, and the gateway's address leads a person to sign in
    ...(upstream ? [] : [...users, homeRoute()])
  ]
  // The document: every route, and with an upstream the JumpServer paths it serves (forwarded, not sidegate's).
  if (config.docs.enabled) document = buildOpenApi(config, upstream ? [...declared, ...users] : declared)
  const routes = declared.map((r) => served(r, bodyLimit))

  // the lookup both listeners share (src/http/router.ts): exact, then templates, then prefixes
  const lookup = new PathRouter(routes)
  const isPublicUpstream = publicUpstream(config.upstream.public_paths)

  return {
    routes,
    find (path, method) {
      const found = lookup.find(path, method)
      if (found === null) return null
      if (found === 'missing') throw E.notFound()
      if (found.route === undefined) {
        throw E.methodNotAllowed(
          [...new Set(found.group.flatMap((x) => x.method === 'GET' ? ['GET', 'HEAD'] : [x.method]))].join(', ')
        )
      }
      return found.route
    },
    isPublicUpstream
  }
}

const NO_INPUT = Object.freeze({ body: {}, failures: [], pre: undefined, params: {}, reply: noReply })

function noReply (): never { throw new Error('reply: the route declares no answers') }

type Headers = Record<string, string | string[]>

/** Input.reply: sends a declared answer as JSON (its schema typed the body at compile time). */
function replyTo (ctx: RequestContext): (status: number, answer: unknown, headers?: Headers) => void {
  return (status, answer, headers) => { sendJson(ctx.res, status, answer, headers) }
}

/**
 * A route as served: its path's parameters (a value that fails Route.params
 * names nothing: 404), preValidation, then (when it takes a body) the body read
 * within server.body_limit, decoded and checked against its schema (the
 * first failing field refused, unless attachValidation), then the handler.
 */
function served (r: Route, bodyLimit: number): ServedRoute {
  const body = r.body
  const template = isTemplate(r.path) ? parseTemplate(r.path) : undefined
  if (template !== undefined && r.params !== undefined) {
    const declared = Object.keys(r.params.properties).sort().join()
    if (declared !== [...template.names].sort().join()) throw new Error(`route ${r.path}: params declares ${declared}`)
  }
  const replies = r.answers !== undefined && Object.keys(r.answers).length > 0
  // no promise unless the handler makes one (most GET routes answer at once)
  if (body === undefined && r.preValidation === undefined && template === undefined) {
    if (!replies) return { ...r, template, handle: (ctx) => r.handler(ctx, NO_INPUT) }
    return { ...r, template, handle: (ctx) => r.handler(ctx, { ...NO_INPUT, reply: replyTo(ctx) }) }
  }
  return {
    ...r,
    template,
    async handle (ctx: RequestContext) {
      const params = template === undefined ? {} : paramsOf(template, r.params, ctx.path)
      const reply = replies ? replyTo(ctx) : noReply
      const pre = r.preValidation === undefined ? undefined : await r.preValidation(ctx, params)
      if (body === undefined) return await r.handler(ctx, { ...NO_INPUT, pre, params, reply })
      const { fields, failures } = await readValidBody(ctx, body, bodyLimit)
      if (failures.length > 0 && body.attachValidation !== true) throw refusal(body, failures[0])
      await r.handler(ctx, { body: fields, failures, pre, params, reply })
    }
  }
}

// a path parameter's `format: 'uuid'`: the spellings the store's ids take (src/http/uuid.ts)
if (!FormatRegistry.Has('uuid')) FormatRegistry.Set('uuid', isUuid)

/** The path's parameters, valid by `schema`; else 404 (400 for a segment that is not valid percent-encoding). */
function paramsOf (template: PathTemplate, schema: TObject | undefined, path: string): Record<string, string> {
  let params: Record<string, string> | null
  try {
    params = matchTemplate(template, path.split('/'))
  } catch {
    throw E.badRequest('A path segment is not valid percent-encoding.')
  }
  if (params === null || (schema !== undefined && !Value.Check(schema, params))) throw E.notFound()
  return params
}

/**
 * `compat: jumpserver`: the login routes, and at JumpServer's Django paths the
 * same form and handlers (jms-cli posts its login form there); not in the
 * OpenAPI document twice.
 */
function jumpServerPaths (config: Config, routes: Route[]): Route[] {
  if (config.compat !== 'jumpserver') return routes
  const at = (path: string, method: string, as: string): Route[] => routes.filter(
    (r) => r.path === path && r.method === method
  ).map((r) => ({ ...r, path: as, docs: null }))
  return [
    ...routes,
    ...at(LOGIN_PATH, 'GET', JMS_LOGIN_PATH),
    ...at(LOGIN_PATH, 'POST', JMS_LOGIN_PATH),
    ...at(LOGOUT_PATH, 'POST', JMS_LOGOUT_PATH)
  ]
}

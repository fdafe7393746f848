/**
 * The admin API: JSON over HTTP under /admin/v1/ on the admin listener
 * (src/admin/listener.ts, admin.host:admin.port; never the public port),
 * only when admin.enabled. Every operation is declared once (src/admin/operation.ts),
 * the same code as `sidegate user|org|key|token|session|limit …`, so checks,
 * effects and JSON are the CLI's (`--json`).
 *
 * Every call but GET /admin/v1/openapi.json needs a superuser's access-key
 * signature or private token, verified by the gateway's own authenticators
 * (src/auth/: expiry, the key's IP allow-list, disabled users, as on the
 * public port; a signed digest of any body and the replay cache always,
 * adminAuthConfig): no credential 401
 * not_authenticated, another kind (bearer token, session cookie) 401
 * unsupported_scheme, a user who is not a superuser 403 permission_denied.
 * Bodies are JSON objects checked against the schemas the document
 * publishes (an unknown field is 400). The operations are declared in
 * their resources' files (./operations.ts lists them), with their
 * command-line forms. Secrets (an access key's, a private
 * token) are in the answer that creates them, never again.
 */
import type http from 'node:http'
import { Value } from '@sinclair/typebox/value'
import { ValueErrorType } from '@sinclair/typebox/errors'
import { Authenticators, type Identity } from '../auth/index.js'
import { ADMIN_KINDS } from '../auth/credentials.js'
import { bodyMatches } from '../auth/digest.js'
import { keepBody, readBody } from '../body.js'
import type { Config } from '../config/index.js'
import { nodeAt } from '../config/schema.js'
import { E, GatewayError, UsageError } from '../errors.js'
import { clientIp, headerPolicy, trustedProxies, type HeaderPolicy } from '../pipeline/headers.js'
import { requestId } from '../http/request-id.js'
import { isJsonType, mediaType } from '../http/content-type.js'
import { pathOf } from '../http/query.js'
import { matchTemplate, parseTemplate, PathSegmentError } from '../http/path-template.js'
import { Router } from '../http/router.js'
import type { Logger } from '../observability/log.js'
import { sendError, sendJson } from '../respond.js'
import type { Store } from '../store/types.js'
import { ADMIN_PREFIX, ADMIN_ROUTES, AdminOps, API_LABELS, type AdminRoute, type Method } from './operations.js'
import { keyUsed, type Auditor } from '../observability/audit.js'
import { adminOpenApi } from './openapi.js'

export { ADMIN_PREFIX, ADMIN_ROUTES } from './operations.js'
export const ADMIN_OPENAPI_PATH = `${ADMIN_PREFIX}openapi.json`

/** The credentials the admin API takes, and its 401s' WWW-Authenticate. */
const ADMIN_METHODS = ADMIN_KINDS.map((k) => k.method)
const ADMIN_CHALLENGES = ADMIN_KINDS.flatMap((k) => k.challenge === null ? [] : [k.challenge])

/** What the admin API reads from the gateway on every call: after a live reload, the new config's. */
export interface AdminGatewayView {
  /** the config in force (src/pipeline/server.ts Gateway.config) */
  readonly config: Config
}

/**
 * The config the admin API verifies with: the public port's, but a signed
 * call with a body must sign its digest and each signature counts once,
 * whatever auth.signature says; else a captured call could be replayed, or
 * sent again with another body (a new superuser), within the skew. No grace
 * for a repeated GET and no Date window. And `compat:` relaxes nothing here: a
 * clock skew only compat set (0, no freshness) is the schema's default for the
 * admin API; one set explicitly stays.
 */
export function adminAuthConfig (config: Config): Config {
  const skew = config.sources['auth.signature.clock_skew'] === 'compat' ? nodeAt('auth.signature.clock_skew')!.default as number : config.auth.signature.clock_skew
  const signature = {
    ...config.auth.signature,
    clock_skew: skew,
    replay_cache: true,
    require_digest: true,
    replay_grace: 0,
    date_window: 0
  }
  return { ...config, auth: { ...config.auth, signature } }
}

export interface AdminApiOptions {
  /** the gateway, read per call, so a live reload applies here as on the public port */
  gateway: AdminGatewayView
  store: Store
  log: Logger
  /** the gateway's audit trail: the operations' credential events, the superuser as actor */
  audit?: Auditor
}

export interface AdminApi {
  /** A request under ADMIN_PREFIX. */
  handle (req: http.IncomingMessage, res: http.ServerResponse): void
}

interface Match { route: AdminRoute, params: Record<string, string> }

/** The methods in the order Allow lists them. */
const METHODS: readonly Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']

/** The operations' paths (under ADMIN_PREFIX), looked up as the public port's routes are (src/http/router.ts). */
const ROUTER = new Router(ADMIN_ROUTES)
const TEMPLATES = new Map(ADMIN_ROUTES.map((route) => [route, parseTemplate(route.path)]))

/**
 * The route and its parameters, or null (404); throws 400 for a path segment
 * that does not decode, then 405 for a known path with another method.
 */
function find (rest: string, method: string): Match | null {
  const group = ROUTER.group(rest)
  if (group === null || group.length === 0) return null
  const segments = rest.split('/')
  const found: Match[] = []
  for (const route of group) {
    let params: Record<string, string> | null
    try {
      params = matchTemplate(TEMPLATES.get(route)!, segments)
    } catch (err) {
      if (!(err instanceof PathSegmentError)) throw err
      throw E.badRequest(`The path segment "${err.segment.slice(0, 100)}" is not valid percent-encoding.`)
    }
    if (params !== null) found.push({ route, params })
  }
  const m = found.find((x) => Router.pick([x.route], method) !== undefined)
  if (m === undefined) throw E.methodNotAllowed(METHODS.filter((x) => found.some((f) => f.route.method === x)).join(', '))
  return m
}

/** The body as the route's schema says: a JSON object, else 400 (415 for another media type). */
async function bodyOf (req: http.IncomingMessage, route: AdminRoute, limit: number): Promise<Record<string, unknown>> {
  const raw = await readBody(req, limit)
  if (route.body === undefined) return {}
  const type = mediaType(req.headers['content-type'])
  if (raw.length > 0 && type !== '' && !isJsonType(type)) throw E.jsonOnly()
  let v: unknown = {}
  if (raw.length > 0) {
    try { v = JSON.parse(raw.toString('utf8')) } catch { throw E.notJson() }
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw E.notJsonObject()
  const e = Value.Errors(route.body, v).First()
  if (e !== undefined) {
    const field = e.path.slice(1).replace(/\//g, '.')
    if (e.type === ValueErrorType.ObjectRequiredProperty) throw E.missingField(field)
    if (e.type === ValueErrorType.ObjectAdditionalProperties) throw E.badRequest(`${field}: unknown field.`)
    throw E.badRequest(`${field}: ${e.message}.`)
  }
  return v as Record<string, unknown>
}

export function createAdminApi (o: AdminApiOptions): AdminApi {
  const { gateway, store, log, audit } = o
  /** What a call derives from the config in force, built again only when a live reload replaced it. */
  let derived: { config: Config, policy: HeaderPolicy, auth: Authenticators, document?: Buffer } | undefined
  const inForce = (): NonNullable<typeof derived> => {
    const config = gateway.config
    if (derived?.config !== config) {
      derived = {
        config,
        policy: headerPolicy(config),
        auth: new Authenticators(store, adminAuthConfig(config))
      }
    }
    return derived
  }

  /** A superuser, by the gateway's own verification; else 401 or 403. */
  async function superuser (
    req: http.IncomingMessage, ip: string, reqId: string, { config, auth }: NonNullable<typeof derived>
  ): Promise<Identity> {
    const who = await auth.authenticate(req, undefined, ADMIN_METHODS)
    const key = who.method === 'access_key' ? who : undefined
    if (key?.keyAllowIps !== undefined && !trustedProxies(key.keyAllowIps)(ip)) throw E.ipNotAllowed()
    if (key?.digests !== undefined &&
      !bodyMatches(await keepBody(req, config.auth.signature.max_body), key.digests)) throw E.invalidDigest()
    if (!who.user.is_superuser) throw E.notSuperuser()
    // as on the public port: the key counts as used (auth.keys.disable_after), its first use audited
    if (key !== undefined) {
      keyUsed(
        store, audit ?? null, { clientIp: ip, requestId: reqId, identity: who }, who.user, key.keyId
      )
    }
    return who
  }

  async function serve (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    path: string,
    ip: string,
    reqId: string,
    done: (who?: Identity) => void
  ): Promise<void> {
    const method = req.method ?? 'GET'
    const now = inForce()
    const { config } = now
    if (path === ADMIN_OPENAPI_PATH && (method === 'GET' || method === 'HEAD')) {
      const document = now.document ??= Buffer.from(JSON.stringify(adminOpenApi(config, ADMIN_ROUTES), null, 2))
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': document.length, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' })
      res.end(method === 'HEAD' ? undefined : document)
      return
    }
    const who = await superuser(req, ip, reqId, now)
    done(who)
    const m = find(path.slice(ADMIN_PREFIX.length), method)
    if (m === null) throw E.notFound()
    const body = await bodyOf(req, m.route, config.server.body_limit)
    const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '')
    // the operations' audit events name this request and its superuser
    const ctx = { clientIp: ip, requestId: reqId, identity: who }
    const ops = new AdminOps(
      store, config, API_LABELS, audit === undefined ? undefined : (r) => { audit.record({ ...r, ctx }) }
    )
    let out: unknown
    try {
      out = await m.route.run(ops, { params: m.params, body, query })
    } catch (err) {
      throw err instanceof UsageError ? E.fromUsage(err) : err
    }
    sendJson(res, m.route.status, out)
  }

  return {
    handle (req, res) {
      const start = process.hrtime.bigint()
      const reqId = requestId(req)
      res.setHeader('x-request-id', reqId)
      const path = pathOf(req.url ?? '/')
      const ip = clientIp(req, inForce().policy)
      let who: Identity | undefined
      let code: string | undefined
      // one line per call, like the access log of the public port (never a credential or a body)
      res.once('close', () => {
        log.info({ reqId, method: req.method, path, status: res.headersSent ? res.statusCode : 499, ms: Number(process.hrtime.bigint() - start) / 1e6, userId: who?.user.id, authMethod: who?.method, code, ip }, 'admin request')
      })
      serve(req, res, path, ip, reqId, (w) => { who = w }).catch((err: unknown) => {
        if (!(err instanceof GatewayError)) log.error({ reqId, err: (err as Error)?.message }, 'admin request failed')
        code = sendError(res, err, undefined, ADMIN_CHALLENGES).code
      })
    }
  }
}

/**
 * The admin API: JSON over HTTP under /admin/v1/ on the admin listener
 * (src/admin/listener.ts, admin.host:admin.port; never the public port),
 * only when admin.enabled. Every operation is AdminOps's (src/admin/ops.ts),
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
 * publishes (an unknown field is 400). Secrets (an access key's, a private
 * token) are in the answer that creates them, never again.
 */
import type http from 'node:http'
import { Type as T, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { ValueErrorType } from '@sinclair/typebox/errors'
import { Authenticators, CHALLENGES, type Identity } from '../auth/index.js'
import { bodyMatches } from '../auth/digest.js'
import { keepBody, readBody } from '../body.js'
import type { Config } from '../config/index.js'
import { E, GatewayError, UsageError } from '../errors.js'
import { clientIp, headerPolicy, requestId, trustedProxies, type HeaderPolicy } from '../pipeline/headers.js'
import { isJsonType, mediaType } from '../http/content-type.js'
import { pathOf } from '../http/query.js'
import type { Logger } from '../observability/log.js'
import { sendError, sendJson } from '../respond.js'
import type { Store } from '../store/types.js'
import { AdminOps, type Labels } from './ops.js'
import { keyUsed, type Auditor } from '../observability/audit.js'
import { adminOpenApi, type DocumentedRoute } from './openapi.js'

export const ADMIN_PREFIX = '/admin/v1/'
export const ADMIN_OPENAPI_PATH = `${ADMIN_PREFIX}openapi.json`

/** Messages name inputs as the JSON bodies do. */
const API_LABELS: Labels = {
  expires: 'expires',
  allowIp: 'allow_ips',
  name: 'name',
  org: 'orgs',
  id: 'id',
  orgHint: '',
  tokenCreate: (u) => `POST ${ADMIN_PREFIX}users/${encodeURIComponent(u)}/private-token`,
  tokenRevoke: (u) => `DELETE ${ADMIN_PREFIX}users/${encodeURIComponent(u)}/private-token`
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** One operation: its method, path template and documentation (DocumentedRoute), and what it does. */
export interface AdminRoute extends DocumentedRoute {
  method: Method
  /** 201 for what creates a record, else 200 */
  status: 200 | 201
  tag: 'Users' | 'Organizations' | 'Access keys' | 'Private tokens' | 'Sessions' | 'Rate limits'
  run: (ops: AdminOps, p: Record<string, string>, body: Record<string, any>, query: URLSearchParams) => Promise<unknown>
}

const obj = (props: Record<string, TSchema>, description?: string): TSchema =>
  T.Object(props, { additionalProperties: false, ...(description === undefined ? {} : { description }) })
/** A string; its content is AdminOps's to check (the CLI's checks and messages). */
const text = (description: string): TSchema => T.String({ description })

/** Every operation, in the order the document lists them. */
export const ADMIN_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: 'users',
    status: 200,
    tag: 'Users',
    operationId: 'listUsers',
    summary: 'List users (`sidegate user list`)',
    query: { org: 'Only the members of this organization (a UUID).' },
    answer: 'UserList',
    errors: [],
    run: async (ops, _p, _b, q) => await ops.listUsers(q.get('org') ?? undefined)
  },
  {
    method: 'POST',
    path: 'users',
    status: 201,
    tag: 'Users',
    operationId: 'createUser',
    summary: 'Create a user (`sidegate user add`)',
    body: obj({
      username: text('1 to 150 letters (any script), digits and @ . + - _.'),
      password: text('At least 8 characters.'),
      email: T.Optional(T.String()),
      name: T.Optional(T.String()),
      superuser: T.Optional(T.Boolean()),
      orgs: T.Optional(T.Record(T.String(), T.String(), { description: 'org id → role: `admin`, `user` (or `none`: no membership).' }))
    }),
    answer: 'User',
    errors: ['org_not_found', 'user_exists'],
    run: async (ops, _p, b) => await ops.createUser({
      username: b.username,
      password: b.password,
      email: b.email,
      name: b.name,
      superuser: b.superuser,
      orgs: Object.entries(b.orgs ?? {}).map(([id, role]) => ({ id, role: String(role) }))
    })
  },
  {
    method: 'GET',
    path: 'users/{username}',
    status: 200,
    tag: 'Users',
    operationId: 'getUser',
    summary: 'Show a user',
    answer: 'User',
    errors: ['not_found'],
    run: async (ops, p) => await ops.showUser(p.username)
  },
  {
    method: 'PATCH',
    path: 'users/{username}',
    status: 200,
    tag: 'Users',
    operationId: 'setUserActive',
    summary: 'Disable or enable a user (`sidegate user disable|enable`)',
    description: 'Disabling also ends the user\'s sessions and evicts their cached credentials on every replica: every credential of theirs is refused at once (401 user_inactive).',
    body: obj({ is_active: T.Boolean() }),
    answer: 'UserActive',
    errors: ['not_found'],
    run: async (ops, p, b) => await ops.setActive(p.username, b.is_active)
  },
  {
    method: 'PUT',
    path: 'users/{username}/password',
    status: 200,
    tag: 'Users',
    operationId: 'setPassword',
    summary: 'Set a user\'s password (`sidegate user passwd`)',
    description: 'Also ends the user\'s sessions and unused bearer tokens on every replica; private tokens and access keys stay.',
    body: obj({ password: text('At least 8 characters.') }),
    answer: 'UserRef',
    errors: ['not_found'],
    run: async (ops, p, b) => await ops.setPassword(p.username, b.password)
  },
  {
    method: 'PUT',
    path: 'users/{username}/orgs/{org_id}',
    status: 200,
    tag: 'Users',
    operationId: 'setMembership',
    summary: 'Make a user a member of an organization, or change the role (`sidegate user grant --org ID:ROLE`)',
    body: obj({ role: text('`admin` or `user` (`none` ends the membership).') }),
    answer: 'User',
    errors: ['not_found', 'org_not_found'],
    run: async (ops, p, b) => await ops.grant(p.username, [{ id: p.org_id, role: b.role }])
  },
  {
    method: 'DELETE',
    path: 'users/{username}/orgs/{org_id}',
    status: 200,
    tag: 'Users',
    operationId: 'removeMembership',
    summary: 'End a user\'s membership of an organization (`sidegate user grant --org ID:none`)',
    answer: 'User',
    errors: ['not_found', 'org_not_found'],
    run: async (ops, p) => await ops.grant(p.username, [{ id: p.org_id, role: 'none' }])
  },
  {
    method: 'GET',
    path: 'orgs',
    status: 200,
    tag: 'Organizations',
    operationId: 'listOrgs',
    summary: 'List organizations (`sidegate org list`)',
    answer: 'OrgList',
    errors: [],
    run: async (ops) => await ops.listOrgs()
  },
  {
    method: 'POST',
    path: 'orgs',
    status: 201,
    tag: 'Organizations',
    operationId: 'createOrg',
    summary: 'Create an organization (`sidegate org add`)',
    body: obj({ name: text('Its name: 1 to 128 characters.'), id: T.Optional(text('A UUID of your choosing; default: a new one.')) }),
    answer: 'Org',
    errors: ['org_exists'],
    run: async (ops, _p, b) => await ops.createOrg(b.name, b.id)
  },
  {
    method: 'GET',
    path: 'users/{username}/access-keys',
    status: 200,
    tag: 'Access keys',
    operationId: 'listAccessKeys',
    summary: 'List a user\'s access keys (`sidegate key list`)',
    description: 'With name, expiry, allow-list, rate limit and when each was last used; never a secret.',
    answer: 'AccessKeyList',
    errors: ['not_found'],
    run: async (ops, p) => await ops.listKeys(p.username)
  },
  {
    method: 'POST',
    path: 'users/{username}/access-keys',
    status: 201,
    tag: 'Access keys',
    operationId: 'createAccessKey',
    summary: 'Create an access key for a user (`sidegate key create`)',
    description: 'The answer holds the AccessKeySecret: the only time it is shown.',
    body: obj({
      expires: T.Optional(text('`90d` (days from now) or `2027-01-31` (through that day, UTC); after it the key is refused (401 key_expired). Absent: never.')),
      allow_ips: T.Optional(T.Array(T.String(), { description: 'Addresses or CIDR ranges the key may be used from (403 ip_not_allowed from others). Absent: anywhere.' })),
      name: T.Optional(text('A label, at most 128 characters.'))
    }),
    answer: 'AccessKeyCreated',
    errors: ['not_found', 'too_many_keys'],
    run: async (ops, p, b) => await ops.createKey(p.username, { expires: b.expires, allow_ips: b.allow_ips, name: b.name })
  },
  {
    method: 'PATCH',
    path: 'access-keys/{id}',
    status: 200,
    tag: 'Access keys',
    operationId: 'setAccessKeyActive',
    summary: 'Disable or enable an access key (`sidegate key disable|enable`)',
    description: 'A disabled key\'s correctly signed requests are 401 key_disabled on every replica; enabling it again also restarts its count of unused days (auth.keys.disable_after).',
    body: obj({ is_active: T.Boolean() }),
    answer: 'AccessKeyActive',
    errors: ['not_found'],
    run: async (ops, p, b) => await ops.setKeyActive(p.id, b.is_active)
  },
  {
    method: 'DELETE',
    path: 'access-keys/{id}',
    status: 200,
    tag: 'Access keys',
    operationId: 'revokeAccessKey',
    summary: 'Revoke (delete) an access key (`sidegate key revoke`)',
    description: 'Every replica refuses it within a second.',
    answer: 'Revoked',
    errors: ['not_found'],
    run: async (ops, p) => await ops.revokeKey(p.id)
  },
  {
    method: 'POST',
    path: 'users/{username}/private-token',
    status: 201,
    tag: 'Private tokens',
    operationId: 'createPrivateToken',
    summary: 'Create or replace a user\'s private token (`sidegate token create`)',
    description: 'The answer holds the token: the only time the admin API shows it. A previous token stops working at once.',
    answer: 'PrivateTokenCreated',
    errors: ['not_found'],
    run: async (ops, p) => await ops.createToken(p.username)
  },
  {
    method: 'DELETE',
    path: 'users/{username}/private-token',
    status: 200,
    tag: 'Private tokens',
    operationId: 'revokePrivateToken',
    summary: 'Revoke a user\'s private token (`sidegate token revoke`)',
    answer: 'TokenRevoked',
    errors: ['not_found'],
    run: async (ops, p) => await ops.revokeToken(p.username)
  },
  {
    method: 'GET',
    path: 'users/{username}/sessions',
    status: 200,
    tag: 'Sessions',
    operationId: 'listSessions',
    summary: 'List a user\'s browser sessions (`sidegate session list`)',
    description: 'A session\'s `id` is its keyed hash in the store, not its cookie: it names the session and cannot be used as one.',
    answer: 'SessionList',
    errors: ['not_found'],
    run: async (ops, p) => await ops.listSessions(p.username)
  },
  {
    method: 'DELETE',
    path: 'users/{username}/sessions',
    status: 200,
    tag: 'Sessions',
    operationId: 'revokeSessions',
    summary: 'End every session of a user (`sidegate session revoke --all`)',
    answer: 'SessionsRevoked',
    errors: ['not_found'],
    run: async (ops, p) => await ops.revokeSessions(p.username)
  },
  {
    method: 'DELETE',
    path: 'users/{username}/sessions/{id}',
    status: 200,
    tag: 'Sessions',
    operationId: 'revokeSession',
    summary: 'End one session of a user (`sidegate session revoke`)',
    description: 'On every replica at once: the cookie is refused (401 invalid_session) from the next request on.',
    answer: 'SessionRevoked',
    errors: ['not_found'],
    run: async (ops, p) => await ops.revokeSession(p.username, p.id)
  },
  {
    method: 'GET',
    path: 'rate-limits',
    status: 200,
    tag: 'Rate limits',
    operationId: 'listRateLimits',
    summary: 'The configured rate limits and every user and key with its own (`sidegate limit list`)',
    answer: 'RateLimits',
    errors: [],
    run: async (ops) => await ops.listLimits()
  },
  {
    method: 'PUT',
    path: 'rate-limits/{target}',
    status: 200,
    tag: 'Rate limits',
    operationId: 'setRateLimit',
    summary: 'Set the own rate limit of a user or an access key (`sidegate limit set`)',
    description: '`target`: an access key\'s id, else a username. A key\'s limit wins over its user\'s, which wins over gateway.yml\'s rate_limit; every replica applies it at once. Counted only while rate_limit.enabled is true.',
    body: obj({ policy: text('`<requests>/<window>`: 100/60s, 5/s, 1000/1h (1 to 100000 requests, 1 s to 1 day).') }),
    answer: 'RateLimitSet',
    errors: ['not_found'],
    run: async (ops, p, b) => (await ops.setLimit(p.target, b.policy)).json
  },
  {
    method: 'DELETE',
    path: 'rate-limits/{target}',
    status: 200,
    tag: 'Rate limits',
    operationId: 'clearRateLimit',
    summary: 'Back to gateway.yml\'s rate_limit for a user or an access key (`sidegate limit clear`)',
    answer: 'RateLimitCleared',
    errors: ['not_found'],
    run: async (ops, p) => (await ops.clearLimit(p.target)).json
  }
]

/** The credentials the admin API takes, and its 401s' WWW-Authenticate. */
const ADMIN_METHODS = ['access_key', 'private_token'] as const
const ADMIN_CHALLENGES = CHALLENGES.filter((c) => !c.startsWith('Bearer '))

/** What the admin API reads from the gateway on every call: after a live reload, the new config's. */
export interface AdminGatewayView {
  /** the config in force (src/pipeline/server.ts Gateway.config) */
  readonly config: Config
}

/**
 * The config the admin API verifies with: the public port's, but a signed
 * call with a body must sign its digest and each signature counts once,
 * whatever auth.signature says; else a captured call could be replayed, or
 * sent again with another body (a new superuser), within the skew.
 */
export function adminAuthConfig (config: Config): Config {
  const signature = { ...config.auth.signature, replay_cache: true, require_digest: true }
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

/** The route and its parameters, or null (404); throws 405 for a known path with another method, 400 for a path segment that does not decode. */
function find (rest: string[], method: string): Match | null {
  const found: Match[] = []
  for (const route of ADMIN_ROUTES) {
    const tpl = route.path.split('/')
    if (tpl.length !== rest.length) continue
    const params: Record<string, string> = {}
    let ok = true
    for (let i = 0; i < tpl.length && ok; i++) {
      const t = tpl[i]
      if (t.startsWith('{')) {
        if (rest[i] === '') ok = false
        else {
          try { params[t.slice(1, -1)] = decodeURIComponent(rest[i]) } catch { throw E.badRequest(`The path segment "${rest[i].slice(0, 100)}" is not valid percent-encoding.`) }
        }
      } else ok = t === rest[i]
    }
    if (ok) found.push({ route, params })
  }
  if (found.length === 0) return null
  const m = found.find((x) => x.route.method === method || (method === 'HEAD' && x.route.method === 'GET'))
  if (m === undefined) throw E.methodNotAllowed([...new Set(found.map((x) => x.route.method))].join(', '))
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
    if (derived?.config !== config) derived = { config, policy: headerPolicy(config), auth: new Authenticators(store, adminAuthConfig(config)) }
    return derived
  }

  /** A superuser, by the gateway's own verification; else 401 or 403. */
  async function superuser (req: http.IncomingMessage, ip: string, reqId: string, { config, auth }: NonNullable<typeof derived>): Promise<Identity> {
    const who = await auth.authenticate(req, undefined, ADMIN_METHODS)
    if (who.keyAllowIps !== undefined && !trustedProxies(who.keyAllowIps)(ip)) throw E.ipNotAllowed()
    if (who.digests !== undefined && !bodyMatches(await keepBody(req, config.auth.signature.max_body), who.digests)) throw E.invalidDigest()
    if (!who.user.is_superuser) throw E.notSuperuser()
    // as on the public port: the key counts as used (auth.keys.disable_after), its first use audited
    if (who.keyId !== undefined) keyUsed(store, audit ?? null, { clientIp: ip, requestId: reqId, identity: who }, who.user, who.keyId)
    return who
  }

  async function serve (req: http.IncomingMessage, res: http.ServerResponse, path: string, ip: string, reqId: string, done: (who?: Identity) => void): Promise<void> {
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
    const m = find(path.slice(ADMIN_PREFIX.length).split('/'), method)
    if (m === null) throw E.notFound()
    const body = await bodyOf(req, m.route, config.server.body_limit)
    const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '')
    // the operations' audit events name this request and its superuser
    const ctx = { clientIp: ip, requestId: reqId, identity: who }
    const ops = new AdminOps(store, config, API_LABELS, audit === undefined ? undefined : (r) => { audit.record({ ...r, ctx }) })
    let out: unknown
    try {
      out = await m.route.run(ops, m.params, body, query)
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

/**
 * The administration operations, one implementation behind both the command
 * line (`sidegate user|org|key|token|limit|session …`, src/cli/index.ts) and the
 * admin API (/admin/v1/…, src/admin/api.ts): the same checks, the same
 * store calls, the same JSON (`--json` prints exactly what the API answers).
 *
 * Each operation takes plain values, checks them, and returns the record as
 * JSON. Bad input is a UsageError (exit 2; 400 bad_request over HTTP), a
 * missing user, key, org or session a UsageError with exit 1 and code
 * not_found or org_not_found (404); the store's own refusals are GatewayErrors
 * (409 user_exists, 400 too_many_keys, 503 store_unavailable). Messages name
 * an input as its caller knows it (`Labels`: `--expires` on the command line,
 * `expires` in a JSON body).
 */
import type { AuditRecord } from '../observability/audit.js'
import type { Config } from '../config/index.js'
import { UsageError } from '../errors.js'
import { KeyOptionError, keyOptions, type KeyOption } from './key-options.js'
import { operatorKeyJson, type OperatorKeyJson } from './key-json.js'
import { isUuid } from '../http/uuid.js'
import { USERNAME } from './import.js'
import { hasControl, NO_CONTROLS } from '../text.js'
import { parsePolicy } from '../auth/rate-limit-policy.js'
import { otpauthUri } from '../auth/mfa.js'
import { explainAccess, type CheckInput, type CheckResult } from '../access/explain.js'
import { publicUpstream } from '../access/public.js'
import { UNREADABLE, type MfaFactors, type NewKeyOptions, type Org, type OrgRole, type RateLimitPolicy, type Store, type User } from '../store/types.js'

/** How the caller names each input, for messages. */
export interface Labels {
  expires: string
  allowIp: string
  name: string
  org: string
  id: string
  /** appended to "no org with id …" */
  orgHint: string
  /** the command that creates a private token, for "has no private token" */
  tokenCreate: (username: string) => string
  tokenRevoke: (username: string) => string
}

/** Which label names each key option (src/admin/key-options.ts). */
const KEY_OPTION_LABEL: Record<KeyOption, 'expires' | 'name' | 'allowIp'> = { expires: 'expires', name: 'name', allow_ips: 'allowIp' }

export const CLI_LABELS: Labels = {
  expires: '--expires',
  allowIp: '--allow-ip',
  name: '--name',
  org: '--org',
  id: '--id',
  orgHint: ' (see `sidegate org list`)',
  tokenCreate: (u) => `\`sidegate token create ${u}\``,
  tokenRevoke: (u) => `\`sidegate token revoke ${u}\``
}

/** Fields of each kind of record in the JSON, in a fixed order. */
const USER_FIELDS: Array<keyof User> = ['id', 'username', 'name', 'email', 'is_active', 'is_superuser', 'orgs', 'default_org', 'date_joined', 'last_login']
const ORG_FIELDS: Array<keyof Org> = ['id', 'name', 'date_created']

function pick<T extends object> (o: T, fields: ReadonlyArray<keyof T>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const f of fields) if (o[f] !== undefined) out[f as string] = o[f]
  return out
}

export interface UserJson {
  id: string,
  username: string,
  is_active: boolean,
  is_superuser: boolean,
  orgs: Record<string, OrgRole>,
  [k: string]: unknown
}
/** An access key as the CLI's --json and the admin API show it (./key-json.ts, the operator's view). */
export type KeyJson = OperatorKeyJson
export interface OrgJson { id: string, name: string, date_created: string }
export interface SessionJson { id: string, date_created: string, date_expires: string }
export interface LimitTarget { kind: 'key' | 'user', id: string, name: string }

export const userJson = (u: User): UserJson => ({
  ...pick(u, USER_FIELDS),
  orgs: Object.fromEntries(Object.entries(u.orgs).sort(([a], [b]) => a.localeCompare(b)))
}) as UserJson
const orgJson = (o: Org): OrgJson => pick(o, ORG_FIELDS) as unknown as OrgJson
const keyJson = operatorKeyJson

/** A session's id in the admin API: its keyed lookup hash (base64url of 32 bytes), never the cookie value. */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/
export const MIN_PASSWORD = 8
export const MAX_ORG_NAME = 128

/** `ID[:admin|:user|:none]` (the role defaults to user) → the org id and the role (null: no membership). */
export function parseMembership (v: string, label = CLI_LABELS.org): { id: string, role: OrgRole | null } {
  const [id, role = 'user'] = v.split(':')
  return membership(id, role, label)
}

function membership (id: string, role: string, label: string): { id: string, role: OrgRole | null } {
  if (!isUuid(id)) throw new UsageError(`${label}: "${id}" is not an org UUID`)
  if (role !== 'admin' && role !== 'user' && role !== 'none') throw new UsageError(`${label}: role must be admin, user or none, got "${role}"`)
  return { id: id.toLowerCase(), role: role === 'none' ? null : role }
}

/** A password as given (one line of standard input, or the JSON field): at least MIN_PASSWORD characters. */
export function checkPassword (pw: string): string {
  if (pw.length < MIN_PASSWORD) throw new UsageError(`the password must have at least ${MIN_PASSWORD} characters`, 1)
  return pw
}

export interface NewUserInput {
  username: string
  password: string
  email?: string
  name?: string
  superuser?: boolean
  /** org id and role (`none`: left out) */
  orgs?: Array<{ id: string, role: string }>
}

export interface NewKeyInput {
  /** `90d` or `2027-01-31` */
  expires?: string
  allow_ips?: string[]
  name?: string
}

/** A user's second factors as administration sees them (never a secret). */
export type MfaJson = { username: string } & MfaFactors

export class AdminOps {
  /**
   * `audit`: where each credential event goes (src/observability/audit.ts): the CLI's
   * auditor (actor `cli`), or the admin API's with the request and its
   * superuser (actor that user). Reads that show no secret are not audited.
   */
  constructor (
    private readonly store: Store,
    private readonly config: Config,
    private readonly labels: Labels = CLI_LABELS,
    private readonly audit: (r: AuditRecord) => void = () => {}
  ) {}

  // ── users ──

  async user (username: string): Promise<User> {
    const u = await this.store.users.byUsername(username)
    if (u === null) throw new UsageError(`no user named "${username}"`, 1, 'not_found')
    return u
  }

  async createUser (i: NewUserInput): Promise<UserJson> {
    const username = i.username.normalize('NFC')
    if (!USERNAME.test(username)) throw new UsageError('username: 1 to 150 letters (any script), digits and @ . + - _')
    for (const [field, v] of [['email', i.email], ['name', i.name]] as const) {
      if (v !== undefined && hasControl(v)) throw new UsageError(`${field}: ${NO_CONTROLS}`)
    }
    const orgs: Record<string, OrgRole> = {}
    for (const o of i.orgs ?? []) {
      const { id, role } = membership(o.id, o.role, this.labels.org)
      await this.#org(id)
      if (role !== null) orgs[id] = role
    }
    const password = checkPassword(i.password)
    const u = await this.store.users.create({
      username,
      password,
      email: i.email,
      name: i.name,
      superuser: i.superuser === true,
      orgs
    })
    this.audit({ event: 'user.created', user: u, superuser: u.is_superuser })
    return userJson(u)
  }

  async listUsers (org?: string): Promise<UserJson[]> {
    return (await this.store.users.list(org === undefined ? undefined : membership(org, 'user', this.labels.org).id)).map(userJson)
  }

  async showUser (username: string): Promise<UserJson> {
    return userJson(await this.user(username))
  }

  /** Disabling also ends the user's sessions and evicts their cached keys on every replica. */
  async setActive (username: string, active: boolean): Promise<{ id: string, username: string, is_active: boolean }> {
    const u = await this.user(username)
    await this.store.users.setActive(u.id, active)
    this.audit({ event: active ? 'user.enabled' : 'user.disabled', user: u })
    return { id: u.id, username: u.username, is_active: active }
  }

  /** Also ends the user's sessions and unused bearer tokens on every replica; private tokens and access keys stay. */
  async setPassword (username: string, password: string): Promise<{ id: string, username: string }> {
    const u = await this.user(username)
    await this.store.passwords.set(u.id, checkPassword(password))
    this.audit({ event: 'password.changed', user: u })
    return { id: u.id, username: u.username }
  }

  /** Memberships: a role per org (`none` ends the membership). */
  async grant (username: string, memberships: Array<{ id: string, role: string }>): Promise<UserJson> {
    const u = await this.user(username)
    for (const m of memberships) {
      const { id, role } = membership(m.id, m.role, this.labels.org)
      await this.#org(id)
      await this.store.users.setMembership(u.id, id, role)
      this.audit({ event: 'membership.changed', user: u, org: id, role: role ?? 'none' })
    }
    return userJson(await this.user(u.username))
  }

  // ── orgs ──

  async #org (id: string): Promise<Org> {
    const org = await this.store.orgs.get(id)
    if (org === null) throw new UsageError(`no org with id ${id}${this.labels.orgHint}`, 1, 'org_not_found')
    return org
  }

  async createOrg (name: string, id?: string): Promise<OrgJson> {
    if (name.trim() === '' || name.length > MAX_ORG_NAME) throw new UsageError(`org name: 1 to ${MAX_ORG_NAME} characters`)
    if (hasControl(name)) throw new UsageError(`org name: ${NO_CONTROLS}`)
    if (id !== undefined && !isUuid(id)) throw new UsageError(`${this.labels.id} must be a UUID`)
    const org = await this.store.orgs.create(name, id)
    this.audit({ event: 'org.created', org: org.id })
    return orgJson(org)
  }

  async listOrgs (): Promise<OrgJson[]> {
    return (await this.store.orgs.list()).map(orgJson)
  }

  // ── access keys ──

  /** The secret is in this answer only. */
  async createKey (username: string, i: NewKeyInput = {}): Promise<KeyJson & { secret: string }> {
    const u = await this.user(username)
    let o: NewKeyOptions
    try {
      o = keyOptions({ expires: i.expires, name: i.name, allowIps: i.allow_ips })
    } catch (err) {
      if (err instanceof KeyOptionError) throw new UsageError(`${this.labels[KEY_OPTION_LABEL[err.option]]}: ${err.message}`)
      throw err
    }
    const { key, secret } = await this.store.accessKeys.create(u.id, 0, o)
    this.audit({ event: 'key.created', user: u, keyId: key.id, expires: key.date_expired })
    return { ...keyJson(key), secret }
  }

  /** `key disable|enable`: a disabled key's correctly signed requests are 401 key_disabled. */
  async setKeyActive (id: string, active: boolean): Promise<{ id: string, is_active: boolean }> {
    if (!isUuid(id) || !(await this.store.accessKeys.setActive(id.toLowerCase(), active))) throw new UsageError(`no access key ${id}`, 1, 'not_found')
    this.audit({ event: active ? 'key.enabled' : 'key.disabled', keyId: id.toLowerCase() })
    return { id: id.toLowerCase(), is_active: active }
  }

  async listKeys (username: string): Promise<KeyJson[]> {
    const u = await this.user(username)
    return (await this.store.accessKeys.list(u.id)).map(keyJson)
  }

  /** Deletes the key; every replica refuses it within a second. */
  async revokeKey (id: string): Promise<{ id: string, revoked: true }> {
    if (!isUuid(id) || !(await this.store.accessKeys.delete(id.toLowerCase()))) throw new UsageError(`no access key ${id}`, 1, 'not_found')
    this.audit({ event: 'key.revoked', keyId: id.toLowerCase() })
    return { id, revoked: true }
  }

  // ── private tokens ──

  /**
   * Creates or replaces the user's private token; the token is in this answer only (the admin API never reads it back).
   */
  async createToken (username: string): Promise<{ username: string, token: string }> {
    const u = await this.user(username)
    const token = await this.store.privateTokens.create(u.id)
    this.audit({ event: 'private_token.created', user: u })
    return { username: u.username, token }
  }

  async showToken (username: string): Promise<{ username: string, token: string }> {
    const u = await this.user(username)
    const token = await this.store.privateTokens.read(u.id)
    if (token === null) throw new UsageError(`${u.username} has no private token (create one with ${this.labels.tokenCreate(u.username)})`, 1, 'not_found')
    if (token === UNREADABLE) throw new UsageError(`the private token of ${u.username} is unreadable: it was stored under another secret key (${this.labels.tokenRevoke(u.username)} removes it)`, 1, 'unreadable_record')
    this.audit({ event: 'private_token.read', user: u })
    return { username: u.username, token }
  }

  async revokeToken (username: string): Promise<{ username: string, revoked: true }> {
    const u = await this.user(username)
    if (!(await this.store.privateTokens.revoke(u.id))) throw new UsageError(`${u.username} has no private token`, 1, 'not_found')
    this.audit({ event: 'private_token.revoked', user: u })
    return { username: u.username, revoked: true }
  }

  // ── sessions ──

  /**
   * The user's live browser sessions, oldest first: when each began
   * and when it ends unless used (idle) or at the latest (absolute).
   */
  async listSessions (username: string): Promise<SessionJson[]> {
    const u = await this.user(username)
    const s = this.config.session
    return (await this.store.sessions.list(u.id)).map((x) => ({
      id: x.id,
      date_created: new Date(x.created).toISOString(),
      date_expires: new Date(Math.min(x.expires, x.created + s.absolute_timeout * 1000)).toISOString()
    }))
  }

  /** Ends one session (id from listSessions) on every replica at once. */
  async revokeSession (username: string, id: string): Promise<{ username: string, id: string, revoked: true }> {
    const u = await this.user(username)
    if (!SESSION_ID.test(id) || !(await this.store.sessions.end(u.id, id))) throw new UsageError(`${u.username} has no session ${id}`, 1, 'not_found')
    this.audit({ event: 'session.revoked', user: u, via: 'admin' })
    return { username: u.username, id, revoked: true }
  }

  /** Ends every session of the user on every replica at once. */
  async revokeSessions (username: string): Promise<{ username: string, revoked: number }> {
    const u = await this.user(username)
    const revoked = await this.store.sessions.endAll(u.id)
    if (revoked > 0) this.audit({ event: 'session.revoked', user: u, via: 'admin' })
    return { username: u.username, revoked }
  }

  // ── second factors ──

  /** The user's second factors: never a secret. */
  /** `sidegate access check`: which access rule decides a request described, without sending it. */
  async accessCheck (i: CheckInput): Promise<CheckResult> {
    return await explainAccess(this.config, this.store, i, publicUpstream(this.config.upstream.public_paths))
  }

  async mfaFactors (username: string): Promise<MfaJson> {
    const u = await this.user(username)
    return { username: u.username, ...(await this.store.mfa.factors(u.id)) }
  }

  /**
   * Begins a TOTP enrolment for the user: the otpauth:// URI, shown once
   * (the secret is never shown again). It counts once confirmed with a first
   * code (the user's sign-in asks for it: the login page's enrolment step).
   */
  async mfaEnroll (username: string): Promise<{ username: string, uri: string, secret: string }> {
    const u = await this.user(username)
    const e = await this.store.mfa.begin(u.id, 'operator')
    if (e === null) throw new UsageError(`${u.username} already has a second factor: reset it first`, 1, 'bad_request')
    // the user must confirm it at their next sign-in
    await this.store.mfa.require(u.id)
    this.audit({ event: 'mfa.enrolled', user: u, via: 'admin' })
    return { username: u.username, uri: otpauthUri('sidegate', u.username, e), secret: e.secret }
  }

  /** Removes the user's second factor and recovery codes (and a requirement). */
  async mfaReset (username: string): Promise<{ username: string, reset: boolean }> {
    const u = await this.user(username)
    const reset = await this.store.mfa.reset(u.id)
    if (reset) this.audit({ event: 'mfa.reset', user: u, via: 'admin' })
    return { username: u.username, reset }
  }

  /** Requires enrolment at the user's next sign-in. */
  async mfaRequire (username: string): Promise<{ username: string, required: true }> {
    const u = await this.user(username)
    if (await this.store.mfa.require(u.id)) this.audit({ event: 'mfa.reset', user: u, via: 'admin', reason: 'required' })
    return { username: u.username, required: true }
  }

  // ── rate limits ──

  /** An access key's id, else a username. */
  async #setLimit (target: string, policy: RateLimitPolicy | null): Promise<LimitTarget> {
    if (isUuid(target) && await this.store.accessKeys.setRateLimit(target.toLowerCase(), policy)) return { kind: 'key', id: target.toLowerCase(), name: target.toLowerCase() }
    const u = await this.store.users.byUsername(target)
    if (u === null) throw new UsageError(`no user or access key "${target}"`, 1, 'not_found')
    await this.store.users.setRateLimit(u.id, policy)
    return { kind: 'user', id: u.id, name: u.username }
  }

  /** `spec`: `<requests>/<window>` (100/60s, 5/s, 1000/1h). */
  async setLimit (target: string, spec: string): Promise<{
    target: LimitTarget,
    policy: RateLimitPolicy,
    json: Record<string, unknown>
  }> {
    const policy = parsePolicy(spec)
    if (policy === null) throw new UsageError(`"${spec}" is not a limit: <requests>/<window>, e.g. 100/60s, 5/s, 1000/1h (1 to 100000 requests, 1 s to 1 day)`)
    const t = await this.#setLimit(target, policy)
    return { target: t, policy, json: { [t.kind]: t.name, id: t.id, limit: policy.limit, window: policy.window } }
  }

  async clearLimit (target: string): Promise<{ target: LimitTarget, json: Record<string, unknown> }> {
    const t = await this.#setLimit(target, null)
    return { target: t, json: { [t.kind]: t.name, id: t.id, cleared: true } }
  }

  /** gateway.yml's rate_limit, then every user and key with its own limit. */
  async listLimits (): Promise<{ configured: { enabled: boolean, default: RateLimitPolicy, methods: Record<string, string> }, overrides: Array<{ kind: 'user' | 'key', username: string, id: string, limit: number, window: number }> }> {
    const rl = this.config.rate_limit
    const overrides: Array<{ kind: 'user' | 'key', username: string, id: string, limit: number, window: number }> = []
    for (const u of await this.store.users.list()) {
      if (u.rate_limit != null) overrides.push({ kind: 'user', username: u.username, id: u.id, limit: u.rate_limit.limit, window: u.rate_limit.window })
      for (const k of await this.store.accessKeys.list(u.id)) {
        if (k.rate_limit != null) overrides.push({ kind: 'key', username: u.username, id: k.id, limit: k.rate_limit.limit, window: k.rate_limit.window })
      }
    }
    const methods = Object.fromEntries(Object.entries(rl.methods).filter((e): e is [string, string] => e[1] !== null))
    return { configured: { enabled: rl.enabled, default: { limit: rl.limit, window: rl.window }, methods }, overrides }
  }
}

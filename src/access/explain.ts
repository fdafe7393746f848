/**
 * `sidegate access check` and POST /admin/v1/access/check: which rule
 * decides a request described, and why, without sending it. The same
 * AccessRules the pipeline uses, over a caller made from the store (the
 * user, an access key, the org as the org step resolves it), and the
 * upstream.public_paths check first, as the chains take them.
 */
import { UsageError, GatewayError } from '../errors.js'
import type { Identity } from '../auth/index.js'
import type { AuthMethod } from '../auth/types.js'
import { CREDENTIALS, KINDS, orList } from '../auth/credentials.js'
import { resolveOrg } from '../auth/org.js'
import type { Config } from '../config/index.js'
import { isIpOrCidr } from '../config/validate.js'
import type { Factor, Store } from '../store/types.js'
import { originForm } from '../http/target.js'
import { unmapIp } from '../http/address.js'
import { AccessRules, type Verdict } from './rules.js'
import { groupEntry, parseGroupRef } from './groups.js'
import { hostKey } from './hosts.js'
import type { User, UserGroup } from '../store/types.js'
import type { Policy } from './syntax.js'

export interface CheckInput {
  method: string
  /** path, with a query or not (the query is not matched) */
  path: string
  /** a username; absent: no credential */
  user?: string
  /** an access key's id: the request is signed with it (its user, unless `user` names the same) */
  key?: string
  /** the credential kind when not a key: CHECKED_KINDS, session by default */
  credential?: string
  /** a second factor the sign-in had (sessions and bearer tokens): otp, hwk, swk */
  factors?: string[]
  org?: string
  /** the client address as sidegate would resolve it; default 127.0.0.1 */
  ip?: string
  /** the host the request is for; needed when rules name hosts */
  host?: string
  /** the caller's groups instead of the store's: NAME, ORG/NAME (as X-<abbrev>-Groups names them) */
  groups?: string[]
}

export interface CheckResult {
  request: { method: string, path: string, normalised: string, ambiguous: boolean, ip: string, host: string | null }
  caller: {
    username: string, method: AuthMethod, factors?: Factor[], made_with?: Factor[], org: string | null, groups: string[]
  } | null
  /** `public_path`: upstream.public_paths, before any rule; `rules` */
  decided_by: 'public_path' | 'rules'
  /** the deciding rule's index, null: default_policy (or a public path) */
  rule: number | null
  policy: Policy
  /** what the request would get: 200 (forwarded), 401, 403 */
  status: 200 | 401 | 403
  why: string
  /** the rules before the deciding one whose paths match, and why each was passed over */
  passed_over: Array<{ rule: number, why: string }>
}

/** The kinds `credential` may name (an access key is named by `key`); session when it names none */
export const CHECKED_KINDS: readonly string[] = KINDS.filter((k) => k.accessCheck).map((k) => k.method)
const CHECKED = new Set(CHECKED_KINDS)
const DEFAULT_KIND: AuthMethod = 'session'
const SECOND = new Set(['otp', 'hwk', 'swk'])

export async function explainAccess (
  config: Config, store: Store, i: CheckInput, isPublic: (path: string) => boolean
): Promise<CheckResult> {
  const method = i.method.toUpperCase()
  if (!/^[A-Z]{1,20}$/.test(method)) throw new UsageError(`method: an HTTP method (GET, POST, …), got ${JSON.stringify(i.method)}`)
  // an absolute URL as a client may send it (`GET http://host/p`): the origin-form the pipeline makes of it
  const sent = /^https?:\/\//i.test(i.path) ? originForm(i.path, i.path.slice(i.path.indexOf('://') + 3).split(/[/?]/)[0], method) : i.path
  if (sent === null || !sent.startsWith('/')) throw new UsageError(`path: must start with "/" (or be an http(s) URL), got ${JSON.stringify(i.path)}`)
  // an IPv4-mapped address (how a dual-stack listener sees an IPv4 client) as the gateway sees it: IPv4
  const ip = unmapIp(i.ip ?? '127.0.0.1')
  if (!isIpOrCidr(ip) || ip.includes('/')) throw new UsageError(`ip: an IP address, got ${JSON.stringify(ip)}`)
  const target = sent.split('?')[0]
  const rules = new AccessRules(config.access)
  const p = rules.matchPath(target)
  const host = i.host === undefined ? null : hostKey(i.host)
  if (i.host !== undefined && host === null) throw new UsageError(`host: a host name or address, got ${JSON.stringify(i.host)}`)
  if (host === null && rules.usesHosts) throw new UsageError('the access rules name hosts: give the host the request is for (--host)')
  const request = { method, path: i.path, normalised: p.path, ambiguous: p.ambiguous, ip, host }
  const caller = await callerOf(config, store, i)
  if (isPublic(target)) {
    return {
      request,
      caller: caller === null ? null : caller.json,
      decided_by: 'public_path',
      rule: null,
      policy: 'bypass',
      status: 200,
      why: `${target} is in upstream.public_paths: no credential looked at, before any rule`,
      passed_over: []
    }
  }
  const req = { method, target, clientIp: ip, host }
  const at = caller === null ? null : caller.at
  const v: Verdict = rules.decide(req, at, p)
  // without a credential the gateway asks for one (401; a browser is sent to sign in) unless the
  // rules decide before authentication (AccessRules.before): a rule naming subjects comes first
  const asked = caller === null && !v.allowed && rules.before(req, p) === 'auth'
  const status = v.allowed ? 200 : asked ? 401 : 403
  const passed = rules.passedOver(req, at, v.rule, p)
  return {
    request,
    caller: caller === null ? null : caller.json,
    decided_by: 'rules',
    rule: v.rule === -1 ? null : v.rule + 1,
    policy: v.policy,
    status,
    why: asked && v.policy === 'deny'
      ? `${v.why}; but a rule before it names subjects, so a credential is asked for first`
      : v.why,
    passed_over: passed.map((x) => ({ rule: x.rule + 1, why: x.why }))
  }
}

async function callerOf (config: Config, store: Store, i: CheckInput): Promise<{
  at: { identity: Identity, orgId: string | undefined },
  json: NonNullable<CheckResult['caller']>
} | null> {
  if (i.user === undefined && i.key === undefined) {
    if (i.org !== undefined || (i.factors ?? []).length > 0 || i.credential !== undefined || i.groups !== undefined) {
      throw new UsageError('org, credential, factors and groups describe a caller: name one with user (or key)')
    }
    return null
  }
  let userId: string
  let method: AuthMethod
  let keyFactors: readonly Factor[] | undefined
  if (i.key !== undefined) {
    const k = await store.accessKeys.get(i.key)
    if (k === null) throw new UsageError(`no access key with id "${i.key}"`, 'not_found')
    userId = k.key.user_id
    method = 'access_key'
    keyFactors = k.key.factors
    if (i.credential !== undefined && i.credential !== 'access_key') throw new UsageError('credential: a key is an access_key')
  } else {
    const kind = i.credential ?? DEFAULT_KIND
    if (!CHECKED.has(kind)) throw new UsageError(`credential: ${orList(CHECKED_KINDS, '')} (an access key: key), got ${JSON.stringify(kind)}`)
    method = kind as AuthMethod
    userId = ''
  }
  const local = i.key === undefined ? await store.users.byUsername(i.user!) : await store.users.get(userId)
  // a trusted issuer's service (as: service) is no local user: named by its subject, in no org unless --org
  const user = local ?? (method === 'trusted_token' ? serviceNamed(i.user!) : null)
  if (user === null) throw new UsageError(`no user named "${i.user ?? ''}"`, 'not_found')
  if (i.user !== undefined && i.key !== undefined && user.username.toLowerCase() !== i.user.toLowerCase()) {
    throw new UsageError(`access key ${i.key} is ${user.username}'s, not ${i.user}'s`)
  }
  const second = i.factors ?? []
  for (const f of second) if (!SECOND.has(f)) throw new UsageError(`factor: otp, hwk or swk, got ${JSON.stringify(f)}`)
  const machine = CREDENTIALS[method].machine
  if (second.length > 0 && machine) throw new UsageError(`factors: only ${orList(KINDS.filter((k) => !k.machine).map((k) => k.method), '')} has sign-in factors`)
  const factors: Factor[] | undefined = machine ? undefined : ['pwd', ...second as Factor[]]
  let orgId: string | undefined
  let orgNote: string | null = null
  try {
    orgId = await resolveOrg(store, user, i.org, config.org.unknown)
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err
    orgNote = err.code
  }
  const groups = i.groups === undefined ? user.groups ?? [] : await givenGroups(store, i.groups)
  // the fields the rules read (no session record, no key limits: they decide nothing here)
  const identity = { userId: user.id, method, factors, keyId: i.key, keyFactors, user: { ...user, groups } } as Identity
  return {
    at: { identity, orgId },
    json: {
      username: user.username,
      method,
      ...(factors === undefined ? {} : { factors }),
      ...(keyFactors === undefined ? {} : { made_with: [...keyFactors] }),
      org: orgId ?? (orgNote === null ? null : `refused: ${orgNote}`),
      groups: groups.map(groupEntry)
    }
  }
}

function serviceNamed (name: string): User {
  return { id: `issuer:?:${name}`, username: name, name, email: '', is_active: true, is_superuser: false, orgs: {}, default_org: null, date_joined: '', last_login: null }
}

/** `--group` values as the caller's groups: an org named by its id or its (unique) name. */
async function givenGroups (store: Store, given: string[]): Promise<UserGroup[]> {
  const orgs = await store.orgs.list()
  return given.map((v) => {
    const g = parseGroupRef(v)
    if (typeof g === 'string') throw new UsageError(`group: ${g}`)
    if (g.org === null) return { id: '', name: g.name, org: null, orgName: null, sources: ['given'] }
    const found = orgs.filter((o) => o.id === g.org || o.name.toLowerCase() === g.org)
    if (found.length !== 1) throw new UsageError(`group ${JSON.stringify(v)}: ${found.length === 0 ? 'no such org' : 'two orgs have that name: give its id'}`, found.length === 0 ? 'not_found' : 'bad_request')
    return { id: '', name: g.name, org: found[0].id, orgName: found[0].name, sources: ['given'] }
  })
}

/** The command line's text: the request, the caller, and the verdict with its reason. */
export function checkText (r: CheckResult): string {
  const who = r.caller === null ? 'no credential' : `${r.caller.username} (${r.caller.method}${r.caller.factors === undefined ? '' : `: ${r.caller.factors.join(',')}`}) in org ${r.caller.org ?? '—'}`
  const verdict = r.status === 200 ? 'allowed' : r.status === 401 ? '401: a credential is needed' : '403 access_denied'
  return [
    `${r.request.method} ${r.request.path}${r.request.host === null ? '' : ` at ${r.request.host}`} from ${r.request.ip}, ${who}`,
    ...r.caller !== null && r.caller.groups.length > 0 ? [`groups: ${r.caller.groups.join(', ')}`] : [],
    `matched as ${r.request.normalised}${r.request.ambiguous ? ' (ambiguous: no bypass rule matches it)' : ''}`,
    ...r.passed_over.map((x) => `passed over: ${x.why}`),
    r.why,
    `→ ${verdict}`
  ].join('\n')
}

/**
 * The records the store reads and writes, as every layer sees them (types.ts re-exports them all): the
 * policy (./policy/), the ports (./ports.ts) and the backends import them from here, so the `Store` interface
 * (./types.ts), which is typed by the policy modules, imports no module that imports it.
 */
import type { ClearableCache } from './cache.js'
import type { Factor } from './factors.js'

export type { SigningAlgorithm, SigningKey, SigningKeySet } from './keyset.js'
export { isTwoFactor, PASSWORD_ONLY, type BearerGrant, type Factor } from './factors.js'
export type {
  MfaFactors, NewPasskey, PasskeyDeviceType, PasskeyInfo, SecondFactorResult, SecondFactorState,
  StoredPasskey, TotpEnrolment
} from './second-factors.js'

export type OrgRole = 'admin' | 'user'

export interface User {
  id: string
  username: string
  name: string
  email: string
  is_active: boolean
  is_superuser: boolean
  /** org id → role in that org */
  orgs: Record<string, OrgRole>
  default_org: string | null
  date_joined: string
  last_login: string | null
  /** a per-user rate limit set with `sidegate limit set` (wins over rate_limit in gateway.yml) */
  rate_limit?: RateLimitPolicy | null
  /** the user's groups, resolved when the record is read (./policy/group-table.ts); absent or empty: none */
  groups?: readonly UserGroup[]
}

/** One of a user's groups as the request path reads it (sorted by entry; each group once whatever its sources). */
export interface UserGroup {
  id: string
  name: string
  /** the org's id; null: a global group */
  org: string | null
  orgName: string | null
  /** `local`, or `idp:<provider>` */
  sources: readonly string[]
}

/** A user as the sign-in paths read it (store.users.forSignIn). */
export interface SignInUser {
  user: User
  /** when the user's sessions were last ended (a password change, disabling, `session revoke`), epoch ms; 0: never */
  sessionsEnded: number
}

/** `limit` requests per `window` seconds (src/auth/rate-limit.ts). */
export interface RateLimitPolicy {
  limit: number
  window: number
}

/** What a new access key may have besides its secret. */
export interface NewKeyOptions {
  name?: string
  /** the factors of the owner's sign-in that makes it (AccessKey.factors); absent for an operator's */
  factors?: Factor[]
  /** ISO time */
  date_expired?: string
  allow_ips?: string[]
}

/** One counted request (store.limits.hitRateLimit). */
export interface RateLimitHit {
  allowed: boolean
  /** requests left in the window after this one */
  remaining: number
  /** seconds (rounded up, at least 1 when something is counted) until the oldest counted request leaves the window */
  reset: number
}

export interface Org {
  id: string
  name: string
  date_created: string
}

/** A group of users: an org's (as JumpServer's user groups are) or global; its members are on the user records. */
export interface Group {
  id: string
  /** 1 to 128 characters, no control characters, no surrounding whitespace; unique per org in any case */
  name: string
  /** the org's id; null: a global group */
  org: string | null
  date_created: string
}

/**
 * An account elsewhere linked to a local user: by (source, subject) only, never by a
 * mutable claim. One link per source per user.
 */
export interface Link {
  /** `oidc:<provider id>` or `ldap:<directory id>` */
  source: string
  /** the provider's stable id for the account: OIDC `sub`, the directory entry's id attribute */
  subject: string
  user_id: string
  date_created: string
  /** made by provisioning at the first sign-in (its name and email follow the provider's), not by an operator */
  provisioned?: boolean
  /** org id → role: the memberships this source granted (the only ones a sign-in there changes) */
  orgs?: Record<string, OrgRole>
}

/** Where a membership comes from: `local` (an operator's) or `idp:<provider>` (refreshed at each sign-in there). */
export const LOCAL_GROUPS = 'local'

/** Who disabled a key: its owner (account API), an operator (CLI, admin API, import) or auth.keys.disable_after. */
export type KeyDisabler = 'owner' | 'operator' | 'policy'
/** What an access key's enabled state was when it was read (a compare-and-set's expectation). */
export interface KeyState { is_active: boolean, disabled_by?: KeyDisabler }

export interface AccessKey {
  id: string
  user_id: string
  is_active: boolean
  date_created: string
  date_last_used: string | null
  /** a label of the owner's choosing */
  name?: string
  /** ISO time after which the key is refused (401 key_expired); absent: never */
  date_expired?: string
  /** addresses and CIDR ranges the key may be used from (403 ip_not_allowed from any other); absent: anywhere */
  allow_ips?: string[]
  /** last enabled again (accessKeys.setActive): auth.keys.disable_after counts from it, the last use or creation */
  date_enabled?: string
  /** who disabled it (only while disabled): its owner may enable it again only after their own disable */
  disabled_by?: KeyDisabler
  /** a per-key rate limit set with `sidegate limit set` (wins over the user's) */
  rate_limit?: RateLimitPolicy | null
  /**
   * The factors of the sign-in that made it, when its owner made it (the account API): a two_factor rule naming
   * method:access_key admits it only when they were two. Absent: an operator's (CLI, admin API, an import of one)
   * or made before sidegate recorded them, admitted as the operator's (docs/access-rules.md).
   */
  factors?: Factor[]
  /** Set when its secret cannot be decrypted with this process's key (written under another): it verifies nothing. */
  unreadable?: true
}

export interface Session {
  id: string
  user_id: string
  /** epoch ms */
  created: number
  csrf: string
  /** what the sign-in that made it was made with */
  factors: readonly Factor[]
  /** made through a provider: its source (`oidc:<id>`), for the provider's logout */
  sso?: string
}

/** A session made through a provider: its source (`oidc:<id>`) and its names there (`sub:<sub>`, `sid:<sid>`). */
export interface SsoSignIn {
  source: string
  names: string[]
}

/** A live session as administration sees it (store.sessions.list): never its cookie value. */
export interface SessionInfo {
  /** its keyed lookup hash: names the session for store.sessions.end, useless as a cookie */
  id: string
  /** epoch ms */
  created: number
  /** epoch ms: when it ends unless used before (the idle timeout) */
  expires: number
}

export interface LoginFailures {
  count: number
  /** seconds until the counter expires; 0 when there is none */
  retryAfter: number
}

export interface NewUser {
  username: string
  password: string | null
  /** the user's id (an import keeps JumpServer's); default a new UUID */
  id?: string
  /**
   * An imported Django PBKDF2 hash (crypto.ts parseLegacyHash), kept as it
   * is until the next successful login re-hashes it; `password` must be null.
   */
  password_hash?: string
  name?: string
  email?: string
  superuser?: boolean
  orgs?: Record<string, OrgRole>
}

/** What store.privateTokens.read returns for a token stored under another secret key. */
export const UNREADABLE = Symbol('unreadable')

/** One entry of the audit stream: its id (`<epoch ms>-<sequence>`, increasing) and the event's JSON. */
export interface AuditEntry {
  id: string
  json: string
}

/** Which audit entries: `after` an id, else `since` a time, else the `last` few. */
export interface AuditQuery {
  /** entries after this id ('0-0': all) */
  after?: string
  /** with `after`: when there is none yet, wait up to this many ms for one (bounded below redis.command_timeout) */
  block?: number
  /** entries from this time on (epoch ms) */
  since?: number
  /** the newest `last` entries */
  last?: number
  /** at most this many (with `after` or `since`); default 1000 */
  count?: number
}

/** The in-process caches (ManagedStore.caches), read by the metrics at scrape time. */
export interface StoreCaches {
  readonly users: ClearableCache
  readonly accessKeys: ClearableCache
  readonly privateTokens: ClearableCache
  readonly sessions: ClearableCache
}

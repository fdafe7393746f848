/**
 * The application-facing storage interface. Everything persistent goes through `Store`: the account policy
 * (./policy/) over a backend that only stores (./ports.ts); RedisStore (./redis/) is the gateway's, MemoryStore
 * (./memory/) the same contract in process (test/fixtures/store-contract.ts runs against both). `ManagedStore`
 * adds what a process's composition root needs around it: connecting, the gate, the secret key's check and
 * rotation, the caches' counters for metrics. In src/, only src/app/open-store.ts constructs a RedisStore.
 */
import type { Keyring } from '../crypto.js'
import type { GatewayError } from '../errors.js'
import type { ClearableCache } from './cache.js'
import type { VerifyOptions, Verified } from './secret/check.js'
import type { RotateOptions, RotateResult } from './secret/rotate.js'
import type { SigningKey, SigningKeySet } from './keyset.js'
import type { BearerGrant, Factor } from './factors.js'
import type { MfaFactors, PasskeyStore, SecondFactorResult, SecondFactorState, TotpEnrolment } from './second-factors.js'

export type { SigningAlgorithm, SigningKey, SigningKeySet } from './keyset.js'
export { isTwoFactor, PASSWORD_ONLY, type BearerGrant, type Factor } from './factors.js'
export type {
  MfaFactors, NewPasskey, PasskeyDeviceType, PasskeyInfo, PasskeyStore, SecondFactorResult, SecondFactorState,
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
}

/** A user as the sign-in paths read it (Store.getUserForSignIn). */
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

/** One counted request (Store.hitRateLimit). */
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
  /** last enabled again (setAccessKeyActive true): auth.keys.disable_after counts from it, the last use or creation */
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
}

/** A live session as administration sees it (Store.listSessions): never its cookie value. */
export interface SessionInfo {
  /** its keyed lookup hash: names the session for endSession, useless as a cookie */
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

/** What readPrivateToken returns for a token stored under another secret key. */
export const UNREADABLE = Symbol('unreadable')

export interface Store extends PasskeyStore {
  /** Round trip to the backing store; throws a 503 GatewayError when unreachable. */
  ping(): Promise<void>
  close(): Promise<void>

  createOrg(name: string, id?: string): Promise<Org>
  getOrg(id: string): Promise<Org | null>
  listOrgs(): Promise<Org[]>

  createUser(u: NewUser): Promise<User>
  getUser(id: string): Promise<User | null>
  /**
   * As getUser, read from the store itself, never a cache (the cache takes the copy read), with when the user's
   * sessions were last ended (a password change, disabling, `session revoke`): the sign-in paths (a password, a
   * passkey, the second step) read the user so, and a change another process made a moment ago counts at once.
   */
  getUserForSignIn(id: string): Promise<SignInUser | null>
  getUserByUsername(username: string): Promise<User | null>
  /** The stored password hash, or null when the user is unknown or has no password. */
  getPasswordHash(userId: string): Promise<string | null>
  listUsers(orgId?: string): Promise<User[]>
  /** Disabling a user also ends their sessions and evicts their cached credentials everywhere. */
  setUserActive(userId: string, active: boolean): Promise<void>
  /**
   * Changing the password also ends the user's sessions and unused bearer
   * tokens, on every replica at once; private tokens and access keys stay.
   */
  setPassword(userId: string, password: string): Promise<void>
  setMembership(userId: string, orgId: string, role: OrgRole | null): Promise<void>
  /** Changes a user's name, email or superuser flag (every replica sees it at once). */
  setUserFields(userId: string, fields: Partial<Pick<User, 'name' | 'email' | 'is_superuser'>>): Promise<void>
  /**
   * Sets an imported Django hash as the user's password, kept as it is until the next successful login
   * re-hashes it (upgradePasswordHash); ends sessions and unused bearer tokens as setPassword does.
   */
  setLegacyPasswordHash(userId: string, hash: string): Promise<void>
  /** True when this legacy hash is the one the last import set (even if a login has re-hashed it since). */
  isImportedPasswordHash(userId: string, hash: string): Promise<boolean>
  /**
   * Replaces a legacy hash with `newHash` (scrypt), only if the stored hash is still `oldHash` (atomic
   * compare-and-set, so a concurrent password change wins); ends nothing: the password is the same.
   */
  upgradePasswordHash(userId: string, oldHash: string, newHash: string): Promise<boolean>
  recordLogin(userId: string): Promise<void>
  countUsers(): Promise<number>

  /** `max` > 0: refused with `too_many_keys` when the user already has that many (atomic) */
  createAccessKey(userId: string, max?: number, o?: NewKeyOptions): Promise<{ key: AccessKey, secret: string }>
  /** Cached in process; invalidated on every replica when the key or its user changes. */
  getAccessKey(id: string): Promise<{ key: AccessKey, secret: string } | null>
  listAccessKeys(userId: string): Promise<AccessKey[]>
  /**
   * Enabling also records `date_enabled` (now): a key enabled again is not at once disabled again for being unused;
   * and clears `disabled_by`. Disabling records `by` (default operator) as `disabled_by`. Atomic; with `expect`, only
   * while the key is still in that state (compare-and-set: false when it changed since it was read, or is gone).
   */
  setAccessKeyActive(id: string, active: boolean, by?: KeyDisabler, expect?: KeyState): Promise<boolean>
  deleteAccessKey(id: string): Promise<boolean>
  /**
   * Records the key's last use, at most once a minute per key (per process, and across replicas). undefined:
   * nothing sent (used within the minute); else resolves true when this was the key's first recorded use ever,
   * once across every replica (the audit's key.first_used), false otherwise or on any failure: never rejects.
   */
  touchAccessKey(id: string): Promise<boolean> | undefined

  /**
   * Stores an access key with the id and secret it had elsewhere (an import),
   * exactly as createAccessKey stores one; false when the id is taken.
   */
  importAccessKey(
    userId: string, k: { id: string, secret: string, is_active: boolean } & NewKeyOptions
  ): Promise<boolean>

  /** Creates (or replaces) the user's private token and returns it. */
  createPrivateToken(userId: string): Promise<string>
  /**
   * Makes an imported, untagged token (JumpServer's 40 hex characters) the user's private token,
   * replacing any other; it is accepted although it carries no check tag, because its lookup hash
   * is in the store's set of imported tokens (every replica reloads the set when it changes).
   */
  importPrivateToken(userId: string, token: string): Promise<void>
  /** Reads the private token back, or null when none exists (or it cannot be read: readPrivateToken tells). */
  getPrivateToken(userId: string): Promise<string | null>
  /**
   * The private token; null when there is none; UNREADABLE (and reported)
   * when it was stored under another secret key: never garbage.
   */
  readPrivateToken(userId: string): Promise<string | null | typeof UNREADABLE>
  revokePrivateToken(userId: string): Promise<boolean>
  userIdForPrivateToken(token: string): Promise<string | null>
  /**
   * userIdForPrivateToken without I/O, for the synchronous fast path (src/auth/index.ts,
   * Authenticators.resolve): null when the token is none (its check tag is wrong), the user id
   * when the in-process cache holds it, undefined when only userIdForPrivateToken can tell.
   */
  cachedUserIdForPrivateToken?(token: string): string | null | undefined
  /** getUser without I/O: the user when the in-process cache holds it, else undefined (ask getUser). */
  cachedUser?(id: string): User | undefined
  /** getAccessKey without I/O: the key when the in-process cache holds it, else undefined (ask getAccessKey). */
  cachedAccessKey?(id: string): { key: AccessKey, secret: string } | null | undefined
  /** getSession without I/O: null when the id is none (wrong check tag), the session if cached, else undefined. */
  cachedSession?(id: string): Session | null | undefined

  /** `factors`: what the sign-in it is issued for was made with (default the password alone). */
  issueBearerToken(
    userId: string, ttlSeconds: number, factors?: readonly Factor[]
  ): Promise<{ token: string, expires: Date }>
  /** Atomically consumes a one-time token: exactly one caller gets its grant. */
  consumeBearerToken(token: string): Promise<BearerGrant | null>
  /**
   * A bearer token's user without consuming it (`auth.bearer.single_use: false`): valid until it expires
   * or is revoked (password change); never cached, so a revocation counts at once on every replica.
   */
  readBearerToken(token: string): Promise<BearerGrant | null>

  /**
   * `ttlSeconds`: the idle timeout; `lifetimeSeconds`: the longest the session may live (the absolute timeout);
   * `factors`: what the sign-in was made with (default the password alone).
   */
  createSession(
    userId: string, ttlSeconds: number, lifetimeSeconds?: number, factors?: readonly Factor[]
  ): Promise<Session>
  getSession(id: string): Promise<Session | null>
  touchSession(id: string, ttlSeconds: number): Promise<void>
  /** The user id of the session it ended, null when there was none (the audit's session.revoked). */
  deleteSession(id: string): Promise<string | null>
  /** The user's live sessions, oldest first (administration: `sidegate session list`, the admin API). */
  listSessions(userId: string): Promise<SessionInfo[]>
  /** Ends one of the user's sessions by its SessionInfo id, on every replica at once; false: no such live session. */
  endSession(userId: string, id: string): Promise<boolean>
  /** Ends every session of the user, on every replica at once; how many were live. */
  endSessions(userId: string): Promise<number>

  /**
   * Counts one login attempt of a subject (username + client IP), before its password is checked, and
   * returns the attempts since the last reset: one key, INCR + EXPIRE in one script, so concurrent attempts
   * and replicas all see the same number. The window starts at the first attempt and starts again when the
   * count reaches `max`, so a lock lasts a full window. `retryAfter`: seconds until the count expires.
   */
  countLoginAttempt(subject: string, windowSeconds: number, max: number): Promise<LoginFailures>
  /** After a successful login. */
  resetLoginFailures(subject: string): Promise<void>
  /** Gives one attempt counted by countLoginAttempt back (a success), never below 0; the window is kept. */
  forgiveLoginAttempt(subject: string): Promise<void>

  /** True the first time a value is seen within ttl; false on replay. */
  markOnce(kind: string, value: string, ttlSeconds: number): Promise<boolean>
  /** As markOnce: null the first time a value is seen within ttl, else the milliseconds since it was first seen. */
  markSeen(kind: string, value: string, ttlSeconds: number, create?: boolean): Promise<number | null>

  /** The identity JWT's key set (rev 0, no keys, when none was written); private halves decrypted. */
  getSigningKeys(): Promise<SigningKeySet>
  /**
   * Writes the key set (private halves encrypted) as revision `rev` + 1, only if the stored
   * set is still at `rev` (atomic compare-and-set): false when another process wrote first.
   * A key whose private half is null (unreadable) keeps its stored encrypted value.
   */
  putSigningKeys(rev: number, keys: SigningKey[]): Promise<boolean>
  /**
   * Counts one request against a bucket, a sliding window log: allowed when fewer than `limit`
   * requests were counted within the last `windowSeconds` (a refused request is not counted). One
   * key, one atomic script, the store's clock (Redis TIME): every replica sees the same count.
   */
  hitRateLimit(bucket: string, limit: number, windowSeconds: number): Promise<RateLimitHit>
  /** Sets (null: removes) a user's or access key's rate limit; false: no such record. Every replica sees it at once. */
  setRateLimit(subject: { user: string } | { key: string }, policy: RateLimitPolicy | null): Promise<boolean>

  /**
   * A lock shared by every replica (periodic jobs: src/admin/unused-keys.ts): a new random token when `name`
   * was free (held for `ttlMs` at most), null when another holds it. One key, SET NX PX: cluster-safe.
   */
  acquireLock(name: string, ttlMs: number): Promise<string | null>
  /** Frees the lock only if `token` still holds it (a script compares and deletes); false otherwise. */
  releaseLock(name: string, token: string): Promise<boolean>

  /** The user's second factors (never a secret). */
  mfaFactors(userId: string): Promise<MfaFactors>
  /** True when the user has a confirmed second factor (TOTP or a passkey): every sign-in needs one. */
  hasSecondFactor(userId: string): Promise<boolean>
  /** `enrolled` (a confirmed TOTP), `passkey` (passkeys only), `required` (an operator asked to enrol), else `none`. */
  secondFactorState(userId: string): Promise<SecondFactorState>
  /** Starts a TOTP enrolment (new secret, stored sealed, counting once confirmed); null when a confirmed one exists. */
  beginTotp(userId: string, by?: 'user' | 'operator'): Promise<TotpEnrolment | null>
  /** Confirms a pending enrolment with a first code: ten new recovery codes, or null (wrong or used code, none). */
  confirmTotp(userId: string, code: string): Promise<string[] | null>
  /** A TOTP code (accepted once per time step, on every replica) or a recovery code (used up) of a confirmed factor. */
  verifySecondFactor(userId: string, code: string): Promise<SecondFactorResult>
  /** Ten new recovery codes replace the user's; null without a confirmed factor. */
  regenerateRecoveryCodes(userId: string): Promise<string[] | null>
  /** Removes the user's factor, recovery codes, passkeys and requirement; false when there was none. */
  resetMfa(userId: string): Promise<boolean>

  /** Requires enrolment at the user's next sign-in; false when enrolled or already required. */
  requireMfa(userId: string): Promise<boolean>

  /** Seals a short state for a client to hold (AES-256-GCM, bound to `purpose`): the pending second factor's cookie. */
  sealState(purpose: string, plain: string): string
  /** The state sealed for `purpose`, or null (tampered with, another purpose or another key). */
  openState(purpose: string, sealed: string): string | null

  /**
   * Appends one audit event (its JSON) to the audit stream, which keeps about
   * `maxLen` entries (older ones are dropped; Redis: XADD MAXLEN ~, one key).
   */
  appendAudit(json: string, maxLen: number): Promise<void>
  /** A bearer token's or session id's `ref` in the audit trail: a keyed hash (Keyring.auditRef). */
  auditRef(credential: string): string
  /** Audit entries, oldest first (AuditQuery says which). */
  readAudit(q: AuditQuery): Promise<AuditEntry[]>
}

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

/** A store as a process runs it: connected once, and gated until its secret key is checked. */
export interface RunningStore extends Store {
  /** Resolves when the store answers; rejects on the first failure (a Redis client keeps retrying). */
  connect(): Promise<void>
  /** The connection is up (metrics, /readyz). */
  readonly isReady: boolean
  /**
   * Closes (an error) or opens (null) the store for every call: a process whose secret key
   * has not been checked against the store's, or failed the check, neither reads nor writes
   * anything; while closed, every call fails with that error and nothing cached is used.
   */
  setGate(err: GatewayError | null): void
}

/** The secret key as the store records it (./secret/check.ts) and its rotation (./secret/rotate.ts). */
export interface KeyAdmin {
  /** Compares this process's key with the store's key check value; throws KeyCheckError if it may not use the store. */
  verifyKey(o: VerifyOptions): Promise<Verified>
  /** Re-encrypts every encrypted record under `newKeys`, resumably; `db` is selected first (refused: KeyCheckError). */
  rotateKey(newKeys: Keyring, o: RotateOptions & { db: number, where: string }): Promise<RotateResult>
}

/** The in-process caches, read by the metrics at scrape time. */
export interface StoreCaches {
  readonly users: ClearableCache
  readonly accessKeys: ClearableCache
  readonly privateTokens: ClearableCache
  readonly sessions: ClearableCache
}

/** What src/app/open-store.ts openStore gives `sidegate start` and the admin commands. */
export interface ManagedStore extends RunningStore, KeyAdmin, StoreCaches {}

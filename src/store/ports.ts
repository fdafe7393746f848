/**
 * Storage, by aggregate: what a backend (./sqlite/, ./redis/) must keep and
 * nothing else. Each method stores or reads; what to store, when, and what a
 * change ends (the account policy) is decided once above it, in ./policy/.
 * Where a step must be atomic (a username claimed once, the access-key cap
 * under concurrent creations, a bearer token consumed once, a
 * compare-and-set), it is one storage method: atomicity is the backend's job.
 * Secrets reach a backend already sealed with the Keyring, and credentials
 * only as their lookup hashes.
 */
import type { GatewayError } from '../errors.js'
import type { StoredKeySet } from './keyset.js'
import type {
  AccessKey, AuditEntry, AuditQuery, Factor, Group, KeyDisabler, Link, LoginFailures, Org, OrgRole, RateLimitPolicy,
  SessionInfo, StoredPasskey, User
} from './model.js'

/**
 * A user as stored: the public record, the password hash, the fingerprint of an
 * imported (Django) hash, and the group memberships by source (ids only: names are the groups').
 */
export interface StoredUser extends Omit<User, 'groups'> {
  /**
   * source (`local`, `idp:<provider>`) → group ids; a source's list is changed only as a whole
   * (replaceGroups) or one id at a time (setGroupMember), so sources never mix. Absent: none.
   */
  groups?: Record<string, string[]>
  password_hash: string | null
  /** a keyed hash of the legacy hash the last import set (store.passwords.isImported) */
  password_imported?: string
  /**
   * when the user's sessions were last ended (a password change, disabling, `session
   * revoke`), epoch ms: a pending sign-in step older than it is void (store.users.forSignIn)
   */
  sessions_ended?: number
}

/** The user fields a single-field update may write. */
export type UserField = 'is_active' | 'password_hash' | 'password_imported' | 'sessions_ended' | 'last_login' | 'name' | 'email' | 'is_superuser' | 'rate_limit'

/**
 * An access key as stored: its secret sealed with the Keyring (additional data `ak:<id>`); its last use is kept apart.
 */
export interface StoredKey extends Omit<AccessKey, 'date_last_used' | 'unreadable'> {
  secret: string
}

/** What setAccessKeyActive writes: null removes the field. */
export interface KeyStateFields {
  is_active: boolean
  date_enabled?: string
  disabled_by: KeyDisabler | null
}

/** The state AccessKeyStorage.setState compares with before it writes. */
export interface KeyStateExpected { is_active: boolean, disabled_by: KeyDisabler | null }

/**
 * AccessKeyStorage.setState on a record held as an object (the memory and
 * SQLite backends; Redis's script does the same): false, and nothing
 * changed, when its state is no longer `expect`.
 */
export function applyKeyState (s: StoredKey, fields: KeyStateFields, expect?: KeyStateExpected): boolean {
  if (expect !== undefined &&
    (s.is_active !== expect.is_active || (s.disabled_by ?? null) !== expect.disabled_by)) return false
  s.is_active = fields.is_active
  if (fields.date_enabled !== undefined) s.date_enabled = fields.date_enabled
  if (fields.disabled_by === null) delete s.disabled_by
  else s.disabled_by = fields.disabled_by
  return true
}

/**
 * A private token as stored for its user: its lookup hash (null
 * in records written before it was kept) and the sealed token.
 */
export interface StoredPrivateToken {
  hash: string | null
  sealed: string
}

export interface StoredSession {
  user_id: string
  /** epoch ms */
  created: number
  /** absent: the password alone (PASSWORD_ONLY; records written before factors were kept) */
  factors?: readonly Factor[]
  /** made through a provider (store.sessions.create's `sso`) */
  sso?: SsoMark
}

/**
 * A session made through a provider: its source (`oidc:<id>`) and the keyed
 * hashes a back-channel logout finds it by (SessionStorage.endTagged).
 */
export interface SsoMark {
  source: string
  tags: string[]
}

/** A bearer token as stored: its user and, unless the password alone, its factors. */
export interface StoredGrant {
  user_id: string
  factors?: readonly Factor[]
}

export interface OrgStorage {
  /** False when the id is taken. */
  insert(org: Org): Promise<boolean>
  get(id: string): Promise<Org | null>
  /** In no particular order. */
  list(): Promise<Org[]>
}

/** A group's claimed name: its org (none: global) and its lowercase name, one key for the pair. */
export const groupNameKey = (org: string | null, nameLower: string): string => `${org ?? 'global'}/${nameLower}`

export interface GroupStorage {
  /**
   * Claims the name key (groupNameKey) and stores the record, atomically
   * against concurrent creations; says what was taken otherwise.
   */
  insert(group: Group, nameKey: string): Promise<'ok' | 'name_taken' | 'id_taken'>
  get(id: string): Promise<Group | null>
  idByName(org: string | null, nameLower: string): Promise<string | null>
  /** Every group, in no particular order. */
  list(): Promise<Group[]>
  /** Deletes the record and frees its name (the users' memberships are the policy's to remove); false: none. */
  remove(id: string): Promise<boolean>
}

export interface LinkStorage {
  /**
   * Stores the link unless (source, subject) is linked already or the user has
   * a link of that source, atomically against concurrent creations.
   */
  insert(link: Link): Promise<'ok' | 'subject_taken' | 'source_taken'>
  get(source: string, subject: string): Promise<Link | null>
  /** The user's links, in no particular order. */
  list(userId: string): Promise<Link[]>
  /** Every link, in no particular order (export). */
  all(): Promise<Link[]>
  /** Replaces the orgs the link's source granted; false: no such link. */
  setOrgs(source: string, subject: string, orgs: Record<string, OrgRole>): Promise<boolean>
  /** Deletes it and its place under its user; false: none. */
  remove(source: string, subject: string): Promise<boolean>
}

export interface UserStorage {
  /**
   * Claims the username (lowercase) and stores the record, atomically
   * against concurrent creations; says what was taken otherwise.
   */
  insert(user: StoredUser, usernameLower: string): Promise<'ok' | 'username_taken' | 'id_taken'>
  get(id: string): Promise<StoredUser | null>
  idByUsername(usernameLower: string): Promise<string | null>
  /** Every user's id, in no particular order. */
  ids(): Promise<string[]>
  count(): Promise<number>
  /** Writes one field atomically (other fields kept); false when there is no such user. */
  setField<F extends UserField>(id: string, field: F, value: StoredUser[F]): Promise<boolean>
  /** Replaces the password hash only while it is still `expected` (compare-and-set). */
  swapPasswordHash(id: string, expected: string, hash: string): Promise<boolean>
  /**
   * Sets (null: removes) a membership; default_org moves to another of the
   * user's orgs (or null) when it is no longer one. False: no such user.
   */
  setMembership(id: string, orgId: string, role: OrgRole | null): Promise<boolean>
  /**
   * Adds (member) or removes a group id in one source's list, atomically on
   * the record (concurrent calls lose nothing); an emptied list goes. False: no such user.
   */
  setGroupMember(userId: string, source: string, groupId: string, member: boolean): Promise<boolean>
  /**
   * Replaces one source's list as a whole, atomically (none: the source
   * goes); other sources kept. False: no such user.
   */
  replaceGroups(userId: string, source: string, ids: string[]): Promise<boolean>
}

export interface AccessKeyStorage {
  /**
   * Stores a new key unless its user already has `max` (> 0),
   * atomically against concurrent creations; false: at the cap.
   */
  insert(key: StoredKey, max: number): Promise<boolean>
  /** Stores an imported key unless its id is taken; false: taken. */
  insertNew(key: StoredKey): Promise<boolean>
  /** The record and its last use (an ISO time, null: never). */
  get(id: string): Promise<{ stored: StoredKey, lastUsed: string | null } | null>
  /**
   * get, with the record of the key's user (null: none), in one round trip
   * where the backend can (a miss on the request path).
   */
  getWithUser(id: string): Promise<{ stored: StoredKey, lastUsed: string | null, user: StoredUser | null } | null>
  /** The user's key ids, in no particular order. */
  ids(userId: string): Promise<string[]>
  /**
   * Writes the fields only while the key's state is still `expect`
   * (when given): compare-and-set. False: no such key, or changed.
   */
  setState(id: string, fields: KeyStateFields, expect?: KeyStateExpected): Promise<boolean>
  setRateLimit(id: string, policy: RateLimitPolicy | null): Promise<boolean>
  /** Deletes the key, its last use and its place in its user's set; false: none. */
  delete(id: string): Promise<boolean>
  /**
   * Writes `now` as the last use unless the stored one is newer than `olderThan`
   * (ISO times): 0 not written, 1 written, 2 written and there was none.
   */
  touch(id: string, now: string, olderThan: string): Promise<0 | 1 | 2>
}

export interface PrivateTokenStorage {
  /** The lookup entry: hash(token) → user id. */
  setLookup(hash: string, userId: string): Promise<void>
  lookup(hash: string): Promise<string | null>
  /**
   * lookup, with the record of the user it points to (null: none), in one
   * round trip where the backend can (a miss on the request path).
   */
  lookupUser(hash: string): Promise<{ userId: string, user: StoredUser | null } | null>
  dropLookup(hash: string): Promise<void>
  /** Hashes of every lookup entry pointing to the user (a scan: only for records that have no hash). */
  lookupsOf(userId: string): Promise<string[]>
  /** Makes `t` the user's token in one step and returns the one it replaced. */
  swap(userId: string, t: { hash: string, sealed: string }): Promise<StoredPrivateToken | null>
  get(userId: string): Promise<StoredPrivateToken | null>
  /** Removes the user's token in one step and returns it. */
  take(userId: string): Promise<StoredPrivateToken | null>
  /** Lists a hash among the imported, untagged tokens'. */
  addImported(hash: string): Promise<void>
  /** True when it was listed. */
  dropImported(hash: string): Promise<boolean>
  /**
   * The first of `candidates()` that is an imported token's hash;
   * the candidates are computed only when any token was imported.
   */
  findImported(candidates: () => string[]): Promise<string | null>
}

export interface BearerTokenStorage {
  /** Stores hash → grant for `ttlSeconds` from `now`, indexed under the user; false when the hash is taken. */
  insert(hash: string, grant: StoredGrant, now: number, ttlSeconds: number): Promise<boolean>
  /** Reads and deletes in one step: one caller gets the grant. */
  consume(hash: string): Promise<StoredGrant | null>
  read(hash: string): Promise<StoredGrant | null>
  /** Deletes every one of the user's unused tokens. */
  endAll(userId: string): Promise<void>
}

export interface SessionStorage {
  /** Stores the session for `ttlSeconds` (the idle timeout), indexed under its user; the index lives `indexSeconds`. */
  insert(hash: string, s: StoredSession, ttlSeconds: number, indexSeconds: number): Promise<void>
  get(hash: string): Promise<StoredSession | null>
  /** Pushes an existing session's expiry to `ttlSeconds` from now. */
  touch(hash: string, ttlSeconds: number): Promise<void>
  /** Deletes it; the user id it had, or null. */
  delete(hash: string): Promise<string | null>
  /** The user's live sessions (id: the hash), in no particular order. */
  list(userId: string): Promise<SessionInfo[]>
  /** Deletes it only when it is the user's; false otherwise. */
  deleteOf(userId: string, hash: string): Promise<boolean>
  /** Deletes every session of the user. */
  endAll(userId: string): Promise<void>
  /** Deletes every live session whose sso.tags hold `tag`: what each was (hash, user). */
  endTagged(tag: string): Promise<Array<{ hash: string, user_id: string }>>
}

/** Counters with a window: login attempts, rate-limit buckets, replay marks. */
export interface LimitStorage {
  /**
   * Counts one attempt under `hash`: the window starts at the
   * first and again at the `max`-th (store.limits.countLoginAttempt).
   */
  countAttempt(hash: string, windowSeconds: number, max: number): Promise<LoginFailures>
  resetAttempts(hash: string): Promise<void>
  /** One attempt back, never below 0; the window kept. */
  forgiveAttempt(hash: string): Promise<void>
  /** True the first time `kind`/`hash` is marked within `ttlSeconds`. */
  markOnce(kind: string, hash: string, ttlSeconds: number): Promise<boolean>
  /**
   * As markOnce, on the same marks: null the first time within `ttlSeconds`,
   * else the milliseconds since that first time. `create` false only reads:
   * null when there is no mark, and none is set.
   */
  markSeen(kind: string, hash: string, ttlSeconds: number, create?: boolean): Promise<number | null>
  /**
   * Counts one request in a sliding window log on the store's clock; `resetMs`:
   * until the oldest counted request that matters leaves the window.
   */
  hit(bucket: string, limit: number, windowMs: number): Promise<{
    allowed: boolean,
    remaining: number,
    resetMs: number
  }>
}

export interface LockStorage {
  /** Holds `name` with `token` for `ttlMs` when it is free; false when held. */
  acquire(name: string, token: string, ttlMs: number): Promise<boolean>
  /** Frees it only while `token` holds it. */
  release(name: string, token: string): Promise<boolean>
}

export interface AuditStorage {
  append(json: string, maxLen: number): Promise<void>
  read(q: AuditQuery): Promise<AuditEntry[]>
}

/**
 * A user's second factors: the TOTP record (its JSON, the secret sealed with
 * additional data `user-totp:<user id>`: ../secret/records.ts) and the lookup
 * hashes of their recovery codes. Used codes are replay marks (LimitStorage.markOnce).
 */
export interface MfaStorage {
  /** The stored TOTP record, or null. */
  getTotp(userId: string): Promise<string | null>
  /** Writes the record (a new enrolment replaces any other). */
  putTotp(userId: string, stored: string): Promise<void>
  /** Replaces the record only while it still holds `expected` (compare-and-set); false otherwise. */
  swapTotp(userId: string, expected: string, stored: string): Promise<boolean>
  /** Deletes the record and every recovery code; false when there was no record. */
  deleteAll(userId: string): Promise<boolean>
  /** Replaces the user's recovery codes with these hashes. */
  setRecoveryCodes(userId: string, hashes: string[]): Promise<void>
  /** Removes one recovery code in one step: true for the one caller that removed it. */
  takeRecoveryCode(userId: string, hash: string): Promise<boolean>
  countRecoveryCodes(userId: string): Promise<number>
}

/** A user's passkeys (WebAuthn credentials), by credential id and by user. */
export interface PasskeyStorage {
  /** Stores a new passkey; false (nothing written) when its credential id is taken. */
  insert(p: StoredPasskey): Promise<boolean>
  get(credentialId: string): Promise<StoredPasskey | null>
  /** The user's passkeys, in no particular order. */
  list(userId: string): Promise<StoredPasskey[]>
  /** Renames it only when it is the user's; false otherwise. */
  rename(userId: string, credentialId: string, name: string): Promise<boolean>
  /** Deletes it only when it is the user's; false otherwise. */
  delete(userId: string, credentialId: string): Promise<boolean>
  /** Deletes every passkey of the user; how many there were. */
  deleteAll(userId: string): Promise<number>
  /**
   * In one step: writes `counter` and `lastUsed` only when `counter` is above
   * the stored one, or both are 0. False: no such passkey, or refused.
   */
  advance(credentialId: string, counter: number, lastUsed: string): Promise<boolean>
}

/**
 * The counter rule of PasskeyStorage.advance: a counter must increase, unless the authenticator keeps none (both 0).
 */
export function counterAdvances (stored: number, next: number): boolean {
  return next > stored || (next === 0 && stored === 0)
}

export interface SigningKeyStorage {
  /** The sealed set (rev 0, no keys, when none was written). */
  get(): Promise<StoredKeySet>
  /** Writes `set` only while the stored one is still at `rev` (compare-and-set). */
  putIfRev(rev: number, set: StoredKeySet): Promise<boolean>
}

/**
 * How a backend whose replicas cache records in process (Redis) tells them
 * of a change. Messages name what changed: `user:<id>`, `ak:<id>`,
 * `pt:<hash>`, `sess:<hash>`, `user-aks:<user id>` (a disabled user),
 * `user-sess:<user id>` (their sessions), `pt-imported:`, `group:<id>` (a
 * group created or removed: the group table is read again, the users that show it evicted).
 */
export interface Invalidation {
  /** Cached entries may be used: the gate is open and every connection that carries messages is up. */
  readonly trusted: boolean
  /** Applies the message to what the backend caches itself, and sends it to every replica. */
  publish(msg: string): Promise<void>
  /** `onMessage`: a message from any replica; `onReset`: messages may have been missed (a reconnect), so start cold. */
  listen(onMessage: (msg: string) => void, onReset: () => void): void
}

/** A backend: every aggregate's storage, its clock, and its lifecycle. */
export interface Storage {
  readonly orgs: OrgStorage
  readonly groups: GroupStorage
  readonly users: UserStorage
  readonly links: LinkStorage
  readonly accessKeys: AccessKeyStorage
  readonly privateTokens: PrivateTokenStorage
  readonly bearerTokens: BearerTokenStorage
  readonly sessions: SessionStorage
  readonly limits: LimitStorage
  readonly locks: LockStorage
  readonly audit: AuditStorage
  readonly signingKeys: SigningKeyStorage
  readonly mfa: MfaStorage
  readonly passkeys: PasskeyStorage
  /** Present where replicas cache in process and must hear of changes. */
  readonly invalidation?: Invalidation
  /** The clock of every date and expiry the policy writes, epoch ms. */
  now(): number
  connect(): Promise<void>
  readonly isReady: boolean
  /** RunningStore.setGate: while closed, every storage call fails with the error. */
  setGate(err: GatewayError | null): void
  /** A round trip; a 503 GatewayError when unreachable. */
  ping(): Promise<void>
  close(): Promise<void>
}

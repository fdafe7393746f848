/**
 * The application-facing Store over any backend: the account policy,
 * written once (one module per concern, composed here), above a Storage
 * (../ports.ts) that only stores. RedisStore and MemoryStore are this class
 * over their backends; a new backend is a Storage and nothing more.
 */
import type { Keyring } from '../../crypto.js'
import type { GatewayError } from '../../errors.js'
import type { Storage } from '../ports.js'
import type {
  AccessKey, AuditEntry, AuditQuery, BearerGrant, Factor, KeyDisabler, KeyState, LoginFailures, MfaFactors,
  NewKeyOptions, SecondFactorState, NewUser, Org, OrgRole, RateLimitHit, NewPasskey, PasskeyInfo, StoredPasskey,
  RateLimitPolicy, RunningStore, SecondFactorResult, Session, SessionInfo, SignInUser, SigningKey, SigningKeySet,
  StoreCaches, TotpEnrolment, UNREADABLE, User
} from '../types.js'
import { AccessKeys } from './access-keys.js'
import { BearerTokens } from './bearer-tokens.js'
import { Caches, type CacheOptions } from './caches.js'
import type { Context } from './context.js'
import { Limits } from './limits.js'
import { Locks } from './locks.js'
import { Mfa } from './mfa.js'
import { Passkeys } from './passkeys.js'
import { Passwords } from './passwords.js'
import { PrivateTokens } from './private-tokens.js'
import { Sessions } from './sessions.js'
import { SigningKeys } from './signing-keys.js'
import { Orgs, Users } from './users.js'

export interface PolicyOptions {
  /**
   * The in-process caches' size and TTL (seconds), for a backend with Storage.invalidation; none are kept without one.
   */
  cache?: CacheOptions
  /** Called with the record's name (never its content) when a sealed value cannot be opened with this store's key. */
  onUnreadable?: (record: string) => void
}

export class PolicyStore implements RunningStore {
  protected readonly storage: Storage
  protected readonly keyring: Keyring
  /** null where the backend has no Storage.invalidation: its replicas see every change at once */
  protected readonly caches: Caches | null
  #gate: GatewayError | null = null
  #closed = false
  readonly #orgs: Orgs
  readonly #users: Users
  readonly #passwords: Passwords
  readonly #keys: AccessKeys
  readonly #pt: PrivateTokens
  readonly #bt: BearerTokens
  readonly #sessions: Sessions
  readonly #limits: Limits
  readonly #locks: Locks
  readonly #jwks: SigningKeys
  readonly #mfa: Mfa
  readonly #passkeys: Passkeys

  constructor (storage: Storage, keyring: Keyring, o: PolicyOptions = {}) {
    this.storage = storage
    this.keyring = keyring
    this.caches = storage.invalidation === undefined
      ? null
      : new Caches(o.cache ?? { max: 0, ttl: 0 }, storage.invalidation)
    const c: Context = {
      storage,
      keys: keyring,
      caches: this.caches,
      onUnreadable: o.onUnreadable,
      shut: () => this.#gate !== null || this.#closed
    }
    this.#orgs = new Orgs(c)
    this.#users = new Users(c)
    this.#passwords = new Passwords(c)
    this.#keys = new AccessKeys(c)
    this.#pt = new PrivateTokens(c)
    this.#bt = new BearerTokens(c)
    this.#sessions = new Sessions(c)
    this.#limits = new Limits(c)
    this.#locks = new Locks(c)
    this.#jwks = new SigningKeys(c)
    this.#mfa = new Mfa(c)
    this.#passkeys = new Passkeys(c)
  }

  // ---- lifecycle

  async connect (): Promise<void> { await this.storage.connect() }
  get isReady (): boolean { return this.storage.isReady }

  setGate (err: GatewayError | null): void {
    this.#gate = err
    this.storage.setGate(err)
    // nothing cached before is trusted after
    if (err !== null) this.caches?.clear()
  }

  async ping (): Promise<void> { await this.storage.ping() }

  async close (): Promise<void> {
    this.#closed = true
    await this.storage.close()
  }

  // ---- orgs and users

  createOrg (name: string, id?: string): Promise<Org> { return this.#orgs.create(name, id) }
  getOrg (id: string): Promise<Org | null> { return this.#orgs.get(id) }
  listOrgs (): Promise<Org[]> { return this.#orgs.list() }

  createUser (u: NewUser): Promise<User> { return this.#users.create(u) }
  getUser (id: string): Promise<User | null> { return this.#users.get(id) }
  getUserForSignIn (id: string): Promise<SignInUser | null> { return this.#users.forSignIn(id) }
  cachedUser (id: string): User | undefined { return this.#users.cached(id) }
  getUserByUsername (username: string): Promise<User | null> { return this.#users.byUsername(username) }
  listUsers (orgId?: string): Promise<User[]> { return this.#users.list(orgId) }
  countUsers (): Promise<number> { return this.#users.count() }
  setUserActive (userId: string, active: boolean): Promise<void> { return this.#users.setActive(userId, active) }
  setMembership (userId: string, orgId: string, role: OrgRole | null): Promise<void> {
    return this.#users.setMembership(userId, orgId, role)
  }

  setUserFields (
    userId: string, fields: Partial<Pick<User, 'name' | 'email' | 'is_superuser'>>
  ): Promise<void> { return this.#users.setFields(userId, fields) }

  recordLogin (userId: string): Promise<void> { return this.#users.recordLogin(userId) }

  // ---- passwords

  getPasswordHash (userId: string): Promise<string | null> { return this.#passwords.hash(userId) }
  setPassword (userId: string, password: string): Promise<void> { return this.#passwords.set(userId, password) }
  setLegacyPasswordHash (userId: string, hash: string): Promise<void> { return this.#passwords.setLegacy(userId, hash) }
  isImportedPasswordHash (userId: string, hash: string): Promise<boolean> {
    return this.#passwords.isImported(userId, hash)
  }

  upgradePasswordHash (userId: string, oldHash: string, newHash: string): Promise<boolean> {
    return this.#passwords.upgrade(userId, oldHash, newHash)
  }

  // ---- access keys

  createAccessKey (
    userId: string, max?: number, o?: NewKeyOptions
  ): Promise<{ key: AccessKey, secret: string }> { return this.#keys.create(userId, max, o) }

  importAccessKey (
    userId: string, k: { id: string, secret: string, is_active: boolean } & NewKeyOptions
  ): Promise<boolean> { return this.#keys.import(userId, k) }

  getAccessKey (id: string): Promise<{ key: AccessKey, secret: string } | null> { return this.#keys.get(id) }
  cachedAccessKey (id: string): { key: AccessKey, secret: string } | null | undefined { return this.#keys.cached(id) }
  listAccessKeys (userId: string): Promise<AccessKey[]> { return this.#keys.list(userId) }
  setAccessKeyActive (
    id: string, active: boolean, by?: KeyDisabler, expect?: KeyState
  ): Promise<boolean> { return this.#keys.setActive(id, active, by, expect) }

  deleteAccessKey (id: string): Promise<boolean> { return this.#keys.delete(id) }
  touchAccessKey (id: string): Promise<boolean> | undefined { return this.#keys.touch(id) }

  // ---- private tokens

  createPrivateToken (userId: string): Promise<string> { return this.#pt.create(userId) }
  importPrivateToken (userId: string, token: string): Promise<void> { return this.#pt.import(userId, token) }
  async getPrivateToken (userId: string): Promise<string | null> {
    const t = await this.#pt.read(userId)
    return typeof t === 'string' ? t : null
  }

  readPrivateToken (userId: string): Promise<string | null | typeof UNREADABLE> { return this.#pt.read(userId) }
  revokePrivateToken (userId: string): Promise<boolean> { return this.#pt.revoke(userId) }
  userIdForPrivateToken (token: string): Promise<string | null> { return this.#pt.userIdFor(token) }
  cachedUserIdForPrivateToken (token: string): string | null | undefined { return this.#pt.cachedUserIdFor(token) }

  // ---- bearer tokens and sessions

  issueBearerToken (
    userId: string, ttlSeconds: number, factors?: readonly Factor[]
  ): Promise<{ token: string, expires: Date }> { return this.#bt.issue(userId, ttlSeconds, factors) }

  consumeBearerToken (token: string): Promise<BearerGrant | null> { return this.#bt.consume(token) }
  readBearerToken (token: string): Promise<BearerGrant | null> { return this.#bt.read(token) }

  createSession (
    userId: string, ttlSeconds: number, lifetimeSeconds?: number, factors?: readonly Factor[]
  ): Promise<Session> {
    return this.#sessions.create(userId, ttlSeconds, lifetimeSeconds, factors)
  }

  getSession (id: string): Promise<Session | null> { return this.#sessions.get(id) }
  cachedSession (id: string): Session | null | undefined { return this.#sessions.cached(id) }
  touchSession (id: string, ttlSeconds: number): Promise<void> { return this.#sessions.touch(id, ttlSeconds) }
  deleteSession (id: string): Promise<string | null> { return this.#sessions.delete(id) }
  listSessions (userId: string): Promise<SessionInfo[]> { return this.#sessions.list(userId) }
  endSession (userId: string, id: string): Promise<boolean> { return this.#sessions.end(userId, id) }
  endSessions (userId: string): Promise<number> { return this.#sessions.endAll(userId) }

  // ---- limits, locks

  countLoginAttempt (subject: string, windowSeconds: number, max: number): Promise<LoginFailures> {
    return this.#limits.countLoginAttempt(subject, windowSeconds, max)
  }

  resetLoginFailures (subject: string): Promise<void> { return this.#limits.resetLoginFailures(subject) }
  forgiveLoginAttempt (subject: string): Promise<void> { return this.#limits.forgiveLoginAttempt(subject) }
  markOnce (kind: string, value: string, ttlSeconds: number): Promise<boolean> {
    return this.#limits.markOnce(kind, value, ttlSeconds)
  }

  markSeen (kind: string, value: string, ttlSeconds: number, create = true): Promise<number | null> {
    return this.#limits.markSeen(kind, value, ttlSeconds, create)
  }

  hitRateLimit (bucket: string, limit: number, windowSeconds: number): Promise<RateLimitHit> {
    return this.#limits.hitRateLimit(bucket, limit, windowSeconds)
  }

  acquireLock (name: string, ttlMs: number): Promise<string | null> { return this.#locks.acquire(name, ttlMs) }
  releaseLock (name: string, token: string): Promise<boolean> { return this.#locks.release(name, token) }

  setRateLimit (subject: { user: string } | { key: string }, policy: RateLimitPolicy | null): Promise<boolean> {
    return 'user' in subject ? this.#users.setRateLimit(subject.user, policy) : this.#keys.setRateLimit(subject.key, policy)
  }

  // ---- second factors

  mfaFactors (userId: string): Promise<MfaFactors> { return this.#mfa.factors(userId) }
  async hasSecondFactor (userId: string): Promise<boolean> {
    const s = await this.#mfa.state(userId); return s === 'enrolled' || s === 'passkey'
  }

  secondFactorState (userId: string): Promise<SecondFactorState> { return this.#mfa.state(userId) }
  beginTotp (userId: string, by?: 'user' | 'operator'): Promise<TotpEnrolment | null> { return this.#mfa.begin(userId, by) }
  confirmTotp (userId: string, code: string): Promise<string[] | null> { return this.#mfa.confirm(userId, code) }
  verifySecondFactor (userId: string, code: string): Promise<SecondFactorResult> {
    return this.#mfa.verify(userId, code)
  }

  regenerateRecoveryCodes (userId: string): Promise<string[] | null> { return this.#mfa.regenerate(userId) }
  resetMfa (userId: string): Promise<boolean> { return this.#mfa.reset(userId) }
  requireMfa (userId: string): Promise<boolean> { return this.#mfa.require(userId) }
  listPasskeys (userId: string): Promise<PasskeyInfo[]> { return this.#passkeys.list(userId) }
  getPasskey (credentialId: string): Promise<StoredPasskey | null> { return this.#passkeys.get(credentialId) }
  passkeyUserHandle (userId: string): Promise<string> { return this.#passkeys.handle(userId) }
  addPasskey (p: NewPasskey): Promise<boolean> { return this.#passkeys.add(p) }
  renamePasskey (userId: string, credentialId: string, name: string): Promise<boolean> {
    return this.#passkeys.rename(userId, credentialId, name)
  }

  removePasskey (userId: string, credentialId: string): Promise<boolean> {
    return this.#passkeys.remove(userId, credentialId)
  }

  usePasskey (credentialId: string, counter: number): Promise<boolean> {
    return this.#passkeys.use(credentialId, counter)
  }

  // ---- signing keys, audit

  getSigningKeys (): Promise<SigningKeySet> { return this.#jwks.get() }
  putSigningKeys (rev: number, keys: SigningKey[]): Promise<boolean> { return this.#jwks.put(rev, keys) }

  sealState (purpose: string, plain: string): string { return this.keyring.encrypt(plain, `state:${purpose}`) }
  openState (purpose: string, sealed: string): string | null {
    return sealed.length > 4096 ? null : this.keyring.tryDecrypt(sealed, `state:${purpose}`)
  }

  auditRef (credential: string): string { return this.keyring.auditRef(credential) }
  appendAudit (json: string, maxLen: number): Promise<void> { return this.storage.audit.append(json, maxLen) }
  readAudit (q: AuditQuery): Promise<AuditEntry[]> { return this.storage.audit.read(q) }
}

/**
 * The policy over a backend whose processes cache in process (Storage.invalidation:
 * Redis, SQLite): the caches' counters for metrics (StoreCaches).
 */
export class CachedPolicyStore extends PolicyStore implements StoreCaches {
  declare protected readonly caches: Caches

  get users (): Caches['users'] { return this.caches.users }
  get accessKeys (): Caches['accessKeys'] { return this.caches.accessKeys }
  get privateTokens (): Caches['privateTokens'] { return this.caches.privateTokens }
  get sessions (): Caches['sessions'] { return this.caches.sessions }
}

/** The Store of a backend: the shared policy over `storage`, sealing with `keyring`. */
export function createStore (storage: Storage, keyring: Keyring, o: PolicyOptions = {}): PolicyStore {
  return new PolicyStore(storage, keyring, o)
}

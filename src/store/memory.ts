/**
 * The Store contract in process memory: what RedisStore does, without Redis
 * (test/fixtures/store-contract.ts runs the same suite against both). For
 * tests that need a store but no sockets (test/unit/unit-auth.test.ts), and for
 * tooling.
 *
 * - Replicas: `replica()` gives another store on the same data, as another
 *   process shares one Redis. There is no cache, so every replica sees a
 *   change at once (what RedisStore reaches through pub/sub invalidation).
 * - Time: every expiry (bearer tokens, sessions, login counters, replay
 *   marks) and every date comes from one injectable clock (`now`), so tests
 *   step it instead of sleeping. An entry expires when the clock reaches its
 *   expiry, as a Redis key does.
 * - Secrets: access-key secrets and private tokens are sealed with the
 *   Keyring as in Redis, and tokens and session ids are kept only as lookup
 *   hashes with their check tags verified first: a replica with another
 *   secret key sees the same unreadable records and refuses the same
 *   credentials.
 * - Atomicity: every check-and-set runs without an await in between, so
 *   concurrent callers (a bearer token consumed twice, two creations of one
 *   username, the access-key cap) get what Redis's single commands give.
 */
import { randomUUID } from 'node:crypto'
import { credentialShaped, hashPassword, type Keyring } from '../crypto.js'
import { E, GatewayError } from '../errors.js'
import { LAST_USED_EVERY_MS } from '../limits.js'
import { openKeySet, sealKeySet, type StoredKeySet } from './keyset.js'
import { importedDisable, lifecycle, openKeySecret } from './layout.js'
import { newUserRecord } from './records.js'
import { UNREADABLE, type AuditEntry, type AuditQuery, type SigningKey, type SigningKeySet, type AccessKey, type KeyDisabler, type KeyState, type NewKeyOptions, type LoginFailures, type NewUser, type Org, type OrgRole, type RateLimitHit, type RateLimitPolicy, type RunningStore, type Session, type SessionInfo, type User } from './types.js'

export interface MemoryStoreOptions {
  /** The clock, epoch ms (default Date.now). Replicas share the first store's. */
  now?: () => number
  /** Called with the record's name (never its content) when a sealed value cannot be opened with this store's key. */
  onUnreadable?: (record: string) => void
}

interface StoredUser extends User { password_hash: string | null, password_imported?: string }
interface StoredKey extends NewKeyOptions {
  id: string
  user_id: string
  is_active: boolean
  date_created: string
  date_enabled?: string
  disabled_by?: KeyDisabler
  secret: string
  rate_limit?: RateLimitPolicy | null
}
interface Expiring<V> { v: V, exp: number }

/** Expired entries nobody reads again are dropped at most this often (clock time). */
const SWEEP_EVERY_MS = 60_000

// The store's own refusals, worded as RedisStore words them.
const userExists = (username: string): GatewayError => E.userExists(username)
const orgExists = (id: string): GatewayError => E.orgExists(id)
const userNotFound = (): GatewayError => E.userNotFound()

/** What replicas share: the records, the indexes, the clock. */
class Data {
  readonly orgs = new Map<string, Org>()
  readonly users = new Map<string, StoredUser>()
  /** lowercase username → user id */
  readonly usernames = new Map<string, string>()
  readonly keys = new Map<string, StoredKey>()
  readonly keyUsed = new Map<string, string>()
  readonly userKeys = new Map<string, Set<string>>()
  /** hash(private token) → user id */
  readonly privateTokens = new Map<string, string>()
  readonly userPrivateToken = new Map<string, { hash: string, sealed: string }>()
  /** lookup hashes of imported, untagged private tokens */
  readonly importedTokens = new Set<string>()
  /** hash(bearer token) → user id */
  readonly bearer = new Map<string, Expiring<string>>()
  readonly userBearer = new Map<string, Set<string>>()
  /** hash(session id) → session */
  readonly sessions = new Map<string, Expiring<{ user_id: string, created: number }>>()
  readonly userSessions = new Map<string, Set<string>>()
  /** hash(subject) → attempts */
  readonly attempts = new Map<string, Expiring<number>>()
  /** kind:hash(value) → expiry */
  readonly once = new Map<string, Expiring<true>>()
  /** lock name → its owner's token */
  readonly locks = new Map<string, Expiring<string>>()
  /** the identity JWT's signing keys, sealed as RedisStore stores them */
  jwks: StoredKeySet = { rev: 0, keys: [] }
  /** rate-limit bucket → the times (ms, ascending) of the requests counted, and when the last one leaves the window */
  readonly rates = new Map<string, Expiring<number[]>>()
  /** the audit stream, oldest first; the last id given; readers waiting for an entry */
  readonly audit: AuditEntry[] = []
  auditLast: [number, number] = [0, -1]
  readonly auditWaiters: Array<() => void> = []
  #nextSweep = 0

  constructor (readonly now: () => number) {}

  /** The live entry, or undefined (an expired one is dropped). */
  alive<V> (map: Map<string, Expiring<V>>, key: string): Expiring<V> | undefined {
    const e = map.get(key)
    if (e === undefined) return undefined
    if (e.exp <= this.now()) { map.delete(key); return undefined }
    return e
  }

  /** Drops every expired entry, at most once per SWEEP_EVERY_MS: memory does not grow with what nobody reads again. */
  sweep (): void {
    const now = this.now()
    if (now < this.#nextSweep) return
    this.#nextSweep = now + SWEEP_EVERY_MS
    for (const map of [this.bearer, this.sessions, this.attempts, this.once, this.rates, this.locks] as Array<Map<string, Expiring<unknown>>>) {
      for (const [k, e] of map) if (e.exp <= now) map.delete(k)
    }
    for (const [index, records] of [[this.userBearer, this.bearer], [this.userSessions, this.sessions]] as const) {
      for (const [user, hashes] of index) {
        for (const h of hashes) if (!records.has(h)) hashes.delete(h)
        if (hashes.size === 0) index.delete(user)
      }
    }
  }
}

function addTo (index: Map<string, Set<string>>, key: string, member: string): void {
  let set = index.get(key)
  if (set === undefined) index.set(key, (set = new Set()))
  set.add(member)
}

function publicUser (s: StoredUser): User {
  const { password_hash: _, password_imported: _i, ...u } = s
  const out = structuredClone(u)
  if (out.rate_limit === null) delete out.rate_limit
  return out
}

export class MemoryStore implements RunningStore {
  readonly #data: Data
  readonly #keys: Keyring
  readonly #onUnreadable: ((record: string) => void) | undefined
  readonly #lastTouched = new Map<string, number>()
  #gate: GatewayError | null = null
  #closed = false

  constructor (keyring: Keyring, o: MemoryStoreOptions & { shareWith?: MemoryStore } = {}) {
    this.#keys = keyring
    this.#onUnreadable = o.onUnreadable
    this.#data = o.shareWith === undefined ? new Data(o.now ?? Date.now) : o.shareWith.#data
  }

  /** Another store on the same data (another process on the same Redis), with this key or another. */
  replica (o: { keyring?: Keyring, onUnreadable?: (record: string) => void } = {}): MemoryStore {
    return new MemoryStore(o.keyring ?? this.#keys, { shareWith: this, onUnreadable: o.onUnreadable })
  }

  #now (): number { return this.#data.now() }
  #iso (): string { return new Date(this.#now()).toISOString() }

  /** Every call starts here: a closed gate or a closed store refuses it, as RedisStore does. */
  #open (): Data {
    if (this.#gate !== null) throw this.#gate
    if (this.#closed) throw E.storeUnavailable()
    return this.#data
  }

  // ---- lifecycle

  async connect (): Promise<void> { this.#open() }
  get isReady (): boolean { return !this.#closed }
  setGate (err: GatewayError | null): void { this.#gate = err }
  async ping (): Promise<void> { this.#open() }
  async close (): Promise<void> { this.#closed = true }

  /** Entries held, expired ones included until swept: what a long-running process keeps in memory. */
  stats (): { bearer: number, sessions: number, attempts: number, once: number, indexed: number } {
    const d = this.#data
    let indexed = 0
    for (const index of [d.userBearer, d.userSessions]) for (const set of index.values()) indexed += set.size
    return { bearer: d.bearer.size, sessions: d.sessions.size, attempts: d.attempts.size, once: d.once.size, indexed }
  }

  // ---- orgs

  async createOrg (name: string, id: string = randomUUID()): Promise<Org> {
    const d = this.#open()
    const org: Org = { id: id.toLowerCase(), name, date_created: this.#iso() }
    if (d.orgs.has(org.id)) throw orgExists(org.id)
    d.orgs.set(org.id, org)
    return { ...org }
  }

  async getOrg (id: string): Promise<Org | null> {
    const o = this.#open().orgs.get(id)
    return o === undefined ? null : { ...o }
  }

  async listOrgs (): Promise<Org[]> {
    return [...this.#open().orgs.values()].map((o) => ({ ...o })).sort((a, b) => a.name.localeCompare(b.name))
  }

  // ---- users

  async createUser (u: NewUser): Promise<User> {
    this.#open()
    const hash = u.password === null ? (u.password_hash ?? null) : await hashPassword(u.password)
    const d = this.#open()
    const lower = u.username.toLowerCase()
    if (d.usernames.has(lower)) throw userExists(u.username)
    const id = u.id?.toLowerCase() ?? randomUUID()
    if (d.users.has(id)) throw userExists(id)
    const user: StoredUser = newUserRecord(u, id, hash, this.#iso(), this.#keys)
    d.usernames.set(lower, user.id)
    d.users.set(user.id, user)
    return publicUser(user)
  }

  async setLegacyPasswordHash (userId: string, hash: string): Promise<void> {
    const u = this.#user(userId)
    u.password_hash = hash
    u.password_imported = this.#keys.lookup(`imported password:${hash}`)
    this.#endCredentials(userId)
  }

  async isImportedPasswordHash (userId: string, hash: string): Promise<boolean> {
    const u = this.#open().users.get(userId)
    // under any key the store was rotated through: the same hash again is no change
    return u !== undefined && (u.password_hash === hash || (u.password_imported !== undefined && this.#keys.lookups(`imported password:${hash}`).includes(u.password_imported)))
  }

  async upgradePasswordHash (userId: string, oldHash: string, newHash: string): Promise<boolean> {
    const u = this.#open().users.get(userId)
    if (u === undefined || u.password_hash !== oldHash) return false
    u.password_hash = newHash
    return true
  }

  async setUserFields (userId: string, fields: Partial<Pick<User, 'name' | 'email' | 'is_superuser'>>): Promise<void> {
    const u = this.#user(userId)
    if (fields.name !== undefined) u.name = fields.name
    if (fields.email !== undefined) u.email = fields.email
    if (fields.is_superuser !== undefined) u.is_superuser = fields.is_superuser
  }

  async getUser (id: string): Promise<User | null> {
    const s = this.#open().users.get(id)
    return s === undefined ? null : publicUser(s)
  }

  async getUserByUsername (username: string): Promise<User | null> {
    const id = this.#open().usernames.get(username.toLowerCase())
    return id === undefined ? null : await this.getUser(id)
  }

  async getPasswordHash (userId: string): Promise<string | null> {
    return this.#open().users.get(userId)?.password_hash ?? null
  }

  async listUsers (orgId?: string): Promise<User[]> {
    return [...this.#open().users.values()]
      .filter((u) => orgId === undefined || orgId in u.orgs)
      .map(publicUser)
      .sort((a, b) => a.username.localeCompare(b.username))
  }

  async countUsers (): Promise<number> { return this.#open().users.size }

  #user (userId: string): StoredUser {
    const u = this.#open().users.get(userId)
    if (u === undefined) throw userNotFound()
    return u
  }

  async setUserActive (userId: string, active: boolean): Promise<void> {
    const u = this.#user(userId)
    u.is_active = active
    if (!active) this.#endSessions(userId)
  }

  async setPassword (userId: string, password: string): Promise<void> {
    this.#user(userId)
    const hash = await hashPassword(password)
    this.#user(userId).password_hash = hash
    this.#endCredentials(userId)
  }

  /** After a password change: whoever held the old password may hold these; private tokens and access keys stay. */
  #endCredentials (userId: string): void {
    this.#endSessions(userId)
    const d = this.#data
    for (const h of d.userBearer.get(userId) ?? []) d.bearer.delete(h)
    d.userBearer.delete(userId)
  }

  #endSessions (userId: string): void {
    const d = this.#data
    for (const h of d.userSessions.get(userId) ?? []) d.sessions.delete(h)
    d.userSessions.delete(userId)
  }

  async setMembership (userId: string, orgId: string, role: OrgRole | null): Promise<void> {
    const u = this.#user(userId)
    if (role === null) delete u.orgs[orgId]
    else u.orgs[orgId] = role
    if (u.default_org === null || !(u.default_org in u.orgs)) u.default_org = Object.keys(u.orgs)[0] ?? null
  }

  async recordLogin (userId: string): Promise<void> {
    this.#user(userId).last_login = this.#iso()
  }

  // ---- access keys

  async createAccessKey (userId: string, max = 0, o: NewKeyOptions = {}): Promise<{ key: AccessKey, secret: string }> {
    const d = this.#open()
    if (max > 0 && (d.userKeys.get(userId)?.size ?? 0) >= max) throw E.tooManyKeys(max)
    const id = randomUUID()
    const secret = randomUUID()
    const stored: StoredKey = { id, user_id: userId, is_active: true, date_created: this.#iso(), ...lifecycle(o), secret: this.#keys.encrypt(secret, `ak:${id}`) }
    d.keys.set(id, stored)
    addTo(d.userKeys, userId, id)
    return { key: this.#keyOf(stored), secret }
  }

  async importAccessKey (userId: string, k: { id: string, secret: string, is_active: boolean } & NewKeyOptions): Promise<boolean> {
    const d = this.#open()
    const id = k.id.toLowerCase()
    if (d.keys.has(id)) return false
    d.keys.set(id, { id, user_id: userId, is_active: k.is_active, date_created: this.#iso(), ...lifecycle(k), ...importedDisable(k.is_active), secret: this.#keys.encrypt(k.secret, `ak:${id}`) })
    addTo(d.userKeys, userId, id)
    return true
  }

  #keyOf (s: StoredKey): AccessKey {
    const key: AccessKey = { id: s.id, user_id: s.user_id, is_active: s.is_active, date_created: s.date_created, date_last_used: this.#data.keyUsed.get(s.id) ?? null }
    if (s.rate_limit !== undefined && s.rate_limit !== null) key.rate_limit = { ...s.rate_limit }
    Object.assign(key, structuredClone(lifecycle(s)))
    return key
  }

  /** The key and its secret; `secret` null (and reported) when it cannot be opened with this store's key. */
  #readKey (id: string): { key: AccessKey, secret: string | null } | null {
    const s = this.#open().keys.get(id)
    if (s === undefined) return null
    const key = this.#keyOf(s)
    return openKeySecret(this.#keys, key, s.secret, this.#onUnreadable)
  }

  async getAccessKey (id: string): Promise<{ key: AccessKey, secret: string } | null> {
    const v = this.#readKey(id)
    // a key whose secret cannot be read verifies nothing: refused like an unknown one
    return v === null || v.secret === null ? null : { key: v.key, secret: v.secret }
  }

  async listAccessKeys (userId: string): Promise<AccessKey[]> {
    const ids = [...(this.#open().userKeys.get(userId) ?? [])]
    return ids.map((id) => this.#readKey(id)).filter((k) => k !== null).map((k) => k.key)
      .sort((a, b) => a.date_created.localeCompare(b.date_created))
  }

  async setAccessKeyActive (id: string, active: boolean, by: KeyDisabler = 'operator', expect?: KeyState): Promise<boolean> {
    const s = this.#open().keys.get(id)
    if (s === undefined) return false
    if (expect !== undefined && (s.is_active !== expect.is_active || s.disabled_by !== expect.disabled_by)) return false
    s.is_active = active
    if (active) { s.date_enabled = this.#iso(); delete s.disabled_by } else s.disabled_by = by
    return true
  }

  async deleteAccessKey (id: string): Promise<boolean> {
    const d = this.#open()
    const s = d.keys.get(id)
    if (s === undefined) return false
    d.keys.delete(id)
    d.keyUsed.delete(id)
    d.userKeys.get(s.user_id)?.delete(id)
    return true
  }

  touchAccessKey (id: string): Promise<boolean> | undefined {
    if (this.#gate !== null || this.#closed) return undefined
    const now = this.#now()
    if (now - (this.#lastTouched.get(id) ?? -Infinity) < LAST_USED_EVERY_MS) return undefined
    this.#lastTouched.set(id, now)
    // as the Redis script: not over a time less than a minute old, whichever replica wrote it
    const last = this.#data.keyUsed.get(id)
    if (last !== undefined && last > new Date(now - LAST_USED_EVERY_MS).toISOString()) return Promise.resolve(false)
    this.#data.keyUsed.set(id, new Date(now).toISOString())
    return Promise.resolve(last === undefined)
  }

  // ---- private tokens

  async createPrivateToken (userId: string): Promise<string> {
    const d = this.#open()
    const token = this.#keys.issue('private token')
    const hash = this.#keys.lookup(token)
    const old = d.userPrivateToken.get(userId)
    d.privateTokens.set(hash, userId)
    d.userPrivateToken.set(userId, { hash, sealed: this.#keys.encrypt(token, `pt:${userId}`) })
    if (old !== undefined) this.#dropToken(old.hash)
    return token
  }

  async importPrivateToken (userId: string, token: string): Promise<void> {
    const d = this.#open()
    const hash = this.#keys.lookup(token)
    const old = d.userPrivateToken.get(userId)
    d.privateTokens.set(hash, userId)
    d.importedTokens.add(hash)
    d.userPrivateToken.set(userId, { hash, sealed: this.#keys.encrypt(token, `pt:${userId}`) })
    if (old !== undefined && old.hash !== hash) this.#dropToken(old.hash)
  }

  #dropToken (hash: string): void {
    this.#data.privateTokens.delete(hash)
    this.#data.importedTokens.delete(hash)
  }

  async getPrivateToken (userId: string): Promise<string | null> {
    const t = await this.readPrivateToken(userId)
    return t === UNREADABLE ? null : t
  }

  async readPrivateToken (userId: string): Promise<string | null | typeof UNREADABLE> {
    const stored = this.#open().userPrivateToken.get(userId)
    if (stored === undefined) return null
    const token = this.#keys.tryDecrypt(stored.sealed, `pt:${userId}`)
    if (token !== null) return token
    this.#onUnreadable?.(`user-pt:${userId}`)
    return UNREADABLE
  }

  async revokePrivateToken (userId: string): Promise<boolean> {
    const d = this.#open()
    const stored = d.userPrivateToken.get(userId)
    if (stored === undefined) return false
    d.userPrivateToken.delete(userId)
    this.#dropToken(stored.hash)
    return true
  }

  async userIdForPrivateToken (token: string): Promise<string | null> {
    const d = this.#open()
    if (this.#keys.tagged('private token', token)) return d.privateTokens.get(this.#keys.lookup(token)) ?? null
    // untagged: only an imported token's hash is looked up (never sidegate's own shape: src/crypto.ts credentialShaped)
    if (d.importedTokens.size === 0 || credentialShaped(token)) return null
    const h = this.#keys.lookups(token).find((x) => d.importedTokens.has(x))
    return h === undefined ? null : d.privateTokens.get(h) ?? null
  }

  /** everything is in memory: always known (an untagged token only through userIdForPrivateToken, which knows the imported ones) */
  cachedUserIdForPrivateToken (token: string): string | null | undefined {
    if (!this.#keys.tagged('private token', token)) return credentialShaped(token) ? null : undefined
    return this.#open().privateTokens.get(this.#keys.lookup(token)) ?? null
  }

  cachedUser (id: string): User | undefined {
    const s = this.#open().users.get(id)
    return s === undefined ? undefined : publicUser(s)
  }

  // ---- one-time bearer tokens

  async issueBearerToken (userId: string, ttlSeconds: number): Promise<{ token: string, expires: Date }> {
    const d = this.#open()
    d.sweep()
    const token = this.#keys.issue('bearer token')
    const hash = this.#keys.lookup(token)
    const exp = this.#now() + ttlSeconds * 1000
    d.bearer.set(hash, { v: userId, exp })
    addTo(d.userBearer, userId, hash)
    return { token, expires: new Date(exp) }
  }

  async consumeBearerToken (token: string): Promise<string | null> {
    if (!this.#keys.tagged('bearer token', token)) return null
    const d = this.#open()
    const hash = this.#keys.lookup(token)
    const e = d.alive(d.bearer, hash)
    if (e === undefined) return null
    d.bearer.delete(hash)
    d.userBearer.get(e.v)?.delete(hash)
    return e.v
  }

  async readBearerToken (token: string): Promise<string | null> {
    if (!this.#keys.tagged('bearer token', token)) return null
    return this.#open().alive(this.#open().bearer, this.#keys.lookup(token))?.v ?? null
  }

  // ---- sessions

  async createSession (userId: string, ttlSeconds: number, _lifetimeSeconds = ttlSeconds): Promise<Session> {
    const d = this.#open()
    d.sweep()
    const id = this.#keys.issue('session id')
    const hash = this.#keys.lookup(id)
    const s = { user_id: userId, created: this.#now() }
    d.sessions.set(hash, { v: s, exp: s.created + ttlSeconds * 1000 })
    addTo(d.userSessions, userId, hash)
    return { id, ...s, csrf: this.#keys.lookup(`csrf:${id}`) }
  }

  async getSession (id: string): Promise<Session | null> {
    return this.cachedSession(id)
  }

  /** everything is in memory: always known */
  cachedSession (id: string): Session | null {
    if (!this.#keys.tagged('session id', id)) return null
    const d = this.#open()
    const e = d.alive(d.sessions, this.#keys.lookup(id))
    if (e === undefined) return null
    return { id, user_id: e.v.user_id, created: e.v.created, csrf: this.#keys.lookup(`csrf:${id}`) }
  }

  async touchSession (id: string, ttlSeconds: number): Promise<void> {
    if (!this.#keys.tagged('session id', id)) return
    const d = this.#open()
    const e = d.alive(d.sessions, this.#keys.lookup(id))
    if (e !== undefined) e.exp = this.#now() + ttlSeconds * 1000
  }

  async deleteSession (id: string): Promise<string | null> {
    if (!this.#keys.tagged('session id', id)) return null
    const d = this.#open()
    const hash = this.#keys.lookup(id)
    const e = d.alive(d.sessions, hash)
    d.sessions.delete(hash)
    if (e !== undefined) d.userSessions.get(e.v.user_id)?.delete(hash)
    return e?.v.user_id ?? null
  }

  async listSessions (userId: string): Promise<SessionInfo[]> {
    const d = this.#open()
    const out: SessionInfo[] = []
    for (const h of d.userSessions.get(userId) ?? []) {
      const e = d.alive(d.sessions, h)
      if (e !== undefined && e.v.user_id === userId) out.push({ id: h, created: e.v.created, expires: e.exp })
    }
    return out.sort((a, b) => a.created - b.created || a.id.localeCompare(b.id))
  }

  async endSession (userId: string, id: string): Promise<boolean> {
    const d = this.#open()
    const e = d.alive(d.sessions, id)
    if (e === undefined || e.v.user_id !== userId) return false
    d.sessions.delete(id)
    d.userSessions.get(userId)?.delete(id)
    return true
  }

  async endSessions (userId: string): Promise<number> {
    const n = (await this.listSessions(userId)).length
    this.#endSessions(userId)
    return n
  }

  // ---- login lockout

  async countLoginAttempt (subject: string, windowSeconds: number, max: number): Promise<LoginFailures> {
    const d = this.#open()
    d.sweep()
    const key = this.#keys.lookup(subject)
    const now = this.#now()
    const e = d.alive(d.attempts, key) ?? { v: 0, exp: now + windowSeconds * 1000 }
    e.v++
    // as the Redis script: the window starts at the first attempt and again at the max-th
    if (e.v === 1 || e.v === max) e.exp = now + windowSeconds * 1000
    d.attempts.set(key, e)
    // Redis's TTL: the remaining time rounded to whole seconds
    return { count: e.v, retryAfter: Math.floor((e.exp - now + 500) / 1000) }
  }

  async resetLoginFailures (subject: string): Promise<void> {
    this.#open().attempts.delete(this.#keys.lookup(subject))
  }

  async forgiveLoginAttempt (subject: string): Promise<void> {
    const d = this.#open()
    const e = d.alive(d.attempts, this.#keys.lookup(subject))
    if (e !== undefined && e.v > 0) e.v--
  }

  async acquireLock (name: string, ttlMs: number): Promise<string | null> {
    const d = this.#open()
    if (d.alive(d.locks, name) !== undefined) return null
    const token = randomUUID()
    d.locks.set(name, { v: token, exp: this.#now() + ttlMs })
    return token
  }

  async releaseLock (name: string, token: string): Promise<boolean> {
    const d = this.#open()
    if (d.alive(d.locks, name)?.v !== token) return false
    d.locks.delete(name)
    return true
  }

  async markOnce (kind: string, value: string, ttlSeconds: number): Promise<boolean> {
    const d = this.#open()
    d.sweep()
    const key = `${kind}:${this.#keys.lookup(value)}`
    if (d.alive(d.once, key) !== undefined) return false
    d.once.set(key, { v: true, exp: this.#now() + ttlSeconds * 1000 })
    return true
  }

  // ---- the identity JWT's signing keys

  async getSigningKeys (): Promise<SigningKeySet> {
    return openKeySet(structuredClone(this.#open().jwks), this.#keys, this.#onUnreadable)
  }

  async putSigningKeys (rev: number, keys: SigningKey[]): Promise<boolean> {
    const d = this.#open()
    if (d.jwks.rev !== rev) return false
    d.jwks = sealKeySet(rev + 1, keys, this.#keys, d.jwks)
    return true
  }

  // ---- rate limits

  async hitRateLimit (bucket: string, limit: number, windowSeconds: number): Promise<RateLimitHit> {
    const d = this.#open()
    d.sweep()
    // as the Redis script: whole milliseconds, (now - window, now] counts
    const now = Math.floor(this.#now())
    const win = windowSeconds * 1000
    const times = (d.alive(d.rates, bucket)?.v ?? []).filter((t) => t > now - win)
    if (times.length < limit) {
      times.push(now)
      d.rates.set(bucket, { v: times, exp: now + win })
      return { allowed: true, remaining: limit - times.length, reset: Math.max(1, Math.ceil((times[0] + win - now) / 1000)) }
    }
    d.rates.set(bucket, { v: times, exp: times[times.length - 1] + win })
    return { allowed: false, remaining: 0, reset: Math.max(1, Math.ceil((times[times.length - limit] + win - now) / 1000)) }
  }

  async setRateLimit (subject: { user: string } | { key: string }, policy: RateLimitPolicy | null): Promise<boolean> {
    const d = this.#open()
    const rec = 'user' in subject ? d.users.get(subject.user) : d.keys.get(subject.key)
    if (rec === undefined) return false
    rec.rate_limit = policy === null ? null : { ...policy }
    return true
  }

  // ---- the audit stream

  auditRef (credential: string): string { return this.#keys.auditRef(credential) }

  async appendAudit (json: string, maxLen: number): Promise<void> {
    const d = this.#open()
    // ids as Redis makes them: <ms>-<seq>, increasing even when the clock is not
    const ms = Math.max(Math.floor(this.#now()), d.auditLast[0])
    const seq = ms === d.auditLast[0] ? d.auditLast[1] + 1 : 0
    d.auditLast = [ms, seq]
    d.audit.push({ id: `${ms}-${seq}`, json })
    if (d.audit.length > maxLen) d.audit.splice(0, d.audit.length - maxLen)
    for (const wake of d.auditWaiters.splice(0)) wake()
  }

  async readAudit (q: AuditQuery): Promise<AuditEntry[]> {
    const d = this.#open()
    const count = q.count ?? 1000
    if (q.after !== undefined) {
      const after = streamId(q.after)
      const found = (): AuditEntry[] => d.audit.filter((e) => compareIds(streamId(e.id), after) > 0).slice(0, count).map((e) => ({ ...e }))
      if (found().length === 0 && (q.block ?? 0) >= 1) {
        await new Promise<void>((resolve) => {
          const wake = (): void => { clearTimeout(timer); resolve() }
          // not woken: leave the list, so a reader that waits in a loop does not grow it
          const timer = setTimeout(() => { const i = d.auditWaiters.indexOf(wake); if (i !== -1) d.auditWaiters.splice(i, 1); resolve() }, q.block)
          d.auditWaiters.push(wake)
        })
      }
      return found()
    }
    if (q.since !== undefined) return d.audit.filter((e) => streamId(e.id)[0] >= q.since!).slice(0, count).map((e) => ({ ...e }))
    return d.audit.slice(-(q.last ?? 10)).map((e) => ({ ...e }))
  }
}

/** A stream id `<ms>-<seq>` (or `<ms>`) as two numbers. */
function streamId (id: string): [number, number] {
  const [ms, seq = '0'] = id.split('-')
  return [Number(ms), Number(seq)]
}
const compareIds = (a: [number, number], b: [number, number]): number => a[0] - b[0] || a[1] - b[1]

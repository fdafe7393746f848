/**
 * The Redis implementation of Store (ioredis). Layout, all under `prefix`:
 *   org:<id>  user:<id>  uname:<lowercase username>  ak:<id>  ak-used:<id>
 *   pt:<hash(token)>  user-pt:<user id>  bt:<hash(token)>  sess:<hash(id)>
 *   user-aks:<user id>  user-sess:<user id>  user-bt:<user id>  once:<kind>:<hash>  fail:<hash(subject)>  orgs  users
 *   rl:<policy>:<user or key id>   (rate-limit buckets: a sorted set per bucket, one script per request)
 *   lock:<name>   (a periodic job's lock: a random token, SET NX PX; freed by its owner only: src/jobs.ts)
 * user-sess (a set of session hashes) and user-bt (a sorted set of bearer
 * token hashes by expiry) index what a password change or disabling ends;
 * both are pruned when added to and expire with their longest-lived member.
 *   pt-imported   (lookup hashes of imported, untagged private tokens: the only untagged ones looked up)
 *   key-check  key-legacy:<check value>  key-rotation   (the secret key's check value and rotation: keycheck.ts)
 *   jwks   (the identity JWT's signing keys, private halves encrypted: layout.ts, src/forward/identity.ts)
 *   audit  (the audit stream, audit.stream: a Redis Stream, one field `e` holding the event's JSON, capped)
 * Tokens and session ids are stored only as keyed hashes; access-key secrets
 * and private tokens are encrypted (AES-256-GCM) so they can be read back.
 * Private tokens, bearer tokens and session ids carry a keyed check tag
 * (Keyring.issue): one without a valid tag is refused before any command.
 * Cluster safety: every command, script and transaction touches exactly one
 * key (no MGET/MSET, multi-key DEL, MULTI or script over several keys), so
 * no key needs a hash tag and the layout works unchanged on Redis Cluster.
 * Invalidation uses classic PUBLISH, which a cluster relays to every node.
 * Keep it so: a new multi-key operation must share one {hash tag} or be split.
 */
import { randomUUID } from 'node:crypto'
import type { RedisTopology } from '../config/index.js'
import { createRedisClient, type RedisClient } from './connect.js'
import { E, GatewayError } from '../errors.js'
import { credentialShaped, hashPassword, type Keyring } from '../crypto.js'
import { LAST_USED_EVERY_MS } from '../limits.js'
import { LruCache } from './cache.js'
import { defineScripts, type Scripts } from './scripts.js'
import { JWKS_KEY, openKeySet, parseKeySet, sealKeySet } from './keyset.js'
import { selectDb, verifyStoreKey, type Verified, type VerifyOptions } from './keycheck.js'
import { rotateSecretKey, type RotateOptions, type RotateResult } from './rotate.js'
import { importedDisable, lifecycle, openKeySecret, openPrivateToken, sealPrivateToken } from './layout.js'
import { newUserRecord } from './records.js'
import { UNREADABLE, type AuditEntry, type AuditQuery, type SigningKey, type SigningKeySet, type AccessKey, type KeyDisabler, type KeyState, type NewKeyOptions, type RateLimitHit, type RateLimitPolicy, type LoginFailures, type ManagedStore, type NewUser, type Org, type OrgRole, type Session, type SessionInfo, type User } from './types.js'

interface StoredUser extends User {
  password_hash: string | null
  /** a keyed hash of the legacy hash the last import set (RedisStore.isImportedPasswordHash) */
  password_imported?: string
}
interface StoredKey extends Omit<AccessKey, 'date_last_used'> { secret: string }

export interface RedisStoreOptions {
  url: string
  prefix: string
  commandTimeout: number
  connectTimeout: number
  cache: { max: number, ttl: number }
  /** Called with every connection-level error (for logging); never with secrets. */
  onError?: (err: Error) => void
  onReady?: () => void
  /** Sentinel or cluster mode, credentials, TLS (see connect.ts); absent: standalone at `url`. */
  topology?: RedisTopology
  /** Called with every failed command (counted by metrics). */
  onCommandError?: (err: unknown) => void
  /** Called with the record's key (never its content) when an encrypted value cannot be decrypted with this key. */
  onUnreadable?: (record: string) => void
}

/**
 * Sessions are cached in process for at most this long (or auth.cache.ttl if
 * shorter): logout and disabling a user evict them everywhere at once through
 * pub/sub, so this only bounds how long a lost invalidation message matters.
 */
const SESSION_CACHE_MAX_MS = 5_000

interface StoredSession { user_id: string, created: number }

export class RedisStore implements ManagedStore {
  readonly redis: RedisClient
  readonly #sub: RedisClient
  readonly #scripts: Scripts
  readonly #onCommandError: ((err: unknown) => void) | undefined
  readonly #commandTimeout: number
  readonly #p: string
  readonly #keys: Keyring
  readonly #channel: string
  readonly #connectTimeout: number
  readonly users: LruCache<User>
  readonly accessKeys: LruCache<{ key: AccessKey, secret: string }>
  readonly privateTokens: LruCache<string>
  /** session records by hash(session id) */
  readonly sessions: LruCache<StoredSession>
  readonly #lastTouched = new Map<string, number>()
  #subscribedOnce = false
  /**
   * The lookup hashes of imported private tokens (pt-imported), loaded on
   * first need and dropped when an import or a revocation publishes
   * `pt-imported:` or the subscriber reconnects: an untagged token whose hash
   * is not in it is refused without a Redis command.
   */
  #imported: Promise<Set<string>> | null = null
  readonly #onUnreadable: ((record: string) => void) | undefined
  /** While set, every call fails with it and nothing cached is used (the key check has not passed: keycheck.ts). */
  #gate: GatewayError | null = null

  constructor (opts: RedisStoreOptions, keyring: Keyring) {
    this.#p = opts.prefix
    this.#keys = keyring
    this.#channel = `${opts.prefix}invalidate`
    this.#connectTimeout = opts.connectTimeout
    const ttl = opts.cache.ttl * 1000
    this.users = new LruCache(opts.cache.max, ttl)
    this.accessKeys = new LruCache(opts.cache.max, ttl)
    this.privateTokens = new LruCache(opts.cache.max, ttl)
    this.sessions = new LruCache(opts.cache.max, Math.min(ttl, SESSION_CACHE_MAX_MS))
    this.#onCommandError = opts.onCommandError
    this.#commandTimeout = opts.commandTimeout
    this.#onUnreadable = opts.onUnreadable
    this.redis = createRedisClient(opts, 'command')
    this.redis.on('error', (err: Error) => opts.onError?.(err))
    this.redis.on('ready', () => opts.onReady?.())
    this.#scripts = defineScripts(this.redis)
    // The subscriber may queue its SUBSCRIBE until connected; it never serves requests.
    this.#sub = createRedisClient(opts, 'subscriber')
    this.#sub.on('error', (err: Error) => opts.onError?.(err))
    this.#sub.on('message', (_ch: string, msg: string) => this.#evict(msg))
    this.#sub.on('ready', () => {
      // Messages may have been missed while disconnected: start cold.
      if (this.#subscribedOnce) {
        this.#clearCaches()
        if (this.#gate === null) void this.#loadImported()
      }
      this.#subscribedOnce = true
    })
  }

  /** Connects both clients; resolves when the command connection is ready or rejects on first failure (retries go on). */
  async connect (): Promise<void> {
    const subscribed = this.#sub.connect().then(() => this.#sub.subscribe(this.#channel)).then(() => true, () => false)
    await this.redis.connect()
    // read once subscribed, so no import in between goes unnoticed, and before the first request needs it;
    // a subscriber still not there after connect_timeout: read on first need instead
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), this.#connectTimeout) })
    const ok = await Promise.race([subscribed, late])
    clearTimeout(timer)
    if (ok) await this.#loadImported()
  }

  /** (Re)reads the set of imported tokens' hashes now, unless it is loaded or loading; a failure leaves it to the next lookup. */
  #loadImported (): Promise<unknown> {
    if (this.#imported !== null || this.redis.status !== 'ready') return Promise.resolve()
    const loading = this.redis.smembers(this.#k('pt-imported')).then((a) => new Set(a))
    this.#imported = loading
    return loading.catch(() => { if (this.#imported === loading) this.#imported = null })
  }

  get isReady (): boolean { return this.redis.status === 'ready' }

  /**
   * Cached entries are trusted only while both connections are up: with the
   * command connection down a request must fail with 503 like any other, and
   * with the subscriber down invalidations may be missed.
   */
  get #cacheTrusted (): boolean { return this.#gate === null && this.redis.status === 'ready' && this.#sub.status === 'ready' }

  /**
   * Closes (an error) or opens (null) the store for every call: a process
   * whose secret key has not been checked against the store's, or failed the
   * check, neither reads nor writes anything.
   */
  setGate (err: GatewayError | null): void {
    this.#gate = err
    if (err !== null) this.#clearCaches()
    else void this.#loadImported()
  }

  #clearCaches (): void {
    this.users.clear(); this.accessKeys.clear(); this.privateTokens.clear(); this.sessions.clear()
    this.#imported = null
  }

  #evict (msg: string): void {
    const i = msg.indexOf(':')
    const kind = msg.slice(0, i)
    const id = msg.slice(i + 1)
    if (kind === 'user') this.users.delete(id)
    else if (kind === 'ak') this.accessKeys.delete(id)
    else if (kind === 'pt') this.privateTokens.delete(id)
    else if (kind === 'sess') this.sessions.delete(id)
    else if (kind === 'pt-imported') { this.#imported = null; void this.#loadImported() } else if (kind === 'user-aks') {
      // a disabled user: drop every cached key and session of theirs
      this.users.delete(id)
      this.#clearKeysOf(id)
      this.sessions.deleteWhere((v) => v.user_id === id)
    } else if (kind === 'user-sess') {
      // a changed password: the user's sessions only
      this.sessions.deleteWhere((v) => v.user_id === id)
    }
  }

  #clearKeysOf (userId: string): void {
    this.accessKeys.deleteWhere((v) => v.key.user_id === userId)
  }

  async #invalidate (msg: string): Promise<void> {
    this.#evict(msg)
    await this.#run(() => this.redis.publish(this.#channel, msg))
  }

  /** Runs one Redis call; any failure becomes a 503 store_unavailable. */
  async #run<T> (fn: () => Promise<T>): Promise<T> {
    if (this.#gate !== null) throw this.#gate
    try {
      return await fn()
    } catch (err) {
      if (err instanceof GatewayError) throw err
      this.#onCommandError?.(err)
      throw Object.assign(E.storeUnavailable(), { cause: err })
    }
  }

  #k (...parts: string[]): string { return this.#p + parts.join(':') }

  async #getJson<T> (key: string): Promise<T | null> {
    const v = await this.#run(() => this.redis.get(key))
    return v === null ? null : JSON.parse(v) as T
  }

  async verifyKey (o: Omit<VerifyOptions, 'prefix'>): Promise<Verified> {
    return await verifyStoreKey(this.redis, this.#keys, { ...o, prefix: this.#p })
  }

  async rotateKey (newKeys: Keyring, o: RotateOptions & { db: number }): Promise<RotateResult> {
    await selectDb(this.redis, o.db, o.where)
    return await rotateSecretKey(this.redis, this.#p, this.#keys, newKeys, o)
  }

  async ping (): Promise<void> { await this.#run(() => this.redis.ping()) }

  async close (): Promise<void> {
    this.#sub.disconnect()
    try { await this.redis.quit() } catch {}
    // after QUIT too: releases the connector's own sockets (sentinels), a no-op otherwise
    this.redis.disconnect()
  }

  // ---- orgs

  async createOrg (name: string, id: string = randomUUID()): Promise<Org> {
    const org: Org = { id: id.toLowerCase(), name, date_created: new Date().toISOString() }
    const ok = await this.#run(() => this.redis.set(this.#k('org', org.id), JSON.stringify(org), 'NX'))
    if (ok === null) throw E.orgExists(org.id)
    await this.#run(() => this.redis.sadd(this.#k('orgs'), org.id))
    return org
  }

  async getOrg (id: string): Promise<Org | null> { return await this.#getJson<Org>(this.#k('org', id)) }

  async listOrgs (): Promise<Org[]> {
    const ids = await this.#run(() => this.redis.smembers(this.#k('orgs')))
    const orgs = await Promise.all(ids.map(async (id) => await this.getOrg(id)))
    return orgs.filter((o): o is Org => o !== null).sort((a, b) => a.name.localeCompare(b.name))
  }

  // ---- users

  async createUser (u: NewUser): Promise<User> {
    const id = u.id?.toLowerCase() ?? randomUUID()
    const user: StoredUser = newUserRecord(u, id, u.password === null ? (u.password_hash ?? null) : await hashPassword(u.password), new Date().toISOString(), this.#keys)
    const unameKey = this.#k('uname', u.username.toLowerCase())
    const claimed = await this.#run(() => this.redis.set(unameKey, id, 'NX'))
    if (claimed === null) throw E.userExists(u.username)
    try {
      // NX: an id given by an import never overwrites another user's record
      if ((await this.#run(() => this.redis.set(this.#k('user', id), JSON.stringify(user), 'NX'))) === null) throw E.userExists(id)
      await this.#run(() => this.redis.sadd(this.#k('users'), id))
    } catch (err) {
      await this.redis.del(unameKey).catch(() => {})
      throw err
    }
    return publicUser(user)
  }

  async getUser (id: string): Promise<User | null> {
    const hit = this.#cacheTrusted ? this.users.get(id) : undefined
    if (hit !== undefined) return hit
    const stamp = this.users.stamp
    const s = await this.#getJson<StoredUser>(this.#k('user', id))
    if (s === null) return null
    const u = publicUser(s)
    this.users.set(id, u, stamp)
    return u
  }

  async getUserByUsername (username: string): Promise<User | null> {
    const id = await this.#run(() => this.redis.get(this.#k('uname', username.toLowerCase())))
    return id === null ? null : await this.getUser(id)
  }

  async getPasswordHash (userId: string): Promise<string | null> {
    const s = await this.#getJson<StoredUser>(this.#k('user', userId))
    return s?.password_hash ?? null
  }

  async listUsers (orgId?: string): Promise<User[]> {
    const ids = await this.#run(() => this.redis.smembers(this.#k('users')))
    const all = await Promise.all(ids.map(async (id) => await this.getUser(id)))
    return all
      .filter((u): u is User => u !== null && (orgId === undefined || orgId in u.orgs))
      .sort((a, b) => a.username.localeCompare(b.username))
  }

  async countUsers (): Promise<number> {
    return await this.#run(() => this.redis.scard(this.#k('users')))
  }

  async #setField (userId: string, field: string, value: unknown): Promise<void> {
    const found = await this.#run(() => this.#scripts.setField(this.#k('user', userId), field, JSON.stringify(value)))
    if (!found) throw E.userNotFound()
  }

  async setUserActive (userId: string, active: boolean): Promise<void> {
    await this.#setField(userId, 'is_active', active)
    if (!active) await this.#endSessions(userId)
    await this.#invalidate(`user-aks:${userId}`)
  }

  async setPassword (userId: string, password: string): Promise<void> {
    await this.#setField(userId, 'password_hash', await hashPassword(password))
    // whoever held the old password may hold these; private tokens and access keys are separate credentials and stay
    await this.#endSessions(userId)
    await this.#endBearerTokens(userId)
    await this.#invalidate(`user-sess:${userId}`)
  }

  async setLegacyPasswordHash (userId: string, hash: string): Promise<void> {
    await this.#setField(userId, 'password_hash', hash)
    await this.#setField(userId, 'password_imported', this.#keys.lookup(`imported password:${hash}`))
    // whoever held the old password may hold these; private tokens and access keys are separate credentials and stay
    await this.#endSessions(userId)
    await this.#endBearerTokens(userId)
    await this.#invalidate(`user-sess:${userId}`)
  }

  async isImportedPasswordHash (userId: string, hash: string): Promise<boolean> {
    const s = await this.#getJson<StoredUser>(this.#k('user', userId))
    // under any key the store was rotated through: the same hash again is no change
    return s !== null && (s.password_hash === hash || (s.password_imported !== undefined && this.#keys.lookups(`imported password:${hash}`).includes(s.password_imported)))
  }

  async upgradePasswordHash (userId: string, oldHash: string, newHash: string): Promise<boolean> {
    return await this.#run(() => this.#scripts.swapField(this.#k('user', userId), 'password_hash', oldHash, newHash))
  }

  async setUserFields (userId: string, fields: Partial<Pick<User, 'name' | 'email' | 'is_superuser'>>): Promise<void> {
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) await this.#setField(userId, k, v)
    await this.#invalidate(`user:${userId}`)
  }

  /** Deletes every session of the user in Redis (the caller publishes the eviction of cached copies). */
  async #endSessions (userId: string): Promise<void> {
    const sessKey = this.#k('user-sess', userId)
    const ids = await this.#run(() => this.redis.smembers(sessKey))
    for (const h of ids) await this.#run(() => this.redis.del(this.#k('sess', h)))
    await this.#run(() => this.redis.del(sessKey))
  }

  /** Deletes the user's unused bearer tokens (never cached: gone from Redis, gone everywhere). */
  async #endBearerTokens (userId: string): Promise<void> {
    const key = this.#k('user-bt', userId)
    const hashes = await this.#run(() => this.redis.zrange(key, '0', '-1'))
    for (const h of hashes) await this.#run(() => this.redis.del(this.#k('bt', h)))
    await this.#run(() => this.redis.del(key))
  }

  async setMembership (userId: string, orgId: string, role: OrgRole | null): Promise<void> {
    const found = await this.#run(() => this.#scripts.setMember(this.#k('user', userId), orgId, role ?? ''))
    if (!found) throw E.userNotFound()
    await this.#invalidate(`user:${userId}`)
  }

  async recordLogin (userId: string): Promise<void> {
    await this.#setField(userId, 'last_login', new Date().toISOString())
    this.users.delete(userId)
  }

  // ---- access keys

  async createAccessKey (userId: string, max = 0, o: NewKeyOptions = {}): Promise<{ key: AccessKey, secret: string }> {
    const key: AccessKey = { id: randomUUID(), user_id: userId, is_active: true, date_created: new Date().toISOString(), date_last_used: null, ...lifecycle(o) }
    const secret = randomUUID()
    const stored: StoredKey = { id: key.id, user_id: userId, is_active: true, date_created: key.date_created, ...lifecycle(o), secret: this.#keys.encrypt(secret, `ak:${key.id}`) }
    // the id is reserved in the user's set first, atomically against the cap, so
    // concurrent creations can never exceed it; a listing skips an id without a record yet
    const added = await this.#run(() => this.#scripts.addCapped(this.#k('user-aks', userId), key.id, max))
    if (!added) throw E.tooManyKeys(max)
    await this.#run(() => this.redis.set(this.#k('ak', key.id), JSON.stringify(stored)))
    return { key, secret }
  }

  async importAccessKey (userId: string, k: { id: string, secret: string, is_active: boolean } & NewKeyOptions): Promise<boolean> {
    const id = k.id.toLowerCase()
    const stored: StoredKey = { id, user_id: userId, is_active: k.is_active, date_created: new Date().toISOString(), ...lifecycle(k), ...importedDisable(k.is_active), secret: this.#keys.encrypt(k.secret, `ak:${id}`) }
    if ((await this.#run(() => this.redis.set(this.#k('ak', id), JSON.stringify(stored), 'NX'))) === null) return false
    await this.#run(() => this.redis.sadd(this.#k('user-aks', userId), id))
    await this.#invalidate(`ak:${id}`)
    return true
  }

  /** The key and its secret; `secret` null (and reported) when it cannot be decrypted with this secret key. */
  async #readKey (id: string): Promise<{ key: AccessKey, secret: string | null } | null> {
    // two GETs, not MGET: the keys may live in different cluster slots
    const [raw, used] = await this.#run(async () => await Promise.all([this.redis.get(this.#k('ak', id)), this.redis.get(this.#k('ak-used', id))]))
    if (raw === null) return null
    const s = JSON.parse(raw) as StoredKey
    const key: AccessKey = { id: s.id, user_id: s.user_id, is_active: s.is_active, date_created: s.date_created, date_last_used: used }
    if (s.rate_limit !== undefined && s.rate_limit !== null) key.rate_limit = s.rate_limit
    Object.assign(key, lifecycle(s))
    return openKeySecret(this.#keys, key, s.secret, this.#onUnreadable)
  }

  async getAccessKey (id: string): Promise<{ key: AccessKey, secret: string } | null> {
    const hit = this.#cacheTrusted ? this.accessKeys.get(id) : undefined
    if (hit !== undefined) return hit
    const stamp = this.accessKeys.stamp
    const v = await this.#readKey(id)
    // a key whose secret cannot be read verifies nothing: refused like an unknown one
    if (v === null || v.secret === null) return null
    const found = { key: v.key, secret: v.secret }
    this.accessKeys.set(id, found, stamp)
    return found
  }

  async listAccessKeys (userId: string): Promise<AccessKey[]> {
    const ids = await this.#run(() => this.redis.smembers(this.#k('user-aks', userId)))
    const keys = await Promise.all(ids.map(async (id) => await this.#readKey(id)))
    return keys.filter((k) => k !== null).map((k) => k.key).sort((a, b) => a.date_created.localeCompare(b.date_created))
  }

  async setAccessKeyActive (id: string, active: boolean, by: KeyDisabler = 'operator', expect?: KeyState): Promise<boolean> {
    const fields = active ? { is_active: true, date_enabled: new Date().toISOString(), disabled_by: null } : { is_active: false, disabled_by: by }
    const was = expect === undefined ? {} : { is_active: expect.is_active, disabled_by: expect.disabled_by ?? null }
    const found = await this.#run(() => this.#scripts.setFields(this.#k('ak', id), JSON.stringify(fields), JSON.stringify(was)))
    await this.#invalidate(`ak:${id}`)
    return found
  }

  async deleteAccessKey (id: string): Promise<boolean> {
    const raw = await this.#run(() => this.redis.get(this.#k('ak', id)))
    if (raw === null) return false
    const s = JSON.parse(raw) as StoredKey
    await this.#run(() => this.redis.del(this.#k('ak', id)))
    await this.#run(() => this.redis.del(this.#k('ak-used', id)))
    await this.#run(() => this.redis.srem(this.#k('user-aks', s.user_id), id))
    await this.#invalidate(`ak:${id}`)
    return true
  }

  touchAccessKey (id: string): Promise<boolean> | undefined {
    const now = Date.now()
    const last = this.#lastTouched.get(id) ?? 0
    if (now - last < LAST_USED_EVERY_MS) return undefined
    if (this.#lastTouched.size > 100_000) this.#lastTouched.clear()
    this.#lastTouched.set(id, now)
    // and across replicas: the script writes only over a time older than a minute (2: there was none)
    return this.#scripts.touchIfOlder(this.#k('ak-used', id), new Date(now).toISOString(), new Date(now - LAST_USED_EVERY_MS).toISOString())
      .then((r) => r === 2, () => false)
  }

  // ---- private tokens

  async createPrivateToken (userId: string): Promise<string> {
    const token = this.#keys.issue('private token')
    const h = this.#keys.lookup(token)
    await this.#run(() => this.redis.set(this.#k('pt', h), userId))
    // Swapped atomically (SET … GET): whoever replaces a token removes it, so
    // concurrent creates leave no token that works but cannot be read or revoked.
    const old = await this.#run(() => this.redis.set(this.#k('user-pt', userId), sealPrivateToken(h, this.#keys.encrypt(token, `pt:${userId}`)), 'GET'))
    if (old !== null) await this.#dropPrivateToken(userId, old, h)
    return token
  }

  async importPrivateToken (userId: string, token: string): Promise<void> {
    const h = this.#keys.lookup(token)
    await this.#run(() => this.redis.set(this.#k('pt', h), userId))
    // listed before it is the user's token: every replica reloads the set now, before a client can send it
    await this.#run(() => this.redis.sadd(this.#k('pt-imported'), h))
    const old = await this.#run(() => this.redis.set(this.#k('user-pt', userId), sealPrivateToken(h, this.#keys.encrypt(token, `pt:${userId}`)), 'GET'))
    if (old !== null) await this.#dropPrivateToken(userId, old, h)
    await this.#invalidate('pt-imported:')
  }

  /** The lookup hash of an untagged token when it is an imported one, else null: from memory, without Redis, once the set is loaded. */
  async #importedHash (token: string): Promise<string | null> {
    if (!this.#cacheTrusted) {
      // invalidations may be missed: ask Redis (one command), and load nothing
      const hashes = this.#keys.lookups(token)
      const found = await this.#run(() => this.redis.smismember(this.#k('pt-imported'), ...hashes))
      const i = found.indexOf(1)
      return i === -1 ? null : hashes[i]
    }
    if (this.#imported === null) {
      const loading = this.#run(async () => new Set(await this.redis.smembers(this.#k('pt-imported'))))
      this.#imported = loading
      loading.catch(() => { if (this.#imported === loading) this.#imported = null })
    }
    const pending = this.#imported
    const known = await this.#run(async () => await pending)
    if (known.size === 0) return null
    return this.#keys.lookups(token).find((h) => known.has(h)) ?? null
  }

  async getPrivateToken (userId: string): Promise<string | null> {
    const t = await this.readPrivateToken(userId)
    return t === UNREADABLE ? null : t
  }

  /** The private token, null when there is none, UNREADABLE when it was encrypted under another secret key. */
  async readPrivateToken (userId: string): Promise<string | null | typeof UNREADABLE> {
    const stored = await this.#run(() => this.redis.get(this.#k('user-pt', userId)))
    if (stored === null) return null
    const token = this.#keys.tryDecrypt(openPrivateToken(stored).sealed, `pt:${userId}`)
    if (token !== null) return token
    this.#onUnreadable?.(`user-pt:${userId}`)
    return UNREADABLE
  }

  async revokePrivateToken (userId: string): Promise<boolean> {
    const old = await this.#run(() => this.redis.getdel(this.#k('user-pt', userId)))
    if (old === null) return false
    await this.#dropPrivateToken(userId, old)
    return true
  }

  /**
   * Removes the lookup entry of a replaced or revoked token. Its hash is
   * stored beside the encrypted token, so this needs no decryption. A token
   * stored before that (no hash) is decrypted; if that fails (another secret
   * key), every lookup entry of this user but `keep` is removed instead.
   */
  async #dropPrivateToken (userId: string, stored: string, keep?: string): Promise<void> {
    const { hash, sealed } = openPrivateToken(stored)
    const token = hash === null ? this.#keys.tryDecrypt(sealed, `pt:${userId}`) : null
    const h = hash ?? (token === null ? null : this.#keys.lookup(token))
    if (h === null) {
      this.#onUnreadable?.(`user-pt:${userId}`)
      for (const orphan of await this.#tokenHashesOf(userId)) {
        if (orphan === keep) continue
        await this.#run(() => this.redis.del(this.#k('pt', orphan)))
        await this.#invalidate(`pt:${orphan}`)
      }
      return
    }
    if (h === keep) return
    await this.#run(() => this.redis.del(this.#k('pt', h)))
    await this.#invalidate(`pt:${h}`)
    if ((await this.#run(() => this.redis.srem(this.#k('pt-imported'), h))) > 0) await this.#invalidate('pt-imported:')
  }

  /** Hashes of every private-token lookup entry pointing to this user: a scan of pt:*, on every cluster primary. */
  async #tokenHashesOf (userId: string): Promise<string[]> {
    const prefix = this.#k('pt', '')
    const found: string[] = []
    for (const key of await this.#run(async () => await scanKeys(this.redis, `${prefix}*`))) {
      if ((await this.#run(() => this.redis.get(key))) === userId) found.push(key.slice(prefix.length))
    }
    return found
  }

  async userIdForPrivateToken (token: string): Promise<string | null> {
    let h: string
    if (this.#keys.tagged('private token', token)) h = this.#keys.lookup(token)
    // sidegate's own shape with a tag that does not verify (another key's, a guess): never imported, refused without Redis
    else if (credentialShaped(token)) return null
    else {
      const imported = await this.#importedHash(token)
      if (imported === null) return null
      h = imported
    }
    const hit = this.#cacheTrusted ? this.privateTokens.get(h) : undefined
    if (hit !== undefined) return hit
    const stamp = this.privateTokens.stamp
    const id = await this.#run(() => this.redis.get(this.#k('pt', h)))
    if (id !== null) this.privateTokens.set(h, id, stamp)
    return id
  }

  cachedUserIdForPrivateToken (token: string): string | null | undefined {
    // untagged: refused here when of sidegate's own shape; any other may be imported (userIdForPrivateToken knows)
    if (!this.#keys.tagged('private token', token)) return credentialShaped(token) ? null : undefined
    // a miss is counted by userIdForPrivateToken, which the caller asks next
    return this.#cacheTrusted ? this.privateTokens.get(this.#keys.lookup(token), false) : undefined
  }

  cachedUser (id: string): User | undefined {
    return this.#cacheTrusted ? this.users.get(id, false) : undefined
  }

  cachedSession (id: string): Session | null | undefined {
    if (!this.#keys.tagged('session id', id)) return null
    const s = this.#cacheTrusted ? this.sessions.get(this.#keys.lookup(id), false) : undefined
    return s === undefined ? undefined : this.#session(id, s)
  }

  // ---- one-time bearer tokens

  async issueBearerToken (userId: string, ttlSeconds: number): Promise<{ token: string, expires: Date }> {
    for (;;) {
      const token = this.#keys.issue('bearer token')
      const h = this.#keys.lookup(token)
      const now = Date.now()
      const ok = await this.#run(() => this.redis.set(this.#k('bt', h), userId, 'EX', ttlSeconds, 'NX'))
      if (ok === null) continue
      // indexed for a password change; a used token's entry stays until it would have expired
      await this.#run(() => this.#scripts.indexBearer(this.#k('user-bt', userId), now, h, now + ttlSeconds * 1000, ttlSeconds * 1000))
      return { token, expires: new Date(now + ttlSeconds * 1000) }
    }
  }

  async consumeBearerToken (token: string): Promise<string | null> {
    if (!this.#keys.tagged('bearer token', token)) return null
    return await this.#run(() => this.redis.getdel(this.#k('bt', this.#keys.lookup(token))))
  }

  async readBearerToken (token: string): Promise<string | null> {
    if (!this.#keys.tagged('bearer token', token)) return null
    return await this.#run(() => this.redis.get(this.#k('bt', this.#keys.lookup(token))))
  }

  // ---- sessions

  async createSession (userId: string, ttlSeconds: number, lifetimeSeconds = ttlSeconds): Promise<Session> {
    const id = this.#keys.issue('session id')
    const h = this.#keys.lookup(id)
    const s = { user_id: userId, created: Date.now() }
    await this.#run(() => this.redis.set(this.#k('sess', h), JSON.stringify(s), 'EX', ttlSeconds))
    // The user's index of sessions: ids whose record is gone (idle, logged out,
    // ended) are dropped first, one EXISTS each (the records live in other
    // slots, so no script can look), and the set lives as long as the newest
    // session may: it no longer grows with every login, forever.
    const index = this.#k('user-sess', userId)
    const ids = await this.#run(() => this.redis.smembers(index))
    const alive = await this.#run(async () => await Promise.all(ids.map(async (x) => await this.redis.exists(this.#k('sess', x)))))
    const gone = ids.filter((_, i) => alive[i] === 0)
    if (gone.length > 0) await this.#run(() => this.redis.srem(index, ...gone))
    await this.#run(() => this.redis.sadd(index, h))
    await this.#run(() => this.redis.expire(index, Math.max(ttlSeconds, lifetimeSeconds)))
    return { id, ...s, csrf: this.#keys.lookup(`csrf:${id}`) }
  }

  async getSession (id: string): Promise<Session | null> {
    if (!this.#keys.tagged('session id', id)) return null
    const h = this.#keys.lookup(id)
    let s = this.#cacheTrusted ? this.sessions.get(h) : undefined
    if (s === undefined) {
      const stamp = this.sessions.stamp
      const stored = await this.#getJson<StoredSession>(this.#k('sess', h))
      if (stored === null) return null
      s = { user_id: stored.user_id, created: stored.created }
      this.sessions.set(h, s, stamp)
    }
    return this.#session(id, s)
  }

  /** The CSRF token is derived on first use only: safe methods never need it. */
  #session (id: string, s: StoredSession): Session {
    const keys = this.#keys
    let csrf: string | undefined
    return { id, user_id: s.user_id, created: s.created, get csrf () { return (csrf ??= keys.lookup(`csrf:${id}`)) } }
  }

  async touchSession (id: string, ttlSeconds: number): Promise<void> {
    if (!this.#keys.tagged('session id', id)) return
    await this.#run(() => this.redis.expire(this.#k('sess', this.#keys.lookup(id)), ttlSeconds))
  }

  async deleteSession (id: string): Promise<string | null> {
    // no record can exist for an id without a valid tag
    if (!this.#keys.tagged('session id', id)) return null
    const h = this.#keys.lookup(id)
    const s = await this.#getJson<{ user_id: string }>(this.#k('sess', h))
    await this.#run(() => this.redis.del(this.#k('sess', h)))
    if (s !== null) await this.#run(() => this.redis.srem(this.#k('user-sess', s.user_id), h))
    // every replica drops its cached copy (logout ends the session everywhere at once)
    await this.#invalidate(`sess:${h}`)
    return s?.user_id ?? null
  }

  async listSessions (userId: string): Promise<SessionInfo[]> {
    const ids = await this.#run(() => this.redis.smembers(this.#k('user-sess', userId)))
    const out: SessionInfo[] = []
    for (const h of ids) {
      const s = await this.#getJson<StoredSession>(this.#k('sess', h))
      // gone since (idle, logged out): not listed
      if (s === null || s.user_id !== userId) continue
      const ttl = await this.#run(() => this.redis.pttl(this.#k('sess', h)))
      if (ttl < 0) continue
      out.push({ id: h, created: s.created, expires: Date.now() + ttl })
    }
    return out.sort((a, b) => a.created - b.created || a.id.localeCompare(b.id))
  }

  async endSession (userId: string, id: string): Promise<boolean> {
    const s = await this.#getJson<StoredSession>(this.#k('sess', id))
    if (s === null || s.user_id !== userId) return false
    await this.#run(() => this.redis.del(this.#k('sess', id)))
    await this.#run(() => this.redis.srem(this.#k('user-sess', userId), id))
    await this.#invalidate(`sess:${id}`)
    return true
  }

  async endSessions (userId: string): Promise<number> {
    const n = (await this.listSessions(userId)).length
    await this.#endSessions(userId)
    await this.#invalidate(`user-sess:${userId}`)
    return n
  }

  // ---- login lockout

  async countLoginAttempt (subject: string, windowSeconds: number, max: number): Promise<LoginFailures> {
    const [count, retryAfter] = await this.#run(() => this.#scripts.countAttempt(this.#k('fail', this.#keys.lookup(subject)), windowSeconds, max))
    return { count, retryAfter }
  }

  async resetLoginFailures (subject: string): Promise<void> {
    await this.#run(() => this.redis.del(this.#k('fail', this.#keys.lookup(subject))))
  }

  async forgiveLoginAttempt (subject: string): Promise<void> {
    await this.#run(() => this.#scripts.forgiveAttempt(this.#k('fail', this.#keys.lookup(subject))))
  }

  async markOnce (kind: string, value: string, ttlSeconds: number): Promise<boolean> {
    const ok = await this.#run(() => this.redis.set(this.#k('once', kind, this.#keys.lookup(value)), '1', 'EX', ttlSeconds, 'NX'))
    return ok !== null
  }

  // ---- the identity JWT's signing keys

  async getSigningKeys (): Promise<SigningKeySet> {
    const raw = await this.#run(() => this.redis.get(this.#k(JWKS_KEY)))
    return openKeySet(parseKeySet(raw), this.#keys, this.#onUnreadable)
  }

  async putSigningKeys (rev: number, keys: SigningKey[]): Promise<boolean> {
    const prior = parseKeySet(await this.#run(() => this.redis.get(this.#k(JWKS_KEY))))
    if (prior.rev !== rev) return false
    const doc = JSON.stringify(sealKeySet(rev + 1, keys, this.#keys, prior))
    return await this.#run(() => this.#scripts.putIfRev(this.#k(JWKS_KEY), rev, doc))
  }

  // ---- rate limits

  /** unique per process and request: the sorted set's member */
  readonly #rlNonce = randomUUID().slice(0, 8)
  #rlSeq = 0

  async hitRateLimit (bucket: string, limit: number, windowSeconds: number): Promise<RateLimitHit> {
    const member = `${this.#rlNonce}:${(this.#rlSeq++).toString(36)}`
    const [allowed, remaining, resetMs] = await this.#run(() => this.#scripts.rateLimit(this.#k('rl', bucket), limit, windowSeconds * 1000, member))
    return { allowed: allowed === 1, remaining, reset: Math.max(1, Math.ceil(resetMs / 1000)) }
  }

  async setRateLimit (subject: { user: string } | { key: string }, policy: RateLimitPolicy | null): Promise<boolean> {
    const [key, msg] = 'user' in subject ? [this.#k('user', subject.user), `user:${subject.user}`] : [this.#k('ak', subject.key), `ak:${subject.key}`]
    const found = await this.#run(() => this.#scripts.setField(key, 'rate_limit', JSON.stringify(policy)))
    if (found) await this.#invalidate(msg)
    return found
  }

  // ---- locks

  async acquireLock (name: string, ttlMs: number): Promise<string | null> {
    const token = randomUUID()
    const ok = await this.#run(() => this.redis.set(this.#k('lock', name), token, 'PX', ttlMs, 'NX'))
    return ok === null ? null : token
  }

  async releaseLock (name: string, token: string): Promise<boolean> {
    return await this.#run(() => this.#scripts.releaseLock(this.#k('lock', name), token))
  }

  // ---- the audit stream

  auditRef (credential: string): string { return this.#keys.auditRef(credential) }

  async appendAudit (json: string, maxLen: number): Promise<void> {
    await this.#run(() => this.redis.xadd(this.#k('audit'), 'MAXLEN', '~', maxLen, '*', 'e', json))
  }

  async readAudit (q: AuditQuery): Promise<AuditEntry[]> {
    const key = this.#k('audit')
    const count = q.count ?? 1000
    if (q.after !== undefined) {
      // a blocking read must end before the command timeout fails it; BLOCK 0 would wait forever
      const block = Math.min(q.block ?? 0, this.#commandTimeout - 250)
      const args: Array<string | number> = ['COUNT', count, ...(block >= 1 ? ['BLOCK', block] : []), 'STREAMS', key, q.after]
      const r = await this.#run(() => this.redis.xread(...(args as ['COUNT', number, 'STREAMS', string, string])))
      return r === null ? [] : entries(r[0][1])
    }
    if (q.since !== undefined) return entries(await this.#run(() => this.redis.xrange(key, `${Math.max(0, Math.floor(q.since!))}-0`, '+', 'COUNT', count)))
    return entries(await this.#run(() => this.redis.xrevrange(key, '+', '-', 'COUNT', q.last ?? 10))).reverse()
  }
}

/** Stream entries as ioredis gives them → AuditEntry (the field `e`). */
function entries (raw: Array<[id: string, fields: string[]]>): AuditEntry[] {
  return raw.map(([id, fields]) => ({ id, json: fields[fields.indexOf('e') + 1] ?? '{}' }))
}

/** Every key matching the pattern: SCAN on a standalone server, on each primary of a cluster. */
export async function scanKeys (redis: RedisClient, pattern: string): Promise<string[]> {
  const cluster = redis as unknown as { nodes?: (role: string) => RedisClient[] }
  const nodes = typeof cluster.nodes === 'function' ? cluster.nodes('master') : [redis]
  const keys: string[] = []
  for (const node of nodes) {
    let cursor = '0'
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
      cursor = next
      keys.push(...batch)
    } while (cursor !== '0')
  }
  return keys
}

function publicUser (s: StoredUser): User {
  const { password_hash: _, password_imported: _i, ...u } = s
  // cjson encodes an empty table as {} but may return [] after edits; normalise
  if (Array.isArray(u.orgs)) u.orgs = {}
  if (u.rate_limit === null) delete u.rate_limit
  return u
}

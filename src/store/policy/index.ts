/**
 * The application-facing Store over any backend: the account policy,
 * written once, one module per aggregate, each exposed as it is
 * (`store.users.create`, `store.sessions.endAll`), above a Storage
 * (../ports.ts) that only stores. SqliteStore and RedisStore are this class
 * over their backends; a new backend is a Storage and nothing more.
 */
import type { Keyring } from '../../crypto.js'
import type { GatewayError } from '../../errors.js'
import type { Storage } from '../ports.js'
import type { RunningStore } from '../types.js'
import { AccessKeys } from './access-keys.js'
import { Audit } from './audit.js'
import { BearerTokens } from './bearer-tokens.js'
import { Caches, type CacheOptions } from './caches.js'
import type { Context } from './context.js'
import { GroupTable } from './group-table.js'
import { Groups } from './groups.js'
import { Limits } from './limits.js'
import { Links } from './links.js'
import { Locks } from './locks.js'
import { Mfa } from './mfa.js'
import { Passkeys } from './passkeys.js'
import { Passwords } from './passwords.js'
import { PrivateTokens } from './private-tokens.js'
import { Sessions } from './sessions.js'
import { SigningKeys } from './signing-keys.js'
import { State } from './state.js'
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
  readonly #groupTable: GroupTable
  #gate: GatewayError | null = null
  #closed = false
  readonly orgs: Orgs
  readonly groups: Groups
  readonly users: Users
  readonly links: Links
  readonly passwords: Passwords
  readonly accessKeys: AccessKeys
  readonly privateTokens: PrivateTokens
  readonly bearerTokens: BearerTokens
  readonly sessions: Sessions
  readonly limits: Limits
  readonly locks: Locks
  readonly signingKeys: SigningKeys
  readonly mfa: Mfa
  readonly passkeys: Passkeys
  readonly audit: Audit
  readonly state: State

  constructor (storage: Storage, keyring: Keyring, o: PolicyOptions = {}) {
    this.storage = storage
    this.keyring = keyring
    this.caches = storage.invalidation === undefined
      ? null
      : new Caches(o.cache ?? { max: 0, ttl: 0 }, storage.invalidation)
    this.#groupTable = new GroupTable(storage)
    const c: Context = {
      storage,
      keys: keyring,
      caches: this.caches,
      groupTable: this.#groupTable,
      onUnreadable: o.onUnreadable,
      shut: () => this.#gate !== null || this.#closed
    }
    this.orgs = new Orgs(c)
    this.groups = new Groups(c)
    this.users = new Users(c)
    this.links = new Links(c)
    this.passwords = new Passwords(c)
    this.accessKeys = new AccessKeys(c)
    this.privateTokens = new PrivateTokens(c)
    this.bearerTokens = new BearerTokens(c)
    this.sessions = new Sessions(c)
    this.limits = new Limits(c)
    this.locks = new Locks(c)
    this.signingKeys = new SigningKeys(c)
    this.mfa = new Mfa(c)
    this.passkeys = new Passkeys(c)
    this.audit = new Audit(c)
    this.state = new State(c)
  }

  async connect (): Promise<void> { await this.storage.connect() }
  get isReady (): boolean { return this.storage.isReady }

  setGate (err: GatewayError | null): void {
    this.#gate = err
    this.storage.setGate(err)
    // nothing cached before is trusted after
    if (err !== null) { this.caches?.clear(); this.#groupTable.forget() }
  }

  async ping (): Promise<void> { await this.storage.ping() }

  async close (): Promise<void> {
    this.#closed = true
    await this.storage.close()
  }
}

/**
 * The policy over a backend whose processes cache in process (Storage.invalidation:
 * Redis, SQLite): its caches, whose counters the metrics read (ManagedStore.caches).
 */
export class CachedPolicyStore extends PolicyStore {
  declare readonly caches: Caches
}

/** The Store of a backend: the shared policy over `storage`, sealing with `keyring`. */
export function createStore (storage: Storage, keyring: Keyring, o: PolicyOptions = {}): PolicyStore {
  return new PolicyStore(storage, keyring, o)
}

/**
 * The memory backend: the Store contract in process, with no sockets, for
 * tests and tooling (test/fixtures/store-contract.ts runs the same suite
 * against it and against Redis, both under the one policy of ../policy/).
 *
 * - Replicas: `replica()` gives another store on the same data, as another
 *   process shares one Redis. There is no cache, so every replica sees a
 *   change at once (what RedisStore reaches through pub/sub invalidation),
 *   and the synchronous fast path always knows (Storage.instant).
 * - Time: every expiry (bearer tokens, sessions, login counters, replay
 *   marks) and every date comes from one injectable clock (`now`), so tests
 *   step it instead of sleeping.
 * - Atomicity: each storage call runs without an await inside, so
 *   concurrent callers (a bearer token consumed twice, two creations of one
 *   username, the access-key cap) get what Redis's single commands give.
 */
import type { Keyring } from '../../crypto.js'
import { E, type GatewayError } from '../../errors.js'
import type { InstantReads, Storage } from '../ports.js'
import { PolicyStore } from '../policy/index.js'
import { MemoryAccessKeys } from './access-keys.js'
import { MemoryAudit } from './audit.js'
import { MemoryBearerTokens } from './bearer-tokens.js'
import { Data, type Local } from './data.js'
import { MemoryLimits } from './limits.js'
import { MemoryLocks } from './locks.js'
import { MemoryMfa } from './mfa.js'
import { MemoryPasskeys } from './passkeys.js'
import { MemoryPrivateTokens } from './private-tokens.js'
import { MemorySessions } from './sessions.js'
import { MemorySigningKeys } from './signing-keys.js'
import { MemoryOrgs, MemoryUsers } from './users.js'

export interface MemoryStoreOptions {
  /** The clock, epoch ms (default Date.now). Replicas share the first store's. */
  now?: () => number
  /** Called with the record's name (never its content) when a sealed value cannot be opened with this store's key. */
  onUnreadable?: (record: string) => void
}

/** The memory backend's Storage; replicas share its Data. */
export class MemoryStorage implements Storage, Local {
  readonly data: Data
  readonly orgs = new MemoryOrgs(this)
  readonly users = new MemoryUsers(this)
  readonly accessKeys = new MemoryAccessKeys(this)
  readonly privateTokens = new MemoryPrivateTokens(this)
  readonly bearerTokens = new MemoryBearerTokens(this)
  readonly sessions = new MemorySessions(this)
  readonly limits = new MemoryLimits(this)
  readonly locks = new MemoryLocks(this)
  readonly audit = new MemoryAudit(this)
  readonly signingKeys = new MemorySigningKeys(this)
  readonly mfa = new MemoryMfa(this)
  readonly passkeys = new MemoryPasskeys(this)
  readonly instant: InstantReads = {
    user: (id) => this.users.peek(id),
    privateTokenUser: (hash) => this.privateTokens.peek(hash),
    session: (hash) => this.sessions.peek(hash)
  }

  #gate: GatewayError | null = null
  #closed = false

  constructor (data: Data) { this.data = data }

  now (): number { return this.data.now() }

  /** Every call starts here: a closed gate or a closed store refuses it, as Redis's does. */
  open (): Data {
    if (this.#gate !== null) throw this.#gate
    if (this.#closed) throw E.storeUnavailable()
    return this.data
  }

  async connect (): Promise<void> { this.open() }
  get isReady (): boolean { return !this.#closed }
  setGate (err: GatewayError | null): void { this.#gate = err }
  async ping (): Promise<void> { this.open() }
  async close (): Promise<void> { this.#closed = true }
}

/** The shared policy over a MemoryStorage. */
export class MemoryStore extends PolicyStore {
  declare protected readonly storage: MemoryStorage

  constructor (keyring: Keyring, o: MemoryStoreOptions & { shareWith?: MemoryStore } = {}) {
    const data = o.shareWith === undefined ? new Data(o.now ?? Date.now) : o.shareWith.storage.data
    super(new MemoryStorage(data), keyring, { onUnreadable: o.onUnreadable })
  }

  /** Another store on the same data (another process on the same Redis), with this key or another. */
  replica (o: { keyring?: Keyring, onUnreadable?: (record: string) => void } = {}): MemoryStore {
    return new MemoryStore(o.keyring ?? this.keyring, { shareWith: this, onUnreadable: o.onUnreadable })
  }

  /** Entries held, expired ones included until swept: what a long-running process keeps in memory. */
  stats (): {
    bearer: number,
    sessions: number,
    attempts: number,
    once: number,
    indexed: number
  } { return this.storage.data.stats() }
}

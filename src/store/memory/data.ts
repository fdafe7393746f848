/**
 * What the memory backend's replicas share, as processes share one Redis:
 * the records, their indexes and the clock. An entry with an expiry expires
 * when the clock reaches it, as a Redis key does.
 */
import type { StoredKeySet } from '../keyset.js'
import type { StoredGrant, StoredKey, StoredPrivateToken, StoredSession, StoredUser } from '../ports.js'
import type { AuditEntry, Org, StoredPasskey } from '../types.js'

export interface Expiring<V> { v: V, exp: number }

/** Expired entries nobody reads again are dropped at most this often (clock time). */
const SWEEP_EVERY_MS = 60_000

export class Data {
  readonly orgs = new Map<string, Org>()
  readonly users = new Map<string, StoredUser>()
  /** lowercase username → user id */
  readonly usernames = new Map<string, string>()
  readonly keys = new Map<string, StoredKey>()
  readonly keyUsed = new Map<string, string>()
  readonly userKeys = new Map<string, Set<string>>()
  /** hash(private token) → user id */
  readonly privateTokens = new Map<string, string>()
  readonly userPrivateToken = new Map<string, StoredPrivateToken>()
  /** lookup hashes of imported, untagged private tokens */
  readonly importedTokens = new Set<string>()
  /** hash(bearer token) → its grant */
  readonly bearer = new Map<string, Expiring<StoredGrant>>()
  readonly userBearer = new Map<string, Set<string>>()
  /** hash(session id) → session */
  readonly sessions = new Map<string, Expiring<StoredSession>>()
  readonly userSessions = new Map<string, Set<string>>()
  /** hash(subject) → attempts */
  readonly attempts = new Map<string, Expiring<number>>()
  /** kind:hash(value) → expiry */
  readonly once = new Map<string, Expiring<true>>()
  /** lock name → its owner's token */
  readonly locks = new Map<string, Expiring<string>>()
  /** user id → the TOTP record (its secret sealed) */
  readonly totp = new Map<string, string>()
  /** user id → the lookup hashes of their unused recovery codes */
  readonly recovery = new Map<string, Set<string>>()
  /** credential id → passkey */
  readonly passkeys = new Map<string, StoredPasskey>()
  /** user id → their passkeys' credential ids */
  readonly userPasskeys = new Map<string, Set<string>>()
  /** the identity JWT's signing keys, sealed */
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
    for (const map of [
      this.bearer, this.sessions, this.attempts, this.once, this.rates, this.locks
    ] as Array<Map<string, Expiring<unknown>>>) {
      for (const [k, e] of map) if (e.exp <= now) map.delete(k)
    }
    for (const [index, records] of [[this.userBearer, this.bearer], [this.userSessions, this.sessions]] as const) {
      for (const [user, hashes] of index) {
        for (const h of hashes) if (!records.has(h)) hashes.delete(h)
        if (hashes.size === 0) index.delete(user)
      }
    }
  }

  /** Entries held, expired ones included until swept: what a long-running process keeps in memory. */
  stats (): { bearer: number, sessions: number, attempts: number, once: number, indexed: number } {
    let indexed = 0
    for (const index of [this.userBearer, this.userSessions]) for (const set of index.values()) indexed += set.size
    return {
      bearer: this.bearer.size,
      sessions: this.sessions.size,
      attempts: this.attempts.size,
      once: this.once.size,
      indexed
    }
  }
}

/** A copy of `record` under its id unless one is there, indexed under its owner; false when the id was taken. */
export function insertOwned<T extends { id: string, user_id: string }> (
  records: Map<string, T>, byUser: Map<string, Set<string>>, record: T
): boolean {
  if (records.has(record.id)) return false
  records.set(record.id, structuredClone(record))
  addTo(byUser, record.user_id, record.id)
  return true
}

export function addTo (index: Map<string, Set<string>>, key: string, member: string): void {
  let set = index.get(key)
  if (set === undefined) index.set(key, (set = new Set()))
  set.add(member)
}

/** How each aggregate reaches the data: through the gate (a closed gate or store refuses every call), and the clock. */
export interface Local {
  open(): Data
  now(): number
}

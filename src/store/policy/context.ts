/**
 * What every policy module works with: the backend, the secret key, the
 * caches (where the backend needs them) and how a change is announced.
 */
import type { Keyring } from '../../crypto.js'
import type { Storage } from '../ports.js'
import type { Caches } from './caches.js'
import type { GroupTable } from './group-table.js'

export interface Context {
  readonly storage: Storage
  readonly keys: Keyring
  /** null: the backend's replicas see every change at once (nothing cached in process) */
  readonly caches: Caches | null
  /** every group in process: a user record's group ids resolved (User.groups) */
  readonly groupTable: GroupTable
  /** Called with the record's name (never its content) when a sealed value cannot be opened with this key. */
  readonly onUnreadable: ((record: string) => void) | undefined
  /** The store is gated or closed: nothing may be sent. */
  readonly shut: () => boolean
}

/** Evicts what `msg` names here and on every replica (Invalidation); nothing where nothing is cached. */
export async function invalidate (c: Context, msg: string): Promise<void> {
  c.caches?.evict(msg)
  await c.storage.invalidation?.publish(msg)
}

/** The store's clock as an ISO time. */
export const isoNow = (c: Context): string => new Date(c.storage.now()).toISOString()

/**
 * Notes when the user's sessions were ended (store.users.forSignIn): a pending
 * sign-in step begun before is void. The gateway's clock, as the pending step's.
 */
export async function sessionsEnded (c: Context, userId: string): Promise<void> {
  await c.storage.users.setField(userId, 'sessions_ended', Date.now())
}

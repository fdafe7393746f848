import type { Keyring } from '../crypto.js'
import type { KeyDisabler } from './types.js'

/**
 * How RedisStore lays out a private token's record (shared with the key
 * check and the secret rotation, which read records without a store).
 * A stored private token is `<lookup hash>:<encrypted token>`, so revoking it
 * needs no decryption. Values written before the hash was kept have none.
 */
export function sealPrivateToken (hash: string, sealed: string): string { return `${hash}:${sealed}` }

export function openPrivateToken (stored: string): { hash: string | null, sealed: string } {
  const i = stored.indexOf(':')
  return i === -1 ? { hash: null, sealed: stored } : { hash: stored.slice(0, i), sealed: stored.slice(i + 1) }
}

interface Lifecycle { name?: string, date_expired?: string, allow_ips?: string[], date_enabled?: string, disabled_by?: KeyDisabler }

/** An access key's lifecycle fields as stored: only those that are set (name, date_expired, allow_ips, date_enabled, disabled_by). */
export function lifecycle (o: Omit<Lifecycle, 'disabled_by'> & { disabled_by?: KeyDisabler | null }): Lifecycle {
  const out: Lifecycle = {}
  if (typeof o.name === 'string' && o.name !== '') out.name = o.name
  if (typeof o.date_expired === 'string') out.date_expired = o.date_expired
  if (Array.isArray(o.allow_ips) && o.allow_ips.length > 0) out.allow_ips = [...o.allow_ips]
  if (typeof o.date_enabled === 'string') out.date_enabled = o.date_enabled
  if (o.disabled_by === 'owner' || o.disabled_by === 'operator' || o.disabled_by === 'policy') out.disabled_by = o.disabled_by
  return out
}

/** A key imported disabled was disabled by an operator (elsewhere): not its owner's to enable. */
export function importedDisable (active: boolean): { disabled_by?: KeyDisabler } {
  return active ? {} : { disabled_by: 'operator' }
}

/**
 * An access key's secret opened with the store's key. One sealed under
 * another key is null, reported (`onUnreadable`, named `ak:<id>`) and marks
 * the key unreadable: listed as such, and refused like an unknown key.
 */
export function openKeySecret<K extends { id: string, unreadable?: boolean }> (keys: Pick<Keyring, 'tryDecrypt'>, key: K, sealed: string, onUnreadable?: (record: string) => void): { key: K, secret: string | null } {
  const record = `ak:${key.id}`
  const secret = keys.tryDecrypt(sealed, record)
  if (secret === null) {
    onUnreadable?.(record)
    key.unreadable = true
  }
  return { key, secret }
}

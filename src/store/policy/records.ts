/**
 * Records as the policy builds them for every backend, and as it reads them
 * back: the field order of a new record is the order it is stored in.
 */
import type { Keyring } from '../../crypto.js'
import type { StoredKey, StoredUser } from '../ports.js'
import type { AccessKey, Factor, KeyDisabler, NewUser, User } from '../model.js'

/** A new user's record: the public fields, the password hash, and the fingerprint of an imported (Django) hash. */
export function newUserRecord (
  u: NewUser, id: string, passwordHash: string | null, now: string, keys: Keyring
): StoredUser {
  const orgs = { ...(u.orgs ?? {}) }
  const user: StoredUser = {
    id,
    username: u.username,
    name: u.name ?? u.username,
    email: u.email ?? '',
    is_active: true,
    is_superuser: u.superuser === true,
    orgs,
    default_org: Object.keys(orgs)[0] ?? null,
    date_joined: now,
    last_login: null,
    password_hash: passwordHash
  }
  if (u.password === null &&
    u.password_hash !== undefined) user.password_imported = importedFingerprint(keys, u.password_hash)
  return user
}

/** What marks a legacy hash as the one an import set: a keyed hash, so the record does not say which hash it was. */
export const importedFingerprint = (keys: Keyring, hash: string): string => keys.lookup(`imported password:${hash}`)

/**
 * The public record: without the password fields, the stored group ids (GroupTable.userOf
 * resolves them) and a removed rate limit.
 */
export function publicUser (s: StoredUser): User {
  const { password_hash: _, password_imported: _i, sessions_ended: _e, groups: _g, ...u } = s
  if (u.rate_limit === null) delete u.rate_limit
  return u
}

interface Lifecycle {
  name?: string,
  factors?: Factor[],
  date_expired?: string,
  allow_ips?: string[],
  date_enabled?: string,
  disabled_by?: KeyDisabler
}

const FACTORS: ReadonlySet<string> = new Set(['pwd', 'otp', 'hwk', 'swk'])

/**
 * An access key's lifecycle fields as stored: only those that are set
 * (name, factors, date_expired, allow_ips, date_enabled, disabled_by).
 */
export function lifecycle (o: Omit<Lifecycle, 'disabled_by'> & { disabled_by?: KeyDisabler | null }): Lifecycle {
  const out: Lifecycle = {}
  if (typeof o.name === 'string' && o.name !== '') out.name = o.name
  // the factors of the owner's sign-in that made it (an operator's
  // key has none); what is not a known factor is dropped,
  // and a list with none left reads as the password alone: never as an operator's key
  if (Array.isArray(o.factors)) {
    const known = o.factors.filter((f) => FACTORS.has(f))
    out.factors = known.length > 0 ? known : ['pwd']
  }
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

/** The access key as Store returns it, from its record and its last use. */
export function keyOf (s: StoredKey, lastUsed: string | null): AccessKey {
  const key: AccessKey = {
    id: s.id,
    user_id: s.user_id,
    is_active: s.is_active,
    date_created: s.date_created,
    date_last_used: lastUsed
  }
  if (s.rate_limit !== undefined && s.rate_limit !== null) key.rate_limit = s.rate_limit
  Object.assign(key, lifecycle(s))
  return key
}

/**
 * An access key's secret opened with the store's key. One sealed under
 * another key is null, reported (`onUnreadable`, named `ak:<id>`) and marks
 * the key unreadable: listed as such, and refused like an unknown key.
 */
export function openKeySecret<K extends { id: string, unreadable?: boolean }> (
  keys: Pick<Keyring, 'tryDecrypt'>, key: K, sealed: string, onUnreadable?: (record: string) => void
): { key: K, secret: string | null } {
  const record = `ak:${key.id}`
  const secret = keys.tryDecrypt(sealed, record)
  if (secret === null) {
    onUnreadable?.(record)
    key.unreadable = true
  }
  return { key, secret }
}

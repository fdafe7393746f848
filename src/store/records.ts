/**
 * Records both stores build alike (MemoryStore, RedisStore).
 */
import type { Keyring } from '../crypto.js'
import type { NewUser, User } from './types.js'

/** A new user's record as both stores keep it: the public fields, the password hash, and the fingerprint of an imported (Django) hash. */
export function newUserRecord (u: NewUser, id: string, passwordHash: string | null, now: string, keys: Keyring): User & { password_hash: string | null, password_imported?: string } {
  const orgs = { ...(u.orgs ?? {}) }
  const user: User & { password_hash: string | null, password_imported?: string } = {
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
  if (u.password === null && u.password_hash !== undefined) user.password_imported = keys.lookup(`imported password:${u.password_hash}`)
  return user
}

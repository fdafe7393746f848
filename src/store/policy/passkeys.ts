/**
 * Passkeys (WebAuthn credentials, checked in ../../auth/passkeys.ts): stored
 * as registered, listed without their keys, renamed and removed by their
 * owner, and a use recorded only when the signature counter increased. The
 * user handle is random per user, kept with the user's passkeys: a user
 * without one gets a new handle at their next registration.
 */
import { randomBytes } from 'node:crypto'
import type { NewPasskey, PasskeyInfo, StoredPasskey } from '../model.js'
import { isoNow, type Context } from './context.js'

export const info = (p: StoredPasskey): PasskeyInfo =>
  ({
    id: p.id,
    name: p.name,
    created: p.created,
    last_used: p.last_used,
    device_type: p.device_type,
    backed_up: p.backed_up
  })

export class Passkeys {
  constructor (private readonly c: Context) {}

  /** The user's passkeys, oldest first (never a key). */
  async list (userId: string): Promise<PasskeyInfo[]> {
    return (await this.c.storage.passkeys.list(userId))
      .sort((a, b) => a.created.localeCompare(b.created) || a.id.localeCompare(b.id))
      .map(info)
  }

  /** A passkey by its credential id (for a sign-in without a username), or null. */
  async get (credentialId: string): Promise<StoredPasskey | null> {
    return credentialId === '' || credentialId.length > 1400 ? null : await this.c.storage.passkeys.get(credentialId)
  }

  /**
   * The user's WebAuthn user handle: the one their passkeys were
   * made for, or a new random one (stored with their first passkey).
   */
  async handle (userId: string): Promise<string> {
    const mine = await this.c.storage.passkeys.list(userId)
    return mine[0]?.user_handle ?? randomBytes(32).toString('base64url')
  }

  /** Stores a new passkey; false when its credential id is taken. */
  async add (p: NewPasskey): Promise<boolean> {
    return await this.c.storage.passkeys.insert({ ...p, created: isoNow(this.c), last_used: null })
  }

  /** Renames one of the user's passkeys; false: no such passkey of theirs. */
  async rename (userId: string, credentialId: string, name: string): Promise<boolean> {
    return await this.c.storage.passkeys.rename(userId, credentialId, name)
  }

  /** Removes one of the user's passkeys; false: no such passkey of theirs. */
  async remove (userId: string, credentialId: string): Promise<boolean> {
    return await this.c.storage.passkeys.delete(userId, credentialId)
  }

  /**
   * Records a use: the new signature counter and the time, atomically and
   * only when the counter increased (or both are 0: an authenticator that
   * keeps none). False: no such passkey, or a counter that did not increase
   * (a cloned authenticator): nothing written.
   */
  async use (credentialId: string, counter: number): Promise<boolean> {
    return await this.c.storage.passkeys.advance(credentialId, counter, isoNow(this.c))
  }

  async removeAll (userId: string): Promise<number> { return await this.c.storage.passkeys.deleteAll(userId) }
}

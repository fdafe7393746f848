/**
 * Passkeys (WebAuthn credentials, checked in ../../auth/passkeys.ts): stored
 * as registered, listed without their keys, renamed and removed by their
 * owner, and a use recorded only when the signature counter increased. The
 * user handle is random per user, kept with the user's passkeys: a user
 * without one gets a new handle at their next registration.
 */
import { randomBytes } from 'node:crypto'
import type { NewPasskey, PasskeyInfo, StoredPasskey } from '../types.js'
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

  async list (userId: string): Promise<PasskeyInfo[]> {
    return (await this.c.storage.passkeys.list(userId))
      .sort((a, b) => a.created.localeCompare(b.created) || a.id.localeCompare(b.id))
      .map(info)
  }

  async get (credentialId: string): Promise<StoredPasskey | null> {
    return credentialId === '' || credentialId.length > 1400 ? null : await this.c.storage.passkeys.get(credentialId)
  }

  async handle (userId: string): Promise<string> {
    const mine = await this.c.storage.passkeys.list(userId)
    return mine[0]?.user_handle ?? randomBytes(32).toString('base64url')
  }

  async add (p: NewPasskey): Promise<boolean> {
    return await this.c.storage.passkeys.insert({ ...p, created: isoNow(this.c), last_used: null })
  }

  async rename (userId: string, credentialId: string, name: string): Promise<boolean> {
    return await this.c.storage.passkeys.rename(userId, credentialId, name)
  }

  async remove (userId: string, credentialId: string): Promise<boolean> {
    return await this.c.storage.passkeys.delete(userId, credentialId)
  }

  async use (credentialId: string, counter: number): Promise<boolean> {
    return await this.c.storage.passkeys.advance(credentialId, counter, isoNow(this.c))
  }

  async removeAll (userId: string): Promise<number> { return await this.c.storage.passkeys.deleteAll(userId) }
}

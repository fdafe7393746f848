/** Second factors in process: the TOTP record and the recovery codes' hashes, per user. */
import type { MfaStorage } from '../ports.js'
import type { Local } from './data.js'

export class MemoryMfa implements MfaStorage {
  constructor (private readonly l: Local) {}

  async getTotp (userId: string): Promise<string | null> { return this.l.open().totp.get(userId) ?? null }
  async putTotp (userId: string, stored: string): Promise<void> { this.l.open().totp.set(userId, stored) }

  async swapTotp (userId: string, expected: string, stored: string): Promise<boolean> {
    const d = this.l.open()
    if (d.totp.get(userId) !== expected) return false
    d.totp.set(userId, stored)
    return true
  }

  async deleteAll (userId: string): Promise<boolean> {
    const d = this.l.open()
    d.recovery.delete(userId)
    return d.totp.delete(userId)
  }

  async setRecoveryCodes (userId: string, hashes: string[]): Promise<void> {
    const d = this.l.open()
    if (hashes.length === 0) d.recovery.delete(userId)
    else d.recovery.set(userId, new Set(hashes))
  }

  async takeRecoveryCode (userId: string, hash: string): Promise<boolean> {
    return this.l.open().recovery.get(userId)?.delete(hash) === true
  }

  async countRecoveryCodes (userId: string): Promise<number> { return this.l.open().recovery.get(userId)?.size ?? 0 }
}

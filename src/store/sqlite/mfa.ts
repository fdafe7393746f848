/**
 * Second factors in SQLite: `mfa_totp` (the TOTP record per user)
 * and `mfa_recovery` (a row per unused recovery code's hash).
 */
import type { MfaStorage } from '../ports.js'
import type { SqlContext } from './context.js'

export class SqliteMfa implements MfaStorage {
  constructor (private readonly c: SqlContext) {}

  async getTotp (userId: string): Promise<string | null> {
    return this.c.run(() => (this.c.st('SELECT stored FROM mfa_totp WHERE user_id = ?').pluck().get(userId) as string | undefined) ?? null)
  }

  async putTotp (userId: string, stored: string): Promise<void> {
    this.c.run(() => this.c.st('INSERT OR REPLACE INTO mfa_totp (user_id, stored) VALUES (?, ?)').run(userId, stored))
  }

  async swapTotp (userId: string, expected: string, stored: string): Promise<boolean> {
    return this.c.run(() => this.c.st('UPDATE mfa_totp SET stored = ? WHERE user_id = ? AND stored = ?').run(stored, userId, expected).changes === 1)
  }

  async deleteAll (userId: string): Promise<boolean> {
    return this.c.tx(() => {
      this.c.st('DELETE FROM mfa_recovery WHERE user_id = ?').run(userId)
      return this.c.st('DELETE FROM mfa_totp WHERE user_id = ?').run(userId).changes === 1
    })
  }

  async setRecoveryCodes (userId: string, hashes: string[]): Promise<void> {
    this.c.tx(() => {
      this.c.st('DELETE FROM mfa_recovery WHERE user_id = ?').run(userId)
      const ins = this.c.st('INSERT OR IGNORE INTO mfa_recovery (user_id, hash) VALUES (?, ?)')
      for (const h of hashes) ins.run(userId, h)
    })
  }

  async takeRecoveryCode (userId: string, hash: string): Promise<boolean> {
    return this.c.run(() => this.c.st('DELETE FROM mfa_recovery WHERE user_id = ? AND hash = ?').run(userId, hash).changes === 1)
  }

  async countRecoveryCodes (userId: string): Promise<number> {
    return this.c.run(() => this.c.st('SELECT count(*) FROM mfa_recovery WHERE user_id = ?').pluck().get(userId) as number)
  }
}

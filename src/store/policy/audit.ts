/**
 * The audit stream (written by ../../audit.ts): appended and read as the
 * backend keeps it; a credential appears in it only as its keyed `ref`.
 */
import type { AuditEntry, AuditQuery } from '../model.js'
import type { Context } from './context.js'

export class Audit {
  constructor (private readonly c: Context) {}

  /**
   * Appends one audit event (its JSON) to the audit stream, which keeps about
   * `maxLen` entries (older ones are dropped; Redis: XADD MAXLEN ~, one key).
   */
  async append (json: string, maxLen: number): Promise<void> { await this.c.storage.audit.append(json, maxLen) }

  /** Audit entries, oldest first (AuditQuery says which). */
  async read (q: AuditQuery): Promise<AuditEntry[]> { return await this.c.storage.audit.read(q) }

  /** A bearer token's or session id's `ref` in the audit trail: a keyed hash (Keyring.auditRef). */
  ref (credential: string): string { return this.c.keys.auditRef(credential) }
}

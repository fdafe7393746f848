/** One-time bearer tokens in memory: hash → grant with an expiry, indexed under the user. */
import type { BearerTokenStorage, StoredGrant } from '../ports.js'
import { addTo, type Local } from './data.js'

export class MemoryBearerTokens implements BearerTokenStorage {
  constructor (private readonly l: Local) {}

  async insert (hash: string, grant: StoredGrant, now: number, ttlSeconds: number): Promise<boolean> {
    const d = this.l.open()
    d.sweep()
    if (d.alive(d.bearer, hash) !== undefined) return false
    d.bearer.set(hash, { v: { ...grant }, exp: now + ttlSeconds * 1000 })
    addTo(d.userBearer, grant.user_id, hash)
    return true
  }

  async consume (hash: string): Promise<StoredGrant | null> {
    const d = this.l.open()
    const e = d.alive(d.bearer, hash)
    if (e === undefined) return null
    d.bearer.delete(hash)
    d.userBearer.get(e.v.user_id)?.delete(hash)
    return { ...e.v }
  }

  async read (hash: string): Promise<StoredGrant | null> {
    const d = this.l.open()
    const e = d.alive(d.bearer, hash)
    return e === undefined ? null : { ...e.v }
  }

  async endAll (userId: string): Promise<void> {
    const d = this.l.open()
    for (const h of d.userBearer.get(userId) ?? []) d.bearer.delete(h)
    d.userBearer.delete(userId)
  }
}

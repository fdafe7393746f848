/** Sessions in memory: hash → session with the idle timeout as expiry, indexed under the user. */
import type { SessionStorage, StoredSession } from '../ports.js'
import type { SessionInfo } from '../types.js'
import { addTo, type Local } from './data.js'

export class MemorySessions implements SessionStorage {
  constructor (private readonly l: Local) {}

  async insert (hash: string, s: StoredSession, ttlSeconds: number): Promise<void> {
    const d = this.l.open()
    d.sweep()
    d.sessions.set(hash, { v: { ...s }, exp: s.created + ttlSeconds * 1000 })
    addTo(d.userSessions, s.user_id, hash)
  }

  async get (hash: string): Promise<StoredSession | null> { return this.peek(hash) }

  /** get without a promise (Storage.instant) */
  peek (hash: string): StoredSession | null {
    const d = this.l.open()
    const e = d.alive(d.sessions, hash)
    return e === undefined ? null : { ...e.v }
  }

  async touch (hash: string, ttlSeconds: number): Promise<void> {
    const d = this.l.open()
    const e = d.alive(d.sessions, hash)
    if (e !== undefined) e.exp = this.l.now() + ttlSeconds * 1000
  }

  async delete (hash: string): Promise<string | null> {
    const d = this.l.open()
    const e = d.alive(d.sessions, hash)
    d.sessions.delete(hash)
    if (e !== undefined) d.userSessions.get(e.v.user_id)?.delete(hash)
    return e?.v.user_id ?? null
  }

  async list (userId: string): Promise<SessionInfo[]> {
    const d = this.l.open()
    const out: SessionInfo[] = []
    for (const h of d.userSessions.get(userId) ?? []) {
      const e = d.alive(d.sessions, h)
      if (e !== undefined && e.v.user_id === userId) out.push({ id: h, created: e.v.created, expires: e.exp })
    }
    return out
  }

  async deleteOf (userId: string, hash: string): Promise<boolean> {
    const d = this.l.open()
    const e = d.alive(d.sessions, hash)
    if (e === undefined || e.v.user_id !== userId) return false
    d.sessions.delete(hash)
    d.userSessions.get(userId)?.delete(hash)
    return true
  }

  async endAll (userId: string): Promise<void> {
    const d = this.l.open()
    for (const h of d.userSessions.get(userId) ?? []) d.sessions.delete(h)
    d.userSessions.delete(userId)
  }
}

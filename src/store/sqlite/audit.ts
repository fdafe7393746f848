/**
 * The audit trail in SQLite: one row per event, ids `<ms>-<seq>` as a Redis
 * Stream makes them (increasing even when the clock is not), capped at
 * `maxLen` rows. A reader waiting for the next event polls every 100 ms.
 */
import type { AuditStorage } from '../ports.js'
import type { AuditEntry, AuditQuery } from '../model.js'
import type { SqlContext } from './context.js'

const WAIT_POLL_MS = 100

interface Row { ms: number, seq: number, json: string }
const entry = (r: Row): AuditEntry => ({ id: `${r.ms}-${r.seq}`, json: r.json })

export class SqliteAudit implements AuditStorage {
  constructor (private readonly c: SqlContext) {}

  async append (json: string, maxLen: number): Promise<void> {
    const { c } = this
    c.tx(() => {
      const last = c.st('SELECT n, ms, seq FROM audit ORDER BY n DESC LIMIT 1').get() as { n: number, ms: number, seq: number } | undefined
      const ms = Math.max(Math.floor(c.now()), last?.ms ?? 0)
      const seq = ms === last?.ms ? last.seq + 1 : 0
      const n = (last?.n ?? 0) + 1
      c.st('INSERT INTO audit (n, ms, seq, json) VALUES (?, ?, ?, ?)').run(n, ms, seq, json)
      c.st('DELETE FROM audit WHERE n <= ?').run(n - maxLen)
    })
  }

  async read (q: AuditQuery): Promise<AuditEntry[]> {
    const { c } = this
    const count = q.count ?? 1000
    if (q.after !== undefined) {
      const [ms, seq] = streamId(q.after)
      const found = (): AuditEntry[] => (c.run(() => c.st('SELECT ms, seq, json FROM audit WHERE ms > ? OR (ms = ? AND seq > ?) ORDER BY n LIMIT ?').all(ms, ms, seq, count)) as Row[]).map(entry)
      const end = Date.now() + (q.block ?? 0)
      for (;;) {
        const got = found()
        if (got.length > 0 || Date.now() + WAIT_POLL_MS > end) return got
        await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS))
      }
    }
    if (q.since !== undefined) return (c.run(() => c.st('SELECT ms, seq, json FROM audit WHERE ms >= ? ORDER BY n LIMIT ?').all(Math.floor(q.since!), count)) as Row[]).map(entry)
    return (c.run(() => c.st('SELECT ms, seq, json FROM audit ORDER BY n DESC LIMIT ?').all(q.last ?? 10)) as Row[]).reverse().map(entry)
  }
}

/** A stream id `<ms>-<seq>` (or `<ms>`) as two numbers. */
function streamId (id: string): [number, number] {
  const [ms, seq = '0'] = id.split('-')
  return [Number(ms) || 0, Number(seq) || 0]
}

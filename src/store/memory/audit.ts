/** The audit stream in memory, with ids as Redis makes them. */
import type { AuditStorage } from '../ports.js'
import type { AuditEntry, AuditQuery } from '../types.js'
import type { Local } from './data.js'

export class MemoryAudit implements AuditStorage {
  constructor (private readonly l: Local) {}

  async append (json: string, maxLen: number): Promise<void> {
    const d = this.l.open()
    // ids as Redis makes them: <ms>-<seq>, increasing even when the clock is not
    const ms = Math.max(Math.floor(this.l.now()), d.auditLast[0])
    const seq = ms === d.auditLast[0] ? d.auditLast[1] + 1 : 0
    d.auditLast = [ms, seq]
    d.audit.push({ id: `${ms}-${seq}`, json })
    if (d.audit.length > maxLen) d.audit.splice(0, d.audit.length - maxLen)
    for (const wake of d.auditWaiters.splice(0)) wake()
  }

  async read (q: AuditQuery): Promise<AuditEntry[]> {
    const d = this.l.open()
    const count = q.count ?? 1000
    if (q.after !== undefined) {
      const after = streamId(q.after)
      const found = (): AuditEntry[] => d.audit.filter((e) => compareIds(streamId(e.id), after) > 0)
        .slice(0, count)
        .map((e) => ({ ...e }))
      if (found().length === 0 && (q.block ?? 0) >= 1) {
        await new Promise<void>((resolve) => {
          const wake = (): void => { clearTimeout(timer); resolve() }
          // not woken: leave the list, so a reader that waits in a loop does not grow it
          const timer = setTimeout(
            () => { const i = d.auditWaiters.indexOf(wake); if (i !== -1) d.auditWaiters.splice(i, 1); resolve() },
            q.block
          )
          d.auditWaiters.push(wake)
        })
      }
      return found()
    }
    if (q.since !== undefined) {
      return d.audit.filter((e) => streamId(e.id)[0] >= q.since!)
        .slice(0, count)
        .map((e) => ({ ...e }))
    }
    return d.audit.slice(-(q.last ?? 10)).map((e) => ({ ...e }))
  }
}

/** A stream id `<ms>-<seq>` (or `<ms>`) as two numbers. */
function streamId (id: string): [number, number] {
  const [ms, seq = '0'] = id.split('-')
  return [Number(ms), Number(seq)]
}
const compareIds = (a: [number, number], b: [number, number]): number => a[0] - b[0] || a[1] - b[1]

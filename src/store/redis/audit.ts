/**
 * The audit stream in Redis: `audit`, a Redis Stream capped with XADD MAXLEN ~, one field `e` holding the event's JSON.
 */
import type { AuditStorage } from '../ports.js'
import type { AuditEntry, AuditQuery } from '../model.js'
import type { RedisContext } from './context.js'

export class RedisAudit implements AuditStorage {
  constructor (private readonly c: RedisContext) {}

  async append (json: string, maxLen: number): Promise<void> {
    await this.c.run(() => this.c.redis.xadd(this.c.k('audit'), 'MAXLEN', '~', maxLen, '*', 'e', json))
  }

  async read (q: AuditQuery): Promise<AuditEntry[]> {
    const { c } = this
    const key = c.k('audit')
    const count = q.count ?? 1000
    if (q.after !== undefined) {
      // a blocking read must end before the command timeout fails it; BLOCK 0 would wait forever
      const block = Math.min(q.block ?? 0, c.commandTimeout - 250)
      const args: Array<string | number> = ['COUNT', count, ...(block >= 1 ? ['BLOCK', block] : []), 'STREAMS', key, q.after]
      const r = await c.run(() => c.redis.xread(...(args as ['COUNT', number, 'STREAMS', string, string])))
      return r === null ? [] : entries(r[0][1])
    }
    if (q.since !== undefined) return entries(await c.run(() => c.redis.xrange(key, `${Math.max(0, Math.floor(q.since!))}-0`, '+', 'COUNT', count)))
    return entries(await c.run(() => c.redis.xrevrange(key, '+', '-', 'COUNT', q.last ?? 10))).reverse()
  }
}

/** Stream entries as ioredis gives them → AuditEntry (the field `e`). */
function entries (raw: Array<[id: string, fields: string[]]>): AuditEntry[] {
  return raw.map(([id, fields]) => ({ id, json: fields[fields.indexOf('e') + 1] ?? '{}' }))
}

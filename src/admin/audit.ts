/**
 * The audit trail, read back (GET /admin/v1/audit): what `sidegate audit tail
 * --json` prints, the last entries or every one since a time. Following it is
 * the CLI's (`audit tail --follow`); here a client asks again with `after`.
 */
import { Type as T } from '@sinclair/typebox'
import { UsageError } from '../errors.js'
import { AUDIT_PAGE as PAGE, sinceOf } from '../observability/audit.js'
import { defineOperation, named } from './operation.js'

const AuditEntry = named('AuditEntry', T.Object({
  id: T.String({ description: 'The entry\'s id in the trail (`<ms>-<seq>`): `after` takes it.' }),
  time: T.String({ format: 'date-time' }),
  event: T.String({ description: 'The catalogue\'s name (docs/observability.md, "Audit trail").' }),
  outcome: T.Union([T.Literal('success'), T.Literal('failure')])
}, { additionalProperties: true, description: 'The event\'s fields, as its log line has them: never a credential.' }))
const AuditEntries = named('AuditEntries', T.Array(AuditEntry))

/** A whole number from 1 to PAGE, or the default. */
function count (v: string | null, fallback: number): number {
  if (v === null) return fallback
  const n = Number(v)
  if (!/^\d+$/.test(v) || n < 1 || n > PAGE) throw new UsageError(`limit: a whole number from 1 to ${PAGE}, got "${v}"`)
  return n
}

export const AUDIT_OPERATIONS = [
  defineOperation({
    method: 'GET',
    path: 'audit',
    status: 200,
    tag: 'Audit trail',
    operationId: 'readAudit',
    summary: 'The audit trail: who signed in, from where, with what (`sidegate audit tail --json`)',
    description: 'Oldest first. Without `since` or `after`: the last `limit` entries (default 10). With `since`: every entry from that time, ' +
      `at most \`limit\` (default ${PAGE}); with \`after\`: the entries after that id (ask again with the last id to follow). ` +
      'Kept by default (audit.stream), the newest audit.max_len entries.',
    query: {
      limit: `How many entries, 1 to ${PAGE}.`,
      since: 'A duration back from now (30s, 15m, 2h, 7d) or a date or time (2026-11-25, 2026-11-25T10:00:00Z).',
      after: 'An entry\'s id: the entries after it.'
    },
    answer: AuditEntries,
    errors: ['bad_request'],
    run: async (ops, { query }) => {
      const since = query.get('since')
      const after = query.get('after')
      if (since !== null && after !== null) throw new UsageError('since and after: give one of them')
      let read
      if (after !== null) {
        if (!/^\d{1,16}-\d{1,20}$/.test(after)) throw new UsageError(`after: an entry's id (<ms>-<seq>), got "${after}"`)
        read = await ops.store.audit.read({ after, count: count(query.get('limit'), PAGE) })
      } else if (since !== null) {
        read = await ops.store.audit.read({ since: sinceOf('since', since), count: count(query.get('limit'), PAGE) })
      } else {
        read = await ops.store.audit.read({ last: count(query.get('limit'), 10) })
      }
      return read.map((e) => ({ id: e.id, ...JSON.parse(e.json) as { time: string, event: string, outcome: 'success' | 'failure' } }))
    }
  })
]

/** `sidegate audit tail`: the audit stream, read back (and followed) from the store. */
import type { Config } from '../config/index.js'
import { GatewayError, UsageError } from '../errors.js'
import { AUDIT_PAGE as TAIL_PAGE, formatAuditEntry, sinceOf } from '../observability/audit.js'
import { storeName } from '../app/open-store.js'
import type { Store } from '../store/types.js'
import type { Values } from './args.js'
import type { Io } from './io.js'

/** A stream id after every entry of millisecond `ms - 1`: reading after it starts at `ms`. */
const justBefore = (ms: number): string => `${Math.max(0, ms - 1)}-18446744073709551615`
/** How long a follow waits in one call (less when redis.command_timeout is shorter). */
const TAIL_BLOCK_MS = 1000

/**
 * `sidegate audit tail`: the last --limit entries (default 10) or every one
 * since --since, then with --follow each new one as it is appended (XREAD
 * BLOCK from the last id printed, so none is missed or printed twice), until
 * SIGINT or SIGTERM (exit 0). Redis going away while following: one line on
 * stderr, then it retries every second.
 */
export async function tailAudit (store: Store, io: Io, v: Values, config: Config): Promise<number> {
  const json = v.json === true
  const since = v.since === undefined ? undefined : sinceOf('--since', v.since)
  const last = v.limit === undefined ? 10 : Number(v.limit)
  if (!Number.isInteger(last) || last < 1 || last > 100_000) throw new UsageError(`--limit must be a whole number from 1 to 100000, got "${v.limit}"`)
  if (!config.audit.stream) io.err('sidegate: note: audit.stream is false in this configuration: gateways with it append nothing to the stream (their log has every event); commands (sidegate user, key, token, …) always do\n')
  let cursor: string | undefined
  const print = (entries: Array<{ id: string, json: string }>): void => {
    for (const e of entries) io.out(formatAuditEntry(e, json) + '\n')
    cursor = entries.at(-1)?.id ?? cursor
  }
  if (since !== undefined) {
    cursor = justBefore(since)
    for (let page = TAIL_PAGE; page === TAIL_PAGE;) {
      const got = await store.audit.read({ after: cursor, count: TAIL_PAGE })
      print(got)
      page = got.length
    }
  } else {
    print(await store.audit.read({ last }))
    // nothing yet: every entry from now on is new (an empty stream: all of them)
    cursor ??= (await store.audit.read({ last: 1 }))[0]?.id ?? '0-0'
  }
  if (v.follow !== true) return 0
  let stop: () => void = () => {}
  const stopped = new Promise<null>((resolve) => { stop = () => resolve(null) })
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  let down = false
  try {
    for (;;) {
      let got: Array<{ id: string, json: string }> | null
      try {
        got = await Promise.race([store.audit.read({ after: cursor, block: TAIL_BLOCK_MS, count: TAIL_PAGE }), stopped])
        if (down) { down = false; io.err('sidegate: the store answers again\n') }
      } catch (err) {
        if (!(err instanceof GatewayError) || err.code !== 'store_unavailable') throw err
        if (!down) { down = true; io.err(`sidegate: cannot reach ${storeName(config)}; retrying every second (Ctrl-C to stop)\n`) }
        got = await Promise.race([new Promise<[]>((resolve) => setTimeout(() => resolve([]), TAIL_BLOCK_MS)), stopped])
      }
      if (got === null) return 0
      print(got)
    }
  } finally {
    process.off('SIGINT', stop)
    process.off('SIGTERM', stop)
  }
}

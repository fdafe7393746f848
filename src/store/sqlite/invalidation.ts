/**
 * Cache invalidation between the processes that share one file (the
 * gateway, its --workers, the CLI): a change appends a row to the
 * invalidations table (one short insert); each process reads the rows
 * after the last it saw every `pollMs` (one indexed read of the sequence,
 * and the rows only when there are new ones), so a revocation anywhere is
 * heard everywhere within that time. Bearer use, rate-limit hits and last
 * uses write nothing here: they are not cached. Rows older than a minute are
 * dropped; a process that has not read for longer (or reads a gap) starts
 * cold, as a Redis subscriber does after a reconnect.
 */
import { randomUUID } from 'node:crypto'
import type { Invalidation } from '../ports.js'
import type { SqlContext } from './context.js'

/** Rows are kept this long (ms): a process that falls further behind starts cold. */
const KEEP_MS = 60_000
/** Cached entries are trusted only while the log was read within this many ms (a stalled process reads the store). */
const TRUSTED_FOR_MS = 2_000

type Listener = { message: (msg: string) => void, reset: () => void }

export class InvalidationLog implements Invalidation {
  readonly #origin = randomUUID()
  readonly #listeners: Listener[] = []
  #last = 0
  #readAt = 0
  #prunedAt = 0
  #timer: NodeJS.Timeout | null = null

  constructor (private readonly c: SqlContext & { readonly gateOpen: boolean }, private readonly pollMs: number) {}

  get trusted (): boolean { return this.c.gateOpen && Date.now() - this.#readAt < TRUSTED_FOR_MS }

  listen (onMessage: (msg: string) => void, onReset: () => void): void {
    this.#listeners.push({ message: onMessage, reset: onReset })
  }

  async publish (msg: string): Promise<void> {
    for (const l of this.#listeners) l.message(msg)
    const { c } = this
    c.run(() => {
      const now = Date.now()
      c.st('INSERT INTO invalidations (origin, msg, at) VALUES (?, ?, ?)').run(this.#origin, msg, now)
      if (now - this.#prunedAt > KEEP_MS / 6) {
        this.#prunedAt = now
        c.st('DELETE FROM invalidations WHERE at < ?').run(now - KEEP_MS)
      }
    })
  }

  /** From the newest row on: what was cached before this process started cannot be stale. */
  start (): void {
    this.#last = this.#top()
    this.#readAt = Date.now()
    this.#timer = setInterval(() => this.read(), this.pollMs)
    this.#timer.unref()
  }

  stop (): void {
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
    this.#readAt = 0
  }

  /** Reads what was appended since the last read; a failed read leaves the caches untrusted until one succeeds. */
  read (): void {
    try {
      const top = this.#top()
      if (top !== this.#last) {
        const rows = this.c.st('SELECT seq, origin, msg FROM invalidations WHERE seq > ? ORDER BY seq').all(this.#last) as Array<{ seq: number, origin: string, msg: string }>
        if (top < this.#last || (rows[0]?.seq ?? top + 1) !== this.#last + 1) {
          // rows this process never read were dropped (it fell behind), or the file was replaced
          for (const l of this.#listeners) l.reset()
        } else {
          for (const r of rows) if (r.origin !== this.#origin) for (const l of this.#listeners) l.message(r.msg)
        }
        this.#last = Math.max(top, rows[rows.length - 1]?.seq ?? 0)
      }
      this.#readAt = Date.now()
    } catch {
      this.#readAt = 0
    }
  }

  #top (): number {
    return (this.c.st("SELECT seq FROM sqlite_sequence WHERE name = 'invalidations'").pluck().get() as number | undefined) ?? 0
  }
}

/**
 * auth.keys.disable_after: access keys unused for that
 * many days are disabled (not deleted) by a periodic pass. Nothing of it is
 * on the request path: a request only reads the key's cached `is_active`.
 *
 * Passes are numbered by time: pass N runs at N × check_interval (epoch), on
 * every replica's timer at once. Each replica that wakes up takes the Redis
 * lock `lock:unused-keys` (SET NX PX, a random token; freed by a script only
 * while it still holds that token, so a replica whose lease ran out never
 * frees another's), then marks pass N done (markOnce, SET NX): a replica that
 * finds the lock taken, or the pass already marked, skips it. So exactly one
 * replica runs each pass, and two never run at the same time while a pass
 * outlasts its lease (the lease: check_interval, 1 to 10 minutes).
 *
 * A key counts as used at the latest of its last use (date_last_used), its
 * creation and its last re-enabling (date_enabled), so a key enabled again by
 * `sidegate key enable` gets a fresh disable_after days.
 */
import type { Logger } from '../observability/log.js'
import type { AccessKey, Store } from '../store/types.js'
import { messageOf } from '../errors.js'

export const UNUSED_KEYS_LOCK = 'unused-keys'
const DAY_MS = 86_400_000

export interface UnusedKeysOptions {
  /** auth.keys.disable_after */
  days: number
  /** auth.keys.check_interval */
  intervalSeconds: number
  /** epoch ms; default Date.now */
  now?: () => number
  /** after each pass a replica ran: the number of keys it disabled */
  onPass?: (disabled: number) => void
}

/** When the key was last in use, epoch ms: the latest of its last use, creation and re-enabling. */
export function lastActive (k: Pick<AccessKey, 'date_created' | 'date_last_used' | 'date_enabled'>): number {
  return Math.max(
    ...[k.date_created, k.date_last_used, k.date_enabled]
      .map((d) => (typeof d === 'string' ? Date.parse(d) : NaN))
      .filter((t) => !Number.isNaN(t))
  )
}

export class UnusedKeys {
  readonly #now: () => number
  readonly #intervalMs: number
  #timer: NodeJS.Timeout | null = null
  #running: Promise<void> | null = null

  constructor (private readonly store: Store, private readonly log: Logger, private readonly o: UnusedKeysOptions) {
    this.#now = o.now ?? Date.now
    this.#intervalMs = o.intervalSeconds * 1000
  }

  /** Schedules the passes (nothing when disable_after is 0). */
  start (): void {
    if (this.o.days <= 0 || this.#timer !== null) return
    this.#schedule()
  }

  #schedule (): void {
    const now = this.#now()
    const next = (Math.floor(now / this.#intervalMs) + 1) * this.#intervalMs
    this.#timer = setTimeout(() => {
      const pass = Math.floor(next / this.#intervalMs)
      this.#running = this.runPass(pass).then(() => {}, (err: unknown) => {
        this.log.warn({ pass, err: messageOf(err) }, 'unused access keys: pass failed; the next one tries again')
      }).finally(() => { this.#running = null })
      this.#schedule()
    }, next - now)
    this.#timer.unref()
  }

  /** Stops scheduling; resolves when a pass under way has ended. */
  async close (): Promise<void> {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    await this.#running
  }

  /**
   * Pass `pass` if no other replica ran or runs it: disables every active key
   * unused for `days` days. Null: skipped (the lock or the pass was another's);
   * else the ids disabled.
   */
  async runPass (pass: number): Promise<string[] | null> {
    const lease = Math.min(600_000, Math.max(60_000, this.#intervalMs))
    const token = await this.store.locks.acquire(UNUSED_KEYS_LOCK, lease)
    if (token === null) {
      this.log.debug({ pass }, 'unused access keys: another replica holds the lock; skipped')
      return null
    }
    try {
      if (!(await this.store.limits.markOnce('pass', `${UNUSED_KEYS_LOCK}:${pass}`, Math.max(60, 2 * this.o.intervalSeconds)))) {
        this.log.debug({ pass }, 'unused access keys: another replica ran this pass; skipped')
        return null
      }
      const cutoff = this.#now() - this.o.days * DAY_MS
      const disabled: string[] = []
      let checked = 0
      for (const user of await this.store.users.list()) {
        for (const key of await this.store.accessKeys.list(user.id)) {
          if (!key.is_active || key.unreadable === true) continue
          checked++
          if (!(lastActive(key) < cutoff)) continue
          if (await this.store.accessKeys.setActive(key.id, false, 'policy')) {
            disabled.push(key.id)
            this.log.info(
              { pass, key_id: key.id, user: user.username, last_used: key.date_last_used, created: key.date_created },
              `unused access keys: disabled a key unused for ${this.o.days} days`
            )
          }
        }
      }
      this.log.info({ pass, checked, disabled: disabled.length }, 'unused access keys: pass done')
      this.o.onPass?.(disabled.length)
      return disabled
    } finally {
      await this.store.locks.release(UNUSED_KEYS_LOCK, token).catch(() => false)
    }
  }
}

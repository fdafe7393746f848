/**
 * Password checks are the one thing a client can make sidegate spend real CPU
 * on without a credential (scrypt, or an imported PBKDF2 hash): left unbounded,
 * a flood of logins delays everyone's. The gate runs at most `concurrency`
 * checks at once, queues at most `queue` more (beyond: 503 busy), lets one
 * client address hold at most `per_address` places running or queued (beyond:
 * 429 too_many_attempts), and drops a queued check whose client has gone.
 */
import { E } from '../errors.js'

export interface CheckGateOptions {
  concurrency: number
  queue: number
  per_address: number
}

/** Counts since start, read by the metrics (src/metrics.ts). */
export const checkGateStats = { busy: 0, address: 0, dropped: 0 }

interface Waiter { bucket: string, gone: () => boolean, start: () => void, cancel: () => void }

export class CheckGate {
  #running = 0
  readonly #queue: Waiter[] = []
  readonly #held = new Map<string, number>()

  constructor (private readonly o: CheckGateOptions) {}

  /** Runs `fn` when a place is free; rejects at once when none can be had, or when the client went away while it waited. */
  async run<T> (bucket: string, gone: () => boolean, fn: () => Promise<T>): Promise<T> {
    const held = this.#held.get(bucket) ?? 0
    if (held >= this.o.per_address) {
      checkGateStats.address++
      throw E.tooManyAttempts(1)
    }
    if (this.#running >= this.o.concurrency) {
      if (this.#queue.length >= this.o.queue) this.#purge()
      if (this.#queue.length >= this.o.queue) {
        checkGateStats.busy++
        throw E.busy(1)
      }
    }
    this.#held.set(bucket, held + 1)
    try {
      if (this.#running >= this.o.concurrency) {
        await new Promise<void>((resolve, reject) => {
          this.#queue.push({ bucket, gone, start: resolve, cancel: () => reject(E.busy(1)) })
        })
      } else this.#running++
      try {
        return await fn()
      } finally {
        this.#next()
      }
    } finally {
      const n = (this.#held.get(bucket) ?? 1) - 1
      if (n === 0) this.#held.delete(bucket)
      else this.#held.set(bucket, n)
    }
  }

  /** A place is free: the next waiter whose client is still there takes it. */
  #next (): void {
    for (;;) {
      const w = this.#queue.shift()
      if (w === undefined) { this.#running--; return }
      if (!w.gone()) { w.start(); return }
      checkGateStats.dropped++
      w.cancel()
    }
  }

  /** Drops the waiters whose client has gone. */
  #purge (): void {
    for (let i = this.#queue.length - 1; i >= 0; i--) {
      const w = this.#queue[i]
      if (w.gone()) {
        this.#queue.splice(i, 1)
        checkGateStats.dropped++
        w.cancel()
      }
    }
  }

  get running (): number { return this.#running }
  get queued (): number { return this.#queue.length }
}

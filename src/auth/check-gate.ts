/**
 * Password checks are the one thing a client can make sidegate spend real CPU
 * on without a credential (scrypt, or an imported PBKDF2 hash): left unbounded,
 * a flood of logins delays everyone's. The gate runs at most `concurrency`
 * checks at once, of which one client address runs at most `per_address` (so
 * a flooding address never holds every place); the others wait, at most
 * `queue` in all (beyond: 503 busy) and `per_address_waiting` from one address
 * (beyond: 429 too_many_attempts). A waiting check whose client has gone is
 * dropped, never run.
 */
import { E } from '../errors.js'

export interface CheckGateOptions {
  concurrency: number
  queue: number
  per_address: number
  per_address_waiting: number
}

/** Counts since start, read by the metrics (src/observability/metrics.ts). */
export const checkGateStats = { busy: 0, address: 0, dropped: 0 }

interface Waiter { bucket: string, gone: () => boolean, start: () => void, cancel: () => void }
interface Address { running: number, waiting: number }

export class CheckGate {
  #running = 0
  readonly #queue: Waiter[] = []
  readonly #addresses = new Map<string, Address>()

  constructor (private readonly o: CheckGateOptions) {}

  /** Runs `fn` when a place is free; rejects at once when none can be waited for, or when the client went away while it waited. */
  async run<T> (bucket: string, gone: () => boolean, fn: () => Promise<T>): Promise<T> {
    let a = this.#addresses.get(bucket)
    if (a === undefined) this.#addresses.set(bucket, (a = { running: 0, waiting: 0 }))
    if (a.running < this.o.per_address && this.#running < this.o.concurrency) {
      a.running++
      this.#running++
    } else {
      if (a.waiting >= this.o.per_address_waiting) {
        checkGateStats.address++
        this.#forget(bucket, a)
        throw E.tooManyAttempts(1)
      }
      if (this.#queue.length >= this.o.queue) this.#purge()
      if (this.#queue.length >= this.o.queue) {
        checkGateStats.busy++
        this.#forget(bucket, a)
        throw E.busy(1)
      }
      a.waiting++
      await new Promise<void>((resolve, reject) => {
        this.#queue.push({ bucket, gone, start: resolve, cancel: () => reject(E.busy(1)) })
      })
    }
    try {
      return await fn()
    } finally {
      a.running--
      this.#running--
      this.#forget(bucket, a)
      this.#dispatch()
    }
  }

  /** Free places go to the first waiters whose address may run one more; waiters whose client has gone are dropped. */
  #dispatch (): void {
    for (let i = 0; i < this.#queue.length && this.#running < this.o.concurrency;) {
      const w = this.#queue[i]
      const a = this.#addresses.get(w.bucket)!
      if (w.gone()) {
        this.#queue.splice(i, 1)
        this.#drop(w, a)
        continue
      }
      if (a.running >= this.o.per_address) { i++; continue }
      this.#queue.splice(i, 1)
      a.waiting--
      a.running++
      this.#running++
      w.start()
    }
  }

  /** Drops the waiters whose client has gone. */
  #purge (): void {
    for (let i = this.#queue.length - 1; i >= 0; i--) {
      const w = this.#queue[i]
      if (w.gone()) {
        this.#queue.splice(i, 1)
        this.#drop(w, this.#addresses.get(w.bucket)!)
      }
    }
  }

  #drop (w: Waiter, a: Address): void {
    a.waiting--
    this.#forget(w.bucket, a)
    checkGateStats.dropped++
    w.cancel()
  }

  #forget (bucket: string, a: Address): void {
    if (a.running === 0 && a.waiting === 0) this.#addresses.delete(bucket)
  }

  get running (): number { return this.#running }
  get queued (): number { return this.#queue.length }
}

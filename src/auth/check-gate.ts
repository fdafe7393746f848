/**
 * Password checks are the one thing a client can make sidegate spend real CPU
 * on without a credential (scrypt, or an imported PBKDF2 hash): left unbounded,
 * a flood of logins delays everyone's. The gate runs at most `concurrency`
 * checks at once, of which one client address runs at most `per_address` (so
 * a flooding address never holds every place); the others wait, at most
 * `queue` in all (beyond: 503 busy) and `per_address_waiting` from one address
 * (beyond: 429 too_many_attempts). A waiting check whose client has gone is
 * dropped, never run.
 *
 * Addresses are cheap to a client that holds a whole network (an IPv6 /56 holds
 * 256 /64s), so the gate also bounds every wider prefix a check comes from
 * (`prefixes`, the caller's auth.password_checks.ipv4_prefixes / ipv6_prefixes):
 * at most `per_prefix` running and `per_prefix_waiting` waiting per prefix
 * (beyond: 429), and free places are handed out round robin over the widest
 * prefixes with waiters, so one network waits behind its own checks, not
 * everyone else behind it. A client address that signed in successfully within
 * `known_ttl` seconds (`succeeded`) is not bounded by its prefixes, may use the
 * `reserved` places of the queue no other may, and is served first.
 * Every step is O(1) per check but for a dispatch, which looks at the waiters
 * (at most `queue`) only while places are free.
 */
import { E } from '../errors.js'

export interface CheckGateOptions {
  concurrency: number
  queue: number
  per_address: number
  per_address_waiting: number
  /** checks one prefix may run at once (unset: no bound) */
  per_prefix?: number
  /** checks one prefix may have waiting (unset: no bound) */
  per_prefix_waiting?: number
  /** places of the queue only client addresses that signed in recently may take */
  reserved?: number
  /** seconds an address counts as signed in recently after a success */
  known_ttl?: number
}

/** Counts since start, read by the metrics (src/observability/metrics.ts). */
export const checkGateStats = { busy: 0, address: 0, prefix: 0, dropped: 0 }

interface Count { running: number, waiting: number }
interface Waiter {
  bucket: string,
  a: Count,
  keys: readonly string[],
  p: Count[],
  gone: () => boolean,
  start: () => void,
  cancel: () => void
}
/** The waiters of one widest prefix (or of one address without prefixes), oldest first. */
interface Lane { key: string, waiters: Waiter[] }

/** How many recently successful addresses are remembered (the oldest are forgotten first). */
const KNOWN_MAX = 20_000

export class CheckGate {
  #running = 0
  #waiting = 0
  readonly #addresses = new Map<string, Count>()
  readonly #prefixes = new Map<string, Count>()
  /** the lanes with waiters, served round robin from `#next` */
  readonly #lanes: Lane[] = []
  readonly #laneOf = new Map<string, Lane>()
  #next = 0
  /** the waiters of recently successful addresses, served before every lane */
  readonly #known: Waiter[] = []
  /** address bucket → until when it counts as recently successful (ms) */
  readonly #succeeded = new Map<string, number>()

  constructor (private readonly o: CheckGateOptions) {}

  /** The address signed in successfully: for `known_ttl` it is served first and not bounded by its prefixes. */
  succeeded (bucket: string): void {
    const ttl = this.o.known_ttl ?? 0
    if (ttl <= 0) return
    this.#succeeded.delete(bucket)
    this.#succeeded.set(bucket, Date.now() + ttl * 1000)
    if (this.#succeeded.size > KNOWN_MAX) this.#succeeded.delete(this.#succeeded.keys().next().value!)
  }

  #isKnown (bucket: string): boolean {
    const until = this.#succeeded.get(bucket)
    if (until === undefined) return false
    if (until > Date.now()) return true
    this.#succeeded.delete(bucket)
    return false
  }

  /**
   * Runs `fn` when a place is free; rejects at once when none can be waited for, or when the client went away while
   * it waited.
   * `bucket`: the client address (IPv6: its network), `prefixes`: the wider networks it belongs to, narrowest first.
   */
  async run<T> (
    bucket: string, gone: () => boolean, fn: () => Promise<T>, prefixes: readonly string[] = []
  ): Promise<T> {
    const known = this.#isKnown(bucket)
    const a = this.#count(this.#addresses, bucket)
    const p = known ? [] : prefixes.map((k) => this.#count(this.#prefixes, k))
    const perPrefix = this.o.per_prefix ?? Infinity
    if (a.running < this.o.per_address && this.#running < this.o.concurrency && p.every((c) => c.running < perPrefix)) {
      this.#take(a, p)
    } else {
      if (a.waiting >= this.o.per_address_waiting) {
        checkGateStats.address++
        this.#forget(bucket, a, prefixes, p)
        throw E.tooManyAttempts(1)
      }
      const perPrefixWaiting = this.o.per_prefix_waiting ?? Infinity
      if (p.some((c) => c.waiting >= perPrefixWaiting)) {
        checkGateStats.prefix++
        this.#forget(bucket, a, prefixes, p)
        throw E.tooManyAttempts(1)
      }
      const room = known ? this.o.queue : this.o.queue - Math.min(this.o.reserved ?? 0, this.o.queue)
      if (this.#waiting >= room) this.#purge()
      if (this.#waiting >= room) {
        checkGateStats.busy++
        this.#forget(bucket, a, prefixes, p)
        throw E.busy(1)
      }
      a.waiting++
      for (const c of p) c.waiting++
      this.#waiting++
      await new Promise<void>((resolve, reject) => {
        const w: Waiter = { bucket, a, keys: prefixes, p, gone, start: resolve, cancel: () => reject(E.busy(1)) }
        if (known) this.#known.push(w)
        else this.#enqueue(prefixes.length === 0 ? bucket : prefixes[prefixes.length - 1], w)
      })
    }
    try {
      return await fn()
    } finally {
      a.running--
      this.#running--
      for (const c of p) c.running--
      this.#forget(bucket, a, prefixes, p)
      this.#dispatch()
    }
  }

  #count (m: Map<string, Count>, key: string): Count {
    let c = m.get(key)
    if (c === undefined) m.set(key, (c = { running: 0, waiting: 0 }))
    return c
  }

  #take (a: Count, p: Count[]): void {
    a.running++
    for (const c of p) c.running++
    this.#running++
  }

  #enqueue (key: string, w: Waiter): void {
    let lane = this.#laneOf.get(key)
    if (lane === undefined) {
      lane = { key, waiters: [] }
      this.#laneOf.set(key, lane)
      this.#lanes.push(lane)
    }
    lane.waiters.push(w)
  }

  /**
   * Free places go first to recently successful addresses, then round robin over
   * the lanes: each lane's first waiter that its address and prefixes let run.
   */
  #dispatch (): void {
    while (this.#running < this.o.concurrency && this.#waiting > 0) {
      const w = this.#pick(this.#known)
      if (w !== null) { this.#start(w); continue }
      let started = false
      for (let n = this.#lanes.length; n > 0 && this.#lanes.length > 0; n--) {
        if (this.#next >= this.#lanes.length) this.#next = 0
        const lane = this.#lanes[this.#next]
        const w = this.#pick(lane.waiters)
        if (lane.waiters.length === 0) this.#closeLane(this.#next)
        else this.#next++
        if (w !== null) { this.#start(w); started = true; break }
      }
      if (!started) return
    }
  }

  /** Takes the first waiter of `q` that may run now; drops the gone ones met on the way. */
  #pick (q: Waiter[]): Waiter | null {
    const perPrefix = this.o.per_prefix ?? Infinity
    for (let i = 0; i < q.length;) {
      const w = q[i]
      if (w.gone()) {
        q.splice(i, 1)
        this.#drop(w)
        continue
      }
      if (w.a.running >= this.o.per_address || w.p.some((c) => c.running >= perPrefix)) { i++; continue }
      q.splice(i, 1)
      return w
    }
    return null
  }

  #start (w: Waiter): void {
    w.a.waiting--
    for (const c of w.p) c.waiting--
    this.#waiting--
    this.#take(w.a, w.p)
    w.start()
  }

  #closeLane (i: number): void {
    this.#laneOf.delete(this.#lanes[i].key)
    this.#lanes.splice(i, 1)
  }

  /** Drops the waiters whose client has gone. */
  #purge (): void {
    const sweep = (q: Waiter[]): void => {
      for (let i = q.length - 1; i >= 0; i--) {
        const w = q[i]
        if (w.gone()) {
          q.splice(i, 1)
          this.#drop(w)
        }
      }
    }
    sweep(this.#known)
    for (let i = this.#lanes.length - 1; i >= 0; i--) {
      sweep(this.#lanes[i].waiters)
      if (this.#lanes[i].waiters.length === 0) this.#closeLane(i)
    }
  }

  #drop (w: Waiter): void {
    w.a.waiting--
    for (const c of w.p) c.waiting--
    this.#waiting--
    this.#forget(w.bucket, w.a, w.keys, w.p)
    checkGateStats.dropped++
    w.cancel()
  }

  #forget (bucket: string, a: Count, prefixes: readonly string[], p: Count[]): void {
    if (a.running === 0 && a.waiting === 0) this.#addresses.delete(bucket)
    for (let i = 0; i < p.length; i++) if (p[i].running === 0 && p[i].waiting === 0) this.#prefixes.delete(prefixes[i])
  }

  get running (): number { return this.#running }
  get queued (): number { return this.#waiting }
  /** Addresses, networks and lanes held now: 0 once idle (none is kept for nothing). */
  get tracked (): number { return this.#addresses.size + this.#prefixes.size + this.#lanes.length }
}

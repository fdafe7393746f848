/**
 * In-process caches for hot read paths.
 *
 * CachePool: one memory budget (estimated bytes, and optionally entries)
 * shared by several Cache views (users, access keys, private tokens,
 * sessions), so whichever kind a deployment uses gets the room. Eviction is
 * CLOCK (a hit only sets a bit: no reordering on the read path), and a
 * TinyLFU admission filter (a count-min sketch of recent use, aged by
 * halving) decides, once the budget is full, whether a new entry may evict
 * the CLOCK victim: only when it has been used more often. So a working set
 * larger than the budget keeps most of the budget hitting instead of every
 * request missing (an LRU, and CLOCK or SIEVE alone, hit nothing on cyclic
 * access over more entries than they hold), and a one-off scan cannot flush
 * the hot entries.
 *
 * A read-through fill races an invalidation: a value read from the store
 * before a change, whose reply is handled after the change's eviction, would
 * be cached stale for a whole TTL (a disabled key accepted again). So a filler
 * takes `stamp` before it reads and passes it to `set`: any eviction since
 * (delete, deleteWhere, clear) voids the fill. Evictions for room do not.
 */

/** What metrics read of a cache. */
export interface CacheStats {
  readonly hits: number
  readonly misses: number
  readonly size: number
}

/** What the store's owner sees of a cache: the counters, and emptying it (tests, tools). */
export interface ClearableCache extends CacheStats {
  clear(): void
}

const VISITED = 1
const REFRESHING = 2

export interface PoolOptions {
  /** estimated bytes of every entry of every view together */
  maxBytes: number
  /** entries of every view together (0: no cap but the bytes) */
  maxEntries?: number
  /** the clock, epoch ms (tests step it) */
  now?: () => number
}

export class CachePool {
  readonly maxBytes: number
  readonly maxEntries: number
  readonly now: () => number
  bytes = 0
  count = 0
  /** slots: parallel arrays, grown by doubling; a free slot has owner 0 */
  keys: Array<string | undefined> = []
  vals: unknown[] = []
  owner = new Uint8Array(16)
  flags = new Uint8Array(16)
  cost = new Uint32Array(16)
  hash = new Uint32Array(16)
  exp = new Float64Array(16)
  #used = 0
  #free: number[] = []
  #hand = 0
  readonly #views: Array<Cache<unknown>> = []
  readonly #sketch: Sketch

  constructor (o: PoolOptions) {
    this.maxBytes = o.maxBytes
    this.maxEntries = o.maxEntries ?? 0
    this.now = o.now ?? Date.now
    // two counters an entry of 128 bytes (a byte a counter: 1 MiB for 64 MiB), 64 Ki to 4 Mi counters
    const expected = Math.min(this.maxEntries > 0 ? this.maxEntries : Infinity, this.maxBytes / 128, 2 ** 21)
    this.#sketch = new Sketch(expected)
  }

  /** @internal a view's index (1…255) */
  register (view: Cache<unknown>): number {
    if (this.#views.length === 255) throw new Error('a CachePool holds at most 255 caches')
    this.#views.push(view)
    return this.#views.length
  }

  /**
   * @internal counts one use of an entry (its hash) for admission, once the
   * budget is half used: admission only decides when it is full, and below
   * that the sketch's aging (a pass over its whole table every few entries'
   * worth of uses) would cost a hot small cache more than the lookup itself.
   */
  touch (h: number): void { if (this.#counting) this.#sketch.add(h, this.count) }

  get #counting (): boolean {
    return this.bytes * 2 >= this.maxBytes || (this.maxEntries > 0 && this.count * 2 >= this.maxEntries)
  }

  /**
   * @internal stores a new entry, making room for it (CLOCK), unless the
   * budget is full and the entry is used no more often than the victim
   * (TinyLFU): false, not stored.
   */
  insert (view: number, key: string, v: unknown, exp: number, cost: number, h: number): number {
    if (cost > this.maxBytes) return -1
    const sketch = this.#sketch
    if (this.#counting) sketch.add(h, this.count)
    if (this.#full(cost)) {
      const victim = this.#victim()
      if (this.exp[victim] > this.now() && sketch.estimate(h) <= sketch.estimate(this.hash[victim])) return -1
      this.#evict(victim)
      while (this.#full(cost)) this.#evict(this.#victim())
    }
    const p = this.#free.pop() ?? this.#grow()
    this.keys[p] = key
    this.vals[p] = v
    this.owner[p] = view
    this.flags[p] = 0
    this.cost[p] = cost
    this.hash[p] = h
    this.exp[p] = exp
    this.bytes += cost
    this.count++
    return p
  }

  /** @internal frees a slot (its view has already forgotten the key) */
  release (p: number): void {
    this.bytes -= this.cost[p]
    this.count--
    this.keys[p] = undefined
    this.vals[p] = undefined
    this.owner[p] = 0
    this.flags[p] = 0
    this.#free.push(p)
  }

  #full (cost: number): boolean {
    return this.count > 0 &&
      (this.bytes + cost > this.maxBytes || (this.maxEntries > 0 && this.count >= this.maxEntries))
  }

  /** CLOCK: the next occupied slot whose bit is clear (clearing bits on the way); an expired one at once */
  #victim (): number {
    const now = this.now()
    for (;;) {
      if (this.#hand >= this.#used) this.#hand = 0
      const p = this.#hand++
      if (this.owner[p] === 0) continue
      if ((this.flags[p] & VISITED) === 0 || this.exp[p] <= now) return p
      this.flags[p] &= ~VISITED
    }
  }

  #evict (p: number): void {
    this.#views[this.owner[p] - 1].forget(this.keys[p]!)
    this.release(p)
  }

  #grow (): number {
    if (this.#used === this.owner.length) {
      const n = this.owner.length * 2
      const grown = <T extends Uint8Array | Uint32Array | Float64Array>(a: T, b: T): T => { b.set(a); return b }
      this.owner = grown(this.owner, new Uint8Array(n))
      this.flags = grown(this.flags, new Uint8Array(n))
      this.cost = grown(this.cost, new Uint32Array(n))
      this.hash = grown(this.hash, new Uint32Array(n))
      this.exp = grown(this.exp, new Float64Array(n))
    }
    return this.#used++
  }
}

/**
 * A count-min sketch of 4-bit-saturating counters (one byte each, four
 * probes in one table), halved once as many uses were counted as there are
 * entries: what counts is recent use.
 */
class Sketch {
  readonly #t: Uint8Array
  readonly #mask: number
  #added = 0

  constructor (entries: number) {
    let w = 65536
    while (w < entries * 2) w *= 2
    this.#t = new Uint8Array(w)
    this.#mask = w - 1
  }

  add (h: number, entries: number): void {
    const min = this.estimate(h)
    if (min < 15) {
      for (let i = 0; i < 4; i++) {
        const j = probe(h, i) & this.#mask
        if (this.#t[j] === min) this.#t[j]++
      }
    }
    if (++this.#added >= Math.max(entries * 4, 1024)) {
      this.#added = 0
      const t = this.#t
      for (let j = 0; j < t.length; j++) t[j] >>= 1
    }
  }

  estimate (h: number): number {
    let min = 15
    for (let i = 0; i < 4; i++) {
      const c = this.#t[probe(h, i) & this.#mask]
      if (c < min) min = c
    }
    return min
  }
}

function probe (h: number, i: number): number {
  const x = Math.imul(h ^ Math.imul(i + 1, 0x9e3779b9), 0x85ebca6b)
  return (x ^ (x >>> 15)) >>> 0
}

/** FNV-1a of the key, seeded per view. */
function hashOf (key: string, seed: number): number {
  let h = 0x811c9dc5 ^ seed
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193)
  return h >>> 0
}

export interface CacheOptions {
  /** ms an entry lives after it was filled */
  ttlMs: number
  /** estimated bytes of an entry besides its key (measured: docs/performance.md) */
  entryBytes: number
  /** false: nothing is stored (auth.cache.max 0) */
  enabled?: boolean
  /**
   * ms before its expiry from which a hit on an entry calls `onDue` once
   * (refresh ahead: the caller reads it again in the background); 0: never
   */
  refreshMs?: number
}

/** One kind of entry in a CachePool: its own keys, TTL, counters and fill stamps. */
export class Cache<V> implements ClearableCache {
  readonly #slots = new Map<string, number>()
  readonly #pool: CachePool
  readonly #id: number
  readonly #o: CacheOptions
  readonly #seed: number
  #evictions = 0
  hits = 0
  misses = 0
  /** Called with the key of a hit entry within refreshMs of its expiry (once, until it is set again). */
  onDue: ((key: string) => void) | null = null

  constructor (pool: CachePool, o: CacheOptions) {
    this.#pool = pool
    this.#o = o
    this.#id = pool.register(this as Cache<unknown>)
    this.#seed = Math.imul(this.#id, 0x27d4eb2d)
  }

  /** `countMiss`: false where a miss is looked up again (and counted) by the caller's slow path */
  get (key: string, countMiss = true): V | undefined {
    const p = this.#slots.get(key)
    if (p === undefined) { if (countMiss) this.misses++; return undefined }
    const pool = this.#pool
    const left = pool.exp[p] - pool.now()
    if (left <= 0) { this.#drop(key, p); if (countMiss) this.misses++; return undefined }
    const f = pool.flags[p]
    if ((f & VISITED) === 0) pool.flags[p] = f | VISITED
    pool.touch(pool.hash[p])
    this.hits++
    if (left < (this.#o.refreshMs ?? 0) && (f & REFRESHING) === 0 && this.onDue !== null) {
      pool.flags[p] |= REFRESHING
      this.onDue(key)
    }
    return pool.vals[p] as V
  }

  /** Taken before a store read whose result is to be cached (see above). */
  get stamp (): number { return this.#evictions }

  /** `stamp`: from before the read that gave `v`; ignored when anything was evicted since. False: not stored. */
  set (key: string, v: V, stamp?: number): boolean {
    if (this.#o.enabled === false || (stamp !== undefined && stamp !== this.#evictions)) return false
    const pool = this.#pool
    const exp = pool.now() + this.#o.ttlMs
    const p = this.#slots.get(key)
    if (p !== undefined) {
      pool.vals[p] = v
      pool.exp[p] = exp
      pool.flags[p] &= ~REFRESHING
      return true
    }
    const q = pool.insert(this.#id, key, v, exp, this.#o.entryBytes + key.length, hashOf(key, this.#seed))
    if (q === -1) return false
    this.#slots.set(key, q)
    return true
  }

  /**
   * Refresh ahead with `fill` (which reads the store and sets the entry, with
   * its stamp): an entry found gone is dropped; a fill that failed, or whose
   * set an eviction voided, leaves the entry as it was, and its next hit may
   * ask again.
   */
  refreshWith (fill: (key: string) => Promise<unknown>): void {
    this.onDue = (key) => {
      fill(key).then((v) => { if (v === null) this.delete(key); else this.settled(key) }, () => { this.settled(key) })
    }
  }

  /** A refresh (onDue) that stored nothing: the next hit may ask again. */
  settled (key: string): void {
    const p = this.#slots.get(key)
    if (p !== undefined) this.#pool.flags[p] &= ~REFRESHING
  }

  delete (key: string): void {
    this.#evictions++
    const p = this.#slots.get(key)
    if (p !== undefined) this.#drop(key, p)
  }

  deleteWhere (pred: (v: V) => boolean): void {
    this.#evictions++
    const vals = this.#pool.vals
    for (const [k, p] of this.#slots) if (pred(vals[p] as V)) this.#drop(k, p)
  }

  clear (): void {
    this.#evictions++
    for (const p of this.#slots.values()) this.#pool.release(p)
    this.#slots.clear()
  }

  get size (): number { return this.#slots.size }

  /** @internal the pool evicted it for room */
  forget (key: string): void { this.#slots.delete(key) }

  #drop (key: string, p: number): void {
    this.#slots.delete(key)
    this.#pool.release(p)
  }
}

/**
 * A small bounded LRU with a per-entry TTL (the identity JWTs of
 * src/forward/identity.ts), with the same fill stamps.
 */
export class LruCache<V> implements ClearableCache {
  readonly #map = new Map<string, { v: V, exp: number }>()
  #evictions = 0
  hits = 0
  misses = 0

  constructor (private readonly max: number, private readonly ttlMs: number) {}

  get (key: string, countMiss = true): V | undefined {
    const e = this.#map.get(key)
    if (e === undefined) { if (countMiss) this.misses++; return undefined }
    if (e.exp <= Date.now()) { this.#map.delete(key); if (countMiss) this.misses++; return undefined }
    // refresh recency
    this.#map.delete(key)
    this.#map.set(key, e)
    this.hits++
    return e.v
  }

  get stamp (): number { return this.#evictions }

  set (key: string, v: V, stamp?: number): void {
    if (this.max === 0 || (stamp !== undefined && stamp !== this.#evictions)) return
    this.#map.delete(key)
    this.#map.set(key, { v, exp: Date.now() + this.ttlMs })
    if (this.#map.size > this.max) this.#map.delete(this.#map.keys().next().value as string)
  }

  delete (key: string): void { this.#evictions++; this.#map.delete(key) }

  deleteWhere (pred: (v: V) => boolean): void {
    this.#evictions++
    for (const [k, e] of this.#map) if (pred(e.v)) this.#map.delete(k)
  }

  clear (): void { this.#evictions++; this.#map.clear() }
  get size (): number { return this.#map.size }
}

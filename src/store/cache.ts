/**
 * A small bounded LRU with a per-entry TTL, for hot read paths.
 *
 * A read-through fill races an invalidation: a value read from the store
 * before a change, whose reply is handled after the change's eviction, would
 * be cached stale for a whole TTL (a disabled key accepted again). So a filler
 * takes `stamp` before it reads and passes it to `set`: any eviction since
 * (delete, deleteWhere, clear) voids the fill.
 */
export class LruCache<V> {
  readonly #map = new Map<string, { v: V, exp: number }>()
  #evictions = 0
  hits = 0
  misses = 0

  constructor (private readonly max: number, private readonly ttlMs: number) {}

  /** `countMiss`: false where a miss is looked up again (and counted) by the caller's slow path */
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

  /** Taken before a store read whose result is to be cached (see above). */
  get stamp (): number { return this.#evictions }

  /** `stamp`: from before the read that gave `v`; ignored when anything was evicted since. */
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

/** A small bounded LRU with a per-entry TTL, for hot read paths. */
export class LruCache<V> {
  readonly #map = new Map<string, { v: V, exp: number }>()
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

  set (key: string, v: V): void {
    if (this.max === 0) return
    this.#map.delete(key)
    this.#map.set(key, { v, exp: Date.now() + this.ttlMs })
    if (this.#map.size > this.max) this.#map.delete(this.#map.keys().next().value as string)
  }

  delete (key: string): void { this.#map.delete(key) }

  deleteWhere (pred: (v: V) => boolean): void {
    for (const [k, e] of this.#map) if (pred(e.v)) this.#map.delete(k)
  }
  clear (): void { this.#map.clear() }
  get size (): number { return this.#map.size }
}

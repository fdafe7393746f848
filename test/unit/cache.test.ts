/**
 * The in-process caches (src/store/cache.ts): a memory budget shared by
 * views, no cliff past it (cyclic access over more entries than fit keeps
 * most of the budget hitting where an LRU hits nothing), a one-off scan does
 * not flush hot entries, fills voided by an eviction since their stamp,
 * expiry and refresh ahead on a stepped clock; and through the policy on the
 * embedded store: a miss fills the user too, a hot entry never expires.
 */
import t from 'tap'
import { join } from 'node:path'
import { Cache, CachePool, LruCache } from '../../src/store/cache.js'
import { Keyring } from '../../src/crypto.js'
import { SqliteStore } from '../../src/store/sqlite/index.js'
import type { User } from '../../src/store/types.js'
import { tempDir } from '../fixtures/cleanup.js'
import { SECRET, connected } from '../fixtures/gateway.js'

const KEY = (i: number): string => `key-${String(i).padStart(8, '0')}`
/** entryBytes 100 + a 12-character key: 112 bytes an entry */
const COST = 112

function pooled (
  entries: number, o: { ttlMs?: number, refreshMs?: number } = {}
): { pool: CachePool, cache: Cache<number>, clock: { now: number } } {
  const clock = { now: 1_000_000 }
  const pool = new CachePool({ maxBytes: entries * COST, now: () => clock.now })
  const cache = new Cache<number>(pool, { ttlMs: o.ttlMs ?? 60_000, entryBytes: 100, refreshMs: o.refreshMs })
  return { pool, cache, clock }
}

/** Read-through over `rounds` cycles of `keys` keys: the share of hits in the last half. */
function cyclic (
  c: { get: (k: string) => number | undefined, set: (k: string, v: number) => unknown }, keys: number, rounds: number
): number {
  let hits = 0
  let reads = 0
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < keys; i++) {
      const got = c.get(KEY(i))
      if (r >= rounds / 2) { reads++; if (got !== undefined) hits++ }
      if (got === undefined) c.set(KEY(i), i)
    }
  }
  return hits / reads
}

t.test('cyclic access over 1.2 times what fits: most of the budget still hits, where an LRU hits nothing', async (t) => {
  const { pool, cache } = pooled(10_000)
  const rate = cyclic(cache, 12_000, 20)
  t.ok(rate > 0.6, `hit rate ${rate.toFixed(3)} (at most 10,000 / 12,000 = 0.833 can hit)`)
  t.ok(pool.bytes <= pool.maxBytes, 'within the budget')
  t.equal(cache.size, 10_000, 'the budget full')
  t.equal(cyclic(new LruCache<number>(10_000, 60_000), 12_000, 20), 0, 'an LRU of the same size: every read misses')
  const twice = pooled(10_000)
  const r2 = cyclic(twice.cache, 20_000, 20)
  t.ok(r2 > 0.2, `twice what fits: hit rate ${r2.toFixed(3)} (at most 0.5)`)
})

t.test('uniform and skewed random access: about what an ideal cache of the budget hits', async (t) => {
  let seed = 42
  const rnd = (): number => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed / 2 ** 32 }
  for (const [name, pick, min] of [['uniform', () => Math.floor(rnd() * 15_000), 0.62], ['skewed', () => Math.floor(15_000 * rnd() ** 3), 0.8]] as const) {
    const { cache } = pooled(10_000)
    let hits = 0
    const n = 300_000
    for (let i = 0; i < n; i++) {
      const k = KEY(pick())
      if (cache.get(k) !== undefined) { if (i > n / 2) hits++ } else cache.set(k, i)
    }
    const rate = hits / (n / 2)
    t.ok(rate > min, `${name}: hit rate ${rate.toFixed(3)}`)
  }
})

t.test('a scan of new keys does not flush the hot entries in use meanwhile (as it does an LRU\'s)', async (t) => {
  const run = (c: { get: (k: string) => number | undefined, set: (k: string, v: number) => unknown }): number => {
    for (let r = 0; r < 5; r++) for (let i = 0; i < 800; i++) if (c.get(KEY(i)) === undefined) c.set(KEY(i), i)
    let hits = 0
    // every other read is a key never seen before: 10,000 of them
    for (let i = 0; i < 10_000; i++) {
      const scan = KEY(100_000 + i)
      if (c.get(scan) === undefined) c.set(scan, i)
      const hot = KEY(i % 800)
      if (c.get(hot) !== undefined) hits++
      else c.set(hot, i)
    }
    return hits / 10_000
  }
  const rate = run(pooled(1000).cache)
  t.ok(rate > 0.95, `the 800 hot entries hit ${rate.toFixed(3)} during the scan`)
  const lru = run(new LruCache<number>(1000, 60_000))
  t.ok(lru < 0.05, `an LRU of the same size: ${lru.toFixed(3)}`)
})

t.test('a new working set replaces an old one that is no longer used', async (t) => {
  const { cache } = pooled(1000)
  const phase = (base: number): number => {
    let hits = 0
    for (let r = 0; r < 20; r++) {
      for (let i = 0; i < 800; i++) {
        const k = KEY(base + i); if (cache.get(k) !== undefined) { if (r >= 10) hits++ } else cache.set(k, i)
      }
    }
    return hits / (10 * 800)
  }
  phase(0)
  const rate = phase(50_000)
  t.ok(rate > 0.9, `the second working set hits ${rate.toFixed(3)} once settled`)
})

t.test('the memory budget: estimated bytes and entries bounded, shared by views, freed by deletes', async (t) => {
  const clock = { now: 0 }
  const pool = new CachePool({ maxBytes: 100 * COST, now: () => clock.now })
  const a = new Cache<number>(pool, { ttlMs: 1000, entryBytes: 100 })
  const b = new Cache<number>(pool, { ttlMs: 1000, entryBytes: 100 })
  for (let i = 0; i < 100; i++) a.set(KEY(i), i)
  t.equal(a.size, 100, 'one view may take the whole budget')
  t.equal(pool.bytes, 100 * COST)
  for (let i = 0; i < 1000; i++) { b.set(KEY(i), i); b.get(KEY(i)); b.get(KEY(i)) }
  t.ok(pool.bytes <= pool.maxBytes, `never past it (${pool.bytes} of ${pool.maxBytes})`)
  t.equal(a.size + b.size, 100, 'entries of both views fill it')
  t.ok(b.size > 0, 'a view used more often takes room from the other')
  b.clear()
  t.equal(pool.bytes, a.size * COST, 'clear frees its bytes')
  t.equal(new Cache<number>(pool, { ttlMs: 1000, entryBytes: 200 * COST }).set('big', 1), false, 'an entry larger than the budget is not stored')
  const capped = new CachePool({ maxBytes: 1e9, maxEntries: 10 })
  const c = new Cache<number>(capped, { ttlMs: 1000, entryBytes: 1 })
  for (let i = 0; i < 50; i++) c.set(KEY(i), i)
  t.equal(c.size, 10, 'maxEntries bounds the entries too')
  const off = new Cache<number>(pool, { ttlMs: 1000, entryBytes: 1, enabled: false })
  t.equal(off.set('k', 1), false, 'a disabled view stores nothing')
  t.equal(off.get('k'), undefined)
})

t.test('a fill is voided by any eviction since its stamp (delete, deleteWhere, clear), not by one for room', async (t) => {
  const { cache } = pooled(10)
  for (const evict of [() => cache.delete('other'), () => cache.deleteWhere(() => false), () => cache.clear()]) {
    const stamp = cache.stamp
    evict()
    t.equal(cache.set('k', 1, stamp), false, 'voided')
    t.equal(cache.get('k'), undefined, 'nothing cached')
  }
  cache.set('k', 0)
  const stamp = cache.stamp
  for (let i = 0; i < 50; i++) cache.set(KEY(i), i)
  t.ok(cache.size === 10 && cache.stamp === stamp, 'evictions for room do not void it')
  // the budget is full: admission may refuse a new entry until it has
  // been asked for more often than the victim; a voided fill never stores
  let stored = false
  for (let i = 0; i < 5 && !stored; i++) stored = cache.set('k', 1, stamp)
  t.ok(stored && cache.get('k') === 1, 'the fill with that stamp stores')
  const other = pooled(10).cache
  other.set('u1', 7)
  other.set('u2', 8)
  other.deleteWhere((v) => v === 7)
  t.equal(other.get('u1'), undefined, 'deleteWhere drops what matches')
  t.equal(other.get('u2'), 8, 'and keeps the rest')
})

t.test('expiry on the clock; refresh ahead: a hit near the end asks once, a set renews it', async (t) => {
  const { cache, clock } = pooled(10, { ttlMs: 60_000, refreshMs: 15_000 })
  const due: string[] = []
  cache.onDue = (k) => due.push(k)
  cache.set('k', 1)
  clock.now += 40_000
  t.equal(cache.get('k'), 1)
  t.same(due, [], 'not yet due')
  clock.now += 10_000
  t.equal(cache.get('k'), 1, 'still served while due')
  t.equal(cache.get('k'), 1)
  t.same(due, ['k'], 'asked once')
  cache.settled('k')
  cache.get('k')
  t.same(due, ['k', 'k'], 'asked again after a refresh that stored nothing')
  cache.set('k', 2)
  clock.now += 50_000
  t.equal(cache.get('k'), 2, 'renewed by the set: alive 100 s after the first fill')
  clock.now += 10_001
  t.equal(cache.get('k'), undefined, 'expired 60 s after its last fill')
  t.equal(cache.misses, 1)
  t.equal(cache.size, 0, 'and dropped')
})

t.test('refreshWith: a refresh voided by an eviction, or failed, may ask again; one that finds the entry gone drops it', async (t) => {
  const { cache, clock } = pooled(10, { ttlMs: 60_000, refreshMs: 15_000 })
  const asked: string[] = []
  let answer: 'void' | 'fail' | 'gone' | 'fresh' = 'void'
  cache.refreshWith(async (k) => {
    asked.push(k)
    const stamp = cache.stamp
    if (answer === 'fail') throw new Error('store down')
    if (answer === 'gone') return null
    if (answer === 'void') cache.delete('other') // an invalidation lands while the read is in flight
    cache.set(k, 2, stamp)
    return 2
  })
  const tick = async (): Promise<void> => { await new Promise((resolve) => setImmediate(resolve)) }
  cache.set('k', 1)
  clock.now += 50_000
  t.equal(cache.get('k'), 1)
  await tick()
  t.same(asked, ['k'])
  t.equal(cache.get('k'), 1, 'the voided fill stored nothing')
  await tick()
  t.same(asked, ['k', 'k'], 'and the next hit asks again (not stuck refreshing until the entry expires)')
  answer = 'fail'
  cache.get('k')
  await tick()
  cache.get('k')
  await tick()
  t.equal(asked.length, 4, 'a failed refresh: asked again')
  answer = 'fresh'
  cache.get('k')
  await tick()
  clock.now += 50_000
  t.equal(cache.get('k'), 2, 'a stored refresh renews the entry')
  answer = 'gone'
  clock.now += 50_000
  t.equal(cache.get('k'), 2, 'served while the last refresh runs')
  await tick()
  t.equal(cache.get('k', false), undefined, 'gone from the store: dropped')
})

t.test('through the policy (embedded store): a miss fills the user too; a hot entry is refreshed ahead and never expires', async (t) => {
  const clock = { now: Date.now() }
  const store = await connected(new SqliteStore({ path: join(tempDir('sidegate-cache-'), 'c.db'), busyTimeout: 1000, cache: { max: 1, ttl: 60, now: () => clock.now } }, new Keyring(SECRET)))
  t.teardown(async () => { await store.close() })
  const u = await store.users.create({ username: 'hot', password: 'hot-password' })
  const token = await store.privateTokens.create(u.id)
  t.equal(await store.privateTokens.userIdFor(token), u.id)
  t.equal(store.caches.privateTokens.misses, 1, 'one miss')
  const user = store.users.lookup(u.id)
  t.notOk(user instanceof Promise, 'the user came with it: at once, from memory')
  t.equal((user as User | null)?.username, 'hot', 'the user came with it')
  t.equal(store.caches.users.misses, 0, 'without a read of its own')
  for (let s = 0; s < 300; s += 10) {
    clock.now += 10_000
    t.equal(store.privateTokens.lookup(token), u.id, `cached ${s + 10} s on (at once, no promise)`)
    const hot = store.users.lookup(u.id)
    t.ok(hot !== null && !(hot instanceof Promise))
    // the background read, if one was started
    await new Promise((resolve) => setImmediate(resolve))
  }
  t.equal(store.caches.privateTokens.misses, 1, 'no miss in 5 minutes of use with a 60 s ttl')
  const k = await store.accessKeys.create(u.id)
  await store.accessKeys.get(k.key.id)
  t.equal(store.caches.accessKeys.misses, 1)
  clock.now += 61_000
  const expired = store.privateTokens.lookup(token)
  t.ok(expired instanceof Promise, 'left unused past its ttl: expired (the store is asked)')
  t.equal(await expired, u.id)
  t.equal(store.caches.privateTokens.misses, 2, 'the one miss since')
})

#!/usr/bin/env node --expose-gc
/**
 * `node --expose-gc bench/cache-cost.mjs [N]`: the heap (and typed-array)
 * growth per cached entry of each kind, as the policy caches them (N entries
 * each, default 100,000, into one CachePool with room for all): what the
 * estimates of src/store/policy/caches.ts ENTRY_BYTES and the default
 * auth.cache.memory_mb rest on (docs/performance.md). Reads the built dist/.
 */
import { Cache, CachePool } from '../dist/store/cache.js'

if (typeof globalThis.gc !== 'function') { console.error('run with node --expose-gc'); process.exit(2) }
const N = Number(process.argv[2] ?? 100_000)
// strings as the backends hand them over (fresh, flat); made without
// Buffers, whose backing stores are freed late and blur the figures
const CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
const randomString = (n) => { let s = ''; for (let i = 0; i < n; i++) s += CHARS[Math.floor(Math.random() * 64)]; return JSON.parse(JSON.stringify(s)) }
const hash = () => randomString(43)
const HEX = '0123456789abcdef'
const randomUUID = () => { let s = ''; for (let i = 0; i < 36; i++) s += (i === 8 || i === 13 || i === 18 || i === 23) ? '-' : HEX[Math.floor(Math.random() * 16)]; return JSON.parse(JSON.stringify(s)) }
const iso = () => new Date(Date.now() - Math.floor(Math.random() * 1e10)).toISOString()
/** a user as publicUser returns it, parsed from its JSON as the backends read it */
const user = (id) => JSON.parse(JSON.stringify({ id, username: `user-${id.slice(0, 8)}`, name: `User ${id.slice(0, 8)}`, email: `${id.slice(0, 8)}@example.com`, is_active: true, is_superuser: false, orgs: { '00000000-0000-0000-0000-000000000002': 'user' }, default_org: '00000000-0000-0000-0000-000000000002', date_joined: iso(), last_login: null }))
const key = (id) => ({
  key: JSON.parse(JSON.stringify({
    id, user_id: randomUUID(), is_active: true, date_created: iso(), date_last_used: iso()
  })),
  secret: randomUUID()
})
const KINDS = {
  privateToken: () => [hash(), randomUUID()],
  user: () => { const id = randomUUID(); return [id, user(id)] },
  accessKey: () => { const id = randomUUID(); return [id, key(id)] },
  session: () => [hash(), JSON.parse(JSON.stringify({ user_id: randomUUID(), created: Date.now() }))]
}
const used = () => {
  globalThis.gc(); globalThis.gc(); const m = process.memoryUsage(); return m.heapUsed + m.arrayBuffers
}

const out = {}
/** every cache kept alive to the end: none is collected while another is measured */
const kept = []
// a small first round of each: compiled code, lazily made builtins, not counted
for (const make of Object.values(KINDS)) {
  const c = new Cache(
    new CachePool({ maxBytes: 2 ** 40 }), { ttlMs: 60_000, entryBytes: 0 }
  ); for (let i = 0; i < 1000; i++) c.set(...make()); kept.push(c)
}
for (const [kind, make] of Object.entries(KINDS)) {
  // the entries are made before the baseline: only what the cache
  // itself holds for them… plus them, as a filled cache does
  const before = used()
  const pool = new CachePool({ maxBytes: 2 ** 40 })
  const cache = new Cache(pool, { ttlMs: 60_000, entryBytes: 0 })
  let keyChars = 0
  for (let i = 0; i < N; i++) { const [k, v] = make(); keyChars += k.length; cache.set(k, v) }
  const bytes = (used() - before) / N
  out[kind] = { bytesPerEntry: Math.round(bytes), keyChars: Math.round(keyChars / N), entries: cache.size }
  kept.push(cache)
}
console.log(JSON.stringify({ node: process.version, N, ...out }, null, 1))

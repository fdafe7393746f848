/**
 * The store's Lua scripts, each declared once with its arguments and its
 * reply: `defineScripts(client)` registers them on a client (EVALSHA, EVAL
 * when the server does not have the script yet) and returns one typed
 * function per script, so no call site needs a cast. A reply of another
 * shape than declared throws (the store turns it into a 503, like any failed
 * command). Every script touches exactly one key, KEYS[1]: cluster-safe;
 * except lookupUser and keyWithUser, which also read the records KEYS[1]
 * names and are used only off a cluster.
 */
import type { RedisClient } from './connect.js'

type Arg = string | number

interface Script<A extends Arg[], R> {
  lua: string
  /** checks and converts the raw reply */
  reply: (raw: unknown) => R
  /** never set: carries the argument types */
  args?: A
}

const script = <A extends Arg[], R>(lua: string, reply: (raw: unknown) => R): Script<A, R> => ({ lua, reply })

function int (raw: unknown): number {
  if (typeof raw !== 'number' || !Number.isInteger(raw)) throw new TypeError(`a script replied ${typeof raw}, not an integer`)
  return raw
}
function triple (raw: unknown): [number, number, number] {
  if (!Array.isArray(raw) || raw.length !== 3) throw new TypeError('a script replied something other than three integers')
  return [int(raw[0]), int(raw[1]), int(raw[2])]
}
const flag = (raw: unknown): boolean => int(raw) === 1
function pair (raw: unknown): [number, number] {
  if (!Array.isArray(raw) || raw.length !== 2) throw new TypeError('a script replied something other than two integers')
  return [int(raw[0]), int(raw[1])]
}

function nullableStrings (n: number) {
  return (raw: unknown): Array<string | null> | null => {
    if (raw === null) return null
    if (!Array.isArray(raw) || raw.length !== n || !raw.every((x) => x === null || typeof x === 'string')) {
      throw new TypeError(`a script replied something other than ${n} strings or nulls`)
    }
    return raw as Array<string | null>
  }
}

export const SCRIPTS = {
  /**
   * A private token's lookup entry and its user's record in one round trip.
   * KEYS[1] pt:<hash>, ARGV[1] the user records' key prefix (`<prefix>user:`).
   * Reads a key not in KEYS: never used on a cluster (./private-tokens.ts).
   * Replies null (no entry) or [user id, user record or null].
   */
  lookupUser: script<[userPrefix: string], Array<string | null> | null>(`
local id = redis.call('GET', KEYS[1])
if not id then return false end
return {id, redis.call('GET', ARGV[1] .. id)}`, nullableStrings(2)),

  /**
   * An access key's record, its last use and its user's record in one round
   * trip. KEYS[1] ak:<id>, ARGV[1] its ak-used key, ARGV[2] the user records'
   * key prefix. Reads keys not in KEYS: never used on a cluster
   * (./access-keys.ts). Replies null (no key) or [record, last use or null,
   * user record or null].
   */
  keyWithUser: script<[usedKey: string, userPrefix: string], Array<string | null> | null>(`
local k = redis.call('GET', KEYS[1])
if not k then return false end
local uid = cjson.decode(k).user_id
local u = false
if type(uid) == 'string' then u = redis.call('GET', ARGV[2] .. uid) end
return {k, redis.call('GET', ARGV[1]), u}`, nullableStrings(3)),

  /**
   * Updates one JSON field of a record atomically. KEYS[1] record, ARGV[1] field, ARGV[2] JSON value. False: no record.
   */
  setField: script<[field: string, json: string], boolean>(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local o = cjson.decode(v)
o[ARGV[1]] = cjson.decode(ARGV[2])
redis.call('SET', KEYS[1], cjson.encode(o))
return 1`, flag),

  /**
   * Updates several JSON fields of a record atomically (null: the field goes).
   * KEYS[1] record, ARGV[1] a JSON object, ARGV[2] a JSON object of the values
   * the record must still hold (null: absent), or {}. False: no record, or not
   * as expected (compare-and-set).
   */
  setFields: script<[json: string, expect: string], boolean>(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local o = cjson.decode(v)
for k, x in pairs(cjson.decode(ARGV[2])) do
  if x == cjson.null then
    if o[k] ~= nil and o[k] ~= cjson.null then return 0 end
  elseif o[k] ~= x then return 0 end
end
for k, x in pairs(cjson.decode(ARGV[1])) do
  if x == cjson.null then o[k] = nil else o[k] = x end
end
redis.call('SET', KEYS[1], cjson.encode(o))
return 1`, flag),

  /**
   * Replaces the string field ARGV[1] of the record KEYS[1] with ARGV[3] only
   * while it still holds ARGV[2] (compare-and-set). False: no record, or another value.
   */
  swapField: script<[field: string, expected: string, value: string], boolean>(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local o = cjson.decode(v)
if o[ARGV[1]] ~= ARGV[2] then return 0 end
o[ARGV[1]] = ARGV[3]
redis.call('SET', KEYS[1], cjson.encode(o))
return 1`, flag),

  /**
   * Sets or clears a membership in the user record KEYS[1]: ARGV[1] org id,
   * ARGV[2] role or '' to remove; default_org moves to another org (or null)
   * when it is no longer one of the user's. False: no record.
   */
  setMember: script<[orgId: string, role: string], boolean>(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local o = cjson.decode(v)
if type(o.orgs) ~= 'table' then o.orgs = {} end
if ARGV[2] == '' then o.orgs[ARGV[1]] = nil else o.orgs[ARGV[1]] = ARGV[2] end
if o.default_org == cjson.null or o.default_org == nil or o.orgs[o.default_org] == nil then
  o.default_org = cjson.null
  for k, _ in pairs(o.orgs) do o.default_org = k; break end
end
redis.call('SET', KEYS[1], cjson.encode(o))
return 1`, flag),

  /**
   * One source's group ids in the user record KEYS[1]: ARGV[1] the source,
   * ARGV[2] a group id, ARGV[3] 1 to add it (kept once), 0 to remove it; an
   * emptied list goes. False: no record.
   */
  setGroupMember: script<[source: string, groupId: string, member: number], boolean>(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local o = cjson.decode(v)
if type(o.groups) ~= 'table' then o.groups = {} end
local had = o.groups[ARGV[1]]
if type(had) ~= 'table' then had = {} end
local ids = {}
local found = false
for _, g in ipairs(had) do
  if g == ARGV[2] then found = true end
  if g ~= ARGV[2] or ARGV[3] == '1' then ids[#ids + 1] = g end
end
if ARGV[3] == '1' and not found then ids[#ids + 1] = ARGV[2] end
if #ids == 0 then o.groups[ARGV[1]] = nil else o.groups[ARGV[1]] = ids end
if next(o.groups) == nil then o.groups = nil end
redis.call('SET', KEYS[1], cjson.encode(o))
return 1`, flag),

  /**
   * Replaces one source's group ids in the user record KEYS[1]: ARGV[1] the
   * source, ARGV[2] a JSON list of ids (empty: the source goes). False: no record.
   */
  replaceGroups: script<[source: string, idsJson: string], boolean>(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local o = cjson.decode(v)
if type(o.groups) ~= 'table' then o.groups = {} end
local ids = cjson.decode(ARGV[2])
if #ids == 0 then o.groups[ARGV[1]] = nil else o.groups[ARGV[1]] = ids end
if next(o.groups) == nil then o.groups = nil end
redis.call('SET', KEYS[1], cjson.encode(o))
return 1`, flag),

  /** Deletes KEYS[1] only while it holds ARGV[1] (a claimed name still its owner's). True: deleted. */
  deleteIfEqual: script<[value: string], boolean>(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`, flag),

  /** Deletes field ARGV[1] of the hash KEYS[1] only while it holds ARGV[2]. True: deleted. */
  hdelIfEqual: script<[field: string, value: string], boolean>(`
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1`, flag),

  /** Adds ARGV[1] to the set KEYS[1] unless it already has ARGV[2] members (0: no cap). True: added. */
  addCapped: script<[member: string, max: number], boolean>(`
local max = tonumber(ARGV[2])
if max > 0 and redis.call('SCARD', KEYS[1]) >= max then return 0 end
return redis.call('SADD', KEYS[1], ARGV[1])`, flag),

  /**
   * Counts a login attempt. KEYS[1] counter, ARGV[1] window seconds, ARGV[2]
   * max. The window starts at the first attempt and again when the count
   * reaches max. Replies [count, seconds until the counter expires].
   */
  countAttempt: script<[windowSeconds: number, max: number], [count: number, ttl: number]>(`
local n = redis.call('INCR', KEYS[1])
if n == 1 or n == tonumber(ARGV[2]) then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('TTL', KEYS[1])
if ttl < 0 then redis.call('EXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl}`, pair),

  /**
   * A replay mark that says when it was first set. KEYS[1] the mark, ARGV[1]
   * its lifetime in ms, ARGV[2] 1 to set it when absent (0: only read).
   * Replies -1 when it was absent (and is set now, with 1), else its PTTL.
   */
  markSeen: script<[ttlMs: number, create: number], number>(`
if ARGV[2] == '1' then
  if redis.call('SET', KEYS[1], '1', 'PX', ARGV[1], 'NX') then return -1 end
end
local left = redis.call('PTTL', KEYS[1])
if left < 0 then return -1 end
return left`, int),

  /** Gives one counted login attempt back (a success). KEYS[1] counter; never below 0, the expiry kept. */
  forgiveAttempt: script<[], number>(`
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n > 0 then return redis.call('DECR', KEYS[1]) end
return 0`, int),

  /**
   * An access key's last use. KEYS[1] its ak-used record (an ISO time);
   * ARGV[1] now, ARGV[2] now minus a minute (both ISO, which order as
   * strings). Written only when not newer than ARGV[2]: at most one write per key
   * per minute across all replicas. 0: not written; 1: written; 2: written,
   * and there was none before (the key's first use: the audit's key.first_used).
   */
  touchIfOlder: script<[now: string, olderThan: string], number>(`
local v = redis.call('GET', KEYS[1])
if v and v > ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
if v then return 1 end
return 2`, int),

  /**
   * Counts one request in a sliding window log. KEYS[1] the
   * bucket's sorted set (member: a unique request id, score: when, ms);
   * ARGV[1] limit, ARGV[2] window ms, ARGV[3] the request's unique member.
   * The clock is the server's (TIME), so replicas with skewed clocks count
   * alike. Entries older than the window go; below the limit the request is
   * added. Replies [1 allowed | 0 refused, remaining, ms until the oldest
   * counted request that matters leaves the window].
   */
  rateLimit: script<[limit: number, windowMs: number, member: string], [allowed: number, remaining: number, resetMs: number]>(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local win = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - win)
local n = redis.call('ZCARD', KEYS[1])
if n < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], win)
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {1, limit - n - 1, tonumber(first[2]) + win - now}
end
local oldest = redis.call('ZRANGE', KEYS[1], n - limit, n - limit, 'WITHSCORES')
return {0, 0, tonumber(oldest[2]) + win - now}`, triple),

  /**
   * Indexes one bearer token of a user. KEYS[1] the user's index (sorted set:
   * hash → expiry, epoch ms); ARGV[1] now, ARGV[2] token hash, ARGV[3] its
   * expiry, ARGV[4] its ttl in ms. Expired entries are dropped.
   */
  indexBearer: script<[now: number, hash: string, expiry: number, ttlMs: number], void>(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[4]) then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return 1`, (raw) => { int(raw) }),

  /**
   * Frees a lock (Store.releaseLock): KEYS[1] the lock, deleted
   * only while it holds ARGV[1], its owner's token. True: freed.
   */
  releaseLock: script<[token: string], boolean>(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`, flag),

  /** Compare-and-set of a string: KEYS[1] replaced with ARGV[2] only while it holds ARGV[1]. True: written. */
  swapIfEqual: script<[expected: string, value: string], boolean>(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1`, flag),

  /** Replaces the set KEYS[1] with the members ARGV[1..] (none: deletes it). */
  replaceSet: script<string[], boolean>(`
redis.call('DEL', KEYS[1])
if #ARGV > 0 then redis.call('SADD', KEYS[1], unpack(ARGV)) end
return 1`, flag),

  /** A new hash: KEYS[1] written with the field/value pairs ARGV only when it does not exist. True: written. */
  newHash: script<string[], boolean>(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1`, flag),

  /** Sets field ARGV[2] of the hash KEYS[1] to ARGV[3] only while its field `user` is ARGV[1]. True: written. */
  setOwnedField: script<[userId: string, field: string, value: string], boolean>(`
if redis.call('HGET', KEYS[1], 'user') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
return 1`, flag),

  /** Deletes the hash KEYS[1] only while its field `user` is ARGV[1]. True: deleted. */
  deleteOwned: script<[userId: string], boolean>(`
if redis.call('HGET', KEYS[1], 'user') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`, flag),

  /**
   * A passkey's signature counter (KEYS[1], a hash): `counter` set to ARGV[1]
   * and `last_used` to ARGV[2] only when ARGV[1] is above it, or both are 0
   * (../ports.ts counterAdvances). True: written.
   */
  advanceCounter: script<[counter: number, lastUsed: string], boolean>(`
local c = redis.call('HGET', KEYS[1], 'counter')
if not c then return 0 end
c = tonumber(c)
local n = tonumber(ARGV[1])
if n > c or (n == 0 and c == 0) then
  redis.call('HSET', KEYS[1], 'counter', ARGV[1], 'last_used', ARGV[2])
  return 1
end
return 0`, flag),

  /**
   * Compare-and-set of a JSON document with a `rev` field: KEYS[1] the
   * document, ARGV[1] the revision it must still be at (0: absent), ARGV[2]
   * the new document. True: written.
   */
  putIfRev: script<[rev: number, json: string], boolean>(`
local v = redis.call('GET', KEYS[1])
local rev = 0
if v then rev = tonumber(cjson.decode(v).rev) or 0 end
if rev ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1`, flag)
}

type Declared = typeof SCRIPTS

/** One function per script: its key, then its arguments; resolves to its checked reply. */
export type Scripts = {
  [K in keyof Declared]: Declared[K] extends Script<infer A, infer R> ? (key: string, ...args: A) => Promise<R> : never
}

/** Registers every script on the client and returns the typed functions. */
export function defineScripts (client: RedisClient): Scripts {
  const out: Record<string, (key: string, ...args: Arg[]) => Promise<unknown>> = {}
  for (const [name, s] of Object.entries(SCRIPTS) as Array<[string, Script<Arg[], unknown>]>) {
    client.defineCommand(name, { numberOfKeys: 1, lua: s.lua })
    const fn: unknown = Reflect.get(client, name)
    if (typeof fn !== 'function') throw new Error(`ioredis did not define the script ${name}`)
    out[name] = async (key, ...args) => s.reply(await fn.call(client, key, ...args))
  }
  return out as Scripts
}

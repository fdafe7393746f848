/**
 * `sidegate store export|import|backup` through a real Redis (the embedded
 * store alone: test/cli/store-transfer.test.ts): the embedded store → a Redis
 * → another embedded store, every record kept (users with their password
 * hashes, access keys whose secrets still verify, private tokens, sessions,
 * unexpired bearer tokens, signing keys, legacy key generations, the audit
 * trail), and a gateway started on the Redis copy accepting credentials made
 * on the original; what an import into Redis refuses (another secret key, a
 * store that holds data, a bad line) writing no key, --merge writing only
 * the missing one; `store backup` of a Redis refused.
 */
import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Keyring } from '../../src/crypto.js'
import { RedisStore } from '../../src/store/redis/index.js'
import { startRedis } from '../fixtures/redis.js'
import { startEcho } from '../fixtures/http.js'
import { SECRET } from '../fixtures/gateway.js'
import { cliIn, snapshot, workdir } from '../fixtures/procs.js'
import { tempDir } from '../fixtures/cleanup.js'
import { checkCredentials, comparable, importIntoEmpty, makeOriginal, openSqlite, resign, sqliteDir } from '../fixtures/transfer.js'

const redis = await startRedis()
const echo = await startEcho()
t.teardown(async () => { await echo.close(); await redis.stop() })
const env = { SIDEGATE_SECRET_KEY: SECRET }
const OTHER = 'another-secret-key-that-is-long-enough-9876543210'

let prefixes = 0
const redisDir = async (): Promise<{ dir: string, port: number, url: string, prefix: string }> => {
  const prefix = `xfer${process.pid}-${++prefixes}:`
  return { ...await workdir({ store: { backend: 'redis' }, redis: { url: redis.url, prefix }, upstream: { url: echo.url } }), prefix }
}
const openRedis = async (prefix: string): Promise<RedisStore> => {
  const s = new RedisStore(
    { url: redis.url, prefix, commandTimeout: 2000, connectTimeout: 2000, cache: { max: 0, ttl: 1 } },
    new Keyring(SECRET)
  )
  await s.connect()
  return s
}

// the original: an embedded store with one of everything, exported
const o = await makeOriginal(t, echo.url)
const exportFile = join(tempDir('sidegate-xfer-'), 'store.ndjson')
let original = ''

t.test('the original, exported (test/cli/store-transfer.test.ts checks the export)', async (t) => {
  const r = await cliIn(o.dir, ['store', 'export', '--out', exportFile], { env })
  t.equal(r.code, 0, r.stderr)
  original = readFileSync(exportFile, 'utf8')
})

const red = await redisDir()

t.test('import into an empty Redis: every record, the key check value recorded; a gateway on it accepts the original\'s credentials', async (t) => {
  await importIntoEmpty(t, o, exportFile, original, { ...red, named: 'Redis at .*', label: 'Redis', open: async () => await openRedis(red.prefix) })
})

t.test('Redis → a new embedded store (through a pipe): every record again', async (t) => {
  const back = await sqliteDir(echo.url)
  const out = await cliIn(red.dir, ['store', 'export'], { env })
  t.equal(out.code, 0, out.stderr)
  const r = await cliIn(back.dir, ['store', 'import', '-'], { env, stdin: out.stdout })
  t.equal(r.code, 0, r.stderr)
  // the gateway started on the Redis copy added its Default org
  t.match(r.stdout, /^imported standard input into the store file .*: 2 orgs, 2 groups, 2 users, 1 link, 1 access key, 2 private tokens/)
  const s = await openSqlite(back.path)
  t.teardown(() => s.close())
  await checkCredentials(t, s, o, 'SQLite again')
  const again = await cliIn(back.dir, ['store', 'export'], { env })
  const isDefault = (x: unknown): boolean => (x as { org?: { name: string } }).org?.name === 'Default'
  t.same(comparable(again.stdout).filter((x) => !isDefault(x)), comparable(original), 'the same records as the original (and the Default org)')
  t.same(await s.sessions.endTagged('oidc:corp', 'sid:sid-1'), [o.alice.id], 'the provider\'s logout still finds the session (its tags carried through Redis)')
})

t.test('refused by Redis, exit 2, no key written: another secret key, a store that holds data, a bad line; --merge writes only what is missing', async (t) => {
  const other = await redisDir()
  const wrongKey = await cliIn(other.dir, ['store', 'import', exportFile], { env: { SIDEGATE_SECRET_KEY: OTHER } })
  t.equal(wrongKey.code, 2)
  t.match(wrongKey.stderr, /exported from a store with another secret key.*nothing was written/)
  t.same(await snapshot(redis.url, other.prefix), {}, 'another key: nothing written')

  // the store's keys but its audit stream (every import, refused or not, appends to it)
  const data = async (): Promise<Record<string, string>> => Object.fromEntries(Object.entries(await snapshot(redis.url, red.prefix)).filter(([k]) => k !== `${red.prefix}audit`))
  const before = await data()
  const full = await cliIn(red.dir, ['store', 'import', exportFile], { env })
  t.equal(full.code, 2)
  t.match(full.stderr, /already holds 2 users and 2 orgs: import into an empty store .*--merge.*nothing was written/)
  t.same(await data(), before, 'a store with data: nothing written')
  // a credential and a second factor of users already there: listed, and only with --allow-takeover
  const unallowed = await cliIn(red.dir, ['store', 'import', exportFile, '--merge'], { env })
  t.equal(unallowed.code, 1)
  t.match(unallowed.stderr, /2 privileged records not allowed, nothing was written:\n {2}line \d+: adds bearer token .*\(--allow-takeover\)/)
  t.same(await data(), before, 'privileged records not allowed: nothing written')
  const merged = await cliIn(red.dir, ['store', 'import', exportFile, '--merge', '--allow-takeover'], { env })
  t.equal(merged.code, 0, merged.stderr)
  // what was deleted since the export comes back: here the bearer
  // token and the recovery code the checks used (docs/cli.md says so)
  t.match(merged.stdout, /: 1 bearer token, 1 recovery code; 28 skipped \(already there: 1 org, 2 groups, 2 users, 1 link, 1 access key, 2 private tokens/)
  const merged1 = await data()
  t.same(Object.keys(merged1).filter((k) => !(k in before)).map((k) => k.slice(red.prefix.length).split(':')[0]), ['bt'], '--merge: only the missing record written')
  // the indexes written to: the user's bearer tokens, and the set of recovery codes the used one is back in
  const kept = (k: string): boolean => !k.startsWith(`${red.prefix}user-bt:`) && !k.startsWith(`${red.prefix}user-rc:`)
  t.same(Object.fromEntries(Object.entries(merged1).filter(([k]) => k in before && kept(k))), Object.fromEntries(Object.entries(before).filter(([k]) => kept(k))), 'nothing else changed')
  const rc = Object.keys(merged1).find((k) => k.startsWith(`${red.prefix}user-rc:`))!
  t.equal(merged1[rc].split(' ').length, before[rc].split(' ').length + 1, 'the used recovery code is back in its set')

  const bad = original.split('\n')
  bad[4] = bad[4].slice(0, 20)
  const badFile = join(tempDir('sidegate-xfer-'), 'bad.ndjson')
  writeFileSync(badFile, resign(bad.join('\n')))
  const viaRedis = await cliIn(other.dir, ['store', 'import', badFile], { env })
  t.equal(viaRedis.code, 2)
  t.match(viaRedis.stderr, /line 5: not JSON/)
  t.same(await snapshot(redis.url, other.prefix), {}, 'a bad line, Redis: nothing written')
})

t.test('backup of Redis: exit 2, pointing at Redis persistence and store export', async (t) => {
  const r = await cliIn(red.dir, ['store', 'backup', join(tempDir('sidegate-backup-'), 'x.db')], { env })
  t.equal(r.code, 2)
  t.match(r.stderr, /BGSAVE.*AOF.*store export/)
})

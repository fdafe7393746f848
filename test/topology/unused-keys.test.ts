/**
 * auth.keys.disable_after: two `sidegate start` replicas
 * on one Redis, a pass every second (auth.keys.check_interval: 1). "Unused"
 * is made by writing date_last_used (and, for a key never used, its
 * creation date) straight into Redis, not by waiting days. Each replica logs
 * the passes it ran: no pass may be run by both.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { startRedis } from '../fixtures/redis.js'
import { request } from '../fixtures/http.js'
import { SECRET, spawnGateway } from '../fixtures/gateway.js'
import { cliIn, workdir } from '../fixtures/procs.js'
import { signedHeaders } from '../fixtures/creds.js'
import { openTestStore } from '../fixtures/store-contract.js'
import { eventually } from '../fixtures/wait.js'

const redis = await startRedis()
t.teardown(async () => { await redis.stop() })
const prefix = `uk${process.pid}:`
const doc = { auth: { keys: { disable_after: 30, check_interval: 1 } }, log: { level: 'info' } }
const a = await spawnGateway(redis.url, doc, prefix)
t.teardown(async () => { await a.stop() })
const b = await spawnGateway(redis.url, doc, prefix)
t.teardown(async () => { await b.stop() })
const store = await openTestStore({ url: redis.url }, prefix)
t.teardown(async () => { await store.close() })
const raw = new Redis(redis.url)
t.teardown(() => { raw.disconnect() })
const wd = await workdir({ redis: { url: redis.url, prefix } })
const cli = async (...args: string[]) => await cliIn(wd.dir, args, { env: { SIDEGATE_SECRET_KEY: SECRET } })

const DAY = 86_400_000
const daysAgo = (n: number): string => new Date(Date.now() - n * DAY).toISOString()

/** The passes each replica says it ran, and the keys it says it disabled. */
function passes (out: string): { ran: number[], disabled: string[] } {
  const ran: number[] = []
  const disabled: string[] = []
  for (const line of out.split('\n')) {
    if (!line.startsWith('{')) continue
    const o = JSON.parse(line) as { msg?: string, pass?: number, key_id?: string }
    if (o.msg === 'unused access keys: pass done') ran.push(o.pass!)
    else if (o.msg?.startsWith('unused access keys: disabled') === true) disabled.push(o.key_id!)
  }
  return { ran, disabled }
}

const call = async (base: string, k: { id: string, secret: string }) => await request(base, '/api/v1/users/profile/', { headers: signedHeaders(k.id, k.secret, 'GET', '/api/v1/users/profile/') })

t.test('keys unused for disable_after days are disabled by one replica per pass; used ones stay; key enable turns one back on for good', async (t) => {
  const u = await store.users.create({ username: 'carol', password: 'carol-password' })
  const made = async () => { const k = await store.accessKeys.create(u.id); return { id: k.key.id, secret: k.secret } }
  const stale = await made()
  const neverUsed = await made()
  const recent = await made()
  const fresh = await made()
  // all but `fresh` created 50 days ago; `stale` last used 40 days ago, `recent` 29 days ago, `neverUsed` never
  for (const k of [stale, neverUsed, recent]) {
    const rec = JSON.parse((await raw.get(`${prefix}ak:${k.id}`))!)
    await raw.set(`${prefix}ak:${k.id}`, JSON.stringify({ ...rec, date_created: daysAgo(50) }))
  }
  const staleUsed = daysAgo(40)
  await raw.set(`${prefix}ak-used:${stale.id}`, staleUsed)
  await raw.set(`${prefix}ak-used:${recent.id}`, daysAgo(29))

  const active = async (id: string) => (await store.accessKeys.list(u.id)).find((k) => k.id === id)?.is_active
  t.ok(await eventually(async () => (await active(stale.id)) === false && (await active(neverUsed.id)) === false, 60_000), 'both unused keys disabled')
  t.same((await store.accessKeys.list(u.id)).filter((k) => !k.is_active).map((k) => k.disabled_by), ['policy', 'policy'], 'by the policy: their owner cannot enable them again')
  for (const g of [a, b]) {
    const r = await call(g.url, stale)
    t.same([r.status, r.json], [401, { detail: 'This access key is disabled.', code: 'key_disabled' }], 'refused on both replicas')
    t.equal((await call(g.url, neverUsed)).json.code, 'key_disabled')
    t.equal((await call(g.url, recent)).status, 200, 'a key used 29 days ago works')
    t.equal((await call(g.url, fresh)).status, 200, 'a new key works')
  }
  const list = (await cli('key', 'list', 'carol')).stdout
  t.match(list, new RegExp(`${stale.id}  created \\S+  last used ${staleUsed}  disabled`), 'key list shows it disabled')
  t.notMatch(list, new RegExp(`${recent.id}.*disabled`))

  // an operator turns one back on: it has disable_after days again, though its last use is 40 days old
  const enabled = await cli('key', 'enable', stale.id)
  t.equal(enabled.code, 0, enabled.stderr)
  t.match(enabled.stdout, `enabled access key ${stale.id}`)
  const seen = passes(a.output()).ran.length + passes(b.output()).ran.length
  t.ok(await eventually(async () => passes(a.output()).ran.length + passes(b.output()).ran.length >= seen + 3, 60_000), 'three more passes ran')
  t.equal(await active(stale.id), true, 'still enabled after them')
  t.equal((await call(a.url, stale)).status, 200, 'and accepted')
  t.equal(await active(neverUsed.id), false, 'the other stays disabled')
  t.equal((await cli('key', 'enable', '6f1a1c7e-1111-4222-8333-944455556666')).code, 1, 'an unknown key: exit 1')
  const off = await cli('key', 'disable', fresh.id)
  t.equal(off.code, 0)
  t.equal((await call(b.url, fresh)).json.code, 'key_disabled', 'key disable: refused at once')

  // one replica per pass
  const pa = passes(a.output())
  const pb = passes(b.output())
  t.comment(`replica A ran ${pa.ran.length} passes, B ${pb.ran.length}`)
  const all = [...pa.ran, ...pb.ran]
  t.ok(all.length >= 4, `${all.length} passes`)
  t.equal(new Set(all).size, all.length, 'no pass was run twice, on one replica or on both')
  t.same([...pa.disabled, ...pb.disabled].sort(), [stale.id, neverUsed.id].sort(), 'each key disabled once, by one replica')
  // and the metrics say the same
  const metric = async (base: string, name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(await (await fetch(`${base}/metrics`)).text())?.[1] ?? NaN)
  t.equal(await metric(a.metricsUrl, 'sidegate_unused_keys_disabled_total') + await metric(b.metricsUrl, 'sidegate_unused_keys_disabled_total'), 2, 'sidegate_unused_keys_disabled_total: 2 over both')
  t.ok(await metric(a.metricsUrl, 'sidegate_unused_key_passes_total') >= pa.ran.length, 'A counts its passes')
  t.equal(await raw.exists(`${prefix}lock:unused-keys`) === 0 || (await raw.pttl(`${prefix}lock:unused-keys`)) > 0, true, 'the lock is freed, or held with a lease')
})

/**
 * `x-date` may be signed instead of `date`; the clock-skew
 * rule applies to whichever is signed, and when both are signed they must
 * agree. Over real HTTP, against two replicas sharing one embedded store file.
 */
import t from 'tap'
import { startEcho, request } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser, signAny } from '../fixtures/creds.js'

const db = embeddedStore()
const echo = await startEcho()
const prefix = `xdate${process.pid}:`
const a = await startGateway(db.url, { upstream: { url: echo.url }, redis: { url: db.url, prefix } })
const b = await startGateway(db.url, { upstream: { url: echo.url }, redis: { url: db.url, prefix } })
t.teardown(async () => { await a.close(); await b.close(); await echo.close(); await db.stop() })

const alice = await makeUser(a, 'alice')
const { key, secret } = await a.store.accessKeys.create(alice.id)
const now = (): string => new Date().toUTCString()
const ago = (s: number): string => new Date(Date.now() - s * 1000).toUTCString()
const sign = (list: string[], values: Record<string, string>, path = '/x'): Record<string, string> =>
  signAny(key.id, secret, 'GET', path, list, values)

t.test('x-date signed instead of date is accepted on both replicas (the required date is satisfied by it)', async (t) => {
  for (const g of [a, b]) {
    const r = await request(g.url, '/x', { headers: sign(['(request-target)', 'x-date'], { 'x-date': now() }) })
    t.equal(r.status, 200, r.text)
    t.equal(r.json.headers['x-svc-auth-method'], 'access_key')
    t.equal(r.json.headers['x-date'] !== undefined, true, 'x-date is forwarded like any header')
  }
})

t.test('the skew rule applies to a signed x-date', async (t) => {
  for (const g of [a, b]) {
    // 302, not 301: an HTTP date drops the milliseconds, so now+301 s can be written as 300.1 s ahead
    const old = await request(g.url, '/x', { headers: sign(['(request-target)', 'x-date'], { 'x-date': ago(302) }) })
    t.same([old.status, old.json.code], [401, 'signature_expired'])
    const future = await request(g.url, '/x', { headers: sign(['(request-target)', 'x-date'], { 'x-date': ago(-302) }) })
    t.same([future.status, future.json.code], [401, 'signature_expired'])
    const bad = await request(g.url, '/x', { headers: sign(['(request-target)', 'x-date'], { 'x-date': new Date().toISOString() }) })
    t.same([bad.status, bad.json.code], [401, 'signature_expired'], 'not an HTTP date')
    const within = await request(g.url, '/x', { headers: sign(['(request-target)', 'x-date'], { 'x-date': ago(200) }) })
    t.equal(within.status, 200)
  }
})

t.test('x-date signed but not sent is 401 signature_expired', async (t) => {
  const h = sign(['(request-target)', 'x-date'], { 'x-date': now() })
  delete h['x-date']
  const r = await request(a.url, '/x', { headers: h })
  t.same([r.status, r.json.code], [401, 'signature_expired'])
})

t.test('an unsigned x-date proves nothing: a stale signed Date still fails, and a stale unsigned x-date does not matter', async (t) => {
  const stale = await request(a.url, '/x', { headers: sign(['(request-target)', 'date'], { date: ago(400), 'x-date': now() }) })
  t.same([stale.status, stale.json.code], [401, 'signature_expired'])
  const fine = await request(a.url, '/x', { headers: sign(['(request-target)', 'date'], { date: now(), 'x-date': ago(4000) }) })
  t.equal(fine.status, 200)
  const fine2 = await request(b.url, '/x', { headers: sign(['(request-target)', 'x-date'], { 'x-date': now(), date: ago(4000) }) })
  t.equal(fine2.status, 200, 'an unsigned stale Date beside a signed x-date')
})

t.test('both signed: they must name the same instant', async (t) => {
  const d = now()
  const same = await request(a.url, '/x', { headers: sign(['(request-target)', 'date', 'x-date'], { date: d, 'x-date': d }) })
  t.equal(same.status, 200)
  const other = ago(10)
  const differ = await request(b.url, '/x', { headers: sign(['(request-target)', 'date', 'x-date'], { date: d, 'x-date': other }) })
  t.same([differ.status, differ.json], [401, { detail: 'The signed Date and X-Date headers differ.', code: 'signature_expired' }])
  const staleOne = await request(a.url, '/x', { headers: sign(['(request-target)', 'x-date', 'date'], { date: d, 'x-date': ago(400) }) })
  t.same([staleOne.status, staleOne.json.code], [401, 'signature_expired'])
})

t.test('neither date nor x-date signed: still 401 malformed_authorization (date is required by default)', async (t) => {
  const r = await request(a.url, '/x', { headers: sign(['(request-target)', 'accept'], { accept: 'application/json', date: now() }) })
  t.same([r.status, r.json.code], [401, 'malformed_authorization'])
  t.match(r.json.detail, /date/)
})

t.test('a tampered x-date (signed value changed) is 401 invalid_signature', async (t) => {
  const h = sign(['(request-target)', 'x-date'], { 'x-date': ago(5) })
  const r = await request(a.url, '/x', { headers: { ...h, 'x-date': now() } })
  t.same([r.status, r.json.code], [401, 'invalid_signature'])
})

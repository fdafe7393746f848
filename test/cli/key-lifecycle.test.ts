/**
 * Access keys with an expiry, an IP allow-list and a name,
 * made with `sidegate key create` (a process) and with the self-service
 * endpoint (the same parser: the same refusals in the same words), used
 * over real HTTP on two gateways sharing one store (the embedded store's file): one behind a trusted
 * proxy (X-Forwarded-For believed from 127.0.0.1), one not.
 */
import t from 'tap'
import { startEcho, request } from '../fixtures/http.js'
import { embeddedStore, SECRET, startGateway, storeDoc } from '../fixtures/gateway.js'
import { cliIn, workdir } from '../fixtures/procs.js'
import { makeUser, signedHeaders } from '../fixtures/creds.js'
import { removeDir } from '../fixtures/cleanup.js'
import { eventually } from '../fixtures/wait.js'
import { parseExpiry } from '../../src/admin/key-options.js'

const db = embeddedStore()
const echo = await startEcho()
const prefix = `kl${process.pid}:`
const proxied = await startGateway(db.url, { upstream: { url: echo.url }, redis: { prefix }, server: { trusted_proxies: ['127.0.0.1'] } })
const direct = await startGateway(db.url, { upstream: { url: echo.url }, redis: { prefix } })
const wd = await workdir(storeDoc(db.url, prefix))
t.teardown(async () => {
  await proxied.close(); await direct.close(); await echo.close(); await db.stop(); removeDir(wd.dir)
})
await makeUser(proxied, 'alice')
const cli = async (...args: string[]) => await cliIn(wd.dir, args, { env: { SIDEGATE_SECRET_KEY: SECRET } })
const create = async (...flags: string[]): Promise<{ id: string, secret: string, [k: string]: unknown }> => {
  const r = await cli('key', 'create', 'alice', ...flags, '--json')
  if (r.code !== 0) throw new Error(r.stderr)
  return JSON.parse(r.stdout)
}
const call = async (base: string, k: { id: string, secret: string }, xff?: string) =>
  await request(base, '/k', { headers: { ...signedHeaders(k.id, k.secret, 'GET', '/k'), ...(xff === undefined ? {} : { 'x-forwarded-for': xff }) } })

t.test('key create --expires --allow-ip --name: stored and shown; a key without them works anywhere, forever', async (t) => {
  const k = await create('--expires', '90d', '--allow-ip', '10.1.0.0/16', '--allow-ip', '127.0.0.1', '--name', 'ci deploy')
  t.equal(k.name, 'ci deploy')
  t.same(k.allow_ips, ['10.1.0.0/16', '127.0.0.1'])
  const days = (Date.parse(String(k.date_expired)) - Date.now()) / 86_400_000
  t.ok(days > 89.9 && days <= 90, `expires in ${days} days`)
  for (const g of [proxied, direct]) t.equal((await call(g.url, k)).status, 200)
  const text = await cli('key', 'list', 'alice')
  t.match(text.stdout, new RegExp(`${k.id}  "ci deploy"  created \\S+  last used 20\\S+  expires \\S+  from 10.1.0.0/16,127.0.0.1`), 'key list shows name, last use, expiry, allow-list')
  const plain = await create()
  t.equal(plain.date_expired, undefined)
  t.equal((await call(direct.url, plain, '203.0.113.9')).status, 200)
})

t.test('key list --json shows the factors a key its owner made records (two_factor rules read them); an operator\'s key has none', async (t) => {
  const op = await create()
  t.equal(op.factors, undefined, 'key create: an operator\'s key records no factors')
  const u = (await direct.store.users.byUsername('alice'))!
  const made = await direct.store.accessKeys.create(u.id, 0, { factors: ['pwd', 'otp'] })
  const r = await cli('key', 'list', 'alice', '--json')
  t.equal(r.code, 0, r.stderr)
  const listed = JSON.parse(r.stdout) as Array<Record<string, unknown>>
  t.same(listed.find((k) => k.id === made.key.id)?.factors, ['pwd', 'otp'])
  t.notOk('factors' in listed.find((k) => k.id === op.id)!)
})

t.test('allow-list: the real client address decides (X-Forwarded-For only from a trusted proxy): 403 ip_not_allowed otherwise', async (t) => {
  const k = await create('--allow-ip', '10.1.0.0/16')
  const denied = await call(direct.url, k)
  t.same([denied.status, denied.json], [403, { detail: 'This access key may not be used from this address.', code: 'ip_not_allowed' }], 'from 127.0.0.1')
  t.equal((await call(direct.url, k, '10.1.2.3')).status, 403, 'X-Forwarded-For from an untrusted peer is not believed')
  t.equal((await call(proxied.url, k, '10.1.2.3')).status, 200, 'behind the trusted proxy: the client 10.1.2.3 is in the list')
  t.equal((await call(proxied.url, k, '10.2.0.1')).status, 403, 'and 10.2.0.1 is not')
  t.equal((await call(proxied.url, k, '10.1.2.3, 10.9.9.9')).status, 403, 'the rightmost untrusted entry is the client')
  const v6 = await create('--allow-ip', '::1', '--allow-ip', '127.0.0.0/8')
  t.equal((await call(direct.url, v6)).status, 200, 'an IPv4 range matches 127.0.0.1')
})

t.test('X-Forwarded-For hops with a port are the client, never the trusted proxy; an unparseable hop fails closed', async (t) => {
  const local = await create('--allow-ip', '127.0.0.0/8')
  t.equal((await call(proxied.url, local)).status, 200, 'no X-Forwarded-For: the peer 127.0.0.1 is the client')
  for (const hop of ['203.0.113.7:5555', '[2001:db8::7]:5555', '[2001:db8::7]', 'not-an-ip', '127.0.0.1:80:80']) {
    t.equal((await call(proxied.url, local, hop)).status, 403, `${hop}: not the proxy's 127.0.0.1`)
  }
  const net = await create('--allow-ip', '203.0.113.0/24', '--allow-ip', '2001:db8::/32')
  t.equal((await call(proxied.url, net, '203.0.113.7:5555')).status, 200, 'ip:port is that ip')
  t.equal((await call(proxied.url, net, '[2001:db8::7]:5555')).status, 200, '[v6]:port is that v6')
  t.equal((await call(proxied.url, net, '198.51.100.1, 203.0.113.7:443')).status, 200, 'the rightmost hop, port or not')
})

t.test('a request refused by the allow-list is not a use: date_last_used stays unset (auth.keys.disable_after reads it)', async (t) => {
  const blocked = await create('--allow-ip', '10.1.0.0/16')
  const open = await create()
  t.equal((await call(direct.url, blocked)).status, 403)
  t.equal((await call(direct.url, open)).status, 200)
  // both writes go over the same connection, the refused key's first if there were one
  const u = (await direct.store.users.byUsername('alice'))!
  const used = async (id: string) => (await direct.store.accessKeys.list(u.id)).find((k) => k.id === id)?.date_last_used
  t.ok(await eventually(async () => typeof (await used(open.id)) === 'string'), 'the accepted key\'s use is recorded')
  t.equal(await used(blocked.id), null, 'the refused one has none')
})

t.test('expired: 401 key_expired after a correct signature; a wrong one is still invalid_signature', async (t) => {
  const u = await proxied.store.users.byUsername('alice')
  const { key, secret } = await proxied.store.accessKeys.create(
    u!.id, 0, { date_expired: new Date(Date.now() - 1000).toISOString() }
  )
  for (const g of [proxied, direct]) {
    const r = await call(g.url, { id: key.id, secret })
    t.same([r.status, r.json], [401, { detail: 'This access key has expired.', code: 'key_expired' }])
    const wrong = await call(g.url, { id: key.id, secret: secret + 'x' })
    t.equal(wrong.json.code, 'invalid_signature', 'no expiry news without the secret')
  }
  const list = await cli('key', 'list', 'alice')
  t.match(list.stdout, new RegExp(`${key.id}.*EXPIRED`))
})

t.test('bad flags: usage errors (exit 2), nothing created', async (t) => {
  const before = (await proxied.store.accessKeys.list((await proxied.store.users.byUsername('alice'))!.id)).length
  for (const flags of [['--expires', '0d'], ['--expires', '2027-02-30'], ['--expires', '2001-01-01'], ['--expires', 'soon'], ['--allow-ip', '10.0.0.0/33'], ['--allow-ip', 'example.com']]) {
    const r = await cli('key', 'create', 'alice', ...flags)
    t.equal(r.code, 2, `${flags.join(' ')}: ${r.stderr.trim()}`)
  }
  t.equal((await proxied.store.accessKeys.list((await proxied.store.users.byUsername('alice'))!.id)).length, before)
})

t.test('parseExpiry: days from now, a date through its end (UTC)', async (t) => {
  const now = Date.UTC(2026, 10, 23, 21, 0, 0)
  t.equal(parseExpiry('90d', now), new Date(now + 90 * 86_400_000).toISOString())
  t.equal(parseExpiry('2027-01-31', now), '2027-02-01T00:00:00.000Z')
  t.throws(() => parseExpiry('2026-11-22', now))
})

const KEYS = '/api/v1/authentication/access-keys/'

t.test('the self-service endpoint takes the same options: expiry (days or a date), name, allow-list; listed with last use', async (t) => {
  const u = await makeUser(proxied, 'dave')
  const auth = { authorization: `Token ${await proxied.store.privateTokens.create(u.id)}` }
  const post = async (body: Record<string, unknown>) => await request(proxied.url, KEYS, { method: 'POST', body: JSON.stringify({ password: 'dave-password', ...body }), headers: { ...auth, 'content-type': 'application/json' } })
  const r = await post({ expires: '30d', name: 'deploy bot', allow_ips: ['10.1.0.0/16', '2001:db8::/32', ' 127.0.0.1 '] })
  t.equal(r.status, 201, JSON.stringify(r.json))
  t.match(r.json, { id: String, secret: String, name: 'deploy bot', is_active: true, date_last_used: null })
  t.same(r.json.allow_ips, ['10.1.0.0/16', '2001:db8::/32', '127.0.0.1'], 'entries trimmed, as the CLI does')
  const days = (Date.parse(r.json.date_expired) - Date.now()) / 86_400_000
  t.ok(days > 29.9 && days <= 30, `expires in ${days} days`)
  const k = { id: r.json.id as string, secret: r.json.secret as string }
  t.equal((await call(proxied.url, k, '10.1.2.3')).status, 200, 'usable from the list')
  t.equal((await call(proxied.url, k, '10.2.0.1')).json.code, 'ip_not_allowed', 'and not from elsewhere')

  const dated = await post({ expires: '2099-12-31' })
  t.equal(dated.json.date_expired, '2100-01-01T00:00:00.000Z', 'a date: through its end (UTC)')
  t.same([dated.json.name, dated.json.allow_ips], [null, []], 'no name, anywhere')
  const form = await request(proxied.url, KEYS, { method: 'POST', body: new URLSearchParams({ password: 'dave-password', allow_ips: '10.0.0.0/8, ::1 192.0.2.7', name: 'from a form' }).toString(), headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(form.status, 201)
  t.same([form.json.name, form.json.allow_ips], ['from a form', ['10.0.0.0/8', '::1', '192.0.2.7']], 'a form field: entries separated by commas or spaces')

  // the listing (and one key) show name, expiry, allow-list and last use
  t.ok(await eventually(async () => (await request(proxied.url, KEYS, { headers: auth })).json.find((x: any) => x.id === k.id)?.date_last_used !== null), 'last use listed')
  const listed = (await request(proxied.url, KEYS, { headers: auth })).json.find((x: any) => x.id === k.id)
  t.same([listed.name, listed.date_expired, listed.allow_ips, listed.secret], ['deploy bot', r.json.date_expired, r.json.allow_ips, undefined])
  t.match((await request(proxied.url, `${KEYS}${k.id}/`, { headers: auth })).json, { name: 'deploy bot', date_expired: r.json.date_expired, allow_ips: r.json.allow_ips })
  // and the CLI sees the same key
  t.match((await cli('key', 'list', 'dave')).stdout, new RegExp(`${k.id}  "deploy bot"  created \\S+  last used 20\\S+  expires ${r.json.date_expired}  from 10.1.0.0/16,2001:db8::/32,127.0.0.1`))
})

t.test('bad options: 400 bad_request naming the field, the CLI\'s own message, before the password is checked; nothing created', async (t) => {
  const u = await makeUser(proxied, 'erin')
  const auth = { authorization: `Token ${await proxied.store.privateTokens.create(u.id)}` }
  const count = async () => (await proxied.store.accessKeys.list(u.id)).length
  const before = await count()
  const cases: Array<[Record<string, unknown>, string, string[] | null]> = [
    [{ expires: '0d' }, 'expires', ['--expires', '0d']],
    [{ expires: 'soon' }, 'expires', ['--expires', 'soon']],
    [{ expires: '2027-02-30' }, 'expires', ['--expires', '2027-02-30']],
    [{ expires: '2001-01-01' }, 'expires', ['--expires', '2001-01-01']],
    [{ expires: 90 }, 'expires', null],
    [{ name: 'n'.repeat(129) }, 'name', ['--name', 'n'.repeat(129)]],
    [{ name: ['x'] }, 'name', null],
    [{ name: 'deploy\u001b]52;c;ZXZpbA==\u0007' }, 'name', ['--name', 'deploy\u001b]52;c;ZXZpbA==\u0007']],
    [{ name: 'ci\rfake' }, 'name', ['--name', 'ci\rfake']],
    [{ name: 'a\u009bb' }, 'name', null],
    [{ allow_ips: ['10.0.0.0/33'] }, 'allow_ips', ['--allow-ip', '10.0.0.0/33']],
    [{ allow_ips: ['example.com', '10.0.0.1'] }, 'allow_ips', ['--allow-ip', 'example.com', '--allow-ip', '10.0.0.1']],
    [{ allow_ips: '10.0.0.0/8/1' }, 'allow_ips', ['--allow-ip', '10.0.0.0/8/1']],
    [{ allow_ips: [1] }, 'allow_ips', null],
    [{ allow_ips: { a: 1 } }, 'allow_ips', null],
    [{ allow_ips: Array.from({ length: 65 }, (_, i) => `10.0.0.${i}`) }, 'allow_ips', null]
  ]
  for (const [body, field, flags] of cases) {
    // a wrong password too: the options are refused first, and no attempt is counted
    const r = await request(proxied.url, KEYS, { method: 'POST', body: JSON.stringify({ password: 'wrong', ...body }), headers: { ...auth, 'content-type': 'application/json' } })
    t.equal(r.status, 400, `${JSON.stringify(body).slice(0, 60)}: ${r.json.detail}`)
    t.equal(r.json.code, 'bad_request')
    t.match(r.json.detail, new RegExp(`^${field}: `), 'the detail names the field')
    if (flags !== null) {
      const c = await cli('key', 'create', 'alice', ...flags)
      t.equal(c.code, 2)
      const said = c.stderr.replace(/^sidegate: /, '').trim()
      t.equal(r.json.detail.slice(field.length + 2).toLowerCase().replace(/\.$/, ''), said.slice(said.indexOf(': ') + 2).toLowerCase(), 'the same words as the CLI')
    }
  }
  t.equal(await count(), before, 'nothing created')
  const ok = await request(proxied.url, KEYS, { method: 'POST', body: JSON.stringify({ password: 'erin-password', name: 'n'.repeat(128) }), headers: { ...auth, 'content-type': 'application/json' } })
  t.equal(ok.status, 201, '128 characters are fine, and the lockout did not count the refused ones')
})

/**
 * listen.host `::` (the shipped default): one listener for both families. An
 * IPv4 client arrives as ::ffff:127.0.0.1 and is 127.0.0.1 to everything
 * that looks at its address (access-rule networks, the logs, X-Forwarded-For,
 * the lockout's counting unit); an IPv6 client stays itself.
 */
import t from 'tap'
import { startEcho } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { buildConfig } from '../../src/config/index.js'
import { addressBucket, unmapIp } from '../../src/http/address.js'

const db = embeddedStore()
const echo = await startEcho()
const gw = await startGateway(db.url, {
  upstream: { url: echo.url },
  access: {
    default_policy: 'deny',
    rules: [
      { paths: ['/v4/**'], networks: ['127.0.0.1'], policy: 'bypass' },
      { paths: ['/v6/**'], networks: ['::1/128'], policy: 'bypass' }
    ]
  }
})
t.teardown(async () => { await gw.close(); await echo.close(); await db.stop() })
// the fixture listens on 127.0.0.1: listen again as the default does
await new Promise<void>((resolve) => gw.gw.server.close(() => resolve()))
const addr = await gw.gw.listen(0, '::')
const v4 = `http://127.0.0.1:${addr.port}`
const v6 = `http://[::1]:${addr.port}`
/** fetch (undici): the fixture's request() does not take a bracketed host */
async function get (base: string, path: string): Promise<{ status: number, forwardedFor?: string }> {
  const r = await fetch(base + path)
  const body = await r.text()
  return { status: r.status, forwardedFor: r.status === 200 ? (JSON.parse(body) as { headers: Record<string, string> }).headers['x-forwarded-for'] : undefined }
}

t.test('the default listens on ::', async (t) => {
  t.equal(buildConfig({}).listen.host, '::')
  t.equal(addr.address, '::')
})

t.test('an IPv4 client on the dual-stack listener is 127.0.0.1, an IPv6 one ::1', async (t) => {
  t.same(await get(v4, '/v4/x'), { status: 200, forwardedFor: '127.0.0.1' },
    'the IPv4 network rule matches 127.0.0.1 (not ::ffff:127.0.0.1); X-Forwarded-For names it so')
  t.equal((await get(v4, '/v6/x')).status, 403, 'and it is not ::1')
  t.same(await get(v6, '/v6/x'), { status: 200, forwardedFor: '::1' }, 'the IPv6 client matches ::1/128')
  t.equal((await get(v6, '/v4/x')).status, 403)
  const refused = gw.logs.map((l) => JSON.parse(l) as { status?: number, ip?: string }).filter((l) => l.status === 403)
  t.same(refused.map((l) => l.ip), ['127.0.0.1', '::1'], 'the access log names each client as it is')
})

t.test('unmapIp: IPv4-mapped addresses become IPv4; the lockout counts them so', async (t) => {
  t.equal(unmapIp('::ffff:10.1.2.3'), '10.1.2.3')
  t.equal(unmapIp('::FFFF:10.1.2.3'), '10.1.2.3')
  t.equal(unmapIp('::1'), '::1')
  t.equal(unmapIp('10.1.2.3'), '10.1.2.3')
  t.equal(unmapIp('::ffff:1:2'), '::ffff:1:2', 'not a mapped IPv4 address')
  t.equal(addressBucket(unmapIp('::ffff:10.1.2.3'), 64), '10.1.2.3', 'one IPv4 client is one unit, not a /64')
})

/**
 * W3C `baggage` (key=value pairs an upstream's telemetry reads as facts
 * about the request, such as user.id) reaches the upstream only from a peer
 * in server.trusted_proxies, like traceparent: a client's own is removed,
 * tracing on or off, public paths too.
 */
import t from 'tap'
import { request, startEcho } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'

const db = embeddedStore()
const echo = await startEcho()
const common = { upstream: { url: echo.url, public_paths: ['/public'] } }
const untrusting = await startGateway(db.url, common)
const trusting = await startGateway(db.url, { ...common, redis: { url: db.url, prefix: untrusting.config.redis.prefix }, server: { trusted_proxies: ['127.0.0.1'] } })
t.teardown(async () => { await untrusting.close(); await trusting.close(); await echo.close(); await db.stop() })
const alice = await makeUser(untrusting, 'alice')
const token = await untrusting.store.privateTokens.create(alice.id)
const baggage = 'user.id=admin,tenant=acme'

t.test('a client\'s baggage does not reach the upstream; a trusted proxy\'s does', async (t) => {
  for (const path of ['/api/v1/x/', '/public/x']) {
    const r = await request(untrusting.url, path, { headers: { authorization: `Token ${token}`, baggage, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } })
    t.equal(r.status, 200, path)
    t.equal(r.json.headers.baggage, undefined, `${path}: an untrusted peer's baggage is removed`)
    const k = await request(trusting.url, path, { headers: { authorization: `Token ${token}`, baggage } })
    t.equal(k.json.headers.baggage, baggage, `${path}: a trusted proxy's is kept`)
  }
})

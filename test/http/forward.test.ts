/**
 * What the upstream receives and what the client gets back: identity headers
 * (stripped, then injected), credentials withheld, X-Forwarded-*, X-Request-Id,
 * upstream failures (502/504), client aborts, bodies, WebSocket upgrades and
 * public paths. Real gateway on the embedded store, real upstream servers.
 */
import t from 'tap'
import http from 'node:http'
import net from 'node:net'
import { createHash, randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { REFUSED_URL } from '../fixtures/redis.js'
import { startEcho, request, type Echo } from '../fixtures/http.js'
import { embeddedStore, startGateway, type TestGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { eventually } from '../fixtures/wait.js'
import { rawHead, rawRequest, upgrade } from '../fixtures/raw.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const db = embeddedStore()
const echo = await startEcho()
const g = await startGateway(db.url, { upstream: { url: echo.url } })
const gt = await startGateway(db.url, { upstream: { url: echo.url }, server: { trusted_proxies: ['127.0.0.1'] } })
t.teardown(async () => { await g.close(); await gt.close(); await echo.close(); await db.stop() })

const alice = await makeUser(g, 'alice')
const token = await g.store.privateTokens.create(alice.id)
// gt has its own key prefix: a second user and token there
const tim = await makeUser(gt, 'tim')
const timToken = await gt.store.privateTokens.create(tim.id)
const last = (e: Echo = echo): Echo['seen'][number] => e.seen[e.seen.length - 1]
const host = (gw: TestGateway): string => new URL(gw.url).host
const connections = async (s: http.Server | net.Server): Promise<number> =>
  await new Promise((resolve, reject) => s.getConnections((err, n) => err ? reject(err) : resolve(n)))
/** The gateway's request log line for a request id. */
function logLine (gw: TestGateway, reqId: string): any {
  return gw.logs.map((l) => JSON.parse(l)).find((o) => o.msg === 'request' && o.reqId === reqId)
}

t.test('client-sent identity headers never reach the upstream, in any case or number', async (t) => {
  const n = echo.seen.length
  const r = await request(g.url, '/api/v1/assets/', {
    rawHeaders: [
      'Host', host(g),
      'Authorization', `Token ${token}`,
      'X-SVC-User-Id', '11111111-1111-4111-8111-111111111111',
      'x-svc-user-id', 'forged-2',
      'X-SVC-USER-ID', 'forged-3',
      'x-svc-username', 'admin',
      'X-Svc-Username', 'root',
      'X-Svc-Auth-Method', 'session',
      'x-svc-auth-method', 'access_key',
      'x-Svc-Org', DEFAULT_ORG.toUpperCase()
    ]
  })
  t.equal(r.status, 200)
  t.equal(echo.seen.length, n + 1)
  const h = last().headers
  t.equal(h['x-svc-user-id'], alice.id, 'exactly the resolved user id, no forged copy joined in')
  t.equal(h['x-svc-username'], 'alice')
  t.equal(h['x-svc-auth-method'], 'private_token')
  t.equal(h['x-svc-org'], DEFAULT_ORG, 'the resolved org, normalised')
  t.equal(JSON.stringify(h).includes('forged'), false)
  t.equal(JSON.stringify(h).includes('root'), false)
})

t.test('hop-by-hop request headers are not forwarded (an upgrade keeps them: see the WebSocket tests)', async (t) => {
  const r = await request(g.url, '/hop', {
    rawHeaders: ['Host', host(g), 'Authorization', `Token ${token}`, 'Keep-Alive', 'timeout=5', 'Proxy-Connection', 'keep-alive', 'Upgrade', 'h2c', 'X-Kept', '1']
  })
  t.equal(r.status, 200, 'forwarded: undici refuses these, so they never reach it')
  const h = last().headers
  t.equal(h['keep-alive'], undefined)
  t.equal(h['proxy-connection'], undefined)
  t.equal(h.upgrade, undefined)
  t.equal(h['x-kept'], '1')
})

t.test('underscore spellings of the identity headers are dropped too (WSGI/ASGI read them as the same header)', async (t) => {
  const r = await request(g.url, '/x', {
    rawHeaders: [
      'Host', host(g),
      'Authorization', `Token ${token}`,
      'X_SVC_User_Id', 'forged',
      'x_svc_username', 'admin',
      'X-SVC_Auth-Method', 'session',
      'x_svc_org', '00000000-0000-0000-0000-000000000000',
      'X_Forwarded_For', '6.6.6.6',
      'x_request_id', 'forged-id',
      'x_custom_header', 'kept'
    ]
  })
  t.equal(r.status, 200)
  const h = last().headers
  t.same(Object.keys(h).filter((k) => k.includes('_')), ['x_custom_header'], 'only headers sidegate does not own keep their underscores')
  t.equal(h.x_custom_header, 'kept')
  t.equal(h['x-svc-user-id'], alice.id)
  t.equal(h['x-forwarded-for'], '127.0.0.1')
})

t.test('a user with a non-ASCII name is injected percent-encoded', async (t) => {
  const u = await makeUser(g, 'zoë')
  const tok = await g.store.privateTokens.create(u.id)
  const r = await request(g.url, '/x', { headers: { authorization: `Token ${tok}` } })
  t.equal(r.status, 200)
  t.equal(last().headers['x-svc-username'], 'zo%C3%AB')
  t.equal(last().headers['x-svc-user-id'], u.id)
})

t.test('Authorization and sidegate\'s cookies are not forwarded; other cookies are', async (t) => {
  const r = await request(g.url, '/x', {
    headers: {
      authorization: `Token ${token}`,
      cookie: 'theme=dark; svc_sessionid=s1; sessionid=s2; lang=en; svc_csrftoken=c1; csrftoken=django; svc_mfa=v1.pending'
    }
  })
  t.equal(r.status, 200)
  const h = last().headers
  t.equal(h.authorization, undefined)
  t.equal(h.cookie, 'theme=dark; lang=en; csrftoken=django')
  await request(g.url, '/x', { headers: { authorization: `Token ${token}`, cookie: 'svc_sessionid=s1; svc_csrftoken=c1' } })
  t.equal(last().headers.cookie, undefined, 'no Cookie header at all when only sidegate\'s cookies were sent')

  const s = await g.store.sessions.create(alice.id, 60)
  const viaSession = await request(g.url, '/x', { headers: { cookie: `a=1; svc_sessionid=${s.id}; b=2` } })
  t.equal(viaSession.status, 200)
  t.equal(last().headers['x-svc-auth-method'], 'session')
  t.equal(last().headers.cookie, 'a=1; b=2')
  t.notOk(JSON.stringify(last().headers).includes(s.id), 'the session id appears nowhere upstream')
})

t.test('X-Forwarded-*: a client\'s values are replaced unless it is a trusted proxy', async (t) => {
  const fake = { 'x-forwarded-for': '6.6.6.6', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example', 'x-request-id': 'xff-untrusted' }
  const r = await request(g.url, '/x', { headers: { authorization: `Token ${token}`, ...fake } })
  t.equal(r.status, 200)
  let h = last().headers
  t.equal(h['x-forwarded-for'], '127.0.0.1', 'the peer address only')
  t.equal(h['x-forwarded-proto'], 'http')
  t.equal(h['x-forwarded-host'], host(g))
  t.equal(logLine(g, 'xff-untrusted')?.ip, '127.0.0.1', 'logged client ip is the peer')

  await request(g.url, '/x', { headers: { authorization: `Token ${token}` } })
  h = last().headers
  t.equal(h['x-forwarded-for'], '127.0.0.1', 'set when absent')
  t.equal(h['x-forwarded-proto'], 'http')
  t.equal(h['x-forwarded-host'], host(g))

  // the peer (127.0.0.1) is in server.trusted_proxies
  const tr = await request(gt.url, '/x', { headers: { authorization: `Token ${timToken}`, ...fake, 'x-request-id': 'xff-trusted' } })
  t.equal(tr.status, 200)
  h = last().headers
  t.equal(h['x-svc-user-id'], tim.id)
  t.equal(h['x-forwarded-for'], '6.6.6.6, 127.0.0.1', 'appended')
  t.equal(h['x-forwarded-proto'], 'https', 'kept from the trusted proxy')
  t.equal(h['x-forwarded-host'], 'evil.example')
  t.equal(logLine(gt, 'xff-trusted')?.ip, '6.6.6.6', 'client ip taken from the trusted proxy')

  await request(gt.url, '/x', { headers: { authorization: `Token ${timToken}` } })
  h = last().headers
  t.equal(h['x-forwarded-for'], '127.0.0.1', 'trusted proxy that sent none')
  t.equal(h['x-forwarded-proto'], 'http')
  t.equal(h['x-forwarded-host'], host(gt))
})

t.test('client ip behind a trusted proxy: the nearest address no trusted proxy vouches for', async (t) => {
  // the client at 10.0.0.5 forged "1.1.1.1"; the trusted proxy appended the address it saw
  await request(gt.url, '/x', { headers: { authorization: `Token ${timToken}`, 'x-forwarded-for': '1.1.1.1, 10.0.0.5', 'x-request-id': 'xff-chain' } })
  t.equal(last().headers['x-forwarded-for'], '1.1.1.1, 10.0.0.5, 127.0.0.1')
  t.equal(logLine(gt, 'xff-chain')?.ip, '10.0.0.5', 'not the forgeable leftmost entry')

  const g2 = await startGateway(db.url, { upstream: { url: echo.url }, server: { trusted_proxies: ['127.0.0.1', '10.0.0.5'] } })
  t.teardown(() => g2.close())
  const u = await makeUser(g2, 'chain')
  const tok = await g2.store.privateTokens.create(u.id)
  await request(g2.url, '/x', { headers: { authorization: `Token ${tok}`, 'x-forwarded-for': '1.1.1.1, 10.0.0.5', 'x-request-id': 'xff-chain2' } })
  t.equal(logLine(g2, 'xff-chain2')?.ip, '1.1.1.1', 'both hops trusted: the address the first proxy saw')
})

t.test('X-Request-Id: propagated when well-formed, else a new UUID; always returned', async (t) => {
  const r = await request(g.url, '/x', { headers: { authorization: `Token ${token}`, 'x-request-id': 'req-42.a:b@c/d+e=f' } })
  t.equal(r.headers['x-request-id'], 'req-42.a:b@c/d+e=f')
  t.equal(last().headers['x-request-id'], 'req-42.a:b@c/d+e=f')

  const none = await request(g.url, '/x', { headers: { authorization: `Token ${token}` } })
  t.match(none.headers['x-request-id'], UUID)
  t.equal(last().headers['x-request-id'], none.headers['x-request-id'], 'the upstream sees the id the client gets')

  for (const bad of ['has space', 'x'.repeat(129), 'semi;colon', 'quote"d', '']) {
    const m = await request(g.url, '/x', { headers: { authorization: `Token ${token}`, 'x-request-id': bad } })
    t.match(m.headers['x-request-id'], UUID, JSON.stringify(bad.slice(0, 20)))
    t.equal(last().headers['x-request-id'], m.headers['x-request-id'])
  }
  const dup = await request(g.url, '/x', { rawHeaders: ['Host', host(g), 'Authorization', `Token ${token}`, 'X-Request-Id', 'one', 'x-request-id', 'two'] })
  t.match(dup.headers['x-request-id'], UUID, 'two ids are one too many')
  t.equal(last().headers['x-request-id'], dup.headers['x-request-id'])

  const n = echo.seen.length
  const denied = await request(g.url, '/x', { headers: { 'x-request-id': 'denied-1' } })
  t.equal(denied.status, 401)
  t.equal(denied.headers['x-request-id'], 'denied-1', 'returned on errors too')
  const deniedNew = await request(g.url, '/x')
  t.match(deniedNew.headers['x-request-id'], UUID)
  t.equal(echo.seen.length, n)
})

t.test('upstream refused: 502 upstream_unavailable', async (t) => {
  const g2 = await startGateway(db.url, { upstream: { url: REFUSED_URL } })
  t.teardown(() => g2.close())
  const u = await makeUser(g2, 'refused')
  const tok = await g2.store.privateTokens.create(u.id)
  const r = await request(g2.url, '/x', { headers: { authorization: `Token ${tok}`, 'x-request-id': 'refused-1' } })
  t.equal(r.status, 502)
  t.same(r.json, { detail: 'The upstream service is unavailable.', code: 'upstream_unavailable' })
  t.equal(r.headers['x-request-id'], 'refused-1')
  t.equal(r.headers['content-type'], 'application/json')
  const ws = await upgrade(g2.url, '/ws', { authorization: `Token ${tok}` })
  t.match(ws.head, /^HTTP\/1\.1 502 /, 'websocket to a refused upstream: 502 too')
  t.equal(JSON.parse(ws.body).code, 'upstream_unavailable')
  t.equal((await request(g2.url, '/healthz')).status, 200, 'still serving')
})

t.test('upstream slower than upstream.timeout: 504 upstream_timeout', async (t) => {
  const g2 = await startGateway(db.url, { upstream: { url: echo.url, timeout: 1 } })
  t.teardown(() => g2.close())
  const u = await makeUser(g2, 'patient')
  const tok = await g2.store.privateTokens.create(u.id)
  const start = Date.now()
  // the upstream would answer after 20 s, the default timeout is 30 s: a 504 well before either is the 1 s setting's
  const r = await request(g2.url, '/slow/20000', { headers: { authorization: `Token ${tok}` } })
  const took = Date.now() - start
  t.equal(r.status, 504)
  t.same(r.json, { detail: 'The upstream service did not answer in time.', code: 'upstream_timeout' })
  t.ok(took >= 900 && took < 10_000, `answered after the 1 s timeout (${took} ms), not the upstream's 20 s`)
  const fast = await request(g2.url, '/slow/200', { headers: { authorization: `Token ${tok}` } })
  t.equal(fast.status, 200, 'faster than the timeout is fine')
})

t.test('client aborts while a slow upstream works: nothing leaks, the gateway keeps serving', async (t) => {
  const up = await startEcho()
  const g2 = await startGateway(db.url, { upstream: { url: up.url } })
  t.teardown(async () => { await g2.close(); await up.close() })
  const u = await makeUser(g2, 'quitter')
  const tok = await g2.store.privateTokens.create(u.id)
  const gwUrl = new URL(g2.url)

  // GET, aborted while waiting for the answer
  await new Promise<void>((resolve) => {
    const req = http.request({ host: gwUrl.hostname, port: gwUrl.port, path: '/slow/20000', headers: { authorization: `Token ${tok}` }, agent: false })
    req.on('error', () => resolve())
    req.end()
    const wait = setInterval(() => {
      if (up.seen.length > 0) { clearInterval(wait); req.destroy() }
    }, 10)
  })
  t.equal(up.seen.length, 1, 'the upstream got the request')
  t.ok(await eventually(async () => await connections(up.server) === 0), 'the upstream connection was closed, not left waiting')
  t.ok(await eventually(async () => await connections(g2.gw.server) === 0), 'no client connection left on the gateway')

  // POST, aborted halfway through the body
  await new Promise<void>((resolve) => {
    const req = http.request({ host: gwUrl.hostname, port: gwUrl.port, method: 'POST', path: '/slow/20000', headers: { authorization: `Token ${tok}`, 'content-length': '100000' }, agent: false })
    req.on('error', () => resolve())
    req.write('x'.repeat(5000))
    const wait = setInterval(() => {
      if (up.seen.length > 1) { clearInterval(wait); req.destroy() }
    }, 10)
  })
  t.ok(await eventually(async () => await connections(up.server) === 0), 'upstream connection closed after a half-sent body')
  t.ok(await eventually(async () => await connections(g2.gw.server) === 0))

  const next = await request(g2.url, '/x', { headers: { authorization: `Token ${tok}` } })
  t.equal(next.status, 200, 'the next request is served')
  t.equal(next.json.headers['x-svc-user-id'], u.id)
  const errors = g2.logs.map((l) => JSON.parse(l)).filter((o) => o.level >= 50)
  t.same(errors, [], 'no error logged for a client that went away')
})

/** An upstream that answers with the size and hash of the body it received. */
async function startBodyEcho (): Promise<{ url: string, close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const h = createHash('sha256')
    let size = 0
    req.on('data', (c: Buffer) => { h.update(c); size += c.length })
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      size, sha256: h.digest('hex'), method: req.method, te: req.headers['transfer-encoding'] ?? null, cl: req.headers['content-length'] ?? null, type: req.headers['content-type'], user: req.headers['x-svc-user-id']
    })))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close () { server.closeAllConnections(); await new Promise<void>((resolve) => server.close(() => resolve())) }
  }
}

t.test('request bodies are streamed to the upstream intact (beyond server.body_limit)', async (t) => {
  const up = await startBodyEcho()
  const g2 = await startGateway(db.url, { upstream: { url: up.url } })
  t.teardown(async () => { await g2.close(); await up.close() })
  const u = await makeUser(g2, 'uploader')
  const tok = await g2.store.privateTokens.create(u.id)

  const body = randomBytes(3 * 1024 * 1024 + 7)
  const sha = createHash('sha256').update(body).digest('hex')
  const r = await request(g2.url, '/upload', { method: 'POST', body, headers: { authorization: `Token ${tok}`, 'content-type': 'application/octet-stream' } })
  t.equal(r.status, 200)
  t.same(r.json, { size: body.length, sha256: sha, method: 'POST', te: null, cl: String(body.length), type: 'application/octet-stream', user: u.id })

  // chunked, written piece by piece with pauses: the upstream gets it as it comes
  const gwUrl = new URL(g2.url)
  const chunked = await new Promise<any>((resolve, reject) => {
    const req = http.request({ host: gwUrl.hostname, port: gwUrl.port, method: 'PUT', path: '/upload', headers: { authorization: `Token ${tok}`, 'content-type': 'application/json' }, agent: false }, (res) => {
      let text = ''
      res.on('data', (c: Buffer) => { text += c.toString() })
      res.on('end', () => resolve(JSON.parse(text)))
    })
    req.on('error', reject)
    let i = 0
    const step = (): void => {
      if (i === 10) { req.end(); return }
      req.write(body.subarray(i * 1000, (i + 1) * 1000))
      i++
      setTimeout(step, 20)
    }
    step()
  })
  t.equal(chunked.te, 'chunked')
  t.equal(chunked.size, 10_000)
  t.equal(chunked.sha256, createHash('sha256').update(body.subarray(0, 10_000)).digest('hex'))
  t.equal(chunked.method, 'PUT')
})

async function roundTrip (s: net.Socket, data: string): Promise<string> {
  return await new Promise((resolve) => {
    let got = ''
    const on = (c: Buffer): void => {
      got += c.toString()
      if (got.length >= data.length) { s.off('data', on); resolve(got) }
    }
    s.on('data', on)
    s.write(data)
  })
}

t.test('WebSocket upgrade: authenticated, identity injected, bytes proxied both ways', async (t) => {
  const n = echo.seen.length
  const ws = await upgrade(g.url, '/ws?room=1', { Authorization: `Token ${token}`, 'X-SVC-User-Id': 'forged', 'X-SVC-ORG': DEFAULT_ORG, Cookie: 'svc_sessionid=x; keep=1' })
  t.match(ws.head, /^HTTP\/1\.1 101 /)
  t.match(ws.head, /\r\nupgrade: websocket/i)
  t.equal(echo.seen.length, n + 1)
  const h = last().headers
  t.equal(last().url, '/ws?room=1')
  t.equal(h['x-svc-user-id'], alice.id)
  t.equal(h['x-svc-username'], 'alice')
  t.equal(h['x-svc-auth-method'], 'private_token')
  t.equal(h['x-svc-org'], DEFAULT_ORG)
  t.equal(h.authorization, undefined)
  t.equal(h.cookie, 'keep=1')
  t.equal(h['x-forwarded-for'], '127.0.0.1')
  t.match(h['x-request-id'], UUID)
  t.equal(await roundTrip(ws.socket, 'hello through the gateway'), 'hello through the gateway')
  t.equal(await roundTrip(ws.socket, '\u0000\u00ff binary-ish'), '\u0000\u00ff binary-ish')
  ws.socket.destroy()
})

t.test('WebSocket: closing either side closes the other', async (t) => {
  const up = await startEcho()
  const g2 = await startGateway(db.url, { upstream: { url: up.url } })
  t.teardown(async () => { await g2.close(); await up.close() })
  const upstreamSockets: net.Socket[] = []
  up.server.on('upgrade', (_req, socket: net.Socket) => { upstreamSockets.push(socket) })
  const u = await makeUser(g2, 'wsuser')
  const tok = await g2.store.privateTokens.create(u.id)

  const a = await upgrade(g2.url, '/ws', { Authorization: `Token ${tok}` })
  t.equal(await roundTrip(a.socket, 'ping'), 'ping')
  t.equal(await connections(up.server), 1)
  t.equal(await connections(g2.gw.server), 1)
  a.socket.destroy()
  t.ok(await eventually(async () => await connections(up.server) === 0), 'client gone: upstream socket closed')
  t.ok(await eventually(async () => await connections(g2.gw.server) === 0), 'and the gateway holds nothing')

  const b = await upgrade(g2.url, '/ws', { Authorization: `Token ${tok}` })
  t.equal(await roundTrip(b.socket, 'pong'), 'pong')
  const ended = new Promise<void>((resolve) => b.socket.once('close', () => resolve()))
  t.equal(upstreamSockets.length, 2)
  upstreamSockets[1].destroy()
  await ended
  t.pass('upstream gone: client socket closed')
  t.ok(await eventually(async () => await connections(g2.gw.server) === 0), 'and the gateway holds nothing')
})

t.test('WebSocket upgrade without a credential: 401 JSON, never reaches the upstream', async (t) => {
  const n = echo.seen.length
  const ws = await upgrade(g.url, '/ws', { 'X-SVC-User-Id': alice.id })
  t.match(ws.head, /^HTTP\/1\.1 401 Unauthorized\r\n/)
  t.match(ws.head, /\r\nContent-Type: application\/json\r\n/)
  t.match(ws.head, /\r\nWWW-Authenticate: Bearer/)
  t.same(JSON.parse(ws.body), { detail: 'Authentication credentials were not provided.', code: 'not_authenticated' })
  const bad = await upgrade(g.url, '/ws', { Authorization: 'Token not-a-real-token' })
  t.match(bad.head, /^HTTP\/1\.1 401 /)
  t.equal(JSON.parse(bad.body).code, 'invalid_token')
  const org = await upgrade(g.url, '/ws', { Authorization: `Token ${token}`, 'X-SVC-ORG': 'nope' })
  t.match(org.head, /^HTTP\/1\.1 400 /)
  t.equal(JSON.parse(org.body).code, 'invalid_org')
  t.equal(echo.seen.length, n, 'no upgrade reached the upstream')
})

t.test('public paths: forwarded without a credential, identity headers and credentials still stripped', async (t) => {
  const g2 = await startGateway(db.url, { upstream: { url: echo.url, public_paths: ['/public/'] } })
  t.teardown(() => g2.close())
  const u = await makeUser(g2, 'pub')
  const tok = await g2.store.privateTokens.create(u.id)

  const r = await request(g2.url, '/public/page?x=1', {
    rawHeaders: ['Host', host(g2), 'X-SVC-User-Id', alice.id, 'x-svc-username', 'admin', 'X-SVC-Auth-Method', 'session', 'X-SVC-ORG', DEFAULT_ORG, 'X_SVC_User_Id', 'forged', 'X-Forwarded-For', '6.6.6.6']
  })
  t.equal(r.status, 200)
  let h = last().headers
  t.equal(last().url, '/public/page?x=1')
  for (const k of ['x-svc-user-id', 'x-svc-username', 'x-svc-auth-method', 'x-svc-org', 'x_svc_user_id']) t.equal(h[k], undefined, k)
  t.equal(h['x-forwarded-for'], '127.0.0.1')
  t.match(h['x-request-id'], UUID)

  // a client that always sends its credential does not leak it to a public path
  const s = await g2.store.sessions.create(u.id, 60)
  await request(g2.url, '/public/page', { headers: { authorization: `Token ${tok}`, cookie: `svc_sessionid=${s.id}; svc_csrftoken=${s.csrf}; theme=dark` } })
  h = last().headers
  t.equal(h.authorization, undefined, 'Authorization withheld on public paths too')
  t.equal(h.cookie, 'theme=dark')
  t.equal(h['x-svc-user-id'], undefined, 'and no identity is injected')

  const n = echo.seen.length
  for (const p of ['/public', '/publicity/', '/api/public/x', '/PUBLIC/x']) {
    const d = await request(g2.url, p)
    t.equal(d.status, 401, `${p} is not public`)
  }
  t.equal(echo.seen.length, n)
})

t.test('public paths: dot segments cannot climb out of the public prefix', async (t) => {
  const g2 = await startGateway(db.url, { upstream: { url: echo.url, public_paths: ['/public/'] } })
  t.teardown(() => g2.close())
  const u = await makeUser(g2, 'climber')
  const tok = await g2.store.privateTokens.create(u.id)
  const n = echo.seen.length
  for (const p of ['/public/../api/v1/users/users/', '/public/%2e%2e/api/v1/x', '/public/%2E%2e/x', '/public/.%2e/x', '/public/..%2fapi/x', '/public/..\\api/x', '/public/./x', '/public/a/../../x', '/public/..;/api/x', '/public/%252e%252e/x', '/public/%zz/../x']) {
    const d = await request(g2.url, p)
    t.equal(d.status, 401, `${p} needs a credential`)
    t.equal(d.json.code, 'not_authenticated')
  }
  t.equal(echo.seen.length, n, 'none reached the upstream')
  const authed = await request(g2.url, '/public/../x', { headers: { authorization: `Token ${tok}` } })
  t.equal(authed.status, 200, 'with a credential it is an ordinary protected request')
  t.equal(last().headers['x-svc-user-id'], u.id)
  const fine = await request(g2.url, '/public/a..b/.well-known/x')
  t.equal(fine.status, 200, 'dots inside a segment are harmless')
})

t.test('public paths match whole segments: /status covers /status and /status/…, never /status-admin', async (t) => {
  const g2 = await startGateway(db.url, { upstream: { url: echo.url, public_paths: ['/status', '/static/', '/healthcheck'] } })
  t.teardown(() => g2.close())
  for (const p of ['/status', '/status/', '/status/x?y=1', '/static/', '/static/app.css', '/healthcheck']) {
    const r = await request(g2.url, p)
    t.equal(r.status, 200, `${p} is public`)
    t.equal(last().url, p)
  }
  const n = echo.seen.length
  for (const p of ['/status-admin/delete', '/statusx', '/status.json', '/status;x', '/status%2Fadmin', '/static', '/staticfiles/x', '/healthcheck2', '/Status']) {
    const r = await request(g2.url, p)
    t.equal(r.status, 401, `${p} needs a credential`)
  }
  t.equal(echo.seen.length, n, 'none reached the upstream')
  const warned = g2.logs.map((l) => JSON.parse(l)).filter((o) => o.level === 40 && /public_paths/.test(o.msg))
  t.equal(warned.length, 1, 'one warning at start for the entries without a trailing slash')
  t.same(warned[0]?.entries, ['/status', '/healthcheck'])
  const g3 = await startGateway(db.url, { upstream: { url: echo.url, public_paths: ['/public/'] } })
  t.teardown(() => g3.close())
  t.notOk(g3.logs.some((l) => /public_paths/.test(l)), 'none when every entry ends in /')
})

t.test('with an upstream, every path but sidegate\'s own is forwarded; without one, unknown paths are 404', async (t) => {
  const r = await request(g.url, '/api/v1/users/users/', { headers: { authorization: `Token ${token}` } })
  t.equal(r.status, 200)
  t.equal(last().url, '/api/v1/users/users/', 'the built-in demo API is off when an upstream is set')
  const gb = await startGateway(db.url, {})
  t.teardown(() => gb.close())
  const nf = await request(gb.url, '/api/v1/assets/')
  t.equal(nf.status, 404)
  t.same(nf.json, { detail: 'Not found.', code: 'not_found' })
  const nfws = await upgrade(gb.url, '/ws', {})
  t.match(nfws.head, /^HTTP\/1\.1 404 /)
  t.equal(JSON.parse(nfws.body).code, 'not_found')
})

t.test('trusted_proxies takes CIDR ranges; X-Forwarded-For is read from the right, skipping trusted hops', async (t) => {
  const g2 = await startGateway(db.url, { upstream: { url: echo.url }, server: { trusted_proxies: ['127.0.0.0/8', '10.0.0.0/8'] } })
  t.teardown(() => g2.close())
  const u = await makeUser(g2, 'cidr')
  const tok = await g2.store.privateTokens.create(u.id)
  // client forged 6.6.6.6; 203.0.113.9 reached a proxy at 10.1.2.3, which reached a proxy at 10.200.0.1
  await request(g2.url, '/x', { headers: { authorization: `Token ${tok}`, 'x-forwarded-for': '6.6.6.6, 203.0.113.9, 10.1.2.3, 10.200.0.1', 'x-forwarded-proto': 'https', 'x-request-id': 'cidr-1' } })
  t.equal(logLine(g2, 'cidr-1')?.ip, '203.0.113.9', 'every hop inside 10.0.0.0/8 is skipped, the forged entry is not reached')
  t.equal(last().headers['x-forwarded-proto'], 'https', 'a peer inside 127.0.0.0/8 is trusted')
  t.equal(last().headers['x-forwarded-for'], '6.6.6.6, 203.0.113.9, 10.1.2.3, 10.200.0.1, 127.0.0.1')
  // a garbage entry vouched for by trusted proxies is the client
  // (fail closed: it matches no allow-list), never the proxy
  await request(g2.url, '/x', { headers: { authorization: `Token ${tok}`, 'x-forwarded-for': '6.6.6.6, not-an-ip, 10.1.2.3', 'x-request-id': 'cidr-2' } })
  t.equal(logLine(g2, 'cidr-2')?.ip, 'not-an-ip')
  await request(g2.url, '/x', { headers: { authorization: `Token ${tok}`, 'x-forwarded-for': '6.6.6.6, 203.0.113.9:5555, 10.1.2.3:80', 'x-request-id': 'cidr-4' } })
  t.equal(logLine(g2, 'cidr-4')?.ip, '203.0.113.9', 'hops with ports: the port is dropped, the trusted hop skipped')
  // g trusts nobody: none of this is believed
  await request(g.url, '/x', { headers: { authorization: `Token ${token}`, 'x-forwarded-for': '203.0.113.9', 'x-request-id': 'cidr-3' } })
  t.equal(logLine(g, 'cidr-3')?.ip, '127.0.0.1')
})

t.test('Forwarded and X-Real-IP from an untrusted client never reach the upstream; a trusted proxy\'s are kept', async (t) => {
  const forged = { forwarded: 'for=6.6.6.6;proto=https;host=evil.example', 'x-real-ip': '6.6.6.6', X_Real_IP: '6.6.6.6' }
  await request(g.url, '/x', { headers: { authorization: `Token ${token}`, ...forged } })
  let h = last().headers
  t.equal(h.forwarded, undefined, 'Forwarded stripped')
  t.equal(h['x-real-ip'], undefined, 'X-Real-IP stripped')
  t.equal(h.x_real_ip, undefined, 'and its underscore spelling')
  const g2 = await startGateway(db.url, { upstream: { url: echo.url, public_paths: ['/pub/'] } })
  t.teardown(() => g2.close())
  await request(g2.url, '/pub/x', { headers: forged })
  h = last().headers
  t.equal(h.forwarded, undefined, 'on public paths too')
  t.equal(h['x-real-ip'], undefined)
  await request(gt.url, '/x', { headers: { authorization: `Token ${timToken}`, forwarded: 'for=198.51.100.1', 'x-real-ip': '198.51.100.1' } })
  h = last().headers
  t.equal(h.forwarded, 'for=198.51.100.1', 'from a trusted proxy: kept')
  t.equal(h['x-real-ip'], '198.51.100.1')
})

/** Headers an upstream may believe about the client or the request, that only a trusted proxy may set. */
const FORWARDING = {
  'X-Forwarded-Port': '8443',
  'X-Forwarded-Prefix': '/admin',
  'X-Forwarded-Server': 'evil',
  'X-Forwarded-Scheme': 'https',
  'X-Forwarded-Ssl': 'on',
  'X-Forwarded-User': 'admin',
  'X-Forwarded-Email': 'admin@example.com',
  'X-Forwarded': 'for=6.6.6.6',
  'True-Client-IP': '6.6.6.6',
  'X-Client-IP': '6.6.6.6',
  'CF-Connecting-IP': '6.6.6.6',
  'X-Cluster-Client-IP': '6.6.6.6',
  'Fastly-Client-IP': '6.6.6.6',
  'Client-IP': '6.6.6.6',
  'X-Original-URL': '/admin/delete',
  'X-Rewrite-URL': '/admin/delete',
  'X-Original-URI': '/admin/delete',
  'X-Original-Host': 'evil.example',
  'X-Host': 'evil.example',
  'Remote-User': 'admin',
  'X-Remote-User': 'admin',
  'X-Auth-Request-User': 'admin',
  'X-Auth-Request-Email': 'admin@example.com',
  'X-Auth-Request-Groups': 'admins'
}
const FORWARDING_UNDERSCORE = { X_Forwarded_Port: '8443', x_original_url: '/admin/delete', Remote_User: 'admin', X_Auth_Request_User: 'admin', True_Client_IP: '6.6.6.6', 'X-Forwarded_Prefix': '/admin' }

t.test('forwarding headers from an untrusted peer never reach the upstream (any X-Forwarded-*, client-IP, original-URL and remote-user headers)', async (t) => {
  await request(g.url, '/x', { headers: { authorization: `Token ${token}`, ...FORWARDING, ...FORWARDING_UNDERSCORE, 'X-Custom': 'kept' } })
  let h = last().headers
  for (const k of [...Object.keys(FORWARDING), ...Object.keys(FORWARDING_UNDERSCORE)]) t.equal(h[k.toLowerCase()], undefined, `${k} stripped`)
  t.equal(h['x-custom'], 'kept', 'other headers pass')
  t.equal(h['x-forwarded-for'], '127.0.0.1')
  t.equal(h['x-forwarded-proto'], 'http')
  t.equal(h['x-forwarded-host'], host(g))

  const g2 = await startGateway(db.url, { upstream: { url: echo.url, public_paths: ['/pub/'] } })
  t.teardown(() => g2.close())
  await request(g2.url, '/pub/x', { headers: { ...FORWARDING, ...FORWARDING_UNDERSCORE } })
  h = last().headers
  for (const k of [...Object.keys(FORWARDING), ...Object.keys(FORWARDING_UNDERSCORE)]) t.equal(h[k.toLowerCase()], undefined, `${k} stripped on a public path`)

  // a trusted proxy sets these itself: kept; their _ spellings no proxy sends are dropped
  await request(gt.url, '/x', { headers: { authorization: `Token ${timToken}`, ...FORWARDING, ...FORWARDING_UNDERSCORE } })
  h = last().headers
  for (const [k, v] of Object.entries(FORWARDING)) t.equal(h[k.toLowerCase()], v, `${k} kept from a trusted proxy`)
  for (const k of Object.keys(FORWARDING_UNDERSCORE)) t.equal(h[k.toLowerCase()], undefined, `${k} dropped even from a trusted proxy`)
})

t.test('X-CSRFToken and the identity headers of both families (SVC and JMS) never reach the upstream', async (t) => {
  const s = await g.store.sessions.create(alice.id, 60)
  const forged = { 'X-JMS-User-Id': 'forged', 'X-JMS-Username': 'admin', 'X-JMS-ORG': '00000000-0000-0000-0000-000000000000', 'X-JMS-Auth-Method': 'session', X_JMS_User_Id: 'forged', x_jms_org: 'forged', X_CSRFToken: 'c' }
  const r = await request(g.url, '/x', { method: 'POST', headers: { cookie: `svc_sessionid=${s.id}; svc_csrftoken=${s.csrf}`, 'x-csrftoken': s.csrf, ...forged }, body: '{}' })
  t.equal(r.status, 200, 'the CSRF token was checked')
  const h = last().headers
  t.equal(h['x-csrftoken'], undefined, 'X-CSRFToken not forwarded')
  for (const k of Object.keys(forged)) t.equal(h[k.toLowerCase()], undefined, `${k} stripped on an SVC gateway`)
  t.notOk(JSON.stringify(h).includes(s.csrf), 'the CSRF token appears nowhere upstream')
  t.equal(h['x-svc-user-id'], alice.id)
  await request(g.url, '/x', { headers: { authorization: `Token ${token}`, 'X-CSRFToken': 'abc' } })
  t.equal(last().headers['x-csrftoken'], undefined, 'with a header credential too')
})

t.test('a request without Host: JSON 400 bad_request, never forwarded', async (t) => {
  const n = echo.seen.length
  const r = await rawRequest(g.url, rawHead('GET', '/x', [['Authorization', `Token ${token}`], ['Connection', 'close']]))
  t.equal(r.status, 400)
  t.equal(r.headers['content-type'], 'application/json')
  t.same(r.json, { detail: 'The Host header is required.', code: 'bad_request' })
  t.match(r.headers['x-request-id'], UUID)
  t.equal(echo.seen.length, n, 'the upstream saw nothing')
  const own = await rawRequest(g.url, rawHead('POST', '/api/v1/authentication/auth/', [['Content-Type', 'application/json'], ['Content-Length', '2'], ['Connection', 'close']]), '{}')
  t.equal(own.status, 400, 'sidegate\'s own endpoints too')
  t.equal(own.json.code, 'bad_request')
  const http10 = await rawRequest(g.url, 'GET /healthz HTTP/1.0\r\n\r\n')
  t.equal(http10.status, 200, 'HTTP/1.0 needs no Host')
})

t.test('an upstream\'s own X-Request-Id does not replace the gateway\'s', async (t) => {
  const up = http.createServer((req, res) => { res.writeHead(200, { 'x-request-id': 'upstream-chose-this', 'content-type': 'application/json' }).end(JSON.stringify({ got: req.headers['x-request-id'] })) })
  await new Promise<void>((resolve) => up.listen(0, '127.0.0.1', resolve))
  const g2 = await startGateway(db.url, { upstream: { url: `http://127.0.0.1:${(up.address() as AddressInfo).port}` } })
  t.teardown(async () => { await g2.close(); up.closeAllConnections(); up.close() })
  const u = await makeUser(g2, 'reqid')
  const tok = await g2.store.privateTokens.create(u.id)
  const a = await request(g2.url, '/x', { headers: { authorization: `Token ${tok}`, 'x-request-id': 'client-42' } })
  t.equal(a.headers['x-request-id'], 'client-42', 'the id the client sent (and the upstream received)')
  t.equal(a.json.got, 'client-42')
  const b = await request(g2.url, '/x', { headers: { authorization: `Token ${tok}` } })
  t.match(b.headers['x-request-id'], UUID, 'the gateway\'s new id')
  t.equal(b.json.got, b.headers['x-request-id'], 'the same one the upstream saw')
  t.equal(logLine(g2, b.headers['x-request-id'] as string)?.status, 200, 'and the one in the gateway log')
})

t.test('WebSocket upgrade to an upstream that never answers: 504 after upstream.timeout', async (t) => {
  const held: net.Socket[] = []
  const up = http.createServer()
  up.on('upgrade', (_req, socket: net.Socket) => { held.push(socket) }) // never answers
  await new Promise<void>((resolve) => up.listen(0, '127.0.0.1', resolve))
  const g2 = await startGateway(db.url, { upstream: { url: `http://127.0.0.1:${(up.address() as AddressInfo).port}`, timeout: 1 } })
  t.teardown(async () => { await g2.close(); for (const s of held) s.destroy(); up.close() })
  const u = await makeUser(g2, 'wsslow')
  const tok = await g2.store.privateTokens.create(u.id)
  const start = Date.now()
  const ws = await upgrade(g2.url, '/ws', { Authorization: `Token ${tok}` })
  const took = Date.now() - start
  t.match(ws.head, /^HTTP\/1\.1 504 /)
  t.equal(JSON.parse(ws.body).code, 'upstream_timeout')
  t.ok(took >= 900 && took < 10_000, `after the 1 s timeout (${took} ms), not the default 30 s`)
  t.ok(await eventually(async () => held.every((s) => s.destroyed || s.readableEnded)), 'the upstream connection was closed')
  t.equal((await request(g2.url, '/healthz')).status, 200)
})

t.test('the upstream\'s repeated response headers (two Set-Cookie) all reach the client, in order', async (t) => {
  const up = http.createServer((req, res) => {
    res.writeHead(req.url === '/204' ? 204 : 200, ['Set-Cookie', 'a=1; Path=/', 'Set-Cookie', 'b=2; Path=/', 'X-Multi', 'one', 'x-multi', 'two', 'Content-Type', 'text/plain', 'X-Request-Id', 'upstream-id'])
    res.end(req.url === '/204' ? undefined : 'body')
  })
  await new Promise<void>((resolve) => up.listen(0, '127.0.0.1', resolve))
  const g2 = await startGateway(db.url, { upstream: { url: `http://127.0.0.1:${(up.address() as AddressInfo).port}`, public_paths: ['/pub/'] } })
  t.teardown(async () => { await g2.close(); up.closeAllConnections(); up.close() })
  const u = await makeUser(g2, 'cookies')
  const tok = await g2.store.privateTokens.create(u.id)
  for (const [path, headers] of [['/pub/x', {}], ['/x', { authorization: `Token ${tok}` }], ['/204', { authorization: `Token ${tok}` }]] as const) {
    const raw = await rawRequest(g2.url, `GET ${path} HTTP/1.1\r\nHost: ${host(g2)}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}X-Request-Id: dup-${path.length}\r\nConnection: close\r\n\r\n`)
    const head = raw.raw.subarray(0, raw.raw.indexOf('\r\n\r\n')).toString('latin1').split('\r\n')
    const values = (name: RegExp): string[] => head.filter((l) => name.test(l)).map((l) => l.slice(l.indexOf(':') + 1).trim())
    t.same(values(/^set-cookie:/i), ['a=1; Path=/', 'b=2; Path=/'], `${path}: both cookies, in order`)
    t.same(values(/^x-multi:/i), ['one', 'two'], `${path}: a repeated header, every copy`)
    t.same(values(/^x-request-id:/i), [`dup-${path.length}`], `${path}: the gateway's request id only`)
    t.equal(raw.body, path === '/204' ? '' : 'body')
  }
})

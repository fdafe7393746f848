/**
 * Limits with clear errors on a real gateway: body size (413), bad JSON (400),
 * content types (415), header size (431), bodies cut off mid-way (400, not 500),
 * each configurable and each a JSON {detail, code}.
 */
import t from 'tap'
import net from 'node:net'
import { request } from '../fixtures/http.js'
import { embeddedStore, startGateway, type TestGateway } from '../fixtures/gateway.js'
import { rawHead, rawRequest } from '../fixtures/raw.js'
import { eventually, sleep } from '../fixtures/wait.js'
import type { IncomingMessage } from 'node:http'

const TOKEN = '/api/v1/authentication/auth/'
const db = embeddedStore()
const g = await startGateway(db.url) // server.body_limit 8192, server.max_header_size 16384 (the defaults)
t.teardown(async () => { await g.close(); await db.stop() })
const json = { 'content-type': 'application/json' }
/** A JSON login body of exactly `size` bytes. */
const bodyOf = (size: number): string => {
  const base = JSON.stringify({ username: 'nobody', password: 'x', pad: '' })
  return JSON.stringify({ username: 'nobody', password: 'x', pad: 'p'.repeat(size - base.length) })
}

t.test('token endpoint: 8 KB bodies pass, one byte more is 413 payload_too_large (declared or streamed)', async (t) => {
  const at = await request(g.url, TOKEN, { method: 'POST', body: bodyOf(8192), headers: json })
  t.equal(at.status, 401, 'exactly 8192 bytes is read (and the login fails)')
  const over = await request(g.url, TOKEN, { method: 'POST', body: bodyOf(8193), headers: json })
  t.equal(over.status, 413)
  t.same(over.json, { detail: 'Request body is too large.', code: 'payload_too_large' })
  t.equal(over.headers.connection, 'close', 'the rest of the body is not read')
  const chunked = await rawRequest(g.url, rawHead('POST', TOKEN, [['Host', 'x'], ['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked'], ['Connection', 'close']]),
    `2000\r\n${'a'.repeat(0x2000)}\r\n10\r\n${'b'.repeat(16)}\r\n0\r\n\r\n`)
  t.equal(chunked.status, 413, 'chunked, 8208 bytes')
  t.equal(chunked.json.code, 'payload_too_large')
})

t.test('bad JSON 400 parse_error, unsupported type 415, on every endpoint that reads a body', async (t) => {
  for (const path of [TOKEN, '/login']) {
    const bad = await request(g.url, path, { method: 'POST', body: '{"username": ', headers: json })
    t.equal(bad.status, 400, `${path}: bad JSON`)
    t.equal(bad.json.code, 'parse_error')
    const type = await request(g.url, path, { method: 'POST', body: '<xml/>', headers: { 'content-type': 'application/xml' } })
    t.equal(type.status, 415, `${path}: xml`)
    t.equal(type.json.code, 'unsupported_media_type')
  }
})

t.test('server.body_limit is configurable', async (t) => {
  const small = await startGateway(db.url, { server: { body_limit: 512 } })
  t.teardown(() => small.close())
  t.equal((await request(small.url, TOKEN, { method: 'POST', body: bodyOf(512), headers: json })).status, 401)
  const r = await request(small.url, TOKEN, { method: 'POST', body: bodyOf(513), headers: json })
  t.equal(r.status, 413)
  t.equal(r.json.code, 'payload_too_large')
})

t.test('headers over server.max_header_size: 431 headers_too_large, JSON; configurable', async (t) => {
  const ok = await request(g.url, '/healthz', { headers: { 'x-pad': 'a'.repeat(12_000) } })
  t.equal(ok.status, 200, '12 KB of headers fit the 16 KB default')
  const big = await rawRequest(g.url, rawHead('GET', '/api/v1/users/profile/', [['Host', 'x'], ['X-Pad', 'a'.repeat(20_000)], ['Connection', 'close']]))
  t.equal(big.status, 431)
  t.equal(big.headers['content-type'], 'application/json')
  t.same(big.json, { detail: 'Request headers are too large.', code: 'headers_too_large' })

  const tight = await startGateway(db.url, { server: { max_header_size: 4096 } })
  t.teardown(() => tight.close())
  t.equal((await request(tight.url, '/healthz', { headers: { 'x-pad': 'a'.repeat(3000) } })).status, 200)
  const r = await rawRequest(tight.url, rawHead('GET', '/healthz', [['Host', 'x'], ['X-Pad', 'a'.repeat(6000)], ['Connection', 'close']]))
  t.equal(r.status, 431, '6 KB is over a 4 KB limit')
  t.equal(r.json.code, 'headers_too_large')
})

/**
 * Sends a head promising `declared` bytes and `sent` of them, then, once the
 * gateway has the request (not after a fixed delay: a reset that comes first
 * would discard the unread bytes), resets the connection.
 */
async function cutOff (gw: TestGateway, path: string, declared: number, sent: number): Promise<void> {
  const u = new URL(gw.url)
  const id = `cut-${path.length}-${sent}`
  let onRequest: (req: IncomingMessage) => void = () => {}
  const received = new Promise<void>((resolve) => {
    onRequest = (req) => { if (req.headers['x-request-id'] === id) resolve() }
    gw.gw.server.on('request', onRequest)
  })
  const s = net.connect(Number(u.port), u.hostname)
  await new Promise<void>((resolve) => s.once('connect', () => resolve()))
  s.write(rawHead('POST', path, [['Host', u.host], ['Content-Type', 'application/json'], ['Content-Length', String(declared)], ['X-Request-Id', id]]))
  s.write('{"username": "alice", "pass'.slice(0, sent))
  await received
  gw.gw.server.off('request', onRequest)
  s.resetAndDestroy()
}

t.test('a client that resets mid-body: logged as aborted (499), never a 500 or an error log; the gateway goes on', async (t) => {
  for (const path of [TOKEN, '/login', '/logout']) {
    await cutOff(g, path, 1000, 20)
    const id = `cut-${path.length}-20`
    let line: any
    await eventually(async () => (line = g.logs.map((l) => JSON.parse(l)).find((o) => o.msg === 'request' && o.reqId === id)) !== undefined)
    t.equal(line?.status, 499, `${path}: status 499 (client closed), not 200 or 500`)
    t.equal(line?.aborted, true, `${path}: marked aborted`)
  }
  await sleep(200)
  const errors = g.logs.map((l) => JSON.parse(l)).filter((o) => o.level >= 50)
  t.same(errors, [], 'nothing logged as an error')
  t.equal((await request(g.url, '/healthz')).status, 200)
})

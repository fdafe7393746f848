/**
 * Body integrity for signed requests. A signature that lists
 * `digest` (RFC 3230) or `content-digest` (RFC 9530) makes sidegate read the
 * body (at most auth.signature.max_body), check it and forward the same
 * bytes; a digest header the signature does not list proves nothing. Over
 * real HTTP, on two replicas sharing one embedded store, with an upstream that reports
 * the hash of the body it received.
 */
import t from 'tap'
import http from 'node:http'
import { createHash } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { request } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser, signAny } from '../fixtures/creds.js'

const db = embeddedStore()
/** upstream: answers with the SHA-256 and length of the body it received, and its headers */
const seen: Array<{ sha256: string, length: number, headers: http.IncomingHttpHeaders }> = []
const upstream = http.createServer((req, res) => {
  const h = createHash('sha256')
  let length = 0
  req.on('data', (c: Buffer) => { h.update(c); length += c.length })
  req.on('end', () => {
    const entry = { sha256: h.digest('base64'), length, headers: req.headers }
    seen.push(entry)
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(entry))
  })
})
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
const upUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
const prefix = `digest${process.pid}:`
const conf = {
  upstream: { url: upUrl },
  redis: { url: db.url, prefix },
  auth: { signature: { max_body: 1024 * 1024 } }
}
const a = await startGateway(db.url, conf)
const b = await startGateway(db.url, conf)
const strict = await startGateway(db.url, { ...conf, auth: { signature: { require_digest: true, max_body: 1024 } } })
t.teardown(async () => {
  await a.close(); await b.close(); await strict.close()
  upstream.closeAllConnections()
  await new Promise<void>((resolve) => upstream.close(() => resolve()))
  await db.stop()
})

const alice = await makeUser(a, 'alice')
const { key, secret } = await a.store.accessKeys.create(alice.id)
/** a request whose body goes chunked (no Content-Length) */
async function chunked (
  base: string, path: string, headers: Record<string, string>, body: Buffer | string
): Promise<{ status: number, json: any }> {
  const u = new URL(base)
  return await new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method: 'POST', path, headers: { ...headers, 'transfer-encoding': 'chunked' }, agent: false }, (res) => {
      let text = ''
      res.on('data', (c) => { text += String(c) })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }))
    })
    req.on('error', reject)
    req.write(body.slice(0, 5))
    req.end(body.slice(5))
  })
}
const sha = (alg: 'sha256' | 'sha512', body: Buffer | string): string => createHash(alg).update(body).digest('base64')
const sign = (method: string, path: string, list: string[], values: Record<string, string>): Record<string, string> =>
  signAny(key.id, secret, method, path, ['(request-target)', 'date', ...list], { date: new Date().toUTCString(), ...values })

t.test('Digest SHA-256 signed: the body is checked and forwarded byte for byte, on both replicas', async (t) => {
  const body = Buffer.from(JSON.stringify({ hello: 'wörld', n: [1, 2, 3] }))
  for (const g of [a, b]) {
    const h = sign('POST', '/up', ['digest'], { digest: `SHA-256=${sha('sha256', body)}`, 'content-type': 'application/json' })
    const r = await request(g.url, '/up', { method: 'POST', headers: h, body })
    t.equal(r.status, 200, r.text)
    t.same([r.json.sha256, r.json.length], [sha('sha256', body), body.length], 'the upstream got the same bytes')
    t.equal(r.json.headers.digest, `SHA-256=${sha('sha256', body)}`, 'the Digest header is forwarded')
  }
})

t.test('Content-Digest sha-256 and sha-512 signed; both Digest and Content-Digest signed', async (t) => {
  const body = 'x'.repeat(10_000)
  const cd = `sha-256=:${sha('sha256', body)}:, sha-512=:${sha('sha512', body)}:`
  const r = await request(a.url, '/up', { method: 'PUT', headers: sign('PUT', '/up', ['content-digest'], { 'content-digest': cd }), body })
  t.equal(r.status, 200, r.text)
  t.equal(r.json.length, 10_000)
  const both = sign('PUT', '/up', ['digest', 'content-digest'], { digest: `sha-512=${sha('sha512', body)}`, 'content-digest': `sha-256=:${sha('sha256', body)}:` })
  t.equal((await request(b.url, '/up', { method: 'PUT', headers: both, body })).status, 200)
})

t.test('a body that does not match its signed digest is 401 invalid_digest and never reaches the upstream', async (t) => {
  const before = seen.length
  for (const [list, values] of [
    [['digest'], { digest: `SHA-256=${sha('sha256', 'other body')}` }],
    [['content-digest'], { 'content-digest': `sha-256=:${sha('sha256', 'other body')}:` }],
    // one of two digests wrong
    [['content-digest'], { 'content-digest': `sha-256=:${sha('sha256', 'the body')}:, sha-512=:${sha('sha512', 'other')}:` }],
    // the Digest right, the Content-Digest wrong
    [['digest', 'content-digest'], { digest: `SHA-256=${sha('sha256', 'the body')}`, 'content-digest': `sha-256=:${sha('sha256', 'x')}:` }]
  ] as Array<[string[], Record<string, string>]>) {
    for (const g of [a, b]) {
      const r = await request(g.url, '/up', { method: 'POST', headers: sign('POST', '/up', list, values), body: 'the body' })
      t.same([r.status, r.json], [401, { detail: 'The request body does not match its signed digest.', code: 'invalid_digest' }], JSON.stringify(values))
    }
  }
  t.equal(seen.length, before, 'nothing forwarded')
})

t.test('malformed or unsupported signed digests are 401 invalid_digest, never 500', async (t) => {
  const body = 'abc'
  for (const [name, v] of [
    ['digest', 'MD5=kAFQmDzST7DWlj99KOF/cg=='],
    ['digest', 'SHA-256'],
    ['digest', `SHA-256=${sha('sha256', body).slice(1)}`],
    ['digest', `SHA-256=${sha('sha512', body)}`],
    ['digest', '=abc'],
    ['content-digest', `sha-256=${sha('sha256', body)}`],
    ['content-digest', 'md5=:kAFQmDzST7DWlj99KOF/cg==:'],
    ['content-digest', 'sha-256=:AAAA:'],
    ['content-digest', '"x"'],
    ['content-digest', `SHA-256=:${sha('sha256', body)}:`]
  ]) {
    const r = await request(a.url, '/up', { method: 'POST', headers: sign('POST', '/up', [name], { [name]: v }), body })
    t.same([r.status, r.json.code], [401, 'invalid_digest'], `${name}: ${v}`)
  }
})

t.test('a digest header that the signature does not list proves nothing: it is not checked, and is not enough for require_digest', async (t) => {
  const wrong = { digest: `SHA-256=${sha('sha256', 'not the body')}` }
  const r = await request(a.url, '/up', { method: 'POST', headers: sign('POST', '/up', [], wrong), body: 'the body' })
  t.equal(r.status, 200, 'not listed: not looked at (without require_digest)')
  const s = await request(strict.url, '/up', { method: 'POST', headers: sign('POST', '/up', [], { digest: `SHA-256=${sha('sha256', 'the body')}` }), body: 'the body' })
  t.same([s.status, s.json], [401, { detail: 'A signed request with a body must sign a Digest or Content-Digest header.', code: 'invalid_digest' }])
})

t.test('require_digest: a body needs a signed digest; a request without a body does not', async (t) => {
  const none = await request(strict.url, '/up', { method: 'POST', headers: sign('POST', '/up', [], {}), body: 'data' })
  t.same([none.status, none.json.code], [401, 'invalid_digest'])
  const ch = await chunked(strict.url, '/up', sign('POST', '/up', [], {}), 'data')
  t.same([ch.status, ch.json.code], [401, 'invalid_digest'], 'a chunked body too')
  const get = await request(strict.url, '/up', { headers: sign('GET', '/up', [], {}) })
  t.equal(get.status, 200)
  const ok = await request(strict.url, '/up', { method: 'POST', headers: sign('POST', '/up', ['digest'], { digest: `SHA-256=${sha('sha256', 'data')}` }), body: 'data' })
  t.equal(ok.status, 200)
  const emptyPost = await request(strict.url, '/up', { method: 'POST', headers: { ...sign('POST', '/up', [], {}), 'content-length': '0' } })
  t.equal(emptyPost.status, 200, 'Content-Length: 0 is no body')
})

t.test('a chunked body with a signed digest reaches the upstream as the same bytes', async (t) => {
  const body = Buffer.alloc(200_000, 7)
  const h = sign('POST', '/up', ['digest'], { digest: `SHA-256=${sha('sha256', body)}` })
  const r = await chunked(b.url, '/up', h, body)
  t.equal(r.status, 200, JSON.stringify(r.json))
  t.same([r.json.sha256, r.json.length], [sha('sha256', body), body.length])
  t.equal(r.json.headers['content-length'], String(body.length), 'forwarded with its length')
  const bad = await chunked(a.url, '/up', h, Buffer.alloc(200_000, 8))
  t.same([bad.status, bad.json.code], [401, 'invalid_digest'])
})

t.test('above auth.signature.max_body: 413, declared or streamed; a stream is refused before it ends', async (t) => {
  const big = Buffer.alloc(2000, 1)
  const declared = await request(strict.url, '/up', { method: 'POST', headers: sign('POST', '/up', ['digest'], { digest: `SHA-256=${sha('sha256', big)}` }), body: big })
  t.same([declared.status, declared.json.code], [413, 'payload_too_large'])
  const within = Buffer.alloc(1024, 1)
  t.equal((await request(strict.url, '/up', { method: 'POST', headers: sign('POST', '/up', ['digest'], { digest: `SHA-256=${sha('sha256', within)}` }), body: within })).status, 200, 'exactly max_body is accepted')
  // a chunked upload that never ends: the 413 comes while the client is still sending
  const u = new URL(a.url)
  const h = sign('POST', '/up', ['digest'], { digest: `SHA-256=${sha('sha256', 'whatever')}`, 'transfer-encoding': 'chunked' })
  const status = await new Promise<number>((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method: 'POST', path: '/up', headers: h, agent: false }, (res) => {
      resolve(res.statusCode ?? 0)
      res.resume()
      req.destroy()
    })
    req.on('error', (err) => { if (!req.destroyed) reject(err) })
    const chunk = Buffer.alloc(64 * 1024, 2)
    let sent = 0
    const pump = (): void => {
      // up to 64 MiB, far above max_body (1 MiB): the answer must come long before
      while (sent < 64 * 1024 * 1024 && !req.destroyed) {
        sent += chunk.length
        if (!req.write(chunk)) { req.once('drain', pump); return }
      }
    }
    pump()
  })
  t.equal(status, 413)
})

t.test('Expect: 100-continue with a signed digest: the body is sent after 100 and checked', async (t) => {
  const body = 'continue body'
  const h = sign('POST', '/up', ['digest'], { digest: `SHA-256=${sha('sha256', body)}`, expect: '100-continue' })
  const u = new URL(a.url)
  const r = await new Promise<{ status: number, json: any, continued: boolean }>((resolve, reject) => {
    let continued = false
    const req = http.request({ host: u.hostname, port: u.port, method: 'POST', path: '/up', headers: { ...h, 'content-length': String(body.length) }, agent: false }, (res) => {
      let text = ''
      res.on('data', (c) => { text += String(c) })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text), continued }))
    })
    req.on('continue', () => { continued = true; req.end(body) })
    req.on('error', reject)
  })
  t.ok(r.continued)
  t.equal(r.status, 200)
  t.equal(r.json.sha256, sha('sha256', body))
})

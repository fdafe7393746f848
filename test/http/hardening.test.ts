/**
 * `Expect: 100-continue` is answered only once a request is routed and
 * authenticated (raw sockets, byte by byte). On the embedded store (the
 * per-user session index in Redis: test/topology/redis-http.test.ts).
 */
import t from 'tap'
import net from 'node:net'
import { startEcho } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { parseResponse } from '../fixtures/raw.js'

const db = embeddedStore()
const echo = await startEcho()
const g = await startGateway(db.url, { upstream: { url: echo.url }, server: { body_limit: 1024 } })
t.teardown(async () => { await g.close(); await echo.close(); await db.stop() })

const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n'

interface Exchange {
  /** every byte the gateway sent */
  raw: string
  /** the final (non-1xx) response */
  status: number
  headers: Record<string, string>
  json: any
  /** whether the gateway closed the connection after it */
  closed: boolean
}

/**
 * Sends the head; sends the body only after `100 Continue` arrived (when
 * `body` is given), as a careful client does; resolves once a final response
 * is complete and the gateway has closed the connection, or 5 s after that
 * response if it keeps it open (at once with `waitClose` false).
 */
async function expectContinue (head: string, body?: string, waitClose = true): Promise<Exchange> {
  const u = new URL(g.url)
  const socket = net.connect(Number(u.port), u.hostname)
  let raw = Buffer.alloc(0)
  let sentBody = false
  return await new Promise((resolve, reject) => {
    let keepOpen: NodeJS.Timeout | undefined
    const overall = setTimeout(() => { socket.destroy(); reject(new Error(`no final answer within 20 s; got ${JSON.stringify(raw.toString())}`)) }, 20_000)
    const final = (): ReturnType<typeof parseResponse> => {
      let rest = raw
      while (rest.subarray(0, CONTINUE.length).toString('latin1') === CONTINUE) rest = rest.subarray(CONTINUE.length)
      const r = parseResponse(rest)
      if (r === null || r.status < 200) return null
      const len = Number(r.headers['content-length'] ?? 0)
      return Buffer.byteLength(r.body) >= len ? r : null
    }
    const done = (closed: boolean): void => {
      clearTimeout(overall)
      clearTimeout(keepOpen)
      const r = final()
      socket.destroy()
      if (r === null) { reject(new Error(`no final answer; got ${JSON.stringify(raw.toString())}`)); return }
      resolve({ raw: raw.toString('latin1'), status: r.status, headers: r.headers, json: r.json, closed })
    }
    socket.on('data', (c: Buffer) => {
      raw = Buffer.concat([raw, c])
      if (body !== undefined && !sentBody && raw.toString('latin1').startsWith(CONTINUE)) { sentBody = true; socket.write(body) }
      if (final() !== null && keepOpen === undefined) keepOpen = setTimeout(() => done(false), waitClose ? 5000 : 0)
    })
    socket.on('end', () => done(true))
    socket.on('error', (err) => { if (final() !== null) done(true); else { clearTimeout(overall); reject(err) } })
    socket.write(head)
  })
}

const headOf = (method: string, path: string, headers: Record<string, string | number>): string =>
  `${method} ${path} HTTP/1.1\r\nHost: ${new URL(g.url).host}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`

t.test('Expect: 100-continue: a refused request gets its answer without 100 Continue, and the connection closes', async (t) => {
  const body = JSON.stringify({ a: 1 })
  const cases: Array<[string, string, number, string]> = [
    ['unknown private token', headOf('POST', '/api/v1/x/', { authorization: `Token ${'A'.repeat(44)}`, 'content-type': 'application/json', 'content-length': body.length, expect: '100-continue' }), 401, 'invalid_token'],
    ['no credential', headOf('PUT', '/api/v1/x/', { 'content-type': 'application/json', 'content-length': body.length, expect: '100-continue' }), 401, 'not_authenticated'],
    ['own route, no credential', headOf('POST', '/api/v1/authentication/access-keys/', { 'content-length': body.length, expect: '100-continue' }), 401, 'not_authenticated'],
    ['own route, wrong method', headOf('PUT', '/api/v1/authentication/auth/', { 'content-length': body.length, expect: '100-continue' }), 405, 'method_not_allowed'],
    ['token endpoint, declared body over the limit', headOf('POST', '/api/v1/authentication/auth/', { 'content-type': 'application/json', 'content-length': 5000, expect: '100-continue' }), 413, 'payload_too_large'],
    ['token endpoint from another site', headOf('POST', '/api/v1/authentication/auth/', { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://evil.example', 'content-length': body.length, expect: '100-continue' }), 403, 'csrf_failed']
  ]
  const seen = echo.seen.length
  for (const [what, head, status, code] of cases) {
    const r = await expectContinue(head)
    t.notMatch(r.raw, /100 Continue/, `${what}: no 100 Continue`)
    t.equal(r.status, status, what)
    t.equal(r.json?.code, code, what)
    t.equal(r.headers.connection, 'close', `${what}: Connection: close`)
    t.ok(r.closed, `${what}: the gateway closed the connection (the body may or may not follow)`)
  }
  t.equal(echo.seen.length, seen, 'nothing reached the upstream')
})

t.test('Expect: 100-continue: an authenticated request gets 100 Continue, then its answer', async (t) => {
  const u = await makeUser(g, 'eve')
  const pt = await g.store.privateTokens.create(u.id)
  const body = JSON.stringify({ hello: 'world' })
  const proxied = await expectContinue(headOf('POST', '/api/v1/x/', { authorization: `Token ${pt}`, 'content-type': 'application/json', 'content-length': body.length, expect: '100-continue', connection: 'close' }), body)
  t.ok(proxied.raw.startsWith(CONTINUE), '100 Continue first')
  t.equal(proxied.status, 200, 'then the upstream\'s answer')
  t.equal(proxied.json.headers['x-svc-user-id'], u.id)
  t.equal(proxied.json.headers.expect, undefined, 'the expectation is not passed on: sidegate answered it')
  t.equal(proxied.json.headers['content-length'], String(body.length), 'the body went upstream')

  const creds = new URLSearchParams({ username: 'eve', password: 'eve-password' }).toString()
  const token = await expectContinue(headOf('POST', '/api/v1/authentication/auth/', { 'content-type': 'application/x-www-form-urlencoded', 'content-length': creds.length, expect: '100-continue', connection: 'close' }), creds)
  t.ok(token.raw.startsWith(CONTINUE), 'token endpoint (its body is the credential): 100 Continue')
  t.equal(token.status, 201)
  t.ok(token.json.token)

  const wrong = new URLSearchParams({ username: 'eve', password: 'not-it' }).toString()
  const failed = await expectContinue(headOf('POST', '/api/v1/authentication/auth/', { 'content-type': 'application/x-www-form-urlencoded', 'content-length': wrong.length, expect: '100-continue' }), wrong, false)
  t.ok(failed.raw.startsWith(CONTINUE), 'a wrong password can only be known from the body')
  t.equal(failed.status, 401)
  t.not(failed.headers.connection, 'close', 'the body was read: the connection may be reused')
})

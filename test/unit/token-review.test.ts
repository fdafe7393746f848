/**
 * How sidegate reads a TokenReview's answer (src/auth/token-review.ts), one
 * answer at a time from a real HTTP server on 127.0.0.1 that says what each
 * case needs: only `authenticated: true` with one of the audiences asked for
 * admits; a refusal carries the API server's reason, printable and bounded;
 * an answer that says nothing either way is "unavailable", never a yes. The
 * whole flow (HTTPS, the CA, the cache, the 503) is test/process/tokenreview.test.ts.
 */
import t from 'tap'
import http from 'node:http'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { IssuerHttp } from '../../src/auth/issuer-http.js'
import { DEFAULT_REVIEW_URL, REVIEW_PATH, reviewToken } from '../../src/auth/token-review.js'
import { tempDir } from '../fixtures/cleanup.js'
import { freePort } from '../fixtures/redis.js'

/** What the server answers next, and what it was asked. */
let answer: { status: number, body: unknown, hang?: boolean } = { status: 201, body: {} }
const asked: Array<{ method: string, url: string, authorization: string | undefined, body: any }> = []
const server = http.createServer((req, res) => {
  let text = ''
  req.on('data', (c: Buffer) => { text += c.toString() })
  req.on('end', () => {
    asked.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization, body: text === '' ? null : JSON.parse(text) })
    if (answer.hang === true) return
    res.writeHead(answer.status, { 'content-type': 'application/json' })
    res.end(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body))
  })
})
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
t.teardown(() => { server.closeAllConnections(); server.close() })
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
const dir = tempDir('sidegate-token-review-')
writeFileSync(join(dir, 'token'), 'reviewer-token\n')
const client = new IssuerHttp({ ca_file: null, token_file: join(dir, 'token'), timeout: 1 })
const AUD = ['sidegate', 'orders']

const review = async (a: typeof answer, url: string | null = base): Promise<unknown> => {
  answer = a
  return await reviewToken(client, url, 'the.reviewed.jwt', AUD)
}
const authenticated = (audiences: unknown): typeof answer =>
  ({ status: 201, body: { status: { authenticated: true, audiences } } })

t.test('the request: a POST to the tokenreviews path, the token, the audiences, sidegate\'s own credential', async (t) => {
  t.equal(DEFAULT_REVIEW_URL, 'https://kubernetes.default.svc', 'the API server inside a cluster, by default')
  asked.length = 0
  t.same(await review(authenticated(['orders']), `${base}//`), { ok: true })
  t.same(asked, [{
    method: 'POST',
    url: REVIEW_PATH,
    authorization: 'Bearer reviewer-token',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: 'the.reviewed.jwt', audiences: AUD } }
  }], 'review_url\'s trailing slashes dropped; token_file\'s token, trimmed')
  t.same(await review({ status: 200, body: { status: { authenticated: true, audiences: ['sidegate'] } } }), { ok: true }, '200 as well as 201')
})

t.test('authenticated, but not for an audience asked for: refused', async (t) => {
  const refused = { ok: false, refused: 'the API server\'s TokenReview did not confirm its audience' }
  t.same(await review(authenticated([])), refused, 'no audience named: not audience-aware, not taken at its word')
  t.same(await review(authenticated(undefined)), refused, 'no audiences at all')
  t.same(await review(authenticated(['other'])), refused, 'another audience')
  t.same(await review(authenticated([7, 'other'])), refused, 'not strings')
  t.same(await review(authenticated(['other', 'sidegate'])), { ok: true }, 'one of them is enough')
})

t.test('not authenticated: refused, with the API server\'s reason made printable and bounded', async (t) => {
  t.same(await review({ status: 201, body: { status: { authenticated: false, error: ' pod "web-1" \u0007not found\n ' } } }),
    { ok: false, refused: 'the API server\'s TokenReview refused it (pod "web-1"  not found)' })
  t.same(await review({ status: 201, body: { status: { authenticated: false } } }),
    { ok: false, refused: 'the API server\'s TokenReview refused it' }, 'no reason given')
  t.same(await review({ status: 201, body: { status: { authenticated: 'true', audiences: AUD } } }),
    { ok: false, refused: 'the API server\'s TokenReview refused it' }, 'only the boolean true admits')
  const long = await review({ status: 201, body: { status: { authenticated: false, error: 'x'.repeat(500) } } }) as { refused: string }
  t.equal(long.refused, `the API server's TokenReview refused it (${'x'.repeat(200)})`, 'at most 200 characters of it')
})

t.test('an answer that says nothing either way: unavailable, never a yes', async (t) => {
  const noStatus = { ok: false, unavailable: 'the TokenReview answered without a status' }
  t.same(await review({ status: 201, body: {} }), noStatus)
  t.same(await review({ status: 201, body: { status: null } }), noStatus)
  t.same(await review({ status: 201, body: { status: 'authenticated' } }), noStatus)
  t.same(await review({ status: 201, body: 'null' }), noStatus, 'a JSON null')
  t.same(await review({ status: 401, body: {} }),
    { ok: false, unavailable: 'the API server refused sidegate\'s own credential for the TokenReview (401): check token_file' })
  t.same(await review({ status: 403, body: {} }),
    { ok: false, unavailable: 'the API server forbade sidegate the TokenReview (403): bind its service account to the ClusterRole system:auth-delegator' })
  t.same(await review({ status: 500, body: { status: { authenticated: true, audiences: AUD } } }),
    { ok: false, unavailable: 'the TokenReview answered 500' }, 'a 5xx, whatever its body says')
  t.same(await review({ status: 202, body: { status: { authenticated: true, audiences: AUD } } }),
    { ok: false, unavailable: 'the TokenReview answered 202' })
  t.same(await review({ status: 201, body: 'not json' }),
    { ok: false, unavailable: `the TokenReview could not be asked: ${REVIEW_PATH} answered no JSON` })
  t.same(await review({ status: 201, body: {}, hang: true }), { ok: false, unavailable: 'the TokenReview could not be asked: no answer in time' })
  const down = await review(authenticated(AUD), `http://127.0.0.1:${await freePort()}`) as { unavailable: string }
  t.match(down.unavailable, /^the TokenReview could not be asked: .*ECONNREFUSED/, 'nobody listening')
})

/**
 * `review: tokenreview` (auth.trusted_issuers): once a Kubernetes
 * service-account token verifies offline, the API server's TokenReview is
 * asked whether it is still valid. Against a TokenReview server over HTTPS
 * (test/fixtures/token-review.ts: it checks the caller's own token, verifies
 * the reviewed token against the keys the Kubernetes-shaped issuer
 * publishes, and knows which pods were deleted), in front of a real
 * gateway: a live token admitted and its answer used for review_ttl; the
 * token of a deleted pod admitted from memory within review_ttl, refused
 * after it; the API server down, failing, late, or refusing sidegate's own
 * credential: 503 issuer_unavailable (logged), never admitted; an API server
 * whose certificate is not of ca_file's CA: the same; `config check`
 * refusing review without token_file.
 */
import t from 'tap'
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { request, startEcho, type Res } from '../fixtures/http.js'
import { embeddedStore, startGateway, SECRET } from '../fixtures/gateway.js'
import { tempDir } from '../fixtures/cleanup.js'
import { cliIn, configDir } from '../fixtures/procs.js'
import { testCa } from '../fixtures/test-ca.js'
import { eventually, sleep } from '../fixtures/wait.js'
import { kubeClaims, kubeIssuer, rsaKey, signed } from '../fixtures/issuers.js'
import { tokenReviewServer } from '../fixtures/token-review.js'

const k1 = rsaKey()
const kube = kubeIssuer(0, [k1])
await kube.listen()
// an issuer with no review, for the cost beside it
const plainKube = kubeIssuer(0, [k1])
await plainKube.listen()
// an issuer whose ca_file is another CA than the API server's
const strangerKube = kubeIssuer(0, [k1])
await strangerKube.listen()
const ca = testCa()
ca.ca('cluster-ca')
ca.leaf('apiserver', 'cluster-ca', '/CN=kube-apiserver')
ca.ca('other-ca')
const dir = tempDir('sidegate-review-')
const REVIEWER = 'reviewer-sa-token-0123456789abcdef'
const tokenFile = join(dir, 'token')
writeFileSync(tokenFile, `${REVIEWER}\n`)
const api = tokenReviewServer({
  issuer: () => kube.url, keys: () => kube.keys, reviewer: REVIEWER, cert: ca.path('apiserver.pem'), key: ca.path('apiserver.key')
})
await api.listen()
const echo = await startEcho()
const db = embeddedStore()
const MAP = { map: 'system:serviceaccount:{namespace}:{name}' }
const gw = await startGateway(db.url, {
  upstream: { url: echo.url },
  auth: {
    trusted_issuers: [
      {
        id: 'cluster',
        issuer: kube.url,
        audiences: ['sidegate'],
        subject: MAP,
        max_lifetime: 3607,
        ca_file: ca.path('cluster-ca.pem'),
        token_file: tokenFile,
        review: 'tokenreview',
        review_url: api.url,
        review_ttl: 1,
        timeout: 1
      },
      { id: 'plain', issuer: plainKube.url, audiences: ['sidegate'], subject: MAP, max_lifetime: 3607 },
      {
        id: 'stranger',
        issuer: strangerKube.url,
        audiences: ['sidegate'],
        subject: MAP,
        max_lifetime: 3607,
        ca_file: ca.path('other-ca.pem'),
        token_file: tokenFile,
        review: 'tokenreview',
        review_url: api.url
      }
    ]
  }
})
t.teardown(async () => {
  await gw.close()
  await api.close().catch(() => {})
  await kube.close()
  await plainKube.close()
  await strangerKube.close()
  await echo.close()
  await db.stop()
})

const get = async (token: string): Promise<Res> =>
  await request(gw.url, '/api/things', { headers: { authorization: `Bearer ${token}` } })
const podToken = async (pod: string, iss = kube.url): Promise<string> =>
  await signed(k1, kubeClaims(iss, 'prod', 'web', { pod }))
const logged = (): Array<Record<string, any>> => gw.logs.map((l) => JSON.parse(l) as Record<string, any>)
const uidOf = (pod: string): string => `uid-${pod}`

t.test('a live token: reviewed once (the issuer\'s audiences, sidegate\'s credential), then decided from memory within review_ttl', async (t) => {
  const token = await podToken('web-live')
  const before = api.reviews
  const r = await get(token)
  t.equal(r.status, 200, r.text)
  t.equal(r.json.headers['x-svc-username'], 'system:serviceaccount:prod:web')
  t.equal(api.reviews, before + 1, 'the API server was asked')
  t.same(api.last, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences: ['sidegate'] } })
  t.equal((await get(token)).status, 200)
  t.equal(api.reviews, before + 1, 'the second request was decided from memory')
  // several requests at once on a new token: one question
  const fresh = await podToken('web-burst')
  const burst = await Promise.all(Array.from({ length: 5 }, async () => await get(fresh)))
  t.same(burst.map((x) => x.status), [200, 200, 200, 200, 200])
  // how many depends on how the five interleave over HTTP (one per token at a time: test/unit/trusted-token.test.ts)
  t.comment(`${api.reviews - before - 1} reviews for 5 requests at once`)
  // review_ttl (1 s) over: asked again
  await sleep(1100)
  const again = api.reviews
  t.equal((await get(token)).status, 200)
  t.equal(api.reviews, again + 1, 'asked again once review_ttl passed')
  t.notMatch(gw.logs.join('\n'), token.split('.')[2], 'the token is never logged')
  t.notMatch(gw.logs.join('\n'), REVIEWER, 'nor sidegate\'s own')
})

t.test('a token of a deleted pod: admitted from memory within review_ttl, refused once it passed; a new one at once', async (t) => {
  const token = await podToken('web-doomed')
  const t0 = Date.now()
  t.equal((await get(token)).status, 200)
  api.deletedPods.add(uidOf('web-doomed'))
  const cached = await get(token)
  if (Date.now() - t0 < 900) t.equal(cached.status, 200, 'within review_ttl: the answer in memory')
  else t.comment('the machine was too slow to see the cached answer within review_ttl (1 s)')
  let r: Res | undefined
  t.ok(await eventually(async () => { r = await get(token); return r.status !== 200 }, 5000), 'refused once review_ttl passed')
  t.ok(Date.now() - t0 >= 1000, 'not before review_ttl')
  t.equal(r!.status, 401, r!.text)
  t.equal(r!.json.code, 'invalid_token')
  t.match(r!.json.detail, /the API server's TokenReview refused it \(\[invalid bearer token, service account token has been invalidated\]\)/)
  t.match(String(r!.headers['www-authenticate']), /Bearer realm="sidegate", error="invalid_token"/)
  const asked = api.reviews
  t.equal((await get(token)).status, 401, 'the refusal is remembered too')
  t.equal(api.reviews, asked, 'within review_ttl, no question')
  const other = await podToken('web-doomed')
  t.equal((await get(other)).status, 401, 'another token of the deleted pod: refused at its first sight')
  // a deleted token (the API server's own refusal, whatever the cause), beside a live one of the same pod
  const revoked = await podToken('web-other')
  api.deletedTokens.add(createHash('sha256').update(revoked).digest('hex'))
  t.equal((await get(revoked)).status, 401)
  t.equal((await get(await podToken('web-other'))).status, 200)
})

t.test('the API server down, failing, late: 503 issuer_unavailable, logged once per cause, never admitted', async (t) => {
  const seenBefore = await podToken('web-seen')
  t.equal((await get(seenBefore)).status, 200)
  await api.close()
  const down = await get(await podToken('web-down'))
  t.equal(down.status, 503, down.text)
  t.equal(down.json.code, 'issuer_unavailable')
  t.match(down.json.detail, /could not confirm it: the TokenReview could not be asked/)
  t.equal(down.headers['retry-after'], '5')
  await sleep(1100)
  t.equal((await get(seenBefore)).status, 503, 'a token seen before, review_ttl over: not admitted unconfirmed')
  t.equal((await get(await podToken('web-down-2'))).status, 503)
  const warnings = logged().filter((l) => l.level === 40 && /^trusted issuer cluster: the TokenReview could not be asked/.test(l.msg))
  t.equal(warnings.length, 1, 'logged once for the outage (besides each request\'s own line)')
  t.match(warnings[0], { issuer: 'cluster' })
  await api.listen()
  t.equal((await get(seenBefore)).status, 200, 'the API server back: admitted')
  t.ok(logged().some((l) => l.level === 30 && /cluster: the TokenReview answers again/.test(l.msg)))
  for (const [fail, why] of [[500, /TokenReview answered 500/], [503, /answered 503/], [403, /forbade sidegate the TokenReview \(403\): .*system:auth-delegator/]] as const) {
    api.fail = fail
    const r = await get(await podToken(`web-${fail}`))
    t.equal(r.status, 503, `${fail}: ${r.text}`)
    t.match(r.json.detail, why)
  }
  api.fail = null
  api.hang = true
  const started = Date.now()
  const late = await get(await podToken('web-late'))
  t.equal(late.status, 503, late.text)
  t.match(late.json.detail, /no answer in time/)
  t.ok(Date.now() - started < 4000, 'within timeout (1 s), not the client\'s patience')
  api.hang = false
})

t.test('the API server refuses sidegate\'s own token: 503, logged, said so; read again from token_file', async (t) => {
  writeFileSync(tokenFile, 'a-token-the-api-server-does-not-know\n')
  const refusedBefore = api.refusedCallers
  const token = await podToken('web-reviewer')
  const r = await get(token)
  t.equal(r.status, 503, r.text)
  t.equal(r.json.code, 'issuer_unavailable')
  t.match(r.json.detail, /the API server refused sidegate's own credential for the TokenReview \(401\): check token_file/)
  t.equal(api.refusedCallers, refusedBefore + 1, 'the API server saw the other token')
  t.ok(logged().some((l) => l.level === 40 && /cluster: the API server refused sidegate's own credential/.test(l.msg)), 'logged')
  t.notMatch(gw.logs.join('\n'), 'a-token-the-api-server-does-not-know')
  writeFileSync(tokenFile, `${REVIEWER}\n`)
  t.equal((await get(token)).status, 200, 'the file renewed (as the kubelet does): read at the next review')
})

t.test('an API server whose certificate is not of ca_file\'s CA: 503, never admitted', async (t) => {
  const r = await get(await podToken('web-tls', strangerKube.url))
  t.equal(r.status, 503, r.text)
  t.match(r.json.detail, /could not be asked: .*(certificate|self.signed|issuer)/i)
})

t.test('the cost: a first sight with a review against one without (the same machine, a local API server)', async (t) => {
  const n = 40
  const median = (v: number[]): number => v.sort((a, b) => a - b)[Math.floor(v.length / 2)]
  const once = async (iss: string, pod: string): Promise<number> => {
    const token = await podToken(pod, iss)
    const start = process.hrtime.bigint()
    t.equal((await get(token)).status, 200)
    return Number(process.hrtime.bigint() - start) / 1e6
  }
  // warm: keys read, connections open
  await once(plainKube.url, 'web-warm')
  await once(kube.url, 'web-warm')
  const asked = api.reviews
  const plain: number[] = []
  const reviewed: number[] = []
  for (let i = 0; i < n; i++) {
    plain.push(await once(plainKube.url, `web-cost-${i}`))
    reviewed.push(await once(kube.url, `web-cost-${i}`))
  }
  t.equal(api.reviews, asked + n, 'one review per new token')
  const [p, r] = [median(plain), median(reviewed)]
  t.comment(`first sight, median of ${n}: ${p.toFixed(2)} ms without review, ${r.toFixed(2)} ms with a TokenReview (+${(r - p).toFixed(2)} ms)`)
})

t.test('config check: review: tokenreview without token_file is refused, with why', async (t) => {
  const c = configDir(t)
  const base = { id: 'cluster', issuer: 'https://kubernetes.default.svc.cluster.local', audiences: ['sidegate'] }
  const bad = c.write('bad.yml', { secret_key: SECRET, auth: { trusted_issuers: [{ ...base, review: 'tokenreview' }] } })
  const r = await cliIn(c.dir, ['config', 'check', '--config', bad])
  t.equal(r.code, 2, r.stdout)
  t.match(r.stderr + r.stdout, /auth\.trusted_issuers\[0\]\.review: tokenreview needs token_file: the token sidegate asks the API server with/)
  const good = c.write('good.yml', { secret_key: SECRET, auth: { trusted_issuers: [{ ...base, review: 'tokenreview', token_file: '/var/run/secrets/kubernetes.io/serviceaccount/token' }] } })
  const ok = await cliIn(c.dir, ['config', 'check', '--config', good])
  t.equal(ok.code, 0, ok.stderr)
})

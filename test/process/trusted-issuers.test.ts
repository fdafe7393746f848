/**
 * Tokens of trusted issuers nobody here wrote (auth.trusted_issuers, the
 * trusted_token kind): a Kubernetes-shaped issuer (the API server's discovery
 * and JWKS, RS256 service-account tokens with its claims and kid) and the real
 * oidc-provider (client credentials, RFC 9068 JWT access tokens, its JWKS over
 * HTTP, a key rotation), in front of a real gateway: proxy mode with the
 * workload in the identity headers and the identity JWT, a WebSocket upgrade,
 * a forward-auth decision, access rules by method, service and group, the
 * cache (one verification per token), every refusal of the issue, an issuer
 * unreachable at start (503 issuer_unavailable, then accepted once it answers,
 * /readyz saying which), sidegate's own bearer token beside it, and rate
 * limits per subject (two tokens of one service account share a bucket).
 */
import t from 'tap'
import { decodeJwt } from 'jose'
import { request, startEcho, type Res } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { bearer } from '../fixtures/creds.js'
import { freePort } from '../fixtures/redis.js'
import { eventually } from '../fixtures/wait.js'
import { wsEchoUpgrade, wsRoundTrip } from '../fixtures/websocket.js'
import {
  OIDC_AUDIENCE, hmacWithPublicKey, kubeClaims, kubeIssuer, oidcIssuer, rsaKey, signed, unsigned
} from '../fixtures/issuers.js'

const k1 = rsaKey()
const k2 = rsaKey()
const stranger = rsaKey()
const kube = kubeIssuer(0, [k1])
await kube.listen()
const idpKey = rsaKey()
const idp = await oidcIssuer([idpKey], ['deployers'])
// an issuer that is down when the gateway starts
const latePort = await freePort()
const late = kubeIssuer(latePort, [stranger])
const echo = await startEcho()
echo.server.removeAllListeners('upgrade')
echo.server.on('upgrade', wsEchoUpgrade)
const db = embeddedStore()
t.teardown(async () => {
  await gw.close()
  await kube.close()
  await idp.close()
  await late.close().catch(() => {})
  await echo.close()
  await db.stop()
})

const WEB = 'system:serviceaccount:prod:web'
const gw = await startGateway(db.url, {
  upstream: { url: echo.url },
  server: { trusted_proxies: ['127.0.0.1'] },
  identity: { jwt: { enabled: true, audience: 'upstream' } },
  access: {
    default_policy: 'one_factor',
    rules: [
      { paths: ['/deploy/**'], subjects: ['group:deployers'], policy: 'one_factor' },
      { paths: ['/deploy/**'], policy: 'deny' },
      { paths: ['/web-only/**'], subjects: [`service:${WEB}`], policy: 'one_factor' },
      { paths: ['/web-only/**'], policy: 'deny' },
      { paths: ['/machines/**'], subjects: ['method:trusted_token'], policy: 'one_factor' },
      { paths: ['/machines/**'], policy: 'deny' }
    ]
  },
  auth: {
    trusted_issuers: [
      { id: 'cluster', issuer: kube.url, audiences: ['sidegate'], subject: { map: 'system:serviceaccount:{namespace}:{name}' }, max_lifetime: 3607, jwks_min_interval: 1 },
      { id: 'idp', issuer: idp.url, audiences: [OIDC_AUDIENCE], typ: 'at+jwt', groups_claim: 'groups', jwks_min_interval: 1 },
      { id: 'late', issuer: late.url, audiences: ['sidegate'] }
    ]
  }
})

const get = async (path: string, token: string, headers: Record<string, string> = {}): Promise<Res> =>
  await request(gw.url, path, { headers: { authorization: `Bearer ${token}`, ...headers } })
const seen = (r: Res): Record<string, any> => r.json as Record<string, any>
const accepted = (): Array<Record<string, any>> => gw.logs.flatMap((l) => {
  const o = JSON.parse(l) as Record<string, any>
  return o.event === 'token.accepted' ? [o] : []
})

t.test('a Kubernetes service-account token: proxied with its workload, decided from memory the second time', async (t) => {
  const token = await signed(k1, kubeClaims(kube.url, 'prod', 'web'))
  const before = accepted().length
  const r = await get('/api/things', token)
  t.equal(r.status, 200, r.text)
  const h = seen(r).headers
  t.equal(h['x-svc-auth-method'], 'trusted_token')
  t.equal(h['x-svc-username'], WEB)
  t.equal(h['x-svc-user-id'], `issuer:cluster:${WEB}`)
  t.equal(h['x-svc-workload'], 'namespace=prod;serviceaccount=web;serviceaccount_uid=uid-sa-web;pod=web-5d8f7c9b4-x2x7q;pod_uid=uid-web-5d8f7c9b4-x2x7q')
  t.equal(h.authorization, undefined, 'the token never reaches the upstream')
  const jwt = decodeJwt(h['x-svc-identity'] as string)
  t.match(jwt, { auth_method: 'trusted_token', token_issuer: 'cluster', preferred_username: WEB, workload: { namespace: 'prod', pod: 'web-5d8f7c9b4-x2x7q', pod_uid: 'uid-web-5d8f7c9b4-x2x7q' } })
  for (let i = 0; i < 3; i++) t.equal((await get('/api/things', token)).status, 200)
  const events = accepted().slice(before)
  t.equal(events.length, 1, 'token.accepted once: the repeats were decided from memory')
  t.match(events[0], { source: 'issuer:cluster', username: WEB })
  t.notMatch(JSON.stringify(gw.logs), token.split('.')[2], 'the token is never logged')
  // a client-sent workload header never reaches the upstream
  const forged = await get('/api/things', token, { 'x-svc-workload': 'namespace=kube-system' })
  t.equal(seen(forged).headers['x-svc-workload'], h['x-svc-workload'])
})

t.test('access rules: service:, method:trusted_token; a forward-auth decision; a WebSocket upgrade', async (t) => {
  const web = await signed(k1, kubeClaims(kube.url, 'prod', 'web'))
  const other = await signed(k1, kubeClaims(kube.url, 'prod', 'batch'))
  t.equal((await get('/web-only/x', web)).status, 200)
  t.equal((await get('/web-only/x', other)).status, 403, 'another service')
  t.equal((await get('/machines/x', other)).status, 200, 'method:trusted_token')
  t.equal((await get('/deploy/x', other)).status, 403, 'no group')
  const d = await request(gw.url, '/_sidegate/auth', { headers: { authorization: `Bearer ${web}`, 'x-original-uri': '/web-only/a', 'x-original-method': 'GET' } })
  t.equal(d.status, 200, d.text)
  t.equal(d.headers['x-svc-auth-method'], 'trusted_token')
  t.equal(d.headers['x-svc-username'], WEB)
  const denied = await request(gw.url, '/_sidegate/auth', { headers: { authorization: `Bearer ${other}`, 'x-original-uri': '/web-only/a', 'x-original-method': 'GET' } })
  t.equal(denied.status, 403)
  const ws = await wsRoundTrip(gw.url, '/ws', { authorization: `Bearer ${web}` })
  t.match(ws, { status: 101, accepted: true, echoed: 'hello' })
  const wsNo = await wsRoundTrip(gw.url, '/ws', { authorization: `Bearer ${await signed(stranger, kubeClaims(kube.url, 'prod', 'web'), { kid: k1.kid })}` })
  t.equal(wsNo.status, 401)
})

t.test('oidc-provider: a client credentials access token, its groups in the groups model, a key rotation', async (t) => {
  const token = await idp.token()
  const r = await get('/deploy/app', token)
  t.equal(r.status, 200, r.text)
  t.equal(seen(r).headers['x-svc-username'], 'machine')
  t.equal(seen(r).headers['x-svc-groups'], 'deployers')
  t.equal(seen(r).headers['x-svc-workload'], undefined, 'no Kubernetes claims: no workload')
  // rotation: the provider signs with a new key its JWKS now lists first; the gateway fetches it on the unknown kid
  const next = rsaKey()
  await idp.restart([next, idpKey])
  // (a kept-alive connection to the stopped provider may fail the first fetch: asked again)
  let rotated = ''
  t.ok(await eventually(async () => { rotated = await idp.token().catch(() => ''); return rotated !== '' }, 10_000))
  t.not(decodeJwt(rotated).jti, decodeJwt(token).jti)
  t.ok(await eventually(async () => (await get('/deploy/app', rotated)).status === 200, 10_000), 'the rotated key is accepted, no restart')
  t.equal((await get('/deploy/app', token)).status, 200, 'a token of the old key still works')
})

t.test('every refusal: 401 invalid_token with Bearer error="invalid_token", never a 500', async (t) => {
  const now = Math.floor(Date.now() / 1000)
  const c = (o: Record<string, unknown> = {}): Record<string, unknown> => ({ ...kubeClaims(kube.url, 'prod', 'web'), ...o })
  const cases: Array<[string, string, RegExp]> = [
    ['wrong audience', await signed(k1, c({ aud: ['someone-else'] })), /audience/],
    ['expired', await signed(k1, c({ iat: now - 700, nbf: now - 700, exp: now - 100 })), /expired/],
    ['not yet valid', await signed(k1, c({ nbf: now + 600 })), /not yet valid/],
    ['unknown issuer', await signed(k1, c({ iss: 'https://elsewhere.example' })), /unknown issuer/],
    ['alg none', unsigned(c()), /algorithm/],
    ['HS256 with the RSA public key', hmacWithPublicKey(k1, c()), /algorithm/],
    ['oversized', await signed(k1, c({ pad: 'x'.repeat(9000) })), /larger than 8192/],
    ['another issuer\'s key under this kid', await signed(stranger, c(), { kid: k1.kid }), /signature/],
    ['another issuer\'s key and kid', await signed(idpKey, c()), /unknown key/],
    ['lifetime over the bound', await signed(k1, c({ exp: now + 7200 })), /lifetime/],
    ['unknown kid', await signed(k2, c()), /unknown key/]
  ]
  for (const [name, token, why] of cases) {
    const r = await get('/api/x', token)
    t.equal(r.status, 401, `${name}: ${r.text}`)
    t.equal(r.json?.code, 'invalid_token', name)
    t.match(r.json?.detail, why, name)
    t.match(String(r.headers['www-authenticate']), /Bearer realm="sidegate", error="invalid_token"/, name)
  }
  // the unknown kid, rotated in: accepted after the refetch (at most once per jwks_min_interval), no restart
  kube.keys = [k1, k2]
  const rotated = await signed(k2, c())
  t.ok(await eventually(async () => (await get('/api/x', rotated)).status === 200, 10_000), 'rotated in')
})

t.test('an issuer unreachable at start: 503 issuer_unavailable, /readyz says so, then accepted once it answers', async (t) => {
  const token = await signed(stranger, kubeClaims(late.url, 'ops', 'cron'))
  const r = await get('/api/x', token)
  t.equal(r.status, 503, r.text)
  t.equal(r.json?.code, 'issuer_unavailable')
  const ready = await request(gw.url, '/readyz')
  t.equal(ready.status, 200, 'ready for every other credential')
  t.match(ready.json.issuers, [{ id: 'cluster', state: 'ready' }, { id: 'idp', state: 'ready' }, { id: 'late', state: 'unavailable', keys: 0 }])
  t.notMatch(ready.text, token)
  await late.listen()
  t.ok(await eventually(async () => (await get('/api/x', token)).status === 200, 60_000), 'accepted once the issuer answers (backoff retry)')
  t.match((await request(gw.url, '/readyz')).json.issuers[2], { id: 'late', state: 'ready', keys: 1 })
})

t.test('sidegate\'s own bearer token still works beside it; Bearer values of neither shape are its', async (t) => {
  const own = await bearer(gw.url)
  const r = await get('/api/x', own)
  t.equal(r.status, 200, r.text)
  t.equal(seen(r).headers['x-svc-auth-method'], 'bearer')
  const junk = await get('/api/x', 'not-a-token')
  t.equal(junk.status, 401)
  t.equal(junk.json.code, 'invalid_token')
  t.notMatch(String(junk.headers['www-authenticate']), /error=/, 'sidegate\'s own refusal: its own challenges')
})

t.test('rate limits per subject: two tokens of one service share its bucket, another service has its own', async (t) => {
  const limited = await startGateway(db.url, {
    upstream: { url: echo.url },
    rate_limit: { enabled: true, limit: 100, window: 60, methods: { trusted_token: '3/60s' } },
    auth: { trusted_issuers: [{ id: 'cluster', issuer: kube.url, audiences: ['sidegate'], subject: { map: 'system:serviceaccount:{namespace}:{name}' }, max_lifetime: 3607 }] }
  })
  t.teardown(async () => { await limited.close() })
  const at = async (token: string): Promise<Res> =>
    await request(limited.url, '/api/limited', { headers: { authorization: `Bearer ${token}` } })
  // two pods of the web service account: two tokens, one subject
  const webA = await signed(k1, kubeClaims(kube.url, 'prod', 'web', { pod: 'web-a' }))
  const webB = await signed(k1, kubeClaims(kube.url, 'prod', 'web', { pod: 'web-b' }))
  const batch = await signed(k1, kubeClaims(kube.url, 'prod', 'batch'))
  const rs: Res[] = []
  for (const token of [webA, webB, webA, webB]) rs.push(await at(token))
  t.same(rs.map((r) => r.status), [200, 200, 200, 429], 'the limit (3) trips across both tokens')
  rs.slice(0, 3).forEach((r, i) => t.match(String(r.headers.ratelimit), new RegExp(`^"trusted_token";r=${2 - i};t=\\d+$`), 'one count, down across both tokens'))
  for (const r of rs) t.equal(r.headers['ratelimit-policy'], '"trusted_token";q=3;w=60', 'rate_limit.methods.trusted_token')
  const over = rs[3]
  t.equal(over.json.code, 'rate_limited')
  t.ok(Number(over.headers['retry-after']) >= 1, 'Retry-After')
  t.equal(over.json.headers, undefined, 'refused before the upstream')
  const other = await at(batch)
  t.equal(other.status, 200, `another subject, its own bucket: ${other.text}`)
  t.equal(other.json.headers['x-svc-username'], 'system:serviceaccount:prod:batch')
  t.match(String(other.headers.ratelimit), /^"trusted_token";r=2;t=\d+$/)
  t.equal((await at(webA)).status, 429, 'web is still over its limit')
})

/**
 * OpenTelemetry tracing (README, "Tracing") over real processes: `sidegate
 * start` with real Redis and an echo upstream, exporting OTLP/HTTP JSON to a
 * receiver written here (a node:http server taking POST /v1/traces). The
 * spans, their attributes and parents, the traceparent the upstream gets, the
 * trust rule for an incoming traceparent, that no credential is ever
 * exported, the trace id in the access log; tracing off adds nothing. The
 * OTEL_* environment is read by the config layer: its rules are checked on
 * buildConfig.
 */
import t, { type Test } from 'tap'
import http from 'node:http'
import net from 'node:net'
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { buildConfig } from '../../src/config/index.js'
import { UsageError } from '../../src/errors.js'
import { ADMIN_PASSWORD, ROOT } from '../fixtures/gateway.js'
import { signedHeaders } from '../fixtures/creds.js'
import { startEcho, type Res } from '../fixtures/http.js'
import { REFUSED_URL, startRedis } from '../fixtures/redis.js'
import { cliIn, startIn, workdir, type Started } from '../fixtures/procs.js'
import { eventually } from '../fixtures/wait.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const SECRET_KEY = 'tracing-test-secret-key-0123456789abcdef'
/** a second loopback address: requests from it come from a trusted proxy */
const TRUSTED = '127.0.0.2'
const UNTRUSTED = '127.0.0.1'
const COLLECTOR_TOKEN = 'collector-token-value-42'

// ── the config layer reads OTEL_* (nothing else reads the environment) ────

t.test('tracing is off unless an endpoint is given; the OTEL_* variables are honoured, bad ones are config errors', async (t) => {
  t.equal(buildConfig({}).tracing.url, null, 'off by default')
  t.equal(buildConfig({ tracing: { endpoint: 'http://collector:4318/' } }).tracing.url, 'http://collector:4318/v1/traces', 'the file\'s endpoint is a base URL')
  t.equal(buildConfig({ tracing: { endpoint: 'http://a:4318' } }, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://b:4318' }).tracing.url, 'http://b:4318/v1/traces', 'the environment wins over the file')
  t.equal(buildConfig({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://b:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/custom' }).tracing.url, 'http://c:4318/custom', 'the traces endpoint is used as it is')
  t.equal(buildConfig({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://b:4318', OTEL_SDK_DISABLED: 'true' }).tracing.url, null, 'OTEL_SDK_DISABLED turns it off')
  t.equal(buildConfig({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://b:4318', OTEL_TRACES_EXPORTER: 'none' }).tracing.url, null, 'OTEL_TRACES_EXPORTER=none turns it off')
  const c = buildConfig({ tracing: { service_name: 'from-file' } }, {
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://b:4318',
    OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc,x-a=1',
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-a=2',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=prod,k8s.pod.name=sg-1',
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: '0.25',
    OTEL_BSP_SCHEDULE_DELAY: '200',
    OTEL_EXPORTER_OTLP_TIMEOUT: '3000'
  }).tracing
  t.same(c.headers, { authorization: 'Bearer abc', 'x-a': '2' }, 'headers percent-decoded, the traces variable wins')
  t.same(c.resource, { 'deployment.environment.name': 'prod', 'k8s.pod.name': 'sg-1' })
  t.same(c.sampler, { name: 'parentbased_traceidratio', ratio: 0.25 })
  t.same(c.batch, { scheduledDelayMillis: 200 })
  t.equal(c.timeoutMs, 3000)
  t.equal(c.serviceName, 'from-file')
  t.equal(buildConfig({ tracing: { service_name: 'from-file' } }, { OTEL_SERVICE_NAME: 'from-env' }).tracing.serviceName, 'from-env')
  t.equal(buildConfig({}, { OTEL_RESOURCE_ATTRIBUTES: 'service.name=res' }).tracing.serviceName, 'res')

  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ OTEL_TRACES_SAMPLER: 'sometimes' }, /^config: OTEL_TRACES_SAMPLER: must be one of always_on, .*got "sometimes"$/],
    [{ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }, /^config: OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /^config: OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:\/\/ or https:\/\/ URL$/],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /^config: OTEL_EXPORTER_OTLP_PROTOCOL: sidegate exports OTLP over HTTP/],
    [{ OTEL_TRACES_EXPORTER: 'zipkin' }, /^config: OTEL_TRACES_EXPORTER: /],
    [{ OTEL_BSP_SCHEDULE_DELAY: 'soon' }, /^config: OTEL_BSP_SCHEDULE_DELAY: must be a whole number/],
    [{ OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%zzsecret' }, /^config: OTEL_EXPORTER_OTLP_HEADERS: must be key=value pairs/]
  ]
  for (const [env, message] of bad) {
    let err: unknown
    try { buildConfig({}, env) } catch (e) { err = e }
    t.type(err, UsageError, JSON.stringify(env))
    t.match((err as Error).message, message)
    t.notMatch((err as Error).message, /secret/, 'a header value is never shown')
  }
  t.same(buildConfig({}, { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }).tracing.url, null, 'http/protobuf is accepted (the same OTLP/HTTP port takes JSON)')
})

t.test('the SDK is loaded only when tracing is on: src/observability/otel.ts alone imports it, and only the start command imports it, dynamically', async (t) => {
  const src = join(ROOT, 'src')
  const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))
  for (const f of files) {
    const text = readFileSync(join(src, f), 'utf8')
    // every static import but `import type` (which is erased), multi-line ones too
    const runtime = [...text.matchAll(/^import (?!type )[\s\S]*?from '([^']+)'/gm)].map((m) => m[1]).filter((m) => m.startsWith('@opentelemetry/') || resolve(dirname(join(src, f)), m) === join(src, 'observability', 'otel.js'))
    if (f === join('observability', 'otel.ts')) t.ok(runtime.some((m) => m.startsWith('@opentelemetry/')), 'otel.ts imports the SDK')
    else t.same(runtime, [], `${f} imports neither the SDK nor otel.ts statically`)
  }
  t.match(readFileSync(join(src, 'app', 'start.ts'), 'utf8'), /await import\('\.\.\/observability\/otel\.js'\)/, 'start imports it when tracing is on')
})

// ── over real processes ───────────────────────────────────────────────────

interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes: Array<{ key: string, value: Record<string, unknown> }>
  resource: Record<string, unknown>
}

/** The OTLP/HTTP receiver: every body as received (for the credential search) and every span, flattened. */
async function startReceiver (): Promise<{
  url: string,
  bodies: string[],
  headers: http.IncomingHttpHeaders[],
  spans: OtlpSpan[],
  close: () => Promise<void>
}> {
  const bodies: string[] = []
  const headers: http.IncomingHttpHeaders[] = []
  const spans: OtlpSpan[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') { res.writeHead(404).end(); return }
      const text = Buffer.concat(chunks).toString('utf8')
      bodies.push(text)
      headers.push(req.headers)
      const doc = JSON.parse(text)
      for (const rs of doc.resourceSpans ?? []) {
        const resource = attrs(rs.resource?.attributes ?? [])
        for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, resource })
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    headers,
    spans,
    async close () {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

function attrs (list: Array<{ key: string, value: Record<string, unknown> }>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const { key, value } of list) {
    const v = value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue
    out[key] = typeof v === 'string' && value.intValue !== undefined ? Number(v) : v
  }
  return out
}

/** A request from a chosen local address (a trusted proxy's, or not). */
async function from (
  local: string,
  base: string,
  path: string,
  o: { method?: string, headers?: Record<string, string>, body?: string } = {}
): Promise<Res> {
  const u = new URL(base)
  return await new Promise((resolve, reject) => {
    const headers = { ...o.headers }
    if (o.body !== undefined) headers['content-length'] = String(Buffer.byteLength(o.body))
    const req = http.request({ host: u.hostname, port: u.port, method: o.method ?? 'GET', path, headers, localAddress: local, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        let json: unknown
        try { json = JSON.parse(text) } catch {}
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json })
      })
    })
    req.on('error', reject)
    req.end(o.body)
  })
}

const hex = (n: number): string => randomBytes(n).toString('hex')
const parseTraceparent = (v: unknown): { traceId: string, parentId: string, flags: string } => {
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(String(v))
  if (m === null) throw new Error(`not a traceparent: ${String(v)}`)
  return { traceId: m[1], parentId: m[2], flags: m[3] }
}
const accessLines = (out: string): any[] => out.split('\n').filter((l) => l.includes('"msg":"request"')).map((l) => JSON.parse(l))

const redis = await startRedis()
t.teardown(() => redis.stop())
const receiver = await startReceiver()
t.teardown(() => receiver.close())
const echo = await startEcho()
t.teardown(() => echo.close())

/**
 * `sidegate start` on its own key prefix, the echo upstream, TRUSTED as its
 * trusted proxy, with `env` (exports every 20 ms unless it says otherwise).
 */
async function gateway (
  t: Test, prefix: string, env: Record<string, string>
): Promise<{ dir: string, url: string, gw: Started }> {
  const D = await workdir({ redis: { url: redis.url, prefix }, upstream: { url: echo.url }, server: { trusted_proxies: [TRUSTED] } }, `sidegate-trace-${prefix.slice(0, -1)}-`)
  const gw = await startIn(D.dir, D.url, { env: { SIDEGATE_SECRET_KEY: SECRET_KEY, SIDEGATE_ADMIN_PASSWORD: ADMIN_PASSWORD, OTEL_BSP_SCHEDULE_DELAY: '20', ...env } })
  t.teardown(() => gw.stop('SIGKILL'))
  return { dir: D.dir, url: D.url, gw }
}

/** A bearer token for admin (single-use: one per request). */
const newToken = async (base: string): Promise<string> =>
  (await from(UNTRUSTED, base, '/api/v1/authentication/auth/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }) })).json.token

t.test('tracing off (OTEL_SDK_DISABLED with an endpoint): nothing is exported, no traceparent is added, no trace id is logged', async (t) => {
  const { url, gw } = await gateway(t, 'off:', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SDK_DISABLED: 'true', OTEL_SERVICE_NAME: 'sidegate-off' })
  const token = await newToken(url)
  const before = echo.seen.length
  const r = await from(UNTRUSTED, url, '/off/plain', { headers: { authorization: `Bearer ${token}` } })
  t.equal(r.status, 200)
  const seen = echo.seen.slice(before)
  t.equal(seen.length, 1)
  t.equal(seen[0].headers.traceparent, undefined, 'no traceparent is added')
  t.equal(seen[0].headers.tracestate, undefined)
  await gw.stop()
  t.notMatch(gw.out(), /tracing on/)
  const lines = accessLines(gw.out())
  t.ok(lines.length >= 2, 'access log lines were written')
  t.ok(lines.every((l) => l.trace_id === undefined), 'no trace_id in the access log')
  // the receiver is checked once the gateway with tracing on (below) has exported to it: nothing came from this one
})

t.test('tracing on: a server span per request with its Redis and upstream children; traceparent trusted only from trusted peers; no credential exported', async (t) => {
  const { dir, url, gw } = await gateway(t, 'on:', {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_HEADERS: `x-collector-token=${COLLECTOR_TOKEN}`,
    OTEL_SERVICE_NAME: 'sidegate-on',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test'
  })
  const D = { dir, url }
  t.match(gw.out(), /"msg":"tracing on"/)

  // the credentials, to search the exported JSON for
  const tokenAnswer = await from(UNTRUSTED, D.url, '/api/v1/authentication/auth/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }) })
  t.equal(tokenAnswer.status, 201)
  const token: string = tokenAnswer.json.token
  const made = await cliIn(D.dir, ['key', 'create', 'admin', '--json'], { env: { SIDEGATE_SECRET_KEY: SECRET_KEY } })
  t.equal(made.code, 0, made.stderr)
  const key = JSON.parse(made.stdout) as { id: string, secret: string }
  const admin = (JSON.parse((await cliIn(D.dir, ['user', 'list', '--json'], { env: { SIDEGATE_SECRET_KEY: SECRET_KEY } })).stdout) as Array<{ id: string, username: string }>).find((u) => u.username === 'admin')!

  // 1. an untrusted client with its own traceparent and tracestate: a new trace, neither forwarded as sent
  const forgedTrace = hex(16)
  const forgedParent = `00-${forgedTrace}-${hex(8)}-01`
  let before = echo.seen.length
  const r1 = await from(UNTRUSTED, D.url, '/things/1?access_token=query-credential-value', {
    headers: { authorization: `Bearer ${token}`, traceparent: forgedParent, tracestate: 'forged=untrusted' }
  })
  t.equal(r1.status, 200)
  const up1 = echo.seen.slice(before)[0]
  const tp1 = parseTraceparent(up1.headers.traceparent)
  t.not(tp1.traceId, forgedTrace, 'an untrusted peer\'s trace is not continued')
  t.equal(tp1.flags, '01', 'sampled')
  t.equal(up1.headers.tracestate, undefined, 'an untrusted tracestate is dropped')

  // 2. a trusted proxy's traceparent and tracestate: continued and propagated
  const trustedTrace = hex(16)
  const trustedParent = hex(8)
  before = echo.seen.length
  const r2 = await from(TRUSTED, D.url, '/things/2', {
    headers: { authorization: `Bearer ${await newToken(D.url)}`, traceparent: `00-${trustedTrace}-${trustedParent}-01`, tracestate: 'vendor=trusted' }
  })
  t.equal(r2.status, 200)
  const up2 = echo.seen.slice(before)[0]
  const tp2 = parseTraceparent(up2.headers.traceparent)
  t.equal(tp2.traceId, trustedTrace, 'a trusted peer\'s trace is continued to the upstream')
  t.not(tp2.parentId, trustedParent, 'the upstream\'s parent is sidegate\'s span')
  t.equal(up2.headers.tracestate, 'vendor=trusted', 'a trusted tracestate is propagated')

  // 3. an access-key signature, on an own route (http.route), and a request without any traceparent
  const path = '/api/v1/authentication/access-keys/'
  before = echo.seen.length
  const r3 = await from(UNTRUSTED, D.url, path, { headers: signedHeaders(key.id, key.secret, 'GET', path) })
  t.equal(r3.status, 200)
  const signature = /signature="([^"]+)"/.exec(signedHeaders(key.id, key.secret, 'GET', path).authorization)![1]

  // every span of the three traces has arrived
  const spansOf = (traceId: string): OtlpSpan[] => receiver.spans.filter((s) => s.traceId === traceId)
  const upstreamSpanOf = (traceId: string): OtlpSpan | undefined => spansOf(traceId).find((s) => s.kind === 3 && attrs(s.attributes)['http.request.method'] !== undefined)
  t.ok(await eventually(async () => upstreamSpanOf(tp1.traceId) !== undefined && spansOf(tp1.traceId).some(
    (s) => s.kind === 2
  ) &&
    upstreamSpanOf(tp2.traceId) !== undefined && spansOf(tp2.traceId).some((s) => s.kind === 2), 30_000), 'the spans were exported')

  // the untrusted request's trace: server span, Redis children, upstream client span
  const server1 = spansOf(tp1.traceId).find((s) => s.kind === 2)!
  const a1 = attrs(server1.attributes)
  t.equal(server1.name, 'GET upstream')
  t.equal(server1.parentSpanId || undefined, undefined, 'a root span')
  t.equal(a1['http.request.method'], 'GET')
  t.equal(a1['url.path'], '/things/1', 'the path without its query')
  t.equal(a1['http.response.status_code'], 200)
  t.equal(a1['sidegate.auth.method'], 'bearer')
  t.equal(a1['sidegate.org'], DEFAULT_ORG)
  t.equal(a1['enduser.id'], admin.id, 'the user is named by id')
  t.equal(a1['client.address'], UNTRUSTED)
  t.equal(server1.resource['service.name'], 'sidegate-on')
  t.equal(server1.resource['deployment.environment.name'], 'test')
  const redis1 = spansOf(tp1.traceId).filter((s) => attrs(s.attributes)['db.system.name'] === 'redis')
  t.ok(redis1.length >= 1, 'Redis commands have spans')
  t.ok(redis1.every((s) => s.parentSpanId === server1.spanId && s.kind === 3), 'children of the server span')
  t.ok(redis1.every((s) => /^[A-Z]+$/.test(s.name) && attrs(s.attributes)['db.operation.name'] === s.name), 'named by the command')
  const client1 = upstreamSpanOf(tp1.traceId)!
  t.equal(client1.parentSpanId, server1.spanId, 'the upstream call is a child of the server span')
  t.equal(tp1.parentId, client1.spanId, 'the upstream\'s traceparent names the upstream call\'s span')
  t.equal(attrs(client1.attributes)['http.response.status_code'], 200)
  t.equal(attrs(client1.attributes)['server.port'], Number(new URL(echo.url).port))

  // the trusted request's trace continues the caller's span
  const server2 = spansOf(tp2.traceId).find((s) => s.kind === 2)!
  t.equal(server2.parentSpanId, trustedParent, 'the server span\'s parent is the trusted caller\'s span')
  t.equal(upstreamSpanOf(tp2.traceId)!.parentSpanId, server2.spanId)
  t.equal(tp2.parentId, upstreamSpanOf(tp2.traceId)!.spanId)

  // the own route: named by its path template, with http.route; the token endpoint's span too
  t.ok(await eventually(async () => receiver.spans.some((s) => s.name === `GET ${path}`) && receiver.spans.some((s) => s.name === 'POST /api/v1/authentication/auth/'), 30_000))
  const own = receiver.spans.find((s) => s.name === `GET ${path}`)!
  t.equal(attrs(own.attributes)['http.route'], path)
  t.equal(attrs(own.attributes)['sidegate.auth.method'], 'access_key')
  t.equal(attrs(own.attributes)['enduser.id'], admin.id)
  t.ok(receiver.spans.some((s) => s.parentSpanId === own.spanId && attrs(s.attributes)['db.system.name'] === 'redis'), 'the signature check\'s Redis reads are its children')

  t.equal(receiver.spans.filter((s) => s.resource['service.name'] === 'sidegate-off').length, 0, 'the receiver got nothing from the gateway with tracing off (which ran first)')

  // a WebSocket upgrade: the same trust rule, a server span answered 101, the upstream call's traceparent
  const wsToken = await newToken(D.url)
  before = echo.seen.length
  const forged = hex(16)
  const sock = net.connect({ host: '127.0.0.1', port: Number(new URL(D.url).port), localAddress: UNTRUSTED })
  t.teardown(() => sock.destroy())
  let head = ''
  sock.on('data', (c: Buffer) => { head += c.toString('latin1') })
  sock.write(`GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nAuthorization: Bearer ${wsToken}\r\ntraceparent: 00-${forged}-${hex(8)}-01\r\n\r\n`)
  t.ok(await eventually(async () => head.includes('\r\n\r\n'), 30_000))
  t.match(head, /^HTTP\/1\.1 101 /)
  sock.destroy()
  const upWs = echo.seen.slice(before)[0]
  const tpWs = parseTraceparent(upWs.headers.traceparent)
  t.not(tpWs.traceId, forged, 'an untrusted upgrade starts a new trace')
  t.ok(
    await eventually(
      async () => spansOf(tpWs.traceId).some((s) => s.kind === 2) && upstreamSpanOf(tpWs.traceId) !== undefined, 30_000
    )
  )
  const serverWs = spansOf(tpWs.traceId).find((s) => s.kind === 2)!
  t.equal(serverWs.name, 'GET upstream')
  t.equal(attrs(serverWs.attributes)['http.response.status_code'], 101)
  t.equal(attrs(serverWs.attributes)['sidegate.auth.method'], 'bearer')
  t.equal(upstreamSpanOf(tpWs.traceId)!.spanId, tpWs.parentId)
  t.ok(spansOf(tpWs.traceId).some((s) => s.parentSpanId === serverWs.spanId && attrs(s.attributes)['db.system.name'] === 'redis'), 'the upgrade\'s Redis commands are its children')

  // the exporter sent the configured headers
  t.ok(receiver.headers.every((h) => h['x-collector-token'] === COLLECTOR_TOKEN), 'OTEL_EXPORTER_OTLP_HEADERS reach the collector')
  t.match(String(receiver.headers[0]['content-type']), /application\/json/, 'OTLP/HTTP JSON')

  // the trace id in the access log line
  await gw.stop()
  const lines = accessLines(gw.out())
  t.equal(lines.find((l) => l.path === '/things/1')?.trace_id, tp1.traceId)
  t.equal(lines.find((l) => l.path === '/things/2')?.trace_id, trustedTrace)
  t.ok(lines.every((l) => /^[0-9a-f]{32}$/.test(l.trace_id)), 'every access log line has one')

  // no credential anywhere in what was exported
  const exported = receiver.bodies.join('\n')
  for (const [what, value] of Object.entries({ 'the bearer token': token, 'another bearer token': wsToken, 'the password': ADMIN_PASSWORD, 'the access key id': key.id, 'the access key secret': key.secret, 'the signature': signature, 'the query\'s credential': 'query-credential-value', 'the secret key': SECRET_KEY, 'the collector token': COLLECTOR_TOKEN })) {
    t.notOk(exported.includes(value), `${what} is not exported`)
  }
  t.notMatch(exported, /authorization|cookie|access_token/i, 'no credential-bearing header or parameter name either')
})

t.test('a stopping gateway sends the spans still queued; a collector that cannot be reached is logged, never waited for', async (t) => {
  // a batch delay of ten minutes: only the shutdown can have sent this span
  const { url: D, gw } = await gateway(t, 'flush:', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'sidegate-flush', OTEL_BSP_SCHEDULE_DELAY: '600000' })
  t.equal((await from(UNTRUSTED, D, '/flush/me')).status, 401)
  t.equal(await gw.stop(), 0)
  const flushed = receiver.spans.filter((s) => s.resource['service.name'] === 'sidegate-flush')
  t.ok(flushed.some((s) => s.name === 'GET upstream' && attrs(s.attributes)['url.path'] === '/flush/me' && attrs(s.attributes)['http.response.status_code'] === 401), 'the queued span was exported at the stop')
  t.equal(flushed.find((s) => attrs(s.attributes)['url.path'] === '/flush/me')?.resource['service.name'], 'sidegate-flush')

  const { url: E, gw: down } = await gateway(t, 'refused:', { OTEL_EXPORTER_OTLP_ENDPOINT: REFUSED_URL })
  t.equal((await from(UNTRUSTED, E, '/refused')).status, 401, 'requests are answered')
  t.ok(await eventually(async () => /tracing: spans could not be exported/.test(down.out()), 30_000), 'the failed export is logged')
  t.equal((await from(UNTRUSTED, E, '/refused')).status, 401, 'and still answered')
  t.equal(await down.stop(), 0, 'and the gateway stops cleanly')
})

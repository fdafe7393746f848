/**
 * The OpenAPI document (validated with a real OpenAPI 3.1
 * validator), Swagger UI's page and assets, /docs, docs.enabled.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { gunzipSync } from 'node:zlib'
import { parse as parseYaml } from 'yaml'
import { Validator } from '@seriousme/openapi-schema-validator'
import { request, startEcho } from '../fixtures/http.js'
import { embeddedStore, startGateway, ROOT } from '../fixtures/gateway.js'
import { E, ERRORS, GatewayError, HTTP_ERROR_CODES, type ErrorSpec } from '../../src/errors.js'
import { AUDIT_EVENTS, auditTable } from '../../src/observability/audit.js'
import { errorTable } from '../../src/routes/openapi.js'
import { configKeys, configTable } from '../../src/config/reference.js'
import { swaggerUiDir } from '../../src/routes/static.js'

const db = embeddedStore()
const g = await startGateway(db.url)
t.teardown(async () => { await g.close(); await db.stop() })

const getDoc = async (url = g.url): Promise<any> => (await request(url, '/api/docs/openapi.json')).json

t.test('openapi.json is a valid OpenAPI 3.1 document, and the validator really checks', async (t) => {
  const r = await request(g.url, '/api/docs/openapi.json')
  t.equal(r.status, 200)
  t.match(r.headers['content-type'], /^application\/json/)
  const doc = r.json
  t.equal(doc.openapi, '3.1.0')
  const v = new Validator()
  const res = await v.validate(doc)
  t.same(res.errors, undefined, 'no validation errors')
  t.equal(res.valid, true)
  t.equal(v.version, '3.1')

  const broken = structuredClone(doc)
  broken.paths['/healthz'].get.responses = { 200: { content: {} } }
  t.equal((await new Validator().validate(broken)).valid, false, 'a response without description is caught')

  // every $ref points somewhere
  const refs: string[] = []
  const walk = (x: unknown): void => {
    if (Array.isArray(x)) x.forEach(walk)
    else if (x !== null && typeof x === 'object') {
      for (const [k, v] of Object.entries(x)) k === '$ref' ? refs.push(v as string) : walk(v)
    }
  }
  walk(doc)
  t.ok(refs.length > 50)
  for (const ref of new Set(refs)) {
    const target = ref.slice(2).split('/').reduce((o: any, k) => o?.[k], doc)
    t.ok(target !== undefined, `${ref} resolves`)
  }
  const ids = Object.values(doc.paths).flatMap(
    (p: any) => Object.values(p).map((op: any) => op.operationId).filter(Boolean)
  )
  t.equal(new Set(ids).size, ids.length, 'operationIds are unique')
})

t.test('openapi.yaml is the same document', async (t) => {
  const r = await request(g.url, '/api/docs/openapi.yaml')
  t.equal(r.status, 200)
  t.match(r.headers['content-type'], /^application\/yaml/)
  t.notMatch(r.text, /[&*]a\d+/, 'no YAML anchors or aliases')
  t.same(parseYaml(r.text), await getDoc())
})

/**
 * The documented methods of a route: its one method; any method
 * (`*`, the decision endpoint) is documented as the five usual ones.
 */
function methodsOf (route: { method: string }): string[] {
  return route.method === '*' ? ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] : [route.method]
}

t.test('it describes every route sidegate serves', async (t) => {
  const doc = await getDoc()
  const assetPrefixes = ['/api/docs/', '/_sidegate/static/', '/_sidegate/auth/']
  for (const route of g.gw.routes) {
    if (route.prefix === true && assetPrefixes.includes(route.path)) continue
    const path = route.prefix === true ? `${route.path}{id}/` : route.path
    t.ok(doc.paths[path], `${path} documented`)
    for (const m of methodsOf(route)) {
      t.ok(doc.paths[path]?.[m.toLowerCase()], `${m} ${path} documented`)
    }
  }
  const token = doc.paths['/api/v1/authentication/auth/'].post
  t.same(token.security, [], 'the token endpoint needs no credential')
  t.same(Object.keys(token.requestBody.content).sort(), ['application/json', 'application/x-www-form-urlencoded'])
  t.ok(token.responses['201'], 'answers 201')
  t.same(doc.components.schemas.TokenResult.required, ['token', 'keyword', 'date_expired', 'user'])
  t.ok(token.responses['429'], 'documents the lockout')
  const profile = doc.paths['/api/v1/users/profile/'].get
  t.same(profile.security.map((s: any) => Object.keys(s)[0]), ['Bearer', 'PrivateToken', 'AccessKey', 'TrustedToken', 'Session'])
  t.ok(profile.parameters.some((p: any) => p.$ref === '#/components/parameters/OrgHeader'), 'the org header is a parameter')
})

t.test('each operation\'s credentials, org parameters and authentication errors follow its route\'s auth mode', async (t) => {
  const doc = await getDoc()
  const any = ['Bearer', 'PrivateToken', 'AccessKey', 'TrustedToken', 'Session']
  const modes = new Set<string>()
  for (const route of g.gw.routes) {
    if (route.docs === null) continue
    const path = route.path
    for (const m of methodsOf(route)) {
      const op = doc.paths[path][m.toLowerCase()]
      const schemes = op.security.map((s: any) => Object.keys(s)[0])
      const params = (op.parameters ?? []).map((p: any) => p.$ref)
      modes.add(route.auth)
      if (route.auth === 'user' || route.auth === 'user+org' || route.auth === 'user+org-if-member' || route.auth === 'decision') {
        t.same(schemes, any, `${m} ${path}: any credential`)
        t.equal(op.responses['401'].$ref, '#/components/responses/Unauthorized', `${m} ${path}: 401`)
        t.equal(params.includes('#/components/parameters/OrgHeader'), route.auth !== 'user', `${m} ${path}: the org header only when it acts in an org`)
        t.equal(params.includes('#/components/parameters/CsrfToken'), m !== 'GET', `${m} ${path}: X-CSRFToken on unsafe methods`)
      } else if (route.auth === 'session-page') {
        t.ok(schemes.length === 0 || (schemes.length === 1 && schemes[0] === 'Session'), `${m} ${path}: a browser session or nothing`)
      } else {
        t.notOk(schemes.includes('Bearer'), `${m} ${path}: takes no API credential`)
      }
    }
  }
  t.same([...modes].sort(), ['decision', 'none', 'session-page', 'user', 'user+org', 'user+org-if-member'], 'every auth mode seen')
})

t.test('the five security schemes with their exact header formats; the org header', async (t) => {
  const c = (await getDoc()).components
  const s = c.securitySchemes
  t.same(Object.keys(s).sort(), ['AccessKey', 'Bearer', 'PrivateToken', 'Session', 'TrustedToken'])
  t.match(s.TrustedToken, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
  t.match(s.TrustedToken.description, /none is configured, so none is accepted/, 'without an issuer it says so')
  t.match(s.Bearer, { type: 'http', scheme: 'bearer' })
  t.match(s.Bearer.description, 'Authorization: Bearer <token>')
  t.match(s.PrivateToken, { type: 'apiKey', in: 'header', name: 'Authorization' })
  t.match(s.PrivateToken.description, 'Authorization: Token <private token>')
  t.match(s.PrivateToken.description, 'PrivateToken')
  t.match(s.AccessKey, { type: 'apiKey', in: 'header', name: 'Authorization' })
  t.match(s.AccessKey.description, 'Authorization: Signature keyId="<AccessKeyID>",algorithm="hmac-sha256",headers="(request-target) accept date",signature="<base64>"')
  t.match(s.AccessKey.description, '%a, %d %b %Y %H:%M:%S GMT')
  t.match(s.Session, { type: 'apiKey', in: 'cookie', name: 'svc_sessionid' })
  t.match(s.Session.description, 'X-CSRFToken')
  t.match(s.Session.description, 'svc_csrftoken')
  t.match(c.parameters.OrgHeader, { name: 'X-SVC-ORG', in: 'header', required: false })
  t.match(c.parameters.CsrfToken, { name: 'X-CSRFToken', in: 'header' })
})

t.test('every error code sidegate can answer is a schema, with its real status', async (t) => {
  const doc = await getDoc()
  // what the E factories make: the only way to a GatewayError (test/unit/architecture.test.ts)
  const made = new Map<string, number>()
  for (const [name, f] of Object.entries(E) as Array<[string, (...a: any[]) => unknown]>) {
    const e = f('x', 1)
    t.type(e, GatewayError, `E.${name} makes a GatewayError`)
    if (e instanceof GatewayError) {
      t.equal(e.status, ERRORS[e.code].status, `E.${name}: ${e.code} with the catalogue's status`)
      made.set(e.code, e.status)
    }
  }
  t.same([...made.keys()].sort(), Object.keys(ERRORS).sort(), 'the factories make every code of the catalogue, and no other')
  const http = Object.keys(ERRORS).filter((c) => (ERRORS as Record<string, ErrorSpec>)[c].cliOnly !== true)
  t.same(HTTP_ERROR_CODES, http)
  t.ok(http.length >= 30, `${http.length} codes an HTTP client can get`)
  const schemas = doc.components.schemas
  for (const code of http) {
    const name = code.split('_').map((w) => w[0].toUpperCase() + w.slice(1)).join('') + 'Error'
    t.equal(schemas[name]?.properties?.code?.const, code, `${code}: schema ${name}`)
    t.match(schemas[name]?.description, `HTTP ${made.get(code)}.`, `${code}: documented with status ${made.get(code)}`)
  }
  t.same(schemas.ErrorCode.enum, http, 'ErrorCode lists exactly these')
  for (const cliOnly of ['user_exists', 'org_exists', 'user_not_found']) {
    t.equal((ERRORS as Record<string, ErrorSpec>)[cliOnly]?.cliOnly, true, `${cliOnly}: the command line's only`)
    t.notOk(schemas.ErrorCode.enum.includes(cliOnly), `${cliOnly}: not in the HTTP document`)
  }
  t.same(schemas.Error.required, ['detail', 'code'])
})

t.test('docs/errors.md\'s table is the catalogue (npm run docs:tables writes it)', async (t) => {
  const doc = readFileSync(join(ROOT, 'docs', 'errors.md'), 'utf8')
  const table = /<!-- errors:begin -->\n([\s\S]*?)\n<!-- errors:end -->/.exec(doc)?.[1]
  t.equal(table, errorTable(), 'docs/errors.md: run npm run docs:tables')
  for (const code of HTTP_ERROR_CODES) t.match(table, `| \`${code}\` |`, `${code} in docs/errors.md`)
})

t.test('docs/observability.md\'s audit table is the catalogue of audit events (npm run docs:tables writes it)', async (t) => {
  const doc = readFileSync(join(ROOT, 'docs', 'observability.md'), 'utf8')
  const table = /<!-- audit:begin -->\n([\s\S]*?)\n<!-- audit:end -->/.exec(doc)?.[1]
  t.equal(table, auditTable(), 'docs/observability.md, Audit trail: run npm run docs:tables')
  for (const event of Object.keys(AUDIT_EVENTS)) t.match(table, `| \`${event}\` |`, `${event} in docs/observability.md`)
  for (const event of Object.keys(AUDIT_EVENTS)) t.match(event, /^[a-z_]+\.[a-z_]+$/, `${event}: <object>.<what happened>`)
})

t.test('docs/configuration.md\'s key table is the config schema (npm run docs:tables writes it)', async (t) => {
  const doc = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8')
  const table = /<!-- config:begin -->\n([\s\S]*?)\n<!-- config:end -->/.exec(doc)?.[1]
  t.equal(table, configTable(), 'docs/configuration.md: run npm run docs:tables')
  for (const { key } of configKeys()) t.match(table, `| \`${key}\` |`, `${key} in docs/configuration.md`)
})

t.test('the document uses the configured names (X-<ABBREV>-ORG, <abbrev>_sessionid)', async (t) => {
  const jms = await startGateway(db.url, { names: { abbrev: 'JMS' } })
  t.teardown(() => jms.close())
  const text = (await request(jms.url, '/api/docs/openapi.json')).text
  const doc = JSON.parse(text)
  t.equal(doc.components.parameters.OrgHeader.name, 'X-JMS-ORG')
  t.equal(doc.components.securitySchemes.Session.name, 'jms_sessionid')
  t.match(doc.components.securitySchemes.Session.description, 'jms_csrftoken')
  t.notMatch(text, /X-SVC|svc_/, 'no default names left')
  t.equal((await new Validator().validate(doc)).valid, true)
})

t.test('GET /api/docs/: Swagger UI from our own routes, no inline code, long-cached assets', async (t) => {
  const page = await request(g.url, '/api/docs/')
  t.equal(page.status, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  const csp = String(page.headers['content-security-policy'])
  t.match(csp, /script-src 'self'/)
  t.notMatch(csp, /unsafe-inline|unsafe-eval/, 'Swagger UI runs under the strict CSP')
  t.equal(page.headers['x-frame-options'], 'DENY')
  t.equal(page.headers['referrer-policy'], 'same-origin')
  t.notMatch(page.text, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script')
  t.notMatch(page.text, /<style|\sstyle=|\son[a-z]+=/)
  t.notMatch(page.text, /https?:\/\//, 'nothing from another origin')
  t.match(page.text, 'data-spec-url="/api/docs/openapi.json"')
  const urls = [...page.text.matchAll(/(?:<script src|<link rel="stylesheet" href)="([^"]+)"/g)].map((m) => m[1])
  t.same(urls.map((u) => u.split('?')[0]).sort(), ['/api/docs/docs.css', '/api/docs/swagger-initializer.js', '/api/docs/swagger-ui-bundle.js', '/api/docs/swagger-ui.css'])

  const dist = swaggerUiDir()
  for (const u of urls) {
    const r = await request(g.url, u)
    t.equal(r.status, 200, u)
    t.equal(r.headers['cache-control'], 'public, max-age=31536000, immutable', `${u}: long-lived`)
    t.equal(r.headers['x-content-type-options'], 'nosniff')
    t.match(r.headers['content-type'], u.includes('.js') ? /^text\/javascript/ : /^text\/css/)
    const etag = r.headers.etag!
    const again = await request(g.url, u, { headers: { 'if-none-match': etag } })
    t.equal(again.status, 304, `${u}: revalidates`)
  }
  const bundle = await request(g.url, '/api/docs/swagger-ui-bundle.js', { headers: { 'accept-encoding': 'gzip, br' } })
  t.equal(bundle.headers['cache-control'], 'no-cache', 'an unversioned URL revalidates')
  t.equal(bundle.headers['content-encoding'], 'gzip')
  const raw = await new Promise<Buffer>((resolve, reject) => {
    import('node:http').then(({ get }) => get(`${g.url}/api/docs/swagger-ui-bundle.js`, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve(Buffer.concat(chunks)))
    }).on('error', reject), reject)
  })
  t.ok(gunzipSync(raw).equals(readFileSync(join(dist, 'swagger-ui-bundle.js'))), 'the bundle is swagger-ui-dist\'s, gzipped')
  const init = await request(g.url, '/api/docs/swagger-initializer.js')
  t.equal(init.text, readFileSync(join(ROOT, 'static', 'swagger-initializer.js'), 'utf8'), 'our own initializer, not swagger-ui-dist\'s petstore one')
  t.notMatch(init.text, /petstore/)

  for (const p of ['/api/docs/swagger-ui-bundle.js.map', '/api/docs/index.html', '/api/docs/../package.json', '/api/docs/%2e%2e/package.json', '/api/docs/nope.js', '/_sidegate/static/../../package.json']) {
    t.equal((await request(g.url, p)).status, 404, `${p}: not served`)
  }
  t.equal((await request(g.url, '/api/docs/swagger-ui.css', { method: 'POST' })).status, 405)
})

t.test('/docs and /docs/ (pre-2.0) and /api/docs redirect to /api/docs/', async (t) => {
  for (const p of ['/docs', '/docs/', '/api/docs']) {
    const r = await request(g.url, p)
    t.equal(r.status, 302, p)
    t.equal(r.headers.location, '/api/docs/')
  }
})

t.test('docs.enabled: false turns every docs path off', async (t) => {
  const off = await startGateway(db.url, { docs: { enabled: false } })
  const echo = await startEcho()
  const offUp = await startGateway(db.url, { docs: { enabled: false }, upstream: { url: echo.url } })
  const onUp = await startGateway(db.url, { upstream: { url: echo.url } })
  t.teardown(async () => { await off.close(); await offUp.close(); await onUp.close(); await echo.close() })
  for (const p of ['/api/docs/', '/api/docs/openapi.json', '/api/docs/openapi.yaml', '/docs', '/docs/', '/api/docs', '/api/docs/swagger-ui-bundle.js']) {
    const r = await request(off.url, p)
    t.equal(r.status, 404, `${p}: 404`)
    t.equal(r.json.code, 'not_found')
    t.equal((await request(offUp.url, p)).status, 401, `${p} with an upstream: the upstream's path, protected as any other`)
    t.equal((await request(onUp.url, p)).status, p === '/docs' || p === '/docs/' || p === '/api/docs' ? 302 : 200, `${p}: ours when enabled, upstream or not`)
  }
  t.notMatch((await request(off.url, '/login')).text, /api\/docs/, 'the login page does not link to them')
  t.equal(echo.seen.filter((s) => s.url.startsWith('/api/docs') || s.url.startsWith('/docs')).length, 0, 'nothing reached the upstream unauthenticated')
})

t.test('the npm package ships the static files; Swagger UI is a runtime dependency', async (t) => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
  t.ok(pkg.dependencies['swagger-ui-dist'], 'swagger-ui-dist in dependencies')
  const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT })
  const files: string[] = JSON.parse(stdout)[0].files.map((f: { path: string }) => f.path)
  for (const f of readdirSync(join(ROOT, 'static'))) t.ok(files.includes(`static/${f}`), `static/${f} packed`)
})

/**
 * A route's body schema (Route.body, src/routes/body.ts) is one declaration
 * with two uses: it refuses a body that fails it (400 with a catalogue code)
 * and it is what the OpenAPI document publishes for the operation. Also the
 * pages' templates (src/routes/html.ts Template): every value escaped; path
 * templates (src/http/path-template.ts); the check every test's answers pass
 * (test/fixtures/answers.ts) refuses what the document does not say.
 */
import t from 'tap'
import { Type as T } from '@sinclair/typebox'
import { post, request } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { ERRORS } from '../../src/errors.js'
import { refusal, validate, type BodySpec } from '../../src/routes/body.js'
import { Template } from '../../src/routes/html.js'
import { matchTemplate, parseTemplate } from '../../src/http/path-template.js'
import { checkAnswer } from '../fixtures/answers.js'
import { route } from '../../src/routes/types.js'

const db = embeddedStore()
const g = await startGateway(db.url)
t.teardown(async () => { await g.close(); await db.stop() })
const doc = (await request(g.url, '/api/docs/openapi.json')).json

t.test('every body schema the routes validate with is the one the document publishes for their operation', async (t) => {
  const withBody = g.gw.routes.filter((r) => r.body !== undefined)
  t.ok(withBody.length >= 6, `${withBody.length} routes take a body`)
  for (const r of withBody) {
    const body = r.body!
    const path = r.path
    const op = doc.paths[path][r.method.toLowerCase()]
    t.same(Object.keys(op.requestBody.content), body.types, `${r.method} ${path}: the media types`)
    for (const type of body.types) t.equal(op.requestBody.content[type].schema.$ref, `#/components/schemas/${body.name}`, `${r.method} ${path} ${type}: refers to ${body.name}`)
    t.equal(op.requestBody.required, body.required, `${r.method} ${path}: required as declared`)
    t.same(doc.components.schemas[body.name], JSON.parse(JSON.stringify(body.schema)), `${body.name}: published as validated`)
  }
})

t.test('a body that fails its schema is 400 with the catalogue\'s code, the limits as published', async (t) => {
  const token = '/api/v1/authentication/auth/'
  const credentials = doc.components.schemas.Credentials
  t.same(credentials.required, ['username', 'password'])
  const max = credentials.properties.username.maxLength
  t.equal(max, 150, 'the document publishes the username limit')
  const missing = await post(g.url, token, { username: 'alice' })
  t.same([missing.status, missing.json], [400, { detail: 'password: This field is required.', code: 'required' }], 'a required field absent')
  t.equal(ERRORS.required.status, 400, 'required is the catalogue\'s 400')
  const long = await post(g.url, token, { username: 'u'.repeat(max + 1), password: 'p' })
  t.same([long.status, long.json], [400, { detail: `username: Ensure this field has no more than ${max} characters.`, code: 'bad_request' }], 'one character over the published maxLength')
  const atMax = await post(g.url, token, { username: 'u'.repeat(max), password: 'p' })
  t.equal(atMax.status, 401, 'at the published maxLength: valid, and the password is checked')

  // a boolean, also as a form's "true"/"false": AccessKeyUpdate
  const u = await makeUser(g, 'bodyschema')
  const pt = await g.store.privateTokens.create(u.id)
  const { key } = await g.store.accessKeys.create(u.id)
  const path = `/api/v1/authentication/access-keys/${key.id}/`
  t.same(doc.components.schemas.AccessKeyUpdate.properties.is_active, { type: 'boolean' })
  const auth = { authorization: `Token ${pt}`, 'content-type': 'application/json' }
  const bad = await request(g.url, path, { method: 'PATCH', headers: auth, body: JSON.stringify({ is_active: 'maybe' }) })
  t.same([bad.status, bad.json], [400, { detail: 'is_active: Must be a valid boolean.', code: 'bad_request' }])
  t.equal((await g.store.accessKeys.get(key.id))?.key.is_active, true, 'nothing changed')
  const form = await request(g.url, path, { method: 'PATCH', headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, body: 'is_active=false' })
  t.same([form.status, form.json.is_active], [200, false], 'a form\'s "false" is the boolean')
  // the key is looked up before the body is read: another's key is 404 whatever the body
  const other = await request(g.url, '/api/v1/authentication/access-keys/00000000-0000-4000-8000-000000000000/', { method: 'PATCH', headers: auth, body: '{}' })
  t.equal(other.status, 404)
})

t.test('validate and refusal: the first failing field in the schema\'s order', async (t) => {
  const spec: BodySpec = {
    name: 'Example',
    schema: T.Object({
      a: T.String({ minLength: 1, maxLength: 3 }),
      b: T.Optional(T.Boolean()),
      c: T.Optional(T.String())
    }),
    types: ['application/json'],
    required: true,
    invalid: { c: 'Must be words.' }
  }
  const answer = (fields: Record<string, unknown>): unknown => {
    const f = validate(spec.schema, fields)[0]; return f === undefined ? null : refusal(spec, f).toJSON()
  }
  t.same(answer({}), { detail: 'a: This field is required.', code: 'required' })
  t.same(answer({ a: '' }), { detail: 'a: This field is required.', code: 'required' }, 'empty where minLength 1')
  t.same(answer({ a: 7 }), { detail: 'a: This field is required.', code: 'required' }, 'not a string where a non-empty one is asked for')
  t.same(answer({ a: 'abcd' }), { detail: 'a: Ensure this field has no more than 3 characters.', code: 'bad_request' })
  t.same(answer({ a: 'abcd', b: 'x' }), { detail: 'a: Ensure this field has no more than 3 characters.', code: 'bad_request' }, 'the first field wins')
  t.same(answer({ a: 'ab', b: 'x' }), { detail: 'b: Must be a valid boolean.', code: 'bad_request' })
  t.same(answer({ a: 'ab', c: 1 }), { detail: 'c: Must be words.', code: 'bad_request' }, 'the declared message')
  t.same(answer({ a: 'ab', b: true, c: 'x', extra: 1 }), null, 'valid; other fields are ignored')
})

t.test('a page template escapes every value and wants all of them', async (t) => {
  const tpl = new Template<{ v: string, on: boolean }>('test.html', '<p title="{{v}}">{{v}}</p>{{#on}}<b>{{v}}</b>{{/on}}{{^on}}off{{/on}}')
  t.same([...tpl.names].sort(), ['on', 'v'])
  t.equal(tpl.render({ v: '<x>"&\'', on: true }), '<p title="&lt;x&gt;&quot;&amp;&#39;">&lt;x&gt;&quot;&amp;&#39;</p><b>&lt;x&gt;&quot;&amp;&#39;</b>')
  t.equal(tpl.render({ v: '{{v}}', on: false }), '<p title="{{v}}">{{v}}</p>off', 'a value is never read as a placeholder')
  t.throws(() => tpl.render({ v: 'x' } as any), /no value for \{\{on\}\}/)
  t.throws(() => new Template('bad.html', '<p>{{#on}}x</p>'), /does not parse/, 'an unclosed section')
  for (const page of ['login.html', 'account.html', 'docs.html']) t.ok(Template.load(page).names.size > 0, `static/${page} parses`)
})

t.test('path templates: {name} segments take one non-empty segment, decoded once the whole path matched', async (t) => {
  const k = parseTemplate('/keys/{id}/')
  t.same([k.literal, k.names], ['/keys/', ['id']])
  t.same(matchTemplate(k, '/keys/a%2Fb/'.split('/')), { id: 'a/b' }, 'decoded: an escaped slash stays in the segment')
  for (const p of ['/keys/', '/keys//', '/keys/a', '/keys/a/b/', '/key/a/']) t.equal(matchTemplate(k, p.split('/')), null, p)
  t.throws(() => matchTemplate(k, '/keys/%E0%A4%A/'.split('/')), URIError, 'a malformed escape in a parameter')
  t.equal(matchTemplate(k, '/other/%E0%A4%A/'.split('/')), null, '…only where the path matched')
  t.same(matchTemplate(parseTemplate('/a/b'), ['', 'a', 'b']), {}, 'a template without parameters')
  t.throws(() => parseTemplate('/keys/x{id}/'), /whole \{name\} segment/)
  t.throws(() => parseTemplate('/{a}/{a}'), /named twice/)
})

t.test('the answer check refuses what the document does not say, and passes what it says', async (t) => {
  const answer = (status: number, body: unknown, type = 'application/json') =>
    ({ status, headers: { 'content-type': type }, text: typeof body === 'string' ? body : JSON.stringify(body) })
  const ok = { status: 'ok' }
  t.doesNotThrow(() => checkAnswer(g.url, 'GET', '/healthz', answer(200, ok)), 'as documented')
  t.throws(() => checkAnswer(g.url, 'GET', '/healthz', answer(299, ok)), /status 299 is not documented/)
  t.throws(() => checkAnswer(g.url, 'GET', '/healthz', answer(200, '<p>hi</p>', 'text/html')), /content type text\/html/)
  t.throws(() => checkAnswer(g.url, 'GET', '/healthz', answer(200, [])), /disagrees with the document/)
  const token = '/api/v1/authentication/auth/'
  t.doesNotThrow(() => checkAnswer(g.url, 'POST', token, answer(401, { detail: 'x', code: 'authentication_failed' })))
  t.throws(
    () => checkAnswer(g.url, 'POST', token, answer(401, { detail: 'x', code: 'key_expired' })),
    /disagrees/, 'an error code the answer does not list'
  )
  t.doesNotThrow(() => checkAnswer('http://127.0.0.1:1', 'GET', '/healthz', answer(299, ok)), 'another server: not checked')
  t.doesNotThrow(() => checkAnswer(g.url, 'GET', '/an/upstream/path', answer(299, ok)), 'not sidegate\'s route: not checked')
})

t.test('reply sends only what a route declares: tsc refuses the rest, and every JSON answer is declared', async (t) => {
  const ANSWER = T.Object({ a: T.String() })
  route({
    method: 'GET',
    path: '/x',
    auth: 'none',
    docs: null,
    handler (_ctx, { reply }) {
      // @ts-expect-error a route that declares no answers has no status to reply with
      reply(200, {})
    }
  })
  route({
    method: 'GET',
    path: '/y',
    auth: 'none',
    docs: null,
    answers: { 200: { description: 'y', schema: ANSWER } },
    handler (_ctx, { reply }) {
      // @ts-expect-error the body must be the answer's schema
      reply(200, { a: 1 })
      // @ts-expect-error a status the route does not declare
      reply(201, { a: 'x' })
      reply(200, { a: 'x' })
    }
  })
  // every route the document lists with a JSON 2xx declares it (Route.answers), but the document itself
  const doc = (await request(g.url, '/api/docs/openapi.json')).json as { paths: Record<string, Record<string, any>> }
  const undeclared: string[] = []
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (method === 'parameters' || op.operationId === 'openapiJson') continue
      for (const [status, r] of Object.entries(op.responses as Record<string, any>)) {
        if (status.startsWith('2') && r.content?.['application/json'] !== undefined && r.$ref === undefined) {
          if (!g.gw.routes.some((x) => x.path === path && x.answers?.[Number(status) as never] !== undefined)) {
            undeclared.push(`${method} ${path} ${status}`)
          }
        }
      }
    }
  }
  t.same(undeclared, [], 'every JSON success answer comes from Route.answers')
})

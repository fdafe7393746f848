/**
 * The lookup both listeners share (src/http/router.ts): exact paths, then
 * templates under the longest literal part, then the longest prefix; and the
 * segment a template could not decode, named (src/http/path-template.ts).
 */
import t from 'tap'
import { Router, PathSegmentError } from '../../src/http/router.js'
import { matchTemplate, parseTemplate } from '../../src/http/path-template.js'

const routes = [
  { path: '/api/users', method: 'GET' },
  { path: '/api/users', method: 'POST' },
  { path: '/api/users/{id}', method: 'GET' },
  { path: '/api/users/{id}/keys/{key}', method: 'DELETE' },
  { path: '/api/users/me', method: 'GET' },
  { path: '/static/', method: 'GET', prefix: true },
  { path: '/static/docs/', method: 'GET', prefix: true },
  { path: '/decide', method: '*' }
]
const router = new Router(routes)

t.test('exact, then template, then prefix; HEAD is GET; * is any method', async (t) => {
  const route = (path: string, method: string): unknown => {
    const f = router.find(path, method)
    return f === null || f === 'missing' ? f : f.route
  }
  t.equal(route('/api/users', 'POST'), routes[1])
  t.equal(route('/api/users/me', 'GET'), routes[4], 'an exact path wins over a template')
  t.equal(route('/api/users/42', 'HEAD'), routes[2])
  t.equal(route('/api/users/42/keys/k', 'DELETE'), routes[3])
  t.equal(route('/static/docs/a.css', 'GET'), routes[6], 'the longest prefix')
  t.equal(route('/static/a.css', 'GET'), routes[5])
  t.equal(route('/decide', 'PATCH'), routes[7])
  t.equal(route('/elsewhere', 'GET'), null, 'not served')
  t.equal(route('/api/users/42/nothing', 'GET'), 'missing', 'under a family, matching none of its templates')
  const other = router.find('/api/users', 'DELETE')
  t.ok(other !== null && other !== 'missing' && other.route === undefined, 'another method: no route')
  t.same(other !== null && other !== 'missing' ? other.group.map((r) => r.method) : [], ['GET', 'POST'], 'and the methods that are')
})

t.test('a segment that is not valid percent-encoding is named', async (t) => {
  t.same(router.group('/api/users/%zz'), [routes[2]], 'the template still serves the path')
  const err = t.throws(() => matchTemplate(parseTemplate('/api/users/{id}'), '/api/users/%zz'.split('/'))) as unknown
  t.ok(err instanceof PathSegmentError && err instanceof URIError)
  t.equal((err as PathSegmentError).segment, '%zz')
  t.same(matchTemplate(parseTemplate('/api/users/{id}'), '/api/users/a%20b'.split('/')), { id: 'a b' })
})

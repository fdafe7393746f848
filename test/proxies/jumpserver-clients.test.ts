/**
 * JumpServer's own documented client code (Python requests + httpsig, Debian's
 * python3-requests and python3-httpsig: code nobody here wrote) against
 * sidegate in JMS mode with the migration settings: the fixed 2014 date with
 * auth.signature.clock_skew 0, a token from /tokens/ reused with
 * auth.bearer.single_use false, JumpServer's wrong-password answer.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { join } from 'node:path'
import { startRedis } from '../fixtures/redis.js'
import { ROOT, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'

const run = promisify(execFile)
/** Debian's python: the one its python3-* packages install into */
const PYTHON = '/usr/bin/python3'
const why = await run(PYTHON, ['-c', 'import requests, httpsig']).then(() => null, (err: Error) => `${PYTHON} with requests and httpsig is not available (apt-get install python3-requests python3-httpsig): ${err.message.split('\n')[0]}`)

t.test('JumpServer\'s documented Python client, unchanged', { skip: why ?? false }, async (t) => {
  const redis = await startRedis()
  t.teardown(async () => { await redis.stop() })
  const g = await startGateway(redis.url, {
    names: { abbrev: 'JMS' },
    auth: { bearer: { single_use: false }, signature: { clock_skew: 0 } }
  })
  t.teardown(async () => { await g.close() })
  const u = await makeUser(g, 'carol')
  const { key, secret } = await g.store.accessKeys.create(u.id)
  const { stdout } = await run(PYTHON, [join(ROOT, 'test', 'clients', 'jumpserver_docs.py'), g.url, 'carol', 'carol-password', key.id, secret, '00000000-0000-0000-0000-000000000002'], { timeout: 60_000 })
  const out = JSON.parse(stdout)
  t.equal(out.signature_now.status, 200, 'signed with the current date')
  t.equal(out.signature_now.body.username, 'carol')
  t.same(out.signature_now.body.source, { value: 'local', label: 'Local' }, 'JumpServer\'s shapes')
  t.equal(out.signature_2014.status, 200, 'signed with the documentation\'s fixed 2014 date (clock_skew 0)')
  t.equal(out.signature_sha512.status, 200, 'hmac-sha512')
  t.same(out.token, { status: 201, keys: ['date_expired', 'keyword', 'token', 'user'] }, 'a token from /api/v1/authentication/tokens/')
  t.same(out.bearer_uses, [200, 200, 200], 'reused three times (single_use false)')
  t.same(out.wrong_password, { status: 400, body: { error: 'password_failed', msg: 'The username or password you entered is incorrect, please enter it again.', code: 'authentication_failed' } })
})

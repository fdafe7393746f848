/**
 * `sidegate mfa …` and the admin API's second-factor operations against a
 * real `sidegate start` process on the embedded store: one implementation
 * (the same JSON), an operator's enrolment confirmed by the user's first
 * code on the login page (codes from oathtool), never a secret listed,
 * reset and require; passkeys listed (never a key) and removed by reset.
 */
import t from 'tap'
import { dirname } from 'node:path'
import { request, startEcho, type Res } from '../fixtures/http.js'
import { embeddedStore, SECRET, spawnGateway, storeDoc } from '../fixtures/gateway.js'
import { openSqlite } from '../fixtures/transfer.js'
import { adminApiOf, cliIn, cliOf } from '../fixtures/procs.js'
import { postForm, setCookies } from '../fixtures/session.js'
import { oathtool, secretOf } from '../fixtures/oathtool.js'

const db = embeddedStore()
const echo = await startEcho()
const gw = await spawnGateway(db.url, { upstream: { url: echo.url }, admin: { enabled: true } }, `mfa${process.pid}:`)
t.teardown(async () => { await gw.stop(); await echo.close(); await db.stop() })

const { cli, cliJson } = cliOf(gw.configFile, SECRET)
const api = await adminApiOf(gw.adminUrl, cliJson)
const TOKEN = '/api/v1/authentication/auth/'
const tokenFor = async (username: string, password: string, extra: Record<string, string> = {}): Promise<Res> =>
  await request(gw.url, TOKEN, { method: 'POST', body: JSON.stringify({ username, password, ...extra }), headers: { 'content-type': 'application/json' } })

t.test('mfa enroll prints the otpauth URI once; the user confirms it with a first code at sign-in; then every sign-in needs a code', async (t) => {
  const add = await cliIn(dirname(gw.configFile), ['user', 'add', 'dana', '--password-stdin', '--org', '00000000-0000-0000-0000-000000000002', '--config', gw.configFile], { env: { SIDEGATE_SECRET_KEY: SECRET }, stdin: 'dana-password-1\n' })
  t.equal(add.code, 0, add.stderr)
  const r = await cli('mfa', 'enroll', 'dana')
  t.equal(r.code, 0, r.stderr)
  const uri = r.stdout.split('\n')[0]
  t.match(uri, /^otpauth:\/\/totp\/sidegate:dana\?secret=[A-Z2-7]{32}&issuer=sidegate&algorithm=SHA1&digits=6&period=30$/)
  const secret = secretOf(uri)
  const again = await cli('mfa', 'enroll', 'dana')
  t.equal(again.code, 0, 'a pending enrolment may be begun again (a new secret)')
  const uri2 = again.stdout.split('\n')[0]
  t.not(secretOf(uri2), secret)

  const show = await cliJson('mfa', 'show', 'dana')
  t.same(Object.keys(show).sort(), ['passkeys', 'recovery_codes', 'required', 'totp', 'username'])
  t.equal(show.totp.confirmed, false)
  t.equal(show.required, true)
  t.notOk(JSON.stringify(show).includes(secretOf(uri2)), 'never the secret')
  t.equal((await tokenFor('dana', 'dana-password-1')).json.code, 'mfa_unset', 'the token endpoint: enrol first')

  const first = await postForm(gw.url, '/login', { username: 'dana', password: 'dana-password-1' })
  t.match(first.text, /Your administrator set up a second factor/)
  t.notOk(first.text.includes(secretOf(uri2)), 'the login page does not show an operator\'s secret')
  const ok = await postForm(gw.url, '/login/mfa', { code: oathtool(secretOf(uri2)) }, { cookie: `svc_mfa=${setCookies(first).svc_mfa.value}` })
  t.equal(ok.status, 200, ok.text.slice(0, 300))
  t.match(ok.text, /Your recovery codes/)
  const on = await cliJson('mfa', 'show', 'dana')
  t.equal(on.totp.confirmed, true)
  t.equal(on.required, false)
  t.equal(on.recovery_codes, 10)
  t.equal((await cli('mfa', 'enroll', 'dana')).code, 1, 'a confirmed factor is not replaced: reset first')
  t.equal((await tokenFor('dana', 'dana-password-1')).json.error, 'mfa_required')
})

t.test('the admin API: the same JSON as the CLI; require, reset; unknown user 404', async (t) => {
  const show = await api('GET', 'users/dana/mfa')
  t.equal(show.status, 200)
  t.same(show.json, await cliJson('mfa', 'show', 'dana'))
  const reset = await api('DELETE', 'users/dana/mfa')
  t.same(reset.json, { username: 'dana', reset: true })
  t.equal((await tokenFor('dana', 'dana-password-1')).status, 201, 'after a reset the password alone works again (auth.mfa.required none)')
  t.same((await api('POST', 'users/dana/mfa/required')).json, { username: 'dana', required: true })
  t.equal((await tokenFor('dana', 'dana-password-1')).json.code, 'mfa_unset')
  t.same(await cliJson('mfa', 'reset', 'dana'), { username: 'dana', reset: true })
  const enrol = await api('POST', 'users/dana/mfa/totp')
  t.equal(enrol.status, 201)
  t.match(enrol.json.uri, /^otpauth:\/\/totp\/sidegate:dana\?/)
  t.equal(enrol.json.secret, secretOf(enrol.json.uri))
  t.equal((await api('GET', 'users/nobody/mfa')).status, 404)
  t.ok(gw.output().includes('"event":"mfa.reset"'), 'the admin API\'s reset is audited')
  t.ok(gw.output().includes('"event":"mfa.enrolled"'), 'and the enrolment')
  t.notOk(gw.output().includes(enrol.json.secret), 'the secret is never logged')
})

t.test('passkeys: mfa show lists them (never a key), the admin API the same; mfa reset removes them', async (t) => {
  const add = await cliIn(dirname(gw.configFile), ['user', 'add', 'pat', '--password-stdin', '--org', '00000000-0000-0000-0000-000000000002', '--config', gw.configFile], { env: { SIDEGATE_SECRET_KEY: SECRET }, stdin: 'pat-password-1\n' })
  t.equal(add.code, 0, add.stderr)
  // the gateway's store file, opened beside it (SQLite: several processes share one file)
  const s = await openSqlite(storeDoc(db.url, `mfa${process.pid}:`).store.path as string)
  t.teardown(() => s.close())
  const pat = (await s.users.byUsername('pat'))!
  t.ok(await s.passkeys.add({ id: 'cGF0LWtleQ', user_id: pat.id, user_handle: 'aGFuZGxl', public_key: 'c2VjcmV0LWxvb2tpbmc', counter: 0, transports: ['internal'], device_type: 'multiDevice', backed_up: true, name: 'Phone' }))
  const shown = await cli('mfa', 'show', 'pat')
  t.match(shown.stdout, /passkeys: 1\n {2}Phone \(synced; added \S+; last used never\)/)
  const json = await cliJson('mfa', 'show', 'pat')
  t.match(json.passkeys, [{ id: 'cGF0LWtleQ', name: 'Phone', device_type: 'multiDevice', backed_up: true, last_used: null }])
  t.notOk(JSON.stringify(json).includes('c2VjcmV0LWxvb2tpbmc'), 'never the public key (nor anything of the key)')
  t.same((await api('GET', 'users/pat/mfa')).json, json, 'the admin API answers the same JSON')
  t.equal((await tokenFor('pat', 'pat-password-1')).json.code, 'mfa_passkey_only', 'the token endpoint: a passkey is no choice there')
  t.same(await cliJson('mfa', 'reset', 'pat'), { username: 'pat', reset: true }, 'reset: there was a passkey')
  t.same((await cliJson('mfa', 'show', 'pat')).passkeys, [], 'removed')
  t.equal((await tokenFor('pat', 'pat-password-1')).status, 201, 'the password alone again')
})

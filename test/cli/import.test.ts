/**
 * `sidegate import` over real processes: the CLI on the embedded store while a
 * real `sidegate start` (names.abbrev: JMS) serves from the same store. The
 * Django password hashes were made by Python's hashlib (not by sidegate), the
 * access key is used by JumpServer's documented Python client where it is
 * installed and by the tests' own signer always, the imported 40-hex private
 * token must authenticate while any other untagged token is refused (without
 * a Redis command for it: test/topology/cli-redis.test.ts); a dry run and a
 * bad file write nothing, a rerun changes nothing.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { embeddedStore, openStoreAt, ROOT, SECRET, storeDoc } from '../fixtures/gateway.js'
import { cliIn, snapshot, startIn, workdir } from '../fixtures/procs.js'
import { signedHeaders } from '../fixtures/creds.js'
import { post, request } from '../fixtures/http.js'
import { eventually } from '../fixtures/wait.js'
import { djangoHash } from '../fixtures/django-hashes.js'

const run = promisify(execFile)
const PYTHON = '/usr/bin/python3'
const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'

const db = embeddedStore()
t.teardown(async () => { await db.stop() })
const prefix = 'imp:'
const wd = await workdir({
  ...storeDoc(db.url, prefix),
  names: { abbrev: 'JMS' },
  auth: { bearer: { single_use: false }, signature: { clock_skew: 0 }, lockout: { max_failures: 3, window: 600 } }
})
const env = { SIDEGATE_SECRET_KEY: SECRET, SIDEGATE_ADMIN_PASSWORD: 'admin-password-1' }
const cli = async (...args: string[]) => await cliIn(wd.dir, args, { env })
// the gateway runs throughout: what the import writes must reach it
// (the imported-token set is reloaded on the store's invalidations)
const g = await startIn(wd.dir, wd.url, { env })
t.teardown(async () => { await g.stop() })
// the store as the processes left it, read through the store API (no cache)
const reader = await openStoreAt(db.url, prefix)
t.teardown(async () => { await reader.close() })

// JumpServer's ids as a MySQL export gives them: Django's UUIDField as 32 hex digits
const CAROL_ID = '6f1c2a8e-5b7d-4c3e-9a10-2b3c4d5e6f70'
const NEW_ORG = '7a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d'
const KEY_ID = 'b3e1a2c4-d5f6-4789-a0b1-c2d3e4f5a6b7'
const KEY_SECRET = '0f4e2d1c-3b5a-4978-8695-a4b3c2d1e0f9'
const TOKEN = 'a3f1c9e27b4d8f60e1d2c3b4a5968778695a4b3c'
const hex = (uuid: string): string => uuid.replaceAll('-', '')

const carolHash = djangoHash('carol-jms-password', 'Zk3qLr8sTnV2wXyA', 150_000)
const daveHash = djangoHash('dave-jms-password', 'd4veSalt', 120_000, 'sha1')
const lines = [
  { type: 'org', id: hex(NEW_ORG), name: 'Ops' },
  { type: 'user', id: hex(CAROL_ID), username: 'carol', name: 'Carol', email: 'carol@example.com', password: carolHash, is_active: 1, is_superuser: 0 },
  { type: 'user', username: 'dave', password: daveHash },
  { type: 'user', username: 'sso-user', password: '!unusablepasswordfromdjango' },
  { type: 'membership', user_id: hex(CAROL_ID), org: DEFAULT_ORG, role: '00000000-0000-0000-0000-000000000007' },
  { type: 'membership', username: 'carol', org: NEW_ORG, role: 'OrgAdmin' },
  { type: 'membership', username: 'dave', org: DEFAULT_ORG, role: 'user' },
  { type: 'access_key', user_id: hex(CAROL_ID), id: hex(KEY_ID).toUpperCase(), secret: hex(KEY_SECRET), is_active: 1 },
  { type: 'private_token', user_id: hex(CAROL_ID), key: TOKEN }
]
const file = join(wd.dir, 'jumpserver.jsonl')
writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n')

const profile = async (authorization: string) => await request(wd.url, '/api/v1/users/profile/', { headers: { authorization, 'x-jms-org': DEFAULT_ORG } })
const storedHash = async (id: string): Promise<string> => (await reader.passwords.hash(id))!

t.test('a dry run reports what would happen and writes nothing', async (t) => {
  const before = await snapshot(db.url, prefix)
  const r = await cli('import', '--from', file, '--dry-run', '--json')
  t.equal(r.code, 0)
  const out = JSON.parse(r.stdout)
  t.equal(out.dry_run, true)
  t.same(out.counts, {
    org: { created: 1, updated: 0, unchanged: 0 },
    user: { created: 3, updated: 0, unchanged: 0 },
    membership: { created: 3, updated: 0, unchanged: 0 },
    group: { created: 0, updated: 0, unchanged: 0 },
    group_member: { created: 0, updated: 0, unchanged: 0 },
    access_key: { created: 1, updated: 0, unchanged: 0 },
    private_token: { created: 1, updated: 0, unchanged: 0 }
  })
  t.same(await snapshot(db.url, prefix), before, 'not one row written')
  const text = await cli('import', '--from', file, '--dry-run')
  t.match(text.stdout, /dry run of .*nothing was written/)
  t.match(text.stdout, /user\s+3 created/)
})

t.test('the shipped examples (deploy/jumpserver/) import cleanly: checked with a dry run', async (t) => {
  for (const ext of ['jsonl', 'csv']) {
    const r = await cli('import', '--from', join(ROOT, 'deploy', 'jumpserver', `import.example.${ext}`), '--dry-run', '--json')
    t.equal(r.code, 0, `${ext}: ${r.stderr}`)
    const out = JSON.parse(r.stdout)
    t.equal(out.format, ext)
    t.equal(out.counts.user.created, ext === 'csv' ? 1 : 2, ext)
    t.equal(out.counts.access_key.created, 1, ext)
    t.equal(out.counts.private_token.created, 1, ext)
  }
  const root = await cli('import', '--from', join(ROOT, 'deploy', 'jumpserver', 'import.example.jsonl'), '--format', 'csv')
  t.equal(root.code, 1, 'JSON read as CSV: refused')
})

t.test('a bad line: every problem with its line number, exit 1, nothing written', async (t) => {
  const bad = join(wd.dir, 'bad.jsonl')
  const broken = [...lines.map((l) => JSON.stringify(l))]
  broken.splice(3, 0, JSON.stringify({ type: 'user', username: 'erin', password: 'argon2$argon2id$v=19$m=102400,t=2,p=8$c29tZXNhbHQ$aGFzaA' }))
  broken.push('{"type": "private_token", "username": "nobody", "key": "0123456789abcdef0123456789abcdef01234567"}')
  broken.push('{not json')
  writeFileSync(bad, broken.join('\n') + '\n')
  const before = await snapshot(db.url, prefix)
  const r = await cli('import', '--from', bad)
  t.equal(r.code, 1, 'a failure, as other failed commands')
  t.match(r.stderr, /bad\.jsonl: 2 problems, nothing was imported/)
  t.match(r.stderr, /line 4: "password": Django's argon2 hasher: only pbkdf2_sha256 and pbkdf2_sha1/)
  t.match(r.stderr, /line 12: not JSON/)
  t.notMatch(r.stderr, /\{not json/, 'the bad line is not quoted (it may hold a secret)')
  t.notMatch(r.stderr, /argon2id\$v=19/, 'nor the hash')
  t.notMatch(r.stderr, /at .*\.js:\d+/, 'no stack trace')
  t.same(await snapshot(db.url, prefix), before, 'nothing written')
  // the lines parse; the unknown user is found when the file is checked against the store
  broken.splice(broken.length - 1, 1)
  writeFileSync(bad, broken.filter((l) => !l.includes('argon2')).join('\n') + '\n')
  const j = await cli('import', '--from', bad, '--json')
  t.equal(j.code, 1)
  t.same(JSON.parse(j.stderr).code, 'invalid_import')
  t.match(JSON.parse(j.stderr).detail, /line 10: no user nobody in this file or in the store/)
  t.same(await snapshot(db.url, prefix), before, 'nothing written: not even the valid records before it')
  const usage = await cli('import')
  t.equal(usage.code, 2, 'no --from: a usage error')
  const missing = await cli('import', '--from', join(wd.dir, 'nope.jsonl'))
  t.equal(missing.code, 1)
  t.match(missing.stderr, /cannot read .*nope\.jsonl: ENOENT/)
})

t.test('the import, then JumpServer\'s credentials work against the running gateway', async (t) => {
  t.equal((await profile(`Token ${TOKEN}`)).status, 401, 'before the import: an unknown untagged token')
  const r = await cli('import', '--from', file)
  t.equal(r.code, 0)
  t.match(r.stdout, /imported .*jumpserver\.jsonl/)
  t.match(r.stdout, /private_token\s+1 created/)

  // the private token: reaches the running gateway through the store's invalidations, without a restart
  t.ok(await eventually(async () => (await profile(`Token ${TOKEN}`)).status === 200), 'the imported 40-hex private token authenticates')
  const me = await profile(`Token ${TOKEN}`)
  t.equal(me.json.username, 'carol')
  t.equal(me.json.id, CAROL_ID, 'JumpServer\'s user id is kept')
  t.same((await profile(`PrivateToken ${TOKEN.toUpperCase()}`)).status, 401, 'another string is another token')

  // the access key, by the tests' signer: id as sent in any form, secret as JumpServer's str(uuid)
  const signed = await request(wd.url, '/api/v1/users/profile/', { headers: { ...signedHeaders(KEY_ID, KEY_SECRET, 'GET', '/api/v1/users/profile/'), 'x-jms-org': NEW_ORG } })
  t.equal(signed.status, 200, signed.text)
  t.equal(signed.json.username, 'carol')
  t.same(signed.json.org_roles, [{ id: '00000000-0000-0000-0000-000000000005', display_name: 'OrgAdmin' }], 'OrgAdmin in the imported org')

  // the password: the Django hash is verified as it is, then re-hashed with scrypt
  t.match(await storedHash(CAROL_ID), /^pbkdf2_sha256\$150000\$/, 'kept as imported until a login')
  const wrong = await post(wd.url, '/api/v1/authentication/auth/', { username: 'carol', password: 'not-her-password' })
  t.equal(wrong.status, 400)
  t.equal(wrong.json.error, 'password_failed')
  t.match(await storedHash(CAROL_ID), /^pbkdf2_sha256\$/, 'a failed login re-hashes nothing')
  const ok = await post(wd.url, '/api/v1/authentication/auth/', { username: 'carol', password: 'carol-jms-password' })
  t.equal(ok.status, 201, ok.text)
  t.match(await storedHash(CAROL_ID), /^scrypt\$/, 'a successful login re-hashed it with scrypt')
  t.equal((await post(wd.url, '/api/v1/authentication/auth/', { username: 'carol', password: 'carol-jms-password' })).status, 201, 'and the scrypt hash verifies')

  // the lockout holds for a legacy hash: counted before the hash is checked
  const dave = JSON.parse((await cli('user', 'list', '--json')).stdout).find((u: { username: string }) => u.username === 'dave')
  t.match(await storedHash(dave.id), /^pbkdf2_sha1\$120000\$/)
  for (let i = 0; i < 3; i++) t.equal((await post(wd.url, '/api/v1/authentication/auth/', { username: 'dave', password: `guess-${i}` })).status, 400)
  t.equal((await post(wd.url, '/api/v1/authentication/auth/', { username: 'dave', password: 'dave-jms-password' })).status, 429, 'locked out even with the right password')
  t.match(await storedHash(dave.id), /^pbkdf2_sha1\$/, 'not checked, not re-hashed while locked')

  // a user whose Django password was unusable (SSO, LDAP) has none
  t.equal((await post(wd.url, '/api/v1/authentication/auth/', { username: 'sso-user', password: '!unusablepasswordfromdjango' })).status, 400)
})

t.test('JumpServer\'s documented Python client with the imported key and password', async (t) => {
  const why = await run(PYTHON, ['-c', 'import requests, httpsig']).then(() => null, () => 'python3-requests and python3-httpsig are not installed')
  if (why !== null) { t.pass(`skipped: ${why}`); return }
  const { stdout } = await run(PYTHON, [join(ROOT, 'test', 'clients', 'jumpserver_docs.py'), wd.url, 'carol', 'carol-jms-password', KEY_ID, KEY_SECRET, DEFAULT_ORG], { timeout: 60_000 })
  const out = JSON.parse(stdout)
  t.equal(out.signature_now.status, 200)
  t.equal(out.signature_now.body.username, 'carol')
  t.equal(out.signature_2014.status, 200)
  t.equal(out.signature_sha512.status, 200)
  t.same(out.token.status, 201)
  t.same(out.bearer_uses, [200, 200, 200])
})

t.test('running the same file again changes nothing', async (t) => {
  const before = await snapshot(db.url, prefix)
  const r = await cli('import', '--from', file, '--json')
  t.equal(r.code, 0)
  const out = JSON.parse(r.stdout)
  t.same([out.created, out.updated, out.unchanged], [0, 0, 9], 'every record unchanged, even carol\'s re-hashed password')
  const after = await snapshot(db.url, prefix)
  // what requests change on their own aside: failed logins counted (attempts), an access key's last use
  const steady = (snap: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(snap)
    .filter(([k]) => !k.startsWith('attempts:'))
    .map(([k, v]) => [k, k.startsWith('access_keys:') ? JSON.stringify({ ...JSON.parse(v), last_used: null }) : v]))
  t.same(steady(after), steady(before), 'no row written')
  t.equal((await profile(`Token ${TOKEN}`)).status, 200, 'the token still works')
})

t.test('CSV, and a changed record is updated', async (t) => {
  const csv = join(wd.dir, 'more.csv')
  writeFileSync(csv, [
    'type,username,user_id,id,name,email,password,is_active,is_superuser,org,org_name,role,secret,key',
    `user,carol,,${CAROL_ID},Carol Jones,,,1,0,,,,,`,
    'user,erin,,,,erin@example.com,,true,false,,,,,',
    `membership,erin,,,,,,,,${hex('1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d')},Support,user,,`,
    'private_token,erin,,,,,,,,,,,,1234567890abcdef1234567890abcdef12345678'
  ].join('\n') + '\n')
  const r = await cli('import', '--from', csv, '--json')
  t.equal(r.code, 0)
  const out = JSON.parse(r.stdout)
  t.same(out.counts.user, { created: 1, updated: 1, unchanged: 0 }, 'carol renamed, erin created')
  t.same(out.counts.org, { created: 1, updated: 0, unchanged: 0 }, 'the membership\'s org_name created the org')
  t.ok(await eventually(async () => (await profile('Token 1234567890abcdef1234567890abcdef12345678')).status === 200))
  t.match(await storedHash(CAROL_ID), /^scrypt\$/, 'no password in the file: carol\'s is left alone')
  const badCsv = join(wd.dir, 'bad.csv')
  writeFileSync(badCsv, 'type,username,role\nuser,frank,\nmembership,frank,auditor\n')
  const bad = await cli('import', '--from', badCsv)
  t.equal(bad.code, 1)
  t.match(bad.stderr, /line 3: a membership record|line 3: "role" must be admin or user/)
})

t.test('JumpServer\'s user groups (users_usergroup; users_user_groups): in their org with their ids, members local; a rerun changes nothing; bad records refused', async (t) => {
  const GROUP = '4e5f6a7b-8c9d-4e0f-9a1b-2c3d4e5f6a7b'
  const DEFAULT_GROUP = '5f6a7b8c-9d0e-4f1a-8b2c-3d4e5f6a7b8c'
  const gfile = join(wd.dir, 'groups.jsonl')
  // as export-mysql.sql gives them: UUIDs as 32 hex digits
  writeFileSync(gfile, [
    { type: 'group', id: hex(GROUP), name: 'Developers', org: hex(NEW_ORG) },
    { type: 'group', id: hex(DEFAULT_GROUP), name: ' Default ', org: hex(DEFAULT_ORG) },
    { type: 'group_member', user_id: hex(CAROL_ID), group: hex(GROUP) },
    { type: 'group_member', username: 'dave', group: GROUP },
    { type: 'group_member', username: 'dave', group: DEFAULT_GROUP }
  ].map((l) => JSON.stringify(l)).join('\n') + '\n')
  const before = await snapshot(db.url, prefix)
  const dry = await cli('import', '--from', gfile, '--dry-run', '--json')
  t.equal(dry.code, 0, dry.stderr)
  const planned = JSON.parse(dry.stdout).counts
  t.same([planned.group, planned.group_member], [
    { created: 2, updated: 0, unchanged: 0 }, { created: 3, updated: 0, unchanged: 0 }
  ])
  t.same(await snapshot(db.url, prefix), before, 'a dry run writes nothing')
  const r = await cli('import', '--from', gfile, '--json')
  t.equal(r.code, 0, r.stderr)
  t.match(await reader.groups.get(GROUP), { id: GROUP, name: 'Developers', org: NEW_ORG }, 'JumpServer\'s id, in its org')
  t.match(await reader.groups.get(DEFAULT_GROUP), { name: 'Default', org: DEFAULT_ORG }, 'the name without the cell\'s spaces')
  // read from the store itself (forSignIn: never the reader's cache of these users)
  t.same((await reader.users.forSignIn(CAROL_ID))?.user.groups, [{ id: GROUP, name: 'Developers', org: NEW_ORG, orgName: 'Ops', sources: ['local'] }])
  const dave = (await reader.users.forSignIn((await reader.users.byUsername('dave'))!.id))!.user
  t.same(dave.groups?.map((g) => [g.name, g.orgName, g.sources]), [['Default', 'Default', ['local']], ['Developers', 'Ops', ['local']]])
  const shown = await cli('group', 'show', 'developers', '--org', 'Ops', '--json')
  t.same(JSON.parse(shown.stdout).members.map((m: { username: string }) => m.username), ['carol', 'dave'], 'sidegate group show lists them')
  const again = await cli('import', '--from', gfile, '--json')
  const counts = JSON.parse(again.stdout).counts
  t.same([counts.group, counts.group_member], [{ created: 0, updated: 0, unchanged: 2 }, { created: 0, updated: 0, unchanged: 3 }], 'a rerun: unchanged')

  const bad = join(wd.dir, 'bad-groups.jsonl')
  writeFileSync(bad, [
    { type: 'group', id: '6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d', name: 'x'.repeat(129), org: DEFAULT_ORG },
    { type: 'group', id: '7b8c9d0e-1f2a-4b3c-9d4e-5f6a7b8c9d0e', name: 'Ops\u001b[2J', org: DEFAULT_ORG },
    { type: 'group', id: '8c9d0e1f-2a3b-4c4d-8e5f-6a7b8c9d0e1f', name: 'Root', org: '00000000-0000-0000-0000-000000000000' }
  ].map((l) => JSON.stringify(l)).join('\n') + '\n')
  const parsed = await cli('import', '--from', bad)
  t.equal(parsed.code, 1)
  t.match(parsed.stderr, 'line 1: "name" has more than 128 characters')
  t.match(parsed.stderr, 'line 2: "name": control characters')
  t.match(parsed.stderr, 'line 3: "org": 00000000-0000-0000-0000-000000000000 is JumpServer\'s root org')
  writeFileSync(bad, [
    { type: 'group', id: '9d0e1f2a-3b4c-4d5e-9f6a-7b8c9d0e1f2a', name: 'Lost', org: '0e1f2a3b-4c5d-4e6f-8a7b-8c9d0e1f2a3b' },
    { type: 'group_member', username: 'carol', group: '1f2a3b4c-5d6e-4f7a-9b8c-9d0e1f2a3b4c' },
    { type: 'group', id: '2a3b4c5d-6e7f-4a8b-8c9d-0e1f2a3b4c5d', name: 'developers', org: NEW_ORG },
    { type: 'group_member', username: 'carol', group: '2a3b4c5d-6e7f-4a8b-8c9d-0e1f2a3b4c5d' }
  ].map((l) => JSON.stringify(l)).join('\n') + '\n')
  const planned2 = await cli('import', '--from', bad, '--json')
  t.equal(planned2.code, 1, 'checked against the store: refused')
  const detail = JSON.parse(planned2.stderr).detail as string
  t.match(detail, 'line 1: org 0e1f2a3b-4c5d-4e6f-8a7b-8c9d0e1f2a3b is neither in this file nor in the store')
  t.match(detail, 'line 2: group 1f2a3b4c-5d6e-4f7a-9b8c-9d0e1f2a3b4c is neither in this file nor in the store')
  t.notMatch(detail, 'line 3', 'a group whose org has one of that name (any case) is that group, not a problem')
  writeFileSync(bad, [
    { type: 'group', id: '2a3b4c5d-6e7f-4a8b-8c9d-0e1f2a3b4c5d', name: 'developers', org: NEW_ORG },
    { type: 'group_member', username: 'carol', group: '2a3b4c5d-6e7f-4a8b-8c9d-0e1f2a3b4c5d' }
  ].map((l) => JSON.stringify(l)).join('\n') + '\n')
  const same = await cli('import', '--from', bad, '--json')
  t.equal(same.code, 0, same.stderr)
  const out = JSON.parse(same.stdout)
  t.same([out.counts.group, out.counts.group_member], [{ created: 0, updated: 0, unchanged: 1 }, { created: 0, updated: 0, unchanged: 1 }], 'applied to the existing group, where carol already is')
  t.match(out.notes, [{ line: 1, message: `group "developers" exists with id ${GROUP}` }])
})

t.test('a key of sidegate\'s own token shape is not importable: such strings are refused by their tag alone, without a store lookup', async (t) => {
  const f = join(wd.dir, 'shaped.jsonl')
  writeFileSync(f, JSON.stringify({ type: 'private_token', user_id: hex(CAROL_ID), key: 'A'.repeat(32) + 'B'.repeat(12) }) + '\n')
  const before = await snapshot(db.url, prefix)
  const r = await cli('import', '--from', f)
  t.equal(r.code, 1)
  t.match(r.stderr, /line 1: "key" has the shape of a token sidegate makes/)
  t.same(await snapshot(db.url, prefix), before, 'nothing written')
})

t.test('after `sidegate secret rotate` the imported token and key still work, and other untagged tokens are still refused', async (t) => {
  const NEW_KEY = 'a-new-secret-key-after-the-import-0123456789'
  const rot = await cliIn(wd.dir, ['secret', 'rotate', '--new-key-stdin'], { env, stdin: NEW_KEY + '\n' })
  t.equal(rot.code, 0, rot.stderr)
  await g.stop()
  const g2 = await startIn(wd.dir, wd.url, { env: { ...env, SIDEGATE_SECRET_KEY: NEW_KEY } })
  t.teardown(async () => { await g2.stop() })
  t.equal((await profile(`Token ${TOKEN}`)).status, 200, 'the imported token: its lookup hash is under the old key')
  t.equal((await profile('Token 0123456789abcdef0123456789abcdef01234567')).status, 401)
  const signed = await request(wd.url, '/api/v1/users/profile/', { headers: { ...signedHeaders(hex(KEY_ID), KEY_SECRET, 'GET', '/api/v1/users/profile/'), 'x-jms-org': DEFAULT_ORG } })
  t.equal(signed.status, 200, 're-encrypted access key secret')
  // the same file under the new key
  const again = await cliIn(wd.dir, ['import', '--from', file, '--json'], { env: { ...env, SIDEGATE_SECRET_KEY: NEW_KEY } })
  t.equal(again.code, 0, again.stderr)
  const counts = JSON.parse(again.stdout).counts
  t.same([counts.access_key, counts.private_token], [{ created: 0, updated: 0, unchanged: 1 }, { created: 0, updated: 0, unchanged: 1 }], 'the key and the token are recognised under the new key')
  t.same(counts.user, { created: 0, updated: 1, unchanged: 2 }, 'carol gets her name from the file back (the CSV had changed it)')
})

t.test('privileged changes: spelled out by a dry run, refused without their flag (nothing written), applied with it; every change audited', async (t) => {
  // the secret key is the rotated one from here on
  const env2 = { ...env, SIDEGATE_SECRET_KEY: 'a-new-secret-key-after-the-import-0123456789' }
  const run = async (...args: string[]) => await cliIn(wd.dir, args, { env: env2 })
  const newHash = djangoHash('taken-over-password', 'NewSalt123', 150_000)
  const f = join(wd.dir, 'privileged.jsonl')
  writeFileSync(f, [
    { type: 'user', username: 'mallory', is_superuser: 1 },
    { type: 'user', username: 'CAROL', password: newHash },
    { type: 'user', username: 'dave', is_superuser: true },
    { type: 'private_token', username: 'erin', key: 'ffffffffffffffffffffffffffffffffffffffff' },
    { type: 'access_key', username: 'Dave', id: '0c9d8e7f-6a5b-4c3d-8e1f-2a3b4c5d6e7f', secret: '1d2c3b4a-5e6f-4a7b-8c9d-0e1f2a3b4c5d' }
  ].map((l) => JSON.stringify(l)).join('\n') + '\n')
  const dry = await run('import', '--from', f, '--dry-run', '--json')
  t.equal(dry.code, 0, dry.stderr)
  t.same(JSON.parse(dry.stdout).privileged.map((p: any) => [p.line, p.kind, p.flag, p.allowed]), [
    [1, 'superuser', '--allow-superuser', false],
    [2, 'takeover', '--allow-takeover', false],
    [2, 'takeover', '--allow-takeover', false],
    [3, 'superuser', '--allow-superuser', false],
    [4, 'takeover', '--allow-takeover', false],
    [5, 'takeover', '--allow-takeover', false]
  ], 'each privileged change, with its line and flag')
  const text = (await run('import', '--from', f, '--dry-run')).stdout
  t.match(text, 'privileged: line 1: creates mallory as a superuser (--allow-superuser needed)')
  t.match(text, 'privileged: line 2: "CAROL" names the existing user "carol" (usernames match whatever their case) (--allow-takeover needed)')
  t.match(text, 'privileged: line 2: replaces the password of the existing user carol (--allow-takeover needed)')
  t.match(text, 'privileged: line 3: makes the existing user dave a superuser (--allow-superuser needed)')
  t.match(text, 'privileged: line 4: replaces the private token of the existing user erin (--allow-takeover needed)')
  t.match(text, 'privileged: line 5: "Dave" names the existing user "dave"')

  const before = await snapshot(db.url, prefix)
  const refused = await run('import', '--from', f)
  t.equal(refused.code, 1)
  t.match(refused.stderr, /privileged\.jsonl: 6 privileged changes not allowed, nothing was imported:\n {2}line 1: creates mallory as a superuser \(--allow-superuser\)\n/)
  t.match(refused.stderr, /then run again with --allow-superuser --allow-takeover/)
  t.same(await snapshot(db.url, prefix), before, 'nothing written')
  const half = await run('import', '--from', f, '--allow-superuser')
  t.equal(half.code, 1, 'one flag of two: still refused')
  t.notMatch(half.stderr, /line 1:/, 'naming only what is not allowed')
  t.match(half.stderr, /line 4: replaces the private token of the existing user erin \(--allow-takeover\)/)
  t.same(await snapshot(db.url, prefix), before, 'nothing written')

  // a command's audit events go to the store's audit stream (whatever audit.stream says), not to its stderr
  const audit = await openStoreAt(db.url, prefix, { secret: env2.SIDEGATE_SECRET_KEY })
  t.teardown(async () => { await audit.close() })
  const lastId = async (): Promise<string> => (await audit.audit.read({ last: 1 }))[0]?.id ?? '0-0'
  const eventsAfter = async (mark: string): Promise<any[]> => (
    await audit.audit.read({ after: mark })
  ).map((e) => JSON.parse(e.json))
  const mark = await lastId()
  const done = await run('import', '--from', f, '--allow-superuser', '--allow-takeover')
  t.equal(done.code, 0, done.stderr)
  t.match(done.stdout, 'privileged: line 1: creates mallory as a superuser (--allow-superuser, allowed)')
  t.equal(done.stderr, '', 'nothing on stderr')
  const events = await eventsAfter(mark)
  const ev = (event: string, username: string) => events.find((e) => e.event === event && e.username === username)
  t.match(ev('user.created', 'mallory'), { actor: 'cli', via: 'import', superuser: true, authMethod: 'cli' })
  t.match(ev('password.changed', 'carol'), { via: 'import' })
  t.match(ev('user.updated', 'dave'), { via: 'import', superuser: true })
  t.match(ev('private_token.created', 'erin'), { via: 'import' })
  t.match(ev('key.created', 'dave'), { via: 'import', keyId: '0c9d8e7f-6a5b-4c3d-8e1f-2a3b4c5d6e7f' })
  t.equal(events.length, 5, 'one event per change')
  t.notMatch(JSON.stringify(events), /ffffffff|taken-over|1d2c3b4a/, 'never a secret or a hash')

  // orgs and memberships too
  const g2 = join(wd.dir, 'orgs.jsonl')
  writeFileSync(g2, JSON.stringify({ type: 'membership', username: 'mallory', org: '2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f', org_name: 'Audited', role: 'admin' }) + '\n')
  const mark2 = await lastId()
  const orgRun = await run('import', '--from', g2)
  t.equal(orgRun.code, 0, orgRun.stderr)
  const more = await eventsAfter(mark2)
  t.match(more, [{ event: 'org.created', org: '2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f', via: 'import' }, { event: 'membership.changed', username: 'mallory', org: '2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f', role: 'admin', via: 'import' }])
})

t.test('control characters in a file: refused, with their line', async (t) => {
  const f = join(wd.dir, 'controls.jsonl')
  writeFileSync(f, JSON.stringify({ type: 'org', id: '3d4e5f6a-7b8c-4d9e-8f0a-1b2c3d4e5f6a', name: 'Ops\u001b]52;c;ZXZpbA==\u0007' }) + '\n')
  const r = await cliIn(wd.dir, ['import', '--from', f], { env: { ...env, SIDEGATE_SECRET_KEY: 'a-new-secret-key-after-the-import-0123456789' } })
  t.equal(r.code, 1)
  t.match(r.stderr, 'line 1: "name": control characters (ESC, CR, line breaks, DEL, C1) are not allowed')
})

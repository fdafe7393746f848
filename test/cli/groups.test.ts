/**
 * Groups through the command line and the admin API of a real `sidegate start`
 * (admin.enabled) on the embedded store: `sidegate group add|list|show|remove`,
 * `group members add|remove`, `user show`, and /admin/v1/groups…, the same
 * JSON from both (every API answer checked against the published document by
 * the fixtures); names unique per org in any case, bad names exit 2 / 400,
 * unknown groups, users and orgs exit 1 / 404; every change audited.
 */
import t from 'tap'
import { startEcho } from '../fixtures/http.js'
import { embeddedStore, SECRET, spawnGateway } from '../fixtures/gateway.js'
import { adminApiOf, cliOf, errorCode } from '../fixtures/procs.js'
import { eventually } from '../fixtures/wait.js'

const db = embeddedStore()
const echo = await startEcho()
const gw = await spawnGateway(db.url, { upstream: { url: echo.url }, admin: { enabled: true } }, `grp${process.pid}:`)
t.teardown(async () => { await gw.stop(); await echo.close(); await db.stop() })

const { cli, cliJson } = cliOf(gw.configFile, SECRET)
const api = await adminApiOf(gw.adminUrl, cliJson)
const code = errorCode

// no assertion before the tests: tap would take the file as done
for (const username of ['carol', 'dave']) {
  const made = await api('POST', 'users', { username, password: `${username}-password-1` })
  if (made.status !== 201) throw new Error(`user ${username}: ${made.status} ${made.text}`)
}
const ops = await cliJson('org', 'add', 'Ops')

t.test('group add: global and per org, names unique per org in any case; bad names exit 2 (400 from the API)', async (t) => {
  const made = await cli('group', 'add', 'Admins')
  t.equal(made.code, 0, made.stderr)
  t.match(made.stdout, /^created group Admins \([0-9a-f-]{36}\)\n$/)
  const inOrg = await cliJson('group', 'add', 'admins', '--org', 'ops')
  t.match(inOrg, { name: 'admins', org: ops.id, org_name: 'Ops' }, 'the same name in an org (named by its name, any case): another group')
  const again = await cli('group', 'add', 'ADMINS', '--json')
  t.same([again.code, code(again.stderr)], [1, 'group_exists'], 'the global name again, in another case')
  const byApi = await api('POST', 'groups', { name: 'Admins', org: ops.id })
  t.same([byApi.status, byApi.json.code], [409, 'group_exists'], 'the org\'s name again, over the API')
  for (const bad of ['x'.repeat(129), 'a\u001b[2Jb', ' padded', 'line\nbreak', '']) {
    const c = await cli('group', 'add', bad, '--json')
    t.same([c.code, code(c.stderr)], [2, 'bad_request'], `CLI: ${JSON.stringify(bad.slice(0, 12))}`)
    const a = await api('POST', 'groups', { name: bad })
    t.same([a.status, a.json.code], [400, 'bad_request'], `API: ${JSON.stringify(bad.slice(0, 12))}`)
  }
  t.equal((await api('POST', 'groups', { name: 'y'.repeat(128) })).status, 201, '128 characters are fine')
  const lost = await cli('group', 'add', 'Lost', '--org', 'Nowhere', '--json')
  t.same([lost.code, code(lost.stderr)], [1, 'org_not_found'], 'an unknown org')
  const list = await cliJson('group', 'list')
  t.same(list.map((g: any) => g.name), ['Admins', 'y'.repeat(128), 'admins'], 'global first, then the org\'s')
  t.same((await cliJson('group', 'list', '--org', ops.id)).map((g: any) => g.id), [inOrg.id], '--org: that org\'s')
  t.same((await api('GET', `groups?org=${ops.id}`)).json, await cliJson('group', 'list', '--org', 'Ops'), 'the API answers the same JSON')
})

t.test('members: added and removed by the operator (source local); group show, user show and the user JSON list them', async (t) => {
  const added = await cli('group', 'members', 'add', 'Admins', 'carol')
  t.equal(added.code, 0, added.stderr)
  t.equal(added.stdout, 'carol in Admins: member (local)\n')
  const inOrg = await cliJson('group', 'members', 'add', 'admins', 'dave', '--org', 'Ops')
  t.match(inOrg, { group: { name: 'admins', org: ops.id }, user: { username: 'dave' }, sources: ['local'] })
  const orgGroup = (await cliJson('group', 'list', '--org', ops.id))[0]
  t.equal((await api('POST', `groups/${orgGroup.id as string}/members`, { username: 'carol' })).status, 200, 'by id over the API')

  const shown = await cliJson('group', 'show', 'admins', '--org', ops.id)
  t.same(shown.members, [
    { id: shown.members[0].id, username: 'carol', sources: ['local'] },
    { id: shown.members[1].id, username: 'dave', sources: ['local'] }
  ], 'both members, each with its source')
  t.same((await api('GET', `groups/${orgGroup.id as string}`)).json, shown, 'GET groups/{id}: the same JSON')
  const text = await cli('group', 'show', 'Admins')
  t.match(text.stdout, /^[0-9a-f-]{36} {2}Admins\n {2}carol {2}local\n$/)

  const carol = (await api('GET', 'users/carol')).json
  t.same(carol.groups.map((g: any) => [g.name, g.org_name, g.sources]), [['Admins', null, ['local']], ['admins', 'Ops', ['local']]], 'the user JSON: global first, then by org')
  const show = await cli('user', 'show', 'carol')
  t.equal(show.code, 0, show.stderr)
  t.match(show.stdout, /^carol \([0-9a-f-]{36}\)\n/)
  t.match(show.stdout, /\n {2}group Admins \([0-9a-f-]{36}\): local\n {2}group Ops\/admins \([0-9a-f-]{36}\): local\n$/)
  t.same(await cliJson('user', 'show', 'carol'), carol, 'user show --json: the API\'s JSON')

  const removed = await cli('group', 'members', 'remove', 'Admins', 'carol')
  t.equal(removed.stdout, 'carol in Admins: no longer a member\n')
  const byApi = await api('DELETE', `groups/admins/members/dave?org=${ops.id}`)
  t.same([byApi.status, byApi.json.sources], [200, []], 'by name and org over the API')
  t.ok(await eventually(async () => (await api('GET', 'users/carol')).json.groups.map((g: any) => g.name).join() === 'admins', 10_000), 'carol: the org\'s group only, on the gateway too (within its read of the invalidation log)')
  t.match((await cli('user', 'show', 'dave')).stdout, /\n {2}\(no groups\)\n$/)
  t.equal((await api('GET', 'users/dave')).json.groups, undefined, 'no groups: none in the JSON')
})

t.test('unknown groups, users and orgs exit 1 (404); a wrong form exits 2', async (t) => {
  for (const [args, want] of [
    [['group', 'show', 'Nope'], 'group_not_found'],
    [['group', 'show', 'admins', '--org', 'Nowhere'], 'org_not_found'],
    [['group', 'members', 'add', 'Admins', 'nobody'], 'not_found'],
    [['group', 'members', 'add', 'Nope', 'carol'], 'group_not_found'],
    [['group', 'list', '--org', 'Nowhere'], 'org_not_found']
  ] as const) {
    const r = await cli(...args, '--json')
    t.same([r.code, code(r.stderr)], [1, want], args.join(' '))
  }
  for (const args of [['group', 'members', 'frob', 'Admins', 'carol'], ['group', 'members', 'add', 'Admins'], ['group', 'show']]) {
    const r = await cli(...args, '--json')
    t.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
  }
  const r = await api('GET', 'groups/00000000-0000-4000-8000-000000000000')
  t.same([r.status, r.json.code], [404, 'group_not_found'])
})

t.test('group remove: the group and every membership of it go, on the gateway too; audited', async (t) => {
  const g = (await cliJson('group', 'list', '--org', ops.id))[0]
  t.same((await api('GET', 'users/carol')).json.groups.map((x: any) => x.id), [g.id], 'carol is a member (read by the gateway)')
  const r = await cli('group', 'remove', 'admins', '--org', 'Ops')
  t.equal(r.code, 0, r.stderr)
  t.equal(r.stdout, `removed group admins (${g.id as string})\n`)
  t.ok(await eventually(async () => (await api('GET', 'users/carol')).json.groups === undefined, 10_000), 'the gateway no longer shows it')
  const gone = await api('GET', `groups/${g.id as string}`)
  t.same([gone.status, gone.json.code], [404, 'group_not_found'])
  t.equal((await cliJson('group', 'add', 'Admins', '--org', 'Ops')).name, 'Admins', 'its name is free again')
  const byApi = await api('DELETE', `groups/Admins?org=${ops.id}`)
  t.equal(byApi.status, 200)
  const audit = (await api('GET', 'audit?limit=1000&since=1h')).json as any[]
  for (const event of ['group.created', 'group.member_added', 'group.member_removed', 'group.removed']) {
    t.ok(audit.some((e) => e.event === event && typeof e.group === 'string'), `${event} in the trail, with the group`)
  }
  t.ok(audit.some((e) => e.event === 'group.removed' && e.group === byApi.json.id && e.actorName === 'admin'), 'the API\'s: the calling superuser as actor')
})

/**
 * Links through the command line and the admin API of a real `sidegate start`
 * (admin.enabled) on the embedded store: `sidegate user link|unlink`, the
 * links in `user show`, /admin/v1/users/{username}/links; one link per
 * account and per provider per user (exit 1 / 409 link_exists), a provider
 * that is not in sign_in refused (exit 2 / 400), both audited.
 */
import t from 'tap'
import { startEcho } from '../fixtures/http.js'
import { embeddedStore, SECRET, spawnGateway } from '../fixtures/gateway.js'
import { adminApiOf, cliOf, errorCode } from '../fixtures/procs.js'

const db = embeddedStore()
const echo = await startEcho()
const signIn = {
  ldap: [
    { id: 'corp', urls: ['ldaps://dc1.example.com'], users: { base: 'ou=people,dc=example,dc=com' } },
    { id: 'dir', urls: ['ldaps://dc2.example.com'], users: { base: 'ou=people,dc=example,dc=com' } }
  ]
}
const gw = await spawnGateway(db.url, { upstream: { url: echo.url }, admin: { enabled: true }, sign_in: signIn }, `lnk${process.pid}:`)
t.teardown(async () => { await gw.stop(); await echo.close(); await db.stop() })

const { cli, cliJson } = cliOf(gw.configFile, SECRET)
const api = await adminApiOf(gw.adminUrl, cliJson)
const code = errorCode

// no assertion before the tests: tap would take the file as done
for (const username of ['carol', 'dave']) {
  const made = await api('POST', 'users', { username, password: `${username}-password-1` })
  if (made.status !== 201) throw new Error(`user ${username}: ${made.status} ${made.text}`)
}

t.test('user link: --oidc/--ldap with the subject; user show lists the links; taken accounts and sources exit 1', async (t) => {
  const made = await cli('user', 'link', 'carol', '--ldap', 'corp', '--subject', 'c-sub-1')
  t.same([made.code, made.stdout], [0, 'linked ldap:corp c-sub-1\n'], made.stderr)
  const dir = await cliJson('user', 'link', 'carol', '--ldap', 'dir', '--subject', '5c2a-uuid')
  t.match(dir, { source: 'ldap:dir', subject: '5c2a-uuid', provisioned: false, orgs: {} })
  const shown = await cli('user', 'show', 'carol')
  t.match(shown.stdout, /\n {2}link ldap:corp c-sub-1\n {2}link ldap:dir 5c2a-uuid\n$/, 'user show: a line per link')
  t.same((await cliJson('user', 'show', 'carol')).links.map((l: { source: string }) => l.source), ['ldap:corp', 'ldap:dir'], 'and in its JSON')
  t.notOk('links' in (await cliJson('user', 'show', 'dave')), 'none: no links field')
  const taken = await cli('user', 'link', 'dave', '--ldap', 'corp', '--subject', 'c-sub-1', '--json')
  t.same([taken.code, code(taken.stderr)], [1, 'link_exists'], 'the account is carol\'s')
  const second = await cli('user', 'link', 'carol', '--ldap', 'corp', '--subject', 'other', '--json')
  t.same([second.code, code(second.stderr)], [1, 'link_exists'], 'carol has a link of corp already')
  t.match(second.stderr, /unlink it first/)
})

t.test('user link: a provider not in sign_in, no subject, both or neither flag, a bad subject: exit 2, nothing linked', async (t) => {
  for (const [args, why] of [
    [['--oidc', 'nope', '--sub', 's'], /no sign_in\.oidc entry with id "nope" in the config\n/],
    [['--ldap', 'nope', '--subject', 's'], /no sign_in\.ldap entry with id "nope".*\(known: corp, dir\)/],
    [['--oidc', 'nope'], /give the account's subject: --sub/],
    [['--oidc', 'nope', '--sub', 's', '--directory-only'], /no sign_in\.oidc entry/],
    [['--sub', 's'], /give --oidc ID or --ldap ID/],
    [['--oidc', 'corp', '--ldap', 'dir', '--sub', 's'], /give --oidc ID or --ldap ID/],
    [['--ldap', 'corp', '--subject', 'a\u001bb'], /control characters/]
  ] as const) {
    const r = await cli('user', 'link', 'dave', ...args)
    t.equal(r.code, 2, args.join(' '))
    t.match(r.stderr, why)
  }
  t.notOk('links' in (await cliJson('user', 'show', 'dave')), 'dave has none')
})

t.test('the admin API: list, link, unlink; 409, 404, 400; both audited with the source', async (t) => {
  const linked = await api('POST', 'users/dave/links', { source: 'ldap:corp', subject: 'd-sub' })
  t.same([linked.status, linked.json.source, linked.json.subject], [201, 'ldap:corp', 'd-sub'])
  t.same((await api('GET', 'users/dave/links')).json.map((l: { subject: string }) => l.subject), ['d-sub'])
  const dup = await api('POST', 'users/carol/links', { source: 'ldap:corp', subject: 'd-sub' })
  t.same([dup.status, dup.json.code], [409, 'link_exists'])
  const bad = await api('POST', 'users/dave/links', { source: 'saml:corp', subject: 'x' })
  t.same([bad.status, bad.json.code], [400, 'bad_request'])
  const nobody = await api('GET', 'users/nobody/links')
  t.equal(nobody.status, 404)
  const gone = await api('DELETE', 'users/dave/links/ldap:corp')
  t.same([gone.status, gone.json.subject], [200, 'd-sub'])
  const again = await api('DELETE', 'users/dave/links/ldap:corp')
  t.same([again.status, again.json.code], [404, 'link_not_found'])
  const un = await cli('user', 'unlink', 'carol', '--ldap', 'dir')
  t.same([un.code, un.stdout], [0, 'unlinked ldap:dir 5c2a-uuid\n'], un.stderr)
  const twice = await cli('user', 'unlink', 'carol', '--ldap', 'dir', '--json')
  t.same([twice.code, code(twice.stderr)], [1, 'link_not_found'])
  t.same((await cliJson('user', 'show', 'carol')).links.map((l: { source: string }) => l.source), ['ldap:corp'], 'the other link kept')
  const audit = (await api('GET', 'audit?limit=1000&since=1h')).json as Array<Record<string, unknown>>
  t.ok(audit.some((e) => e.event === 'user.linked' && e.source === 'ldap:corp' && e.username === 'carol' && e.actor === 'cli'), 'user.linked by the CLI')
  t.ok(audit.some((e) => e.event === 'user.linked' && e.source === 'ldap:corp' && e.username === 'dave' && e.actorName === 'admin'), 'user.linked by the API\'s superuser')
  t.ok(audit.some((e) => e.event === 'user.unlinked' && e.source === 'ldap:dir' && e.username === 'carol'), 'user.unlinked')
})

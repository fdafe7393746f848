/**
 * OpenID Connect sign-in against real providers nobody here wrote: two
 * `oidc-provider` processes (test/fixtures/oidc-provider.mjs) on random ports
 * in front of gateways sharing one embedded store. The whole flow over HTTP
 * (sidegate's redirect, the provider's login and consent, the callback):
 * operator links (`sidegate user link --oidc`), verified and unverified emails,
 * users provisioned, a local user's name never taken over, groups → orgs and a
 * group removed at the provider removed here, a disabled user, the login
 * page's buttons and email-domain steering; every refusal a catalogue error:
 * bad, missing and replayed `state`, a wrong `nonce`, the provider's error
 * parameters, a provider down or hung (503 idp_unavailable within its timeout).
 */
import t from 'tap'
import { createServer, type Socket } from 'node:net'
import { writeFileSync } from 'node:fs'
import { request } from '../fixtures/http.js'
import { embeddedStore, SECRET, startGateway, type TestGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { postForm, setCookies } from '../fixtures/session.js'
import { freePort } from '../fixtures/redis.js'
import { tempDir } from '../fixtures/cleanup.js'
import { cliIn } from '../fixtures/procs.js'
import { Browser, oidcSignIn, startProvider, type Account, type OidcClientSetup } from '../fixtures/oidc.js'

const PROFILE = '/api/v1/users/profile/'
const secrets = tempDir('sidegate-oidc-secret-')
writeFileSync(`${secrets}/corp`, 'corp-client-secret\n')
writeFileSync(`${secrets}/partner`, 'partner-client-secret\n')
const corpPort = await freePort()
const partnerPort = await freePort()
const deadPort = await freePort()
// a provider that accepts connections and never answers
const hung = createServer((s: Socket) => { s.on('error', () => {}) })
await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve))
const hungPort = (hung.address() as { port: number }).port

const provider = (id: string, port: number, over: Record<string, unknown> = {}): Record<string, unknown> => ({
  id, issuer: `http://localhost:${port}`, client_id: `sidegate-${id}`, client_secret_file: `${secrets}/${id}`, timeout: 2, ...over
})
const db = embeddedStore()
const opened: TestGateway[] = []
const PREFIX = 'oidc'
async function gateway (oidc: Array<Record<string, unknown>>): Promise<TestGateway> {
  const g = await startGateway(db.url, { redis: { prefix: PREFIX }, sign_in: { oidc } })
  opened.push(g)
  return g
}

const g = await gateway([
  provider('corp', corpPort, { name: 'Corp SSO', email_domains: ['corp.example'] }),
  provider('partner', partnerPort, { provision: 'create' }),
  provider('down', deadPort, { client_secret_file: null, client_secret: 'x', timeout: 1 }),
  provider('hung', hungPort, { client_secret_file: null, client_secret: 'x', timeout: 1 })
])
const eng = await g.store.orgs.create('Engineering')
const ops = await g.store.orgs.create('Operations')
// the orgs named by the mapping exist before the gateway that maps to them starts
const mapped = await gateway([
  provider('corp', corpPort, { match_email: true }),
  provider('partner', partnerPort, {
    provision: 'create', orgs: [{ group: 'eng', org: eng.id, role: 'member' }, { group: 'ops-leads', org: ops.id, role: 'admin' }]
  })
])
const callbacks = (id: string): string[] => opened.map((x) => `${x.url}/login/oidc/${id}/callback`)
const client = (id: string): OidcClientSetup => ({
  client_id: `sidegate-${id}`, client_secret: `${id}-client-secret`, redirect_uris: callbacks(id)
})
const corpPeople: Record<string, Account> = {
  erin: { preferred_username: 'erin', email: 'erin@corp.example', email_verified: true, name: 'Erin Corp' },
  frank: { preferred_username: 'frank', email: 'frank@corp.example', email_verified: false },
  gina: { preferred_username: 'gina', email: 'gina@corp.example', email_verified: true }
}
const partnerPeople: Record<string, Account> = {
  dana: { preferred_username: 'dana', email: 'dana@partner.example', email_verified: true, name: 'Dana P', groups: ['eng', 'ops-leads'] },
  bob: { preferred_username: 'bob', email: 'bob@partner.example' },
  hal: { preferred_username: 'hal' }
}
const corp = await startProvider([client('corp')], corpPeople, corpPort)
const partner = await startProvider([client('partner')], partnerPeople, partnerPort)
t.teardown(async () => {
  for (const x of opened) await x.close()
  await corp.stop()
  await partner.stop()
  hung.close()
  await db.stop()
})

const localBob = await makeUser(g, 'bob')
const profileOf = async (gw: TestGateway, b: Browser): Promise<{ status: number, username?: string }> => {
  const r = await request(gw.url, PROFILE, { headers: { cookie: `svc_sessionid=${b.session(gw.url) ?? ''}` } })
  return { status: r.status, username: r.json?.username }
}

t.test('create: a first sign-in makes a user linked by (provider, sub), the session a password sign-in makes, on to next', async (t) => {
  const { r, b } = await oidcSignIn(g.url, 'partner', partner.issuer, 'hal', { next: '/account/keys' })
  t.equal(r.status, 303, r.text.slice(0, 300))
  t.equal(r.headers.location, '/account/keys')
  const c = setCookies(r)
  t.ok(c.svc_sessionid?.value, 'a session cookie')
  t.ok(c.svc_sessionid.raw.length < 1024, 'well under 1 KB')
  t.equal(c.svc_oidc?.attrs['max-age'], '0', 'the attempt cookie cleared')
  t.same(await profileOf(g, b), { status: 200, username: 'hal' })
  const hal = (await g.store.users.byUsername('hal'))!
  t.match(await g.store.links.list(hal.id), [{ source: 'oidc:partner', subject: 'hal', provisioned: true }])
  t.equal(await g.store.passwords.hash(hal.id), null, 'no password of their own')
  const again = await oidcSignIn(g.url, 'partner', partner.issuer, 'hal')
  t.equal(again.r.status, 303)
  t.equal(again.r.headers.location, '/account/keys', 'next: the default')
  t.equal((await g.store.users.list()).filter((u) => u.username.startsWith('hal')).length, 1, 'one user, found by its link')
})

t.test('a local user\'s username is never taken over: a user of its own beside it', async (t) => {
  const { r, b } = await oidcSignIn(g.url, 'partner', partner.issuer, 'bob')
  t.equal(r.status, 303, r.text.slice(0, 300))
  t.same(await profileOf(g, b), { status: 200, username: 'bob@partner' })
  t.same(await g.store.links.list(localBob.id), [], 'the local bob is not linked')
})

t.test('link: not linked → 403 sso_not_linked; an operator links (sidegate user link --oidc) and the sign-in works', async (t) => {
  const erin = await makeUser(g, 'erin')
  const refused = await oidcSignIn(g.url, 'corp', corp.issuer, 'erin')
  t.equal(refused.r.status, 403)
  t.match(refused.r.text, /No account here is linked to this oidc:corp account/, 'a page saying why')
  t.equal(refused.b.session(g.url), undefined, 'no session')
  const dir = tempDir('sidegate-oidc-cli-')
  writeFileSync(`${dir}/gateway.yml`, JSON.stringify({
    secret_key: SECRET, store: g.config.store, sign_in: { oidc: [provider('corp', corpPort)] }
  }))
  const linked = await cliIn(dir, ['user', 'link', 'erin', '--oidc', 'corp', '--sub', 'erin'])
  t.equal(linked.code, 0, linked.stderr)
  const ok = await oidcSignIn(g.url, 'corp', corp.issuer, 'erin')
  t.equal(ok.r.status, 303, ok.r.text.slice(0, 300))
  t.same(await profileOf(g, ok.b), { status: 200, username: 'erin' })
  t.notOk((await g.store.links.list(erin.id))[0].provisioned, 'an operator\'s link')
})

t.test('match_email: a verified email links to the one local user with it; an unverified one does not', async (t) => {
  const gina = await makeUser(g, 'gina-local')
  await g.store.users.setFields(gina.id, { email: 'GINA@corp.example' })
  const ok = await oidcSignIn(mapped.url, 'corp', corp.issuer, 'gina')
  t.equal(ok.r.status, 303, ok.r.text.slice(0, 300))
  t.same(await profileOf(mapped, ok.b), { status: 200, username: 'gina-local' })
  const frank = await makeUser(g, 'frank-local')
  await g.store.users.setFields(frank.id, { email: 'frank@corp.example' })
  const no = await oidcSignIn(mapped.url, 'corp', corp.issuer, 'frank')
  t.equal(no.r.status, 403, 'email_verified false: no match')
  t.same(await g.store.links.list(frank.id), [])
  const plain = await oidcSignIn(g.url, 'corp', corp.issuer, 'gina')
  t.equal(plain.r.status, 303, 'linked now: any gateway finds her by the link')
})

t.test('groups → orgs: set at sign-in, and a group removed at the provider is removed at the next', async (t) => {
  const first = await oidcSignIn(mapped.url, 'partner', partner.issuer, 'dana')
  t.equal(first.r.status, 303, first.r.text.slice(0, 300))
  let dana = (await g.store.users.byUsername('dana'))!
  t.same(dana.orgs, { [eng.id]: 'user', [ops.id]: 'admin' })
  t.same((dana.groups ?? []).map((x) => x.name).sort(), ['eng', 'ops-leads'])
  t.equal(dana.name, 'Dana P')
  partner.accounts.dana.groups = ['eng']
  partner.save()
  const second = await oidcSignIn(mapped.url, 'partner', partner.issuer, 'dana')
  t.equal(second.r.status, 303)
  // read where the sign-in wrote it (another gateway's cache sees it within its invalidation poll)
  dana = (await mapped.store.users.get(dana.id))!
  t.same(dana.orgs, { [eng.id]: 'user' }, 'ops taken back')
  t.same((dana.groups ?? []).map((x) => x.name), ['eng'])
})

t.test('a disabled user is refused whatever the provider says', async (t) => {
  const hal = (await g.store.users.byUsername('hal'))!
  await g.store.users.setActive(hal.id, false)
  const { r, b } = await oidcSignIn(g.url, 'partner', partner.issuer, 'hal')
  t.equal(r.status, 401)
  t.match(r.text, /User account is disabled/)
  t.equal(b.session(g.url), undefined)
  await g.store.users.setActive(hal.id, true)
})

t.test('state: missing, wrong, replayed → 400 sso_state_invalid; a wrong nonce and the provider\'s error → 401 sso_failed', async (t) => {
  const json = async (b: Browser, url: string): Promise<{ status: number, code?: string }> => {
    const u = new URL(url)
    const r = await request(u.origin, u.pathname + u.search, { headers: b.jar.for(u.hostname) })
    return { status: r.status, code: r.json?.code }
  }
  const done = await oidcSignIn(g.url, 'partner', partner.issuer, 'hal')
  t.equal(done.r.status, 303)
  t.same(await json(done.b, done.callback), { status: 400, code: 'sso_state_invalid' }, 'replayed')
  // a fresh attempt, its callback taken with another state, then with no cookie
  const b = new Browser()
  const start = await b.get(`${g.url}/login/oidc/partner`)
  const state = new URL(start.headers.location!).searchParams.get('state')!
  t.same(await json(b, `${g.url}/login/oidc/partner/callback?code=x&state=${state}x`), { status: 400, code: 'sso_state_invalid' }, 'wrong state')
  t.same(await json(new Browser(), `${g.url}/login/oidc/partner/callback?code=x&state=${state}`), { status: 400, code: 'sso_state_invalid' }, 'no cookie: another browser')
  t.same(await json(b, `${g.url}/login/oidc/corp/callback?code=x&state=${state}`), { status: 400, code: 'sso_state_invalid' }, 'another provider\'s callback')
  const denied = await json(b, `${g.url}/login/oidc/partner/callback?error=access_denied&state=${state}`)
  t.same(denied, { status: 401, code: 'sso_failed' }, 'the provider\'s error parameters')
  // the attempt's nonce changed (sealed with the gateway's key, as only the gateway can): the id_token's does not match
  const nb = new Browser()
  const s2 = await nb.get(`${g.url}/login/oidc/partner`)
  const sealed = setCookies(s2).svc_oidc.value
  const attempt = JSON.parse(g.store.state.open('oidc attempt', sealed)!)
  nb.jar.take('127.0.0.1', { status: 200, headers: { 'set-cookie': [`svc_oidc=${g.store.state.seal('oidc attempt', JSON.stringify({ ...attempt, n: 'another-nonce' }))}`] }, text: '', json: undefined })
  const { r } = await oidcSignIn(g.url, 'partner', partner.issuer, 'hal', { browser: nb, resume: s2 })
  t.equal(r.status, 401)
  t.match(r.text, /nonce/)
  t.equal(nb.session(g.url), undefined, 'never a session')
  t.ok(g.logs.some((l) => l.includes('"sso.refused"') && l.includes('sso_state_invalid') === false && l.includes('oidc:partner')), 'audited')
})

t.test('a provider down or hung: 503 idp_unavailable (JSON), the login page with the error for a browser, within the timeout', async (t) => {
  for (const id of ['down', 'hung']) {
    const t0 = Date.now()
    const r = await request(g.url, `/login/oidc/${id}`)
    t.same([r.status, r.json?.code], [503, 'idp_unavailable'], id)
    t.ok(Date.now() - t0 < 5000, `${id}: answered in ${Date.now() - t0} ms`)
  }
  const page = await new Browser().get(`${g.url}/login/oidc/down`)
  t.equal(page.status, 503)
  t.match(page.text, /The identity provider cannot be reached/)
  t.same((await request(g.url, '/login/oidc/nope')).status, 404, 'no such provider')
})

t.test('the login page: a button per provider; a username@<domain> of email_domains goes to that provider', async (t) => {
  const page = await request(g.url, '/login?next=/account/keys')
  t.match(page.text, /<form method="get" action="\/login\/oidc\/corp">\s*<input type="hidden" name="next" value="\/account\/keys">\s*<button type="submit">Sign in with Corp SSO<\/button>/)
  t.match(page.text, /Sign in with partner</)
  // its forms lead to the providers (the buttons, the steering): Chromium holds a form's redirects to form-action
  const formAction = /form-action ([^;]+)/.exec(String(page.headers['content-security-policy']))?.[1] ?? ''
  t.same(formAction.split(' ').slice(0, 3), ["'self'", `http://localhost:${corpPort}`, `http://localhost:${partnerPort}`])
  t.notMatch(page.text, /autocomplete="current-password" required/, 'the password may be left empty (steering)')
  const steered = await postForm(g.url, '/login', { username: 'erin@corp.example', password: '', next: '/account/keys' })
  t.equal(steered.status, 303)
  t.match(steered.headers.location, /^\/login\/oidc\/corp\?next=%2Faccount%2Fkeys&login_hint=erin%40corp\.example$/)
  const plain = await postForm(g.url, '/login', { username: 'bob', password: 'bob-password' })
  t.equal(plain.status, 303, 'any other name: the password, as before')
})

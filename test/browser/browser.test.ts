/**
 * A real browser (Debian's chromium, driven by playwright-core) against a real
 * gateway: sign in, manage keys in the page, Swagger UI's "Try it out", log out;
 * a protected upstream page opened without a session leads to the login page
 * and back to the page after signing in (session.login_redirect).
 * Screenshots go to test/artifacts/. Skipped, with the reason, only when
 * Chromium cannot be launched at all.
 */
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { ARTIFACTS, launchChromium } from '../fixtures/chromium.js'
import { startRedis } from '../fixtures/redis.js'
import { request } from '../fixtures/http.js'
import { startGateway } from '../fixtures/gateway.js'
import { makeUser, signedHeaders } from '../fixtures/creds.js'
import { ageSession } from '../fixtures/session.js'

const PROFILE = '/api/v1/users/profile/'
const { browser, why } = await launchChromium()

if (browser === null) {
  t.test('browser tests', { skip: `Chromium cannot be launched: ${why}` }, () => {})
} else {
  const b = browser
  // each thing is stopped from the moment it exists (teardowns run last-registered first)
  t.teardown(async () => { await b.close() })
  const redis = await startRedis()
  t.teardown(async () => { await redis.stop() })
  const g = await startGateway(redis.url)
  t.teardown(async () => { await g.close() })
  mkdirSync(ARTIFACTS, { recursive: true })
  const alice = await makeUser(g, 'alice')
  const origin = new URL(g.url).origin

  /**
   * A fresh browser profile that records what a person would not
   * want to see: CSP violations, script errors, requests elsewhere.
   */
  const problems: string[] = []
  async function newContext (o: { javaScriptEnabled?: boolean } = {}): Promise<BrowserContext> {
    const ctx = await b.newContext({ baseURL: g.url, viewport: { width: 1280, height: 900 }, ...o })
    await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin })
    ctx.on('page', watch)
    ctx.on('request', (r) => { if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) problems.push(`request to ${r.url()}`) })
    return ctx
  }
  function watch (p: Page): void {
    p.on('console', (m) => { if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(`console: ${m.text()}`) })
    p.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
    p.on('dialog', (d) => { d.accept().catch(() => {}) })
  }

  /**
   * Swagger UI is a large script: on a loaded machine it renders, and reacts
   * to a click, slowly. Every step waits for the state it needs (an element
   * attached, visible, enabled) up to this deadline; none waits a fixed time.
   */
  const UI_DEADLINE = 60_000

  /** Opens an operation: a click on its summary button, then its body shown. */
  async function expand (op: Locator): Promise<void> {
    await op.locator('.opblock-summary-control').click()
    await op.locator('.opblock-body').waitFor({ state: 'visible' })
  }

  /** "Try it out" on an open operation, once its button is there; done when "Execute" is. */
  async function tryItOut (op: Locator): Promise<void> {
    const button = op.locator('button.try-out__btn')
    await button.waitFor({ state: 'visible' })
    await button.click()
    await op.getByRole('button', { name: 'Execute' }).waitFor({ state: 'visible' })
  }

  const ctx = await newContext()
  const page = await ctx.newPage()
  let sessionCookie = ''

  t.test('sign in with a wrong, then the right password', async (t) => {
    await page.goto('/account/keys')
    t.match(page.url(), /\/login\?next=%2Faccount%2Fkeys$/, 'sent to the login page')
    await page.getByLabel('Username').fill('alice')
    await page.getByLabel('Password').fill('not-her-password')
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    await page.getByRole('alert').waitFor()
    t.equal((await page.getByRole('alert').textContent())?.trim(), 'Incorrect username or password.', 'the error is shown')
    t.equal(await page.getByLabel('Username').inputValue(), 'alice', 'the username is kept')
    await page.screenshot({ path: join(ARTIFACTS, 'login-error.png') })

    await page.getByLabel('Password', { exact: true }).fill('alice-password')
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    await page.waitForURL('**/account/keys')
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor()
    t.match(await page.locator('header').textContent(), /Signed in as\s*alice/)
    const cookies = await ctx.cookies()
    const s = cookies.find((c) => c.name === 'svc_sessionid')!
    const csrf = cookies.find((c) => c.name === 'svc_csrftoken')!
    t.ok(s.httpOnly, 'session cookie HttpOnly')
    t.equal(s.sameSite, 'Lax')
    t.equal(s.path, '/')
    t.notOk(csrf.httpOnly, 'CSRF cookie readable by the page')
    t.equal(await page.evaluate(() => document.cookie.includes('svc_sessionid')), false, 'scripts cannot read the session id')
    sessionCookie = `svc_sessionid=${s.value}`
  })

  t.test('create an access key in the page; its secret signs a request from Node', async (t) => {
    await page.getByText('You have no access keys.').waitFor()
    await page.getByRole('button', { name: 'Create access key' }).click()
    await page.locator('#ak-new').waitFor({ state: 'visible' })
    const id = (await page.locator('#ak-new-id').textContent())!.trim()
    const secret = (await page.locator('#ak-new-secret').textContent())!.trim()
    t.match(id, /^[0-9a-f-]{36}$/)
    t.match(secret, /^[0-9a-f-]{36}$/)
    const row = page.locator(`tr[data-key-id="${id}"]`)
    await row.waitFor()
    t.match(await row.textContent(), /Active/)
    await page.screenshot({ path: join(ARTIFACTS, 'account-new-key.png'), fullPage: true })

    await page.locator('#ak-new').getByRole('button', { name: 'Copy' }).nth(1).click()
    await page.getByText('Copied to the clipboard.').waitFor()
    t.equal(await page.evaluate(async () => await navigator.clipboard.readText()), secret, 'the copy button copies the secret')

    const r = await request(g.url, PROFILE, { headers: signedHeaders(id, secret, 'GET', PROFILE) })
    t.equal(r.status, 200, 'the gateway accepts the signature')
    t.equal(r.json.username, 'alice')

    await page.getByRole('button', { name: 'Done' }).click()
    t.notOk(await page.locator('#ak-new').isVisible(), 'the secret is put away')
    await page.reload()
    await row.waitFor()
    t.notMatch(await page.content(), secret, 'and never shown again')

    // the answer to the page's PATCH, then the badge of the list it loads after it
    const toggle = async (button: RegExp, state: string): Promise<void> => {
      const answered = page.waitForResponse((r) => r.request().method() === 'PATCH' && r.url().includes(id))
      await row.getByRole('button', { name: button }).click()
      t.equal((await answered).status(), 200, `${state}: the PATCH answered`)
      await row.locator('.badge', { hasText: state }).waitFor()
    }
    await toggle(/^Disable/, 'Disabled')
    const refused = await request(g.url, PROFILE, { headers: signedHeaders(id, secret, 'GET', PROFILE) })
    // on a wrong answer: what the store holds past its cache, and what the gateway saw last
    const known = refused.json.code === 'key_disabled' ? null : g.store.accessKeys.lookup(id)
    const held = refused.json.code === 'key_disabled'
      ? {}
      : {
          status: refused.status,
          cached: known instanceof Promise ? 'not in memory' : known?.key,
          stored: known instanceof Promise ? (await known)?.key : undefined,
          row: await row.innerHTML(),
          logs: g.logs.slice(-12)
        }
    t.equal(refused.json.code, 'key_disabled', 'disabled in the page: refused', held)
    await toggle(/^Enable/, 'Active')
    t.equal((await request(g.url, PROFILE, { headers: signedHeaders(id, secret, 'GET', PROFILE) })).status, 200, 'enabled again')
    await row.getByRole('button', { name: /^Delete/ }).click()
    await row.waitFor({ state: 'detached' })
    t.same(await g.store.accessKeys.list(alice.id), [], 'deleted in the store')
    t.equal((await request(g.url, PROFILE, { headers: signedHeaders(id, secret, 'GET', PROFILE) })).json.code, 'invalid_signature')
  })

  t.test('a key with a name, an expiry and an allow-list from the page; a value the server refuses is marked, nothing made', async (t) => {
    const name = page.getByLabel('Name')
    const expires = page.getByLabel('Expires')
    const allow = page.getByLabel('Allowed from')
    await expires.fill('soon')
    await page.getByRole('button', { name: 'Create access key' }).click()
    await page.getByText(/^expires: "soon" is neither a number of days/).waitFor()
    t.equal(await expires.getAttribute('aria-invalid'), 'true', 'the field is marked')
    t.ok(await expires.evaluate((e) => e === document.activeElement), 'and focused')
    t.same(await g.store.accessKeys.list(alice.id), [], 'nothing created')
    await allow.fill('10.0.0.0/33')
    await expires.fill('30d')
    await page.getByRole('button', { name: 'Create access key' }).click()
    await page.getByText(/^allow_ips: Each must be an IP address or a CIDR range/).waitFor()
    t.equal(await allow.getAttribute('aria-invalid'), 'true')
    t.equal(await expires.getAttribute('aria-invalid'), null, 'the other field is no longer marked')

    await name.fill('laptop')
    await allow.fill('127.0.0.1, 2001:db8::/32')
    await page.getByRole('button', { name: 'Create access key' }).click()
    await page.locator('#ak-new').waitFor({ state: 'visible' })
    const id = (await page.locator('#ak-new-id').textContent())!.trim()
    const secret = (await page.locator('#ak-new-secret').textContent())!.trim()
    t.same([await name.inputValue(), await expires.inputValue(), await allow.inputValue()], ['', '', ''], 'the fields are cleared')
    const [stored] = await g.store.accessKeys.list(alice.id)
    t.match(stored, { id, name: 'laptop', allow_ips: ['127.0.0.1', '2001:db8::/32'] })
    const days = (Date.parse(stored.date_expired!) - Date.now()) / 86_400_000
    t.ok(days > 29.9 && days <= 30, `expires in ${days} days`)
    const row = page.locator(`tr[data-key-id="${id}"]`)
    await row.waitFor()
    t.equal(await row.locator('.key-name').textContent(), 'laptop')
    t.equal(await row.locator('.key-expires time').getAttribute('datetime'), stored.date_expired, 'the expiry shown')
    t.same(await row.locator('.key-allow-ips code').allTextContents(), ['127.0.0.1', '2001:db8::/32'], 'the allow-list shown')
    t.equal((await request(g.url, PROFILE, { headers: signedHeaders(id, secret, 'GET', PROFILE) })).status, 200, 'usable from 127.0.0.1')
    await page.getByRole('button', { name: 'Done' }).click()

    // only from elsewhere
    await allow.fill('10.0.0.0/8')
    await page.getByRole('button', { name: 'Create access key' }).click()
    await page.locator('#ak-new').waitFor({ state: 'visible' })
    const other = { id: (await page.locator('#ak-new-id').textContent())!.trim(), secret: (await page.locator('#ak-new-secret').textContent())!.trim() }
    t.equal((await request(g.url, PROFILE, { headers: signedHeaders(other.id, other.secret, 'GET', PROFILE) })).json.code, 'ip_not_allowed', 'a key for 10.0.0.0/8 only: refused from 127.0.0.1')
    await page.getByRole('button', { name: 'Done' }).click()
    await page.locator(`tr[data-key-id="${other.id}"] .key-expires`).getByText('never').waitFor()

    // the last use appears once the gateway wrote it
    for (let i = 0; ; i++) {
      await page.reload()
      await row.waitFor()
      if (!/never/.test((await row.locator('td').nth(3).textContent()) ?? '')) break
      if (i === 100) { t.fail('last use not shown'); break }
      await page.waitForTimeout(100)
    }
    t.pass('last use shown')
    await page.screenshot({ path: join(ARTIFACTS, 'account-key-options.png'), fullPage: true })
    for (const k of [id, other.id]) await g.store.accessKeys.delete(k)
  })

  t.test('create, show and reset the private token in the page', async (t) => {
    await page.getByText('You have no private token.').waitFor()
    t.notOk(await page.locator('#pt-box').isVisible(), 'no token: no token box beside the "no private token" line')
    t.notOk(await page.getByRole('button', { name: 'Revoke token' }).isVisible())
    await page.getByRole('button', { name: 'Create token' }).click()
    await page.getByRole('button', { name: 'Reset token' }).waitFor()
    t.notOk(await page.getByText('You have no private token.').isVisible(), 'a token: the "no private token" line is gone')
    const first = (await page.locator('#pt-value').textContent())!.trim()
    t.equal(first, await g.store.privateTokens.get(alice.id))
    t.equal((await request(g.url, PROFILE, { headers: { authorization: `Token ${first}` } })).status, 200)
    await page.getByRole('button', { name: 'Hide' }).click()
    t.notMatch(await page.locator('#pt-value').textContent(), first, 'hidden')
    await page.getByRole('button', { name: 'Reset token' }).click()
    await page.getByText('Private token reset').waitFor()
    const second = (await page.locator('#pt-value').textContent())!.trim()
    t.not(second, first)
    t.equal((await request(g.url, PROFILE, { headers: { authorization: `Token ${first}` } })).status, 401, 'the old token stops working')
    await page.screenshot({ path: join(ARTIFACTS, 'account.png'), fullPage: true })
  })

  t.test('Swagger UI at /api/docs/: operations rendered; Authorize with a token and "Try it out" on the profile', async (t) => {
    const docsCtx = await newContext()
    t.teardown(async () => { await docsCtx.close() })
    const docs = await docsCtx.newPage()
    docs.setDefaultTimeout(UI_DEADLINE)
    const token = await g.store.privateTokens.create(alice.id)
    await docs.goto('/api/docs/')
    await docs.locator('.opblock').first().waitFor({ timeout: 30_000 })
    const ops = await docs.locator('.opblock').count()
    t.ok(ops >= 20, `${ops} operations rendered`)
    t.match(await docs.locator('.info .title').textContent(), /sidegate/)
    await docs.locator('#operations-Users-getProfile').waitFor()
    const shot = join(ARTIFACTS, 'docs.png')
    await docs.screenshot({ path: shot })
    t.ok(statSync(shot).size > 20_000, 'screenshot saved')

    await docs.locator('button.btn.authorize').first().click()
    const scheme = docs.locator('.modal-ux .auth-container').filter({ has: docs.locator('h4', { hasText: 'PrivateToken' }) })
    await scheme.getByLabel('Value').fill(`Token ${token}`)
    await scheme.getByRole('button', { name: 'Apply credentials' }).click()
    await scheme.getByRole('button', { name: 'Remove authorization' }).waitFor()
    await scheme.getByRole('button', { name: 'Close' }).click()
    await docs.locator('.modal-ux').waitFor({ state: 'detached' })

    const op = docs.locator('#operations-Users-getProfile')
    await expand(op)
    await tryItOut(op)
    const sent = docs.waitForRequest((r) => r.url().endsWith(PROFILE))
    await op.getByRole('button', { name: 'Execute' }).click()
    const req = await sent
    t.equal(req.headers().authorization, `Token ${token}`, 'Swagger UI sent the token')
    const live = op.locator('.live-responses-table tbody tr.response').first()
    await live.waitFor()
    t.equal((await live.locator('.response-col_status').textContent())?.trim(), '200', 'the live response is a 200')
    const body = await live.locator('.response-col_description pre').first().textContent()
    t.equal(JSON.parse(body!).username, 'alice', 'the profile came back')
    await live.scrollIntoViewIfNeeded()
    await docs.screenshot({ path: join(ARTIFACTS, 'docs-try-it-out.png'), fullPage: false })
  })

  t.test('signed in, "Try it out" works with the session: Swagger UI sends the CSRF token', async (t) => {
    const docs = await ctx.newPage()
    t.teardown(async () => { await docs.close() })
    docs.setDefaultTimeout(UI_DEADLINE)
    await docs.goto('/api/docs/#/Authentication/createPrivateToken')
    const op = docs.locator('#operations-Authentication-createPrivateToken')
    await op.locator('.opblock-body').waitFor() // the deep link opens it
    await tryItOut(op)
    const sent = docs.waitForRequest((r) => r.url().endsWith('/api/v1/authentication/private-token/') && r.method() === 'POST')
    await op.getByRole('button', { name: 'Execute' }).click()
    const req = await sent
    t.equal(req.headers()['x-csrftoken'], (await ctx.cookies()).find((c) => c.name === 'svc_csrftoken')?.value, 'the CSRF cookie\'s value')
    t.equal(req.headers().authorization, undefined, 'no Authorization: the session decides')
    const live = op.locator('.live-responses-table tbody tr.response').first()
    await live.waitFor()
    t.equal((await live.locator('.response-col_status').textContent())?.trim(), '201')
    const body = JSON.parse((await live.locator('.response-col_description pre').first().textContent())!)
    t.equal(body.token, await g.store.privateTokens.get(alice.id), 'created for the signed-in user')
  })

  t.test('an older sign-in: the page asks for the password before creating a key or resetting the token', async (t) => {
    await page.goto('/account/keys')
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor()
    t.notOk(await page.locator('#confirm').isVisible(), 'just signed in: no password field')
    const id = (await ctx.cookies()).find((c) => c.name === 'svc_sessionid')!.value
    const keys = async (): Promise<number> => (await g.store.accessKeys.list(alice.id)).length
    const before = await keys()

    // the sign-in ages while the page is open: the server asks, the page shows the field
    await ageSession(g, id, 6 * 60_000)
    await page.getByRole('button', { name: 'Create access key' }).click()
    await page.locator('#confirm').waitFor({ state: 'visible' })
    await page.getByText('Enter your password to continue.').waitFor()
    t.equal(await keys(), before, 'nothing created')
    const field = page.getByLabel('Password', { exact: true })
    t.ok(await field.evaluate((e) => e === document.activeElement), 'the password field has the focus')
    await page.screenshot({ path: join(ARTIFACTS, 'account-confirm.png'), fullPage: true })

    await page.getByRole('button', { name: 'Create access key' }).click()
    await page.getByText('Enter your password to continue.').waitFor()
    t.equal(await keys(), before, 'an empty field: not even asked')
    await field.fill('not-her-password')
    await page.getByRole('button', { name: 'Create access key' }).click()
    await page.getByText('The password is incorrect.').waitFor()
    t.equal(await field.inputValue(), '', 'a wrong password is cleared')
    t.equal(await field.getAttribute('aria-invalid'), 'true')
    t.equal(await keys(), before, 'still nothing created')

    await field.fill('alice-password')
    await page.getByRole('button', { name: 'Create access key' }).click()
    await page.locator('#ak-new').waitFor({ state: 'visible' })
    const newId = (await page.locator('#ak-new-id').textContent())!.trim()
    t.equal(await keys(), before + 1, 'created with the password')
    t.equal((await request(g.url, PROFILE, { headers: signedHeaders(newId, (await page.locator('#ak-new-secret').textContent())!.trim(), 'GET', PROFILE) })).status, 200, 'the new key works')
    t.equal(await field.inputValue(), '', 'the password is not kept in the page')
    await page.getByRole('button', { name: 'Done' }).click()

    // loaded with an old sign-in: the field is there from the start
    await page.reload()
    await page.locator('#confirm').waitFor({ state: 'visible' })
    const old = await g.store.privateTokens.get(alice.id)
    await page.getByLabel('Password', { exact: true }).fill('alice-password')
    await page.getByRole('button', { name: 'Reset token' }).click()
    await page.getByText('Private token reset').waitFor()
    const now = await g.store.privateTokens.get(alice.id)
    t.not(now, old, 'reset with the password')
    t.equal((await page.locator('#pt-value').textContent())?.trim(), now)
  })

  t.test('the login page works without JavaScript', async (t) => {
    const noJs = await newContext({ javaScriptEnabled: false })
    const p = await noJs.newPage()
    await p.goto('/login')
    await p.getByLabel('Username').fill('alice')
    await p.getByLabel('Password').fill('alice-password')
    await p.getByRole('button', { name: 'Sign in', exact: true }).click()
    await p.waitForURL('**/account/keys')
    t.match(await p.locator('noscript').textContent(), /needs JavaScript/)
    await p.getByRole('button', { name: 'Log out' }).click()
    await p.waitForURL('**/login')
    t.equal((await noJs.cookies()).filter((c) => c.name.startsWith('svc_')).length, 0, 'log out by form works too')
    await noJs.close()
  })

  t.test('log out; the session is refused afterwards', async (t) => {
    await page.goto('/account/keys')
    t.equal((await request(g.url, PROFILE, { headers: { cookie: sessionCookie } })).status, 200, 'signed in before')
    await page.getByRole('button', { name: 'Log out' }).click()
    await page.waitForURL('**/login')
    t.same((await ctx.cookies()).map((c) => c.name).filter((n) => n.startsWith('svc_')), [], 'cookies cleared')
    const r = await request(g.url, PROFILE, { headers: { cookie: sessionCookie } })
    t.equal(r.status, 401, 'the old session cookie is refused')
    t.equal(r.json.code, 'invalid_session')
    await page.goto('/account/keys')
    t.match(page.url(), /\/login\?next=/, 'the page asks to sign in again')
  })

  t.test('a protected upstream page without a session: to the login page, signed in, back to the page with its query', async (t) => {
    // the protected service: an HTML page that shows who sidegate says is asking
    const app = http.createServer((req, res) => {
      const esc = (v: unknown): string => String(v ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
      const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Q3 report</title></head><body><h1>Q3 report</h1><p id="who">Hello ${esc(req.headers['x-svc-username'])}</p><p id="url">${esc(req.url)}</p></body></html>`
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(body) })
      res.end(body)
    })
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve))
    t.teardown(async () => { await new Promise((resolve) => app.close(resolve)) })
    const gw = await startGateway(redis.url, { redis: { url: redis.url, prefix: g.config.redis.prefix }, upstream: { url: `http://127.0.0.1:${(app.address() as AddressInfo).port}` } })
    t.teardown(async () => { await gw.close() })
    // a fresh profile: no session; it may only talk to this gateway
    const c = await b.newContext({ viewport: { width: 1280, height: 900 } })
    t.teardown(async () => { await c.close() })
    c.on('page', watch)
    c.on('request', (r) => { if (!r.url().startsWith(gw.url) && !r.url().startsWith('data:')) problems.push(`request to ${r.url()}`) })
    const p = await c.newPage()
    const target = '/reports/q3?year=2026&tab=sales'

    const first = await p.goto(gw.url + target)
    t.equal(p.url(), `${gw.url}/login?next=${encodeURIComponent(target)}`, 'sent to the login page, the page as next')
    t.equal(first?.status(), 200, 'the login page')
    t.equal(first?.request().redirectedFrom()?.url(), gw.url + target, 'by a redirect from the page asked for')
    t.equal((await first?.request().redirectedFrom()?.response())?.status(), 303)
    await p.getByRole('heading', { name: 'Sign in' }).waitFor()
    // the page's own script calls keep their 401: only navigations are redirected
    t.equal(await p.evaluate(async () => (await fetch('/reports/data.json')).status), 401, 'fetch() from the page: 401')
    await p.screenshot({ path: join(ARTIFACTS, 'login-redirect-1-login.png') })

    await p.getByLabel('Username').fill('alice')
    await p.getByLabel('Password').fill('alice-password')
    await p.screenshot({ path: join(ARTIFACTS, 'login-redirect-2-filled.png') })
    await p.getByRole('button', { name: 'Sign in', exact: true }).click()
    await p.waitForURL(gw.url + target)
    await p.getByRole('heading', { name: 'Q3 report' }).waitFor()
    t.equal((await p.locator('#who').textContent())?.trim(), 'Hello alice', 'the upstream saw alice')
    t.equal((await p.locator('#url').textContent())?.trim(), target, 'with the query')
    await p.screenshot({ path: join(ARTIFACTS, 'login-redirect-3-back.png') })
    for (const f of ['login-redirect-1-login.png', 'login-redirect-2-filled.png', 'login-redirect-3-back.png']) t.ok(statSync(join(ARTIFACTS, f)).size > 1000, `${f} saved`)

    // signed in: the page opens directly
    await p.goto(gw.url + '/reports/q4')
    t.equal(p.url(), gw.url + '/reports/q4')
  })

  t.test('no CSP violation, script error or outside request on any page', async (t) => {
    t.same(problems, [])
  })
}

/**
 * OpenID Connect in real Chromium (Debian's, driven by playwright-core)
 * against a real `oidc-provider` process: the login page's provider button
 * reached and pressed from the keyboard, the provider's own login and consent
 * pages, back to `next` signed in; then signing out here, through the
 * provider's confirmation, back to our login page with the session gone; axe-core
 * (WCAG 2.2 AA) on the login page with a provider's button and on the
 * "Signed out" page, at 1280 and 390 px, light and dark. On a failure the
 * page's screenshot goes to test/artifacts/oidc-*.png. Skipped, with the
 * reason, only when Chromium cannot be launched at all.
 */
import t, { type Test } from 'tap'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { ARTIFACTS, axeViolations, launchChromium } from '../fixtures/chromium.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { freePort } from '../fixtures/redis.js'
import { tempDir } from '../fixtures/cleanup.js'
import { startProvider } from '../fixtures/oidc.js'

const { browser, why } = await launchChromium()

if (browser === null) {
  t.test('OpenID Connect in the browser', { skip: `Chromium cannot be launched: ${why}` }, () => {})
} else {
  const b = browser
  t.teardown(async () => { await b.close() })
  const dir = tempDir('sidegate-oidc-browser-')
  writeFileSync(`${dir}/secret`, 'browser-client-secret\n')
  const port = await freePort()
  const issuer = `http://localhost:${port}`
  const db = embeddedStore()
  const g = await startGateway(db.url, {
    sign_in: { oidc: [{ id: 'corp', name: 'Corp SSO', issuer, client_id: 'sidegate', client_secret_file: `${dir}/secret`, provision: 'create', timeout: 5 }] }
  })
  const idp = await startProvider([{
    client_id: 'sidegate',
    client_secret: 'browser-client-secret',
    redirect_uris: [`${g.url}/login/oidc/corp/callback`],
    post_logout_redirect_uris: [`${g.url}/login`]
  }], { wren: { preferred_username: 'wren', name: 'Wren Corp' } }, port)
  t.teardown(async () => { await g.close(); await idp.stop(); await db.stop() })
  mkdirSync(ARTIFACTS, { recursive: true })

  const ctx = await b.newContext({ baseURL: g.url, viewport: { width: 1100, height: 900 } })
  const page: Page = await ctx.newPage()
  const problems: string[] = []
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
  const shot = async (t: Test, name: string): Promise<void> => {
    if (t.passing()) return
    await page.screenshot({ path: join(ARTIFACTS, `oidc-${name}.png`), fullPage: true })
  }

  t.test('sign in: the provider\'s button from the keyboard, its login and consent, back to next', async (t) => {
    t.teardown(async () => { await shot(t, 'sign-in') })
    await page.goto('/login?next=/account/keys')
    const button = page.getByRole('button', { name: 'Sign in with Corp SSO' })
    t.ok(await button.isVisible(), 'a button named after the provider')
    await button.focus()
    await page.keyboard.press('Enter')
    await page.waitForURL((u) => u.origin === issuer)
    await page.locator('input[name=login]').fill('wren')
    await page.locator('input[name=password]').fill('any-password')
    await page.getByRole('button', { name: 'Sign-in' }).click()
    await page.getByRole('button', { name: 'Continue' }).click()
    await page.waitForURL(`${g.url}/account/keys`)
    t.match(await page.textContent('body'), /wren/, 'signed in, on the page next named')
    const cookies = await ctx.cookies(g.url)
    const session = cookies.find((c) => c.name === 'svc_sessionid')
    t.ok(session?.httpOnly, 'the session cookie, HttpOnly')
    t.ok((session?.value.length ?? 0) < 200, 'small: nothing of the provider\'s in it')
    t.notOk(cookies.some((c) => c.name === 'svc_oidc'), 'the attempt cookie gone')
    t.same(problems, [])
  })

  t.test('sign out: through the provider\'s confirmation, back to the login page, the session gone', async (t) => {
    t.teardown(async () => { await shot(t, 'sign-out') })
    await page.getByRole('button', { name: 'Log out' }).click()
    await page.waitForURL((u) => u.origin === issuer)
    await page.getByRole('button', { name: 'Yes, sign me out' }).click()
    await page.waitForURL((u) => u.href.startsWith(`${g.url}/login`))
    t.notOk((await ctx.cookies(g.url)).some((c) => c.name === 'svc_sessionid' && c.value !== ''), 'no session cookie')
    await page.goto('/account/keys')
    await page.waitForURL((u) => u.pathname === '/login')
    t.pass('the account page sends the browser to sign in again')
  })

  t.test('axe, WCAG 2.2 AA: the login page with a provider, and the signed-out page', async (t) => {
    const actx = await b.newContext({ baseURL: g.url, bypassCSP: true })
    t.teardown(async () => { await actx.close() })
    const p = await actx.newPage()
    /** The page as it is now, at both widths and in both schemes. */
    const check = async (name: string): Promise<void> => {
      for (const colorScheme of ['light', 'dark'] as const) {
        for (const width of [1280, 390]) {
          await p.emulateMedia({ colorScheme })
          await p.setViewportSize({ width, height: 900 })
          const v = await axeViolations(p)
          if (v.length > 0) await p.screenshot({ path: join(ARTIFACTS, `oidc-a11y-${name}-${width}-${colorScheme}.png`), fullPage: true })
          t.same(v, [], `${name}, ${width} px, ${colorScheme}: no violations`)
        }
      }
    }
    await p.goto('/login?next=/account/keys')
    await check('login')
    await p.getByRole('button', { name: 'Sign in with Corp SSO' }).click()
    await p.waitForURL((u) => u.origin === issuer)
    await p.locator('input[name=login]').fill('wren')
    await p.locator('input[name=password]').fill('any-password')
    await p.getByRole('button', { name: 'Sign-in' }).click()
    const consent = p.getByRole('button', { name: 'Continue' })
    await Promise.race([p.waitForURL(`${g.url}/account/keys`), consent.waitFor().then(async () => await consent.click())])
    await p.waitForURL(`${g.url}/account/keys`)
    // the page answers with Refresh: 0 to the provider: held here (its body as served) so axe sees it
    await p.route('**/logout', async (route) => {
      const r = await route.fetch()
      const headers = { ...r.headers() }
      t.match(headers.refresh, /^0; url=/, 'served with a Refresh to the provider')
      delete headers.refresh
      await route.fulfill({ response: r, headers })
    })
    await p.getByRole('button', { name: 'Log out' }).click()
    await p.getByRole('heading', { name: 'Signed out' }).waitFor()
    await check('signed-out')
  })
}

/**
 * Every page of sidegate's own, checked by axe-core (an accessibility engine
 * nobody here wrote) in Debian's Chromium: WCAG 2.0-2.2 levels A and AA, no
 * violation, at 1280 and 390 px, in the light and the dark scheme. The login
 * form (and its error), its second step, the API keys page, the second-factor
 * page (off, an enrolment), the password page (and its error), a reset link's
 * page (valid and void), an error page (a 404 navigated to).
 * On a failure the page's screenshot goes to test/artifacts/. Swagger UI
 * (/api/docs/) is a third party's page and is not checked here.
 */
import t from 'tap'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { ARTIFACTS, axeViolations, launchChromium } from '../fixtures/chromium.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'

const { browser, why } = await launchChromium()

if (browser === null) {
  t.test('accessibility', { skip: `Chromium cannot be launched: ${why}` }, () => {})
} else {
  const b = browser
  t.teardown(async () => { await b.close() })
  const db = embeddedStore()
  t.teardown(async () => { await db.stop() })
  const g = await startGateway(db.url)
  t.teardown(async () => { await g.close() })
  mkdirSync(ARTIFACTS, { recursive: true })
  const user = await makeUser(g, 'ada')
  const withApp = await makeUser(g, 'tom')
  await g.store.mfa.begin(withApp.id)
  const { token: resetToken } = await g.store.passwords.resetToken(user.id, 3_600_000)

  /** Each page, reached as a person would, and checked at both widths and in both schemes. */
  const PAGES: Array<{ name: string, open: (p: Page) => Promise<unknown> }> = [
    { name: 'login', open: async (p) => await p.goto('/login') },
    { name: 'login-error', open: async (p) => { await p.goto('/login'); await p.fill('#username', 'ada'); await p.fill('#password', 'wrong-one'); await p.click('button[type=submit]') } },
    { name: 'login-second-step', open: async (p) => { await p.goto('/login'); await p.fill('#username', 'tom'); await p.fill('#password', 'tom-password'); await p.click('button[type=submit]'); await p.waitForSelector('h1') } },
    { name: 'keys', open: async (p) => { await p.goto('/account/keys'); await p.waitForSelector('#username') } },
    { name: 'mfa-off', open: async (p) => await p.goto('/account/mfa') },
    { name: 'mfa-enrol', open: async (p) => { await p.goto('/account/mfa'); await p.click('text=Set up an authenticator app'); await p.waitForSelector('#mfa-secret') } },
    { name: 'password', open: async (p) => await p.goto('/account/password') },
    { name: 'password-error', open: async (p) => { await p.goto('/account/password'); await p.fill('#current', 'x'); await p.fill('#new', 'short-1'); await p.fill('#again', 'short-2'); await p.click('button[type=submit]') } },
    { name: 'reset', open: async (p) => await p.goto(`/login/reset?token=${resetToken}`) },
    { name: 'reset-invalid', open: async (p) => await p.goto('/login/reset?token=v1.not.a.token') },
    {
      name: 'error-page',
      open: async (p) => {
        const r = await p.goto('/api/v1/no-such-thing/')
        if (r?.status() !== 404 || !(r.headers()['content-type'] ?? '').startsWith('text/html')) throw new Error(`not the 404 page: ${r?.status()}`)
      }
    }
  ]
  const signedIn = new Set(['keys', 'mfa-off', 'mfa-enrol', 'password', 'password-error'])

  for (const scheme of ['light', 'dark'] as const) {
    for (const width of [1280, 390]) {
      t.test(`axe, WCAG 2.2 AA: no violations, ${width} px, ${scheme}`, async (t) => {
        const context = async () =>
          await b.newContext({ baseURL: g.url, viewport: { width, height: 900 }, colorScheme: scheme, bypassCSP: true })
        const ctx = await context()
        t.teardown(async () => { await ctx.close() })
        const p = await ctx.newPage()
        // one sign-in for the signed-in pages (the session cookie stays in this context)
        await p.goto('/login')
        await p.fill('#username', 'ada')
        await p.fill('#password', 'ada-password')
        await Promise.all([p.waitForURL(/\/account\/keys/), p.click('button[type=submit]')])
        for (const page of PAGES) {
          const q = signedIn.has(page.name) ? p : await (await context()).newPage()
          await page.open(q)
          await q.waitForLoadState('load')
          const v = await axeViolations(q)
          if (v.length > 0) await q.screenshot({ path: join(ARTIFACTS, `a11y-${page.name}-${width}-${scheme}.png`), fullPage: true })
          t.same(v, [], `${page.name}: no violations`)
          if (q !== p) await q.context().close()
        }
      })
    }
  }
}

/**
 * Passkeys in real Chromium (Debian's, driven by playwright-core) with a
 * virtual authenticator of the DevTools protocol (WebAuthn domain: CTAP2,
 * internal transport, resident keys, user verification): register a passkey
 * on the account page, sign out, sign in with it alone, sign in with the
 * password and it as the second step; a cloned authenticator (the credential
 * with its private key copied into a second authenticator at a lower
 * signature counter) refused; remove the passkey and see a sign-in with it
 * refused. The RP id is `localhost` (an IP address cannot be one), so the
 * browser opens the gateway as http://localhost:<port>, a secure context.
 * Skipped, with the reason, only when Chromium cannot be launched at all.
 */
import t from 'tap'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { CDPSession, Page } from 'playwright-core'
import { ARTIFACTS, launchChromium } from '../fixtures/chromium.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'

const { browser, why } = await launchChromium()

interface VirtualCredential {
  credentialId: string,
  isResidentCredential: boolean,
  rpId?: string,
  privateKey: string,
  userHandle?: string,
  signCount: number
}

if (browser === null) {
  t.test('passkeys in the browser', { skip: `Chromium cannot be launched: ${why}` }, () => {})
} else {
  const b = browser
  t.teardown(async () => { await b.close() })
  const db = embeddedStore()
  const g = await startGateway(db.url)
  t.teardown(async () => { await g.close(); await db.stop() })
  mkdirSync(ARTIFACTS, { recursive: true })
  const eve = await makeUser(g, 'eve')
  const base = `http://localhost:${new URL(g.url).port}`

  const problems: string[] = []
  const ctx = await b.newContext({ baseURL: base, viewport: { width: 1100, height: 900 } })
  const page: Page = await ctx.newPage()
  page.on('console', (m) => { if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(`console: ${m.text()}`) })
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
  const cdp: CDPSession = await page.context().newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  const authenticator = async (): Promise<string> => (await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true }
  })).authenticatorId
  let first = await authenticator()

  async function signInWithPassword (): Promise<void> {
    await page.goto('/login')
    await page.getByLabel('Username').fill('eve')
    await page.getByLabel('Password').fill('eve-password')
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  }
  async function signOut (): Promise<void> {
    await page.goto('/account/keys')
    await page.locator('#logout').click()
    await page.waitForURL('**/login')
  }
  async function passkeyAlone (): Promise<void> {
    await page.goto('/login')
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
  }

  t.test('register a passkey on the account page', async (t) => {
    await signInWithPassword()
    await page.waitForURL('**/account/keys')
    await page.goto('/account/mfa')
    t.equal(await page.locator('#passkeys-none').count(), 1, 'none yet')
    await page.getByLabel('Name of the new passkey').fill('Laptop')
    await page.getByRole('button', { name: 'Add a passkey' }).click()
    await page.locator('#passkeys .passkey-name').first().waitFor()
    t.equal((await page.locator('#passkeys .passkey-name').textContent())?.trim(), 'Laptop', 'listed under its name')
    t.match(await page.locator('#passkeys').textContent(), /this device only/, 'a device-bound passkey (hwk)')
    const creds = (await cdp.send('WebAuthn.getCredentials', { authenticatorId: first })).credentials as VirtualCredential[]
    t.equal(creds.length, 1, 'the authenticator holds one credential')
    t.equal(creds[0].isResidentCredential, true, 'discoverable')
    t.equal(creds[0].rpId, 'localhost')
    const stored = await g.store.passkeys.list(eve.id)
    t.same(stored.map((p) => [p.id, p.name, p.device_type]), [[creds[0].credentialId.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_'), 'Laptop', 'singleDevice']], 'stored under the credential id the authenticator made')
    const handle = Buffer.from(creds[0].userHandle ?? '', 'base64').toString('utf8')
    t.not(handle, 'eve', 'the user handle is not the username')
    t.ok(g.logs.some((l) => l.includes('"passkey.registered"') && l.includes(eve.id)))
    await page.screenshot({ path: join(ARTIFACTS, 'passkey-registered.png') })
  })

  t.test('sign out, then sign in with the passkey alone (no username)', async (t) => {
    await signOut()
    await passkeyAlone()
    await page.waitForURL('**/account/keys')
    t.match(await page.locator('header').textContent(), /Signed in as\s*eve/)
    t.ok(g.logs.some((l) => l.includes('"login.succeeded"') && l.includes('"authMethod":"passkey"') && l.includes(eve.id)))
    const sid = (await ctx.cookies()).find((c) => c.name === 'svc_sessionid')!.value
    t.same((await g.store.sessions.get(sid))?.factors, ['hwk'], 'the session: a device-bound passkey alone (amr hwk)')
  })

  t.test('the password, then the passkey as the second factor', async (t) => {
    await signOut()
    await signInWithPassword()
    await page.getByRole('heading', { name: 'Use your passkey' }).waitFor()
    t.equal(await page.locator('form[action="/login/mfa"]').isVisible(), false, 'no code field: the passkey is her only factor')
    await page.screenshot({ path: join(ARTIFACTS, 'passkey-second-step.png') })
    await page.getByRole('button', { name: 'Use a passkey' }).click()
    await page.waitForURL('**/account/keys')
    t.match(await page.locator('header').textContent(), /Signed in as\s*eve/)
    t.ok(g.logs.some((l) => l.includes('"mfa.succeeded"') && l.includes('"authMethod":"passkey"') && l.includes(eve.id)))
    const sid = (await ctx.cookies()).find((c) => c.name === 'svc_sessionid')!.value
    t.same((await g.store.sessions.get(sid))?.factors, ['pwd', 'hwk'], 'the session: the password and the passkey')
  })

  t.test('a cloned authenticator (the same key at a lower signature counter) is refused', async (t) => {
    await signOut()
    const [cred] = (await cdp.send('WebAuthn.getCredentials', { authenticatorId: first })).credentials as VirtualCredential[]
    const stored = (await g.store.passkeys.list(eve.id))[0]
    const counter = (await g.store.passkeys.get(stored.id))!.counter
    t.ok(cred.signCount > 1 && counter === cred.signCount, `the authenticator counts its signatures (${cred.signCount}) and the gateway kept the last (${counter})`)
    await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId: first })
    const clone = await authenticator()
    await cdp.send('WebAuthn.addCredential', { authenticatorId: clone, credential: { ...cred, signCount: 0 } })
    await passkeyAlone()
    const status = page.locator('#passkey-status')
    await page.waitForFunction(() => document.getElementById('passkey-status')?.className === 'error')
    t.match(await status.textContent(), /signature counter did not increase/, 'the page says why')
    t.match(page.url(), /\/login$/, 'not signed in')
    t.equal((await g.store.passkeys.get(stored.id))!.counter, counter, 'the stored counter kept')
    t.ok(g.logs.some((l) => l.includes('"passkey.cloned"') && l.includes(eve.id)), 'audited')
    await page.screenshot({ path: join(ARTIFACTS, 'passkey-cloned.png') })
    // the real authenticator back, its counter where it was
    await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId: clone })
    first = await authenticator()
    await cdp.send('WebAuthn.addCredential', { authenticatorId: first, credential: cred })
  })

  t.test('remove the passkey on the account page; a sign-in with it is then refused', async (t) => {
    await passkeyAlone()
    await page.waitForURL('**/account/keys')
    await page.goto('/account/mfa')
    await page.getByRole('button', { name: 'Remove Laptop' }).click()
    await page.locator('#passkeys-none').waitFor()
    t.same(await g.store.passkeys.list(eve.id), [], 'gone from the store')
    t.ok(g.logs.some((l) => l.includes('"passkey.removed"') && l.includes(eve.id)))
    await signOut()
    await passkeyAlone()
    await page.waitForFunction(() => document.getElementById('passkey-status')?.className === 'error')
    t.match(await page.locator('#passkey-status').textContent(), /The passkey was not accepted/)
    t.match(page.url(), /\/login$/, 'not signed in')
    // without a passkey the password alone signs in again
    await signInWithPassword()
    await page.waitForURL('**/account/keys')
  })

  t.test('no CSP violation or script error on the way', async (t) => {
    t.same(problems, [])
  })
}

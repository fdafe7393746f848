#!/usr/bin/env node
/**
 * `npm run bench:oidc`: what a sign-in through an OpenID provider costs. A
 * real oidc-provider process (test/fixtures/oidc.ts) and a gateway in this
 * process on the embedded store; each sign-in is the whole browser walk over
 * HTTP: /login/oidc/<id>, the provider's login and consent forms, the
 * callback (the code exchanged, the id_token checked, the userinfo fetched,
 * the account found by its link, the session made). Reports sign-ins per
 * second and the latency's p50 and p95, at a few concurrencies.
 *
 *   --requests N   sign-ins per concurrency (200)
 */
import { writeFileSync } from 'node:fs'
import { parseFlags, signInRows } from './lib.mjs'
import { embeddedStore, startGateway } from '../test/fixtures/gateway.ts'
import { freePort } from '../test/fixtures/redis.ts'
import { tempDir } from '../test/fixtures/cleanup.ts'
import { oidcSignIn, startProvider } from '../test/fixtures/oidc.ts'

const flags = parseFlags(process.argv.slice(2), { requests: 200 })
const dir = tempDir('sidegate-bench-oidc-')
writeFileSync(`${dir}/secret`, 'bench-client-secret\n')
const port = await freePort()
const issuer = `http://localhost:${port}`
const db = embeddedStore()
const g = await startGateway(db.url, {
  log: { level: 'warn' },
  sign_in: { oidc: [{ id: 'corp', issuer, client_id: 'sidegate', client_secret_file: `${dir}/secret`, provision: 'create' }] }
})
const people = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`p${i}`, { preferred_username: `p${i}` }]))
const idp = await startProvider([{
  client_id: 'sidegate', client_secret: 'bench-client-secret', redirect_uris: [`${g.url}/login/oidc/corp/callback`]
}], people, port)
const once = async (i) => {
  const started = process.hrtime.bigint()
  const { r } = await oidcSignIn(g.url, 'corp', issuer, `p${i % 8}`)
  if (r.status !== 303) throw new Error(`sign-in ${i}: ${r.status} ${r.text.slice(0, 200)}`)
  return Number(process.hrtime.bigint() - started) / 1e6
}
try {
  // the first sign-ins discover the provider and provision the users: not timed
  for (let i = 0; i < 8; i++) await once(i)
  const rows = await signInRows(once, flags.requests)
  console.log(`OpenID Connect sign-ins, the whole browser walk (oidc-provider on this host, ${flags.requests} each):`)
  console.table(rows)
} finally {
  await g.close()
  await idp.stop()
  await db.stop()
}

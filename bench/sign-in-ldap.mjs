#!/usr/bin/env node
/**
 * `npm run bench:ldap`: what a sign-in through a directory costs. A real
 * slapd (test/fixtures/slapd.ts) and a gateway in this process on the embedded
 * store; token requests for directory users (password_order directory_first,
 * so no local hash is checked first), at a few concurrencies. Reports
 * sign-ins per second and the latency's p50 and p95. The pool (sign_in.ldap
 * pool, default 4) bounds the connections one gateway opens per server.
 *
 *   --requests N   sign-ins per concurrency (400)
 *   --pool N       sign_in.ldap[0].pool (4)
 */
import { parseFlags, signInRows } from './lib.mjs'
import { BASE, PEOPLE, SERVICE_DN, SERVICE_PASSWORD, startSlapd } from '../test/fixtures/slapd.ts'
import { embeddedStore, startGateway } from '../test/fixtures/gateway.ts'

const flags = parseFlags(process.argv.slice(2), { requests: 400, pool: 4 })
const slapd = await startSlapd()
const db = embeddedStore()
const g = await startGateway(db.url, {
  log: { level: 'warn' },
  auth: {
    lockout: { max_failures: 0 },
    password_checks: { concurrency: 64, queue: 1024, per_address: 64, per_address_waiting: 1024 }
  },
  sign_in: {
    password_order: 'directory_first',
    ldap: [{
      id: 'corp',
      urls: [slapd.url],
      bind_dn: SERVICE_DN,
      bind_password: SERVICE_PASSWORD,
      pool: flags.pool,
      users: { base: `ou=people,${BASE}` },
      groups: { base: `ou=groups,${BASE}` }
    }]
  }
})
const users = ['alice', 'bob', 'carol', 'admin']
const once = async (i) => {
  const username = users[i % users.length]
  const started = process.hrtime.bigint()
  const r = await fetch(`${g.url}/api/v1/authentication/auth/`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password: PEOPLE[username] })
  })
  await r.arrayBuffer()
  if (r.status !== 201) throw new Error(`sign-in ${username}: ${r.status}`)
  return Number(process.hrtime.bigint() - started) / 1e6
}
try {
  // the first sign-ins provision the users: not timed
  for (let i = 0; i < users.length; i++) await once(i)
  const rows = await signInRows(once, flags.requests)
  console.log(`directory sign-ins through the token endpoint (slapd on this host, pool ${flags.pool}, ${flags.requests} each):`)
  console.table(rows)
} finally {
  await g.close()
  await slapd.stop()
  await db.stop()
}

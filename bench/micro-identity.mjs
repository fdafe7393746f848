#!/usr/bin/env node
/**
 * `npm run bench:identity`: what identity.jwt adds to a forwarded request, in
 * process, per call: the identity headers with and without the signed token
 * (src/pipeline/headers.ts identityHeaders and upstreamHeaders, the token
 * cached as it is for repeat callers), and minting a token when it is not cached (node:crypto, EdDSA and
 * ES256; jose's SignJWT for comparison). Each call is timed on its own and the
 * median reported (hrtime itself costs some tens of ns, the same in every row).
 * The key set lives in the embedded store on a temporary file: no Redis, no sockets.
 *
 *   --calls N    timed calls per case (100000)
 *   --users N    distinct callers cycled through in the cached cases (1000)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT, parseFlags } from './lib.mjs'

const flags = parseFlags(process.argv.slice(2), { calls: 100_000, users: 1000 })
const { buildConfig } = await import(join(ROOT, 'dist', 'config', 'index.js'))
const { Keyring } = await import(join(ROOT, 'dist', 'crypto.js'))
const { SqliteStore } = await import(join(ROOT, 'dist', 'store', 'sqlite', 'index.js'))
const { IdentitySigner } = await import(join(ROOT, 'dist', 'forward', 'identity.js'))
const { headerPolicy, identityHeaders, upstreamHeaders } = await import(join(ROOT, 'dist', 'pipeline', 'headers.js'))
const { createLogger } = await import(join(ROOT, 'dist', 'observability', 'log.js'))
const { SignJWT } = await import('jose')

const SECRET = 'bench-secret-key-that-is-long-enough-0123456789'
const ORG = '00000000-0000-0000-0000-000000000002'
const log = createLogger('silent')

const identities = Array.from({ length: flags.users }, (_, i) => ({
  userId: `6f1a1c7e-1111-4222-8333-${String(i).padStart(12, '0')}`,
  method: 'private_token',
  user: { id: `6f1a1c7e-1111-4222-8333-${String(i).padStart(12, '0')}`, username: `user${i}` }
}))

const dir = mkdtempSync(join(tmpdir(), 'sidegate-bench-identity-'))
process.on('exit', () => rmSync(dir, { recursive: true, force: true }))

async function signerFor (algorithm) {
  const config = buildConfig({ identity: { jwt: { enabled: true, algorithm, audience: 'orders' } } })
  const store = new SqliteStore({ path: join(dir, `${algorithm}.db`), busyTimeout: 1000, cache: { max: 0, ttl: 1 } }, new Keyring(SECRET))
  await store.connect()
  const signer = new IdentitySigner(store, config.identity.jwt, log, { cacheMax: config.auth.cache.max })
  await signer.load()
  return { config, signer }
}

/** Median and 90th percentile of `fn` timed call by call, after a warm-up. */
async function time (fn, calls = flags.calls) {
  for (let i = 0; i < Math.min(calls, 20_000); i++) await fn(i)
  const ns = new Float64Array(calls)
  for (let i = 0; i < calls; i++) {
    const t0 = process.hrtime.bigint()
    await fn(i)
    ns[i] = Number(process.hrtime.bigint() - t0)
  }
  ns.sort()
  return { median: ns[Math.floor(calls / 2)], p90: ns[Math.floor(calls * 0.9)] }
}

const rows = []
const ed = await signerFor('EdDSA')
const es = await signerFor('ES256')
const plainPolicy = headerPolicy(ed.config)
const jwtPolicy = headerPolicy(ed.config, (id, org) => ed.signer.token(id, org))
const req = () => ({ url: '/api/v1/orders/?limit=20', headers: { host: 'gw', accept: 'application/json', authorization: 'Token x' }, socket: { remoteAddress: '10.0.0.1' } })

/** What a forwarded request's headers cost: the identity's, then the one pass that builds the upstream's. */
const inject = (policy, id) => {
  const identity = []
  identityHeaders(policy, id, ORG, 'bench', identity)
  return upstreamHeaders(req(), policy, 'bench', identity, false)
}
const headersOff = await time((i) => inject(plainPolicy, identities[i % identities.length]))
const headersOn = await time((i) => inject(jwtPolicy, identities[i % identities.length]))
rows.push(['identity headers, identity.jwt off', headersOff])
rows.push([`identity headers + X-SVC-Identity (cached token, ${flags.users} callers)`, headersOn])
rows.push(['token(): cache hit', await time((i) => ed.signer.token(identities[i % identities.length], ORG))])
const mintCalls = Math.min(flags.calls, 20_000)
const sEd = ed.signer.currentSigner()
const sEs = es.signer.currentSigner()
rows.push(['mint a token, EdDSA (node:crypto, no cache)', await time((i) => ed.signer.mint(sEd, identities[i % identities.length], ORG, Date.now()), mintCalls)])
rows.push(['mint a token, ES256 (node:crypto, no cache)', await time((i) => es.signer.mint(sEs, identities[i % identities.length], ORG, Date.now()), mintCalls)])
const joseKey = sEd.key
rows.push(['mint a token, EdDSA (jose SignJWT, for comparison)', await time(async (i) => await new SignJWT({ preferred_username: identities[i % identities.length].user.username, org: ORG, amr: ['private_token'] })
  .setProtectedHeader({ alg: 'EdDSA', kid: sEd.kid }).setSubject(identities[i % identities.length].user.id).setIssuedAt().setExpirationTime('60s').sign(joseKey), mintCalls)])

process.stdout.write('| case | ns/call (median) | p90 |\n| --- | ---: | ---: |\n')
for (const [name, r] of rows) process.stdout.write(`| ${name} | ${Math.round(r.median)} | ${Math.round(r.p90)} |\n`)
process.stdout.write(`added per request by identity.jwt at the median (cached token): ${Math.round(headersOn.median - headersOff.median)} ns; node ${process.version}\n`)

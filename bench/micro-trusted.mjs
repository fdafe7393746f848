#!/usr/bin/env node
/**
 * `npm run bench:trusted`: what a trusted issuer's token costs the
 * authenticator (src/auth/trusted-token.ts), in process, per call: its first
 * sight (decode, one signature check, the claims, the mapped subject) for each
 * algorithm a cluster or an identity provider signs with (RS256, ES256, EdDSA,
 * PS256), and a token seen before (the SHA-256 of the token and a cache
 * lookup). Each call is timed on its own (the median and p90 reported) and the
 * process's CPU per call (all threads: the signature check runs on libuv's pool);
 * every first sight is a distinct token, minted before the count. The keys come from a
 * jwks_file: no network, no Redis; `as: service`, so no store lookup.
 *
 *   --tokens N   distinct tokens per algorithm, each seen once (2000)
 *   --calls N    timed calls of the cached case (100000)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT, parseFlags } from './lib.mjs'

const flags = parseFlags(process.argv.slice(2), { tokens: 2000, calls: 100_000 })
const { buildConfig } = await import(join(ROOT, 'dist', 'config', 'index.js'))
const { TrustedTokenAuthenticator } = await import(join(ROOT, 'dist', 'auth', 'trusted-token.js'))
const { SignJWT, exportJWK, generateKeyPair } = await import('jose')

const ISSUER = 'https://issuer.bench.example'
const dir = mkdtempSync(join(tmpdir(), 'sidegate-bench-trusted-'))
process.on('exit', () => rmSync(dir, { recursive: true, force: true }))

/**
 * An authenticator trusting one issuer that signs with `alg` (an id of its own: the process keeps
 * one key set per settings), and `n` distinct Kubernetes-shaped tokens of it.
 */
let issuers = 0
async function issuerOf (alg, n) {
  const id = `bench-${++issuers}`
  const { privateKey, publicKey } = await generateKeyPair(alg, { crv: alg === 'EdDSA' ? 'Ed25519' : undefined })
  const jwksFile = join(dir, `${id}.json`)
  writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: `${alg}-1`, alg, use: 'sig' }] }))
  const config = buildConfig({
    auth: { trusted_issuers: [{ id, issuer: ISSUER, jwks_file: jwksFile, audiences: ['sidegate'], algorithms: [alg], max_lifetime: 7200 }] }
  })
  const auth = new TrustedTokenAuthenticator(null, config.auth.trusted_issuers, { cacheMax: n + 1000 })
  const now = Math.floor(Date.now() / 1000)
  const tokens = []
  for (let i = 0; i < n; i++) {
    tokens.push(await new SignJWT({ 'kubernetes.io': { namespace: 'bench', serviceaccount: { name: `svc-${i}`, uid: `uid-${i}` } } })
      .setProtectedHeader({ alg, kid: `${alg}-1` })
      .setIssuer(ISSUER).setAudience('sidegate').setSubject(`system:serviceaccount:bench:svc-${i}`)
      .setIssuedAt(now).setNotBefore(now).setExpirationTime(now + 7200)
      .sign(privateKey))
  }
  return { auth, tokens }
}

const cred = (token) => ({ authorization: { scheme: 'bearer', credentials: token } })

/**
 * Median and 90th percentile of `fn` timed call by call (wall time: jose verifies with WebCrypto, whose
 * work runs on libuv's pool, so a call waits for a pool thread and an event-loop turn), and the process's
 * CPU per call, every thread counted.
 */
async function time (fn, calls) {
  const ns = new Float64Array(calls)
  const cpu0 = process.cpuUsage()
  for (let i = 0; i < calls; i++) {
    const t0 = process.hrtime.bigint()
    const r = await fn(i)
    ns[i] = Number(process.hrtime.bigint() - t0)
    if (r instanceof Error) throw new Error(`refused: ${r.message}`)
  }
  const cpu = process.cpuUsage(cpu0)
  ns.sort()
  return { median: ns[Math.floor(calls / 2)], p90: ns[Math.floor(calls * 0.9)], cpuUs: (cpu.user + cpu.system) / calls }
}

const rows = []
let cached = null
for (const alg of ['RS256', 'ES256', 'EdDSA', 'PS256']) {
  // a warm-up issuer of its own, so V8 has optimised the path before the count
  const warm = await issuerOf(alg, 300)
  for (const t of warm.tokens) await warm.auth.check(cred(t))
  const { auth, tokens } = await issuerOf(alg, flags.tokens)
  rows.push([`first sight, ${alg} (one signature check)`, await time((i) => auth.check(cred(tokens[i])), tokens.length)])
  if (alg === 'RS256') cached = { auth, tokens }
}
const seen = cached.tokens.slice(0, 1000)
for (let i = 0; i < 20_000; i++) await cached.auth.check(cred(seen[i % seen.length]))
rows.push([`seen before (RS256, ${seen.length} tokens cycled)`, await time((i) => cached.auth.check(cred(seen[i % seen.length])), flags.calls)])

process.stdout.write('| case | CPU µs/call | wall µs/call (median) | p90 |\n| --- | ---: | ---: | ---: |\n')
for (const [name, r] of rows) {
  process.stdout.write(`| ${name} | ${r.cpuUs.toFixed(1)} | ${(r.median / 1000).toFixed(1)} | ${(r.p90 / 1000).toFixed(1)} |\n`)
}
process.stdout.write(`node ${process.version}, ${flags.tokens} tokens per algorithm\n`)

#!/usr/bin/env node
/**
 * `npm run bench:micro`: the cached authentication path alone, in process, in
 * nanoseconds per call — what a change to the authenticators, the parsers or
 * the caches costs, without sockets, proxying or a load generator. Each case
 * resolves a real credential against a real (private) Redis once, then runs
 * from the in-process caches; a call that reached Redis in the timed loop
 * would show as microseconds, not nanoseconds.
 *
 *   --calls N   timed calls per case (200000)
 *   --rounds N  rounds per case, the median is reported (5)
 */
import { createHmac } from 'node:crypto'
import { join } from 'node:path'
import { ROOT, parseFlags, startRedis } from './lib.mjs'
import { openStore, seedCredentials, SECRET, PREFIX } from './stack.mjs'

const flags = parseFlags(process.argv.slice(2), { calls: 200_000, rounds: 5 })
const { buildConfig } = await import(join(ROOT, 'dist', 'config', 'index.js'))
const { Authenticators } = await import(join(ROOT, 'dist', 'auth', 'index.js'))

const redis = await startRedis()
const store = await openStore(redis.url)
try {
  const creds = await seedCredentials(store, 1)
  const config = buildConfig({ redis: { url: redis.url, prefix: PREFIX }, secret_key: SECRET })
  const auth = new Authenticators(store, config)
  const path = '/api/v1/items/?limit=20'
  const req = (headers) => ({ method: 'GET', url: path, headers, socket: { remoteAddress: '127.0.0.1' } })
  const signed = () => {
    const date = new Date().toUTCString()
    const sig = createHmac('sha256', creds.keys[0].secret).update(`(request-target): get ${path}\naccept: application/json\ndate: ${date}`).digest('base64')
    return req({ accept: 'application/json', date, authorization: `Signature keyId="${creds.keys[0].id}",algorithm="hmac-sha256",headers="(request-target) accept date",signature="${sig}"` })
  }
  const cases = [
    { name: 'private token (cached)', make: () => req({ authorization: `Token ${creds.tokens[0]}` }) },
    { name: 'session cookie (cached)', make: () => req({ cookie: `svc_sessionid=${creds.sessions[0]}; theme=dark` }) },
    // one signed request reused: the HMAC is computed per call, the Date stays fresh for the run
    { name: 'access-key signature (cached key)', make: signed },
    { name: 'untagged token (401, no Redis)', make: () => req({ authorization: `Token ${'x'.repeat(44)}` }), rejects: true }
  ]
  const rows = []
  for (const c of cases) {
    const r = c.make()
    // as the request path calls it (src/pipeline/chains.ts run): Authenticators.resolve, awaiting only a promise
    // (the paths the in-process caches decide answer at once)
    const refused = (err) => { if (!c.rejects) throw err }
    const once = () => {
      try {
        const who = auth.resolve(r)
        return who instanceof Promise ? who.catch(refused) : undefined
      } catch (err) { refused(err) }
    }
    // warm-up: caches filled, code optimised
    for (let i = 0; i < 20_000; i++) { const p = once(); if (p !== undefined) await p }
    const rounds = []
    const cpuRounds = []
    for (let k = 0; k < flags.rounds; k++) {
      const t0 = process.hrtime.bigint()
      const c0 = process.cpuUsage()
      for (let i = 0; i < flags.calls; i++) { const p = once(); if (p !== undefined) await p }
      const c = process.cpuUsage(c0)
      rounds.push(Number(process.hrtime.bigint() - t0) / flags.calls)
      cpuRounds.push((c.user + c.system) * 1000 / flags.calls)
    }
    rounds.sort((a, b) => a - b)
    cpuRounds.sort((a, b) => a - b)
    const mid = Math.floor(rounds.length / 2)
    rows.push({
      case: c.name,
      nsPerCall: Math.round(rounds[mid]),
      min: Math.round(rounds[0]),
      max: Math.round(rounds[rounds.length - 1]),
      cpuNsPerCall: Math.round(cpuRounds[mid])
    })
  }
  // CPU ns (process.cpuUsage): what the calls cost this process,
  // less skewed than wall time when other processes share the cores
  process.stdout.write('| case | ns/call (median) | min | max | CPU ns/call (median) |\n| --- | ---: | ---: | ---: | ---: |\n')
  for (const r of rows) process.stdout.write(`| ${r.case} | ${r.nsPerCall} | ${r.min} | ${r.max} | ${r.cpuNsPerCall} |\n`)
  process.stdout.write(`${flags.rounds} rounds of ${flags.calls} calls each, node ${process.version}\n`)
} finally {
  await store.close()
  await redis.stop()
}

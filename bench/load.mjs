/**
 * The load generator, in its own process so it never shares an event loop with
 * what it measures. Reads one JSON job on stdin, runs autocannon (a warm-up,
 * then the timed part, same connections), prints one JSON result line.
 *
 * Job: { url, path, connections, duration, warmup, rate?, kind, creds? }
 * kind:
 *   plain      fixed request, no credential
 *   token      Authorization: Token <private token>, one credential per connection
 *   signature  access-key HTTP signature, a fresh Date and HMAC for every request
 *   signature_digest  POST of a 1 KiB JSON body, signed over (request-target) date digest (SHA-256):
 *              the gateway reads and checks the body
 *   session    Cookie: svc_sessionid=…, one session per connection
 *   jwt        Authorization: Bearer <a trusted issuer's JWT>, one per connection (creds.jwts)
 *   bearer     Authorization: Bearer <token>, every token used exactly once (creds.tokensFile)
 *   rejected   Authorization: Token <well-formed, unknown, wrong tag>: every request a new guess
 */
import { createHash, createHmac, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'

const job = JSON.parse(readFileSync(0, 'utf8'))
const creds = job.creds ?? {}
const path = job.path

// ---- credentials, shared by all connections of this process

let bearerTokens = []
let nextBearer = 0
let bearerExhausted = 0
if (job.kind === 'bearer') bearerTokens = readFileSync(creds.tokensFile, 'utf8').split('\n').filter(Boolean)

// A guess has the shape of a real credential (32 characters of random part,
// then a 12-character tag, all base64url) but cannot know the keyed tag.
let guess = 0
const guessPrefix = randomBytes(12).toString('base64url')
const guessTag = randomBytes(9).toString('base64url')
const GUESSES = 2000

function signatureHeaders (key, headers) {
  const date = new Date().toUTCString()
  const text = `(request-target): get ${path}\naccept: application/json\ndate: ${date}`
  const sig = createHmac('sha256', key.secret).update(text).digest('base64')
  headers.accept = 'application/json'
  headers.date = date
  headers.authorization = `Signature keyId="${key.id}",algorithm="hmac-sha256",headers="(request-target) accept date",signature="${sig}"`
}

/** The 1 KiB body of signature_digest and its Digest header (the same for every request; the Date and MAC change). */
const DIGEST_BODY = JSON.stringify({ items: Array.from({ length: 24 }, (_, i) => ({ id: i, name: `item-${i}`, tag: 'bench' })) }).padEnd(1024, ' ')
const DIGEST = `SHA-256=${createHash('sha256').update(DIGEST_BODY).digest('base64')}`

function digestHeaders (key, headers) {
  const date = new Date().toUTCString()
  const text = `(request-target): post ${path}\ndate: ${date}\ndigest: ${DIGEST}`
  const sig = createHmac('sha256', key.secret).update(text).digest('base64')
  headers['content-type'] = 'application/json'
  headers.date = date
  headers.digest = DIGEST
  headers.authorization = `Signature keyId="${key.id}",algorithm="hmac-sha256",headers="(request-target) date digest",signature="${sig}"`
}

/** the next credential of token_rotate and signature_rotate */
let rotation = 0

/** What each connection sends: a request (with setupRequest when every request differs), or a list cycled. */
function requestFor (clientIndex) {
  const pick = (list) => list[clientIndex % list.length]
  switch (job.kind) {
    case 'plain':
      return { method: 'GET', path }
    case 'token': {
      const t = pick(creds.tokens)
      return { method: 'GET', path, headers: { authorization: `Token ${t}` } }
    }
    case 'jwt': {
      const t = pick(creds.jwts)
      return { method: 'GET', path, headers: { authorization: `Bearer ${t}` } }
    }
    case 'session': {
      const s = pick(creds.sessions)
      return { method: 'GET', path, headers: { cookie: `svc_sessionid=${s}; theme=dark` } }
    }
    case 'token_rotate':
      // every request the next token of the list, across all connections (npm run bench -- --sweep)
      return { method: 'GET', path, setupRequest (req) { req.headers.authorization = `Token ${creds.tokens[rotation++ % creds.tokens.length]}`; return req } }
    case 'signature_rotate':
      return { method: 'GET', path, setupRequest (req) { signatureHeaders(creds.keys[rotation++ % creds.keys.length], req.headers); return req } }
    case 'signature': {
      const key = pick(creds.keys)
      return { method: 'GET', path, setupRequest (req) { signatureHeaders(key, req.headers); return req } }
    }
    case 'signature_digest': {
      const key = pick(creds.keys)
      return { method: 'POST', path, body: DIGEST_BODY, setupRequest (req) { digestHeaders(key, req.headers); return req } }
    }
    case 'bearer':
      return {
        method: 'GET',
        path,
        setupRequest (req) {
          const t = bearerTokens[nextBearer]
          if (t === undefined) {
            // out of tokens: send one that cannot work (a 401 fails the scenario) rather than reuse one
            bearerExhausted++
            req.headers.authorization = 'Bearer exhausted'
            return req
          }
          bearerTokens[nextBearer++] = undefined
          req.headers.authorization = `Bearer ${t}`
          return req
        }
      }
    case 'rejected':
      // A guess flood as an attacker sends it: guesses made in advance (GUESSES distinct
      // ones per connection, cycled), so the load generator does not build every request
      // in JavaScript and become the limit. sidegate keeps no negative cache: a repeated
      // guess costs it exactly what a new one does.
      return Array.from({ length: GUESSES }, () => ({
        method: 'GET',
        path,
        headers: { authorization: `Token ${guessPrefix}${(guess++).toString(36).padStart(16, '0')}${guessTag}` }
      }))
    default:
      throw new Error(`unknown kind ${job.kind}`)
  }
}

async function run (duration, record) {
  let clients = 0
  const latencies = record ? [] : null
  const inst = autocannon({
    url: job.url,
    connections: job.connections,
    duration,
    timeout: 10,
    ...(job.rate ? { overallRate: job.rate } : {}),
    setupClient (client) { const r = requestFor(clients++); client.setRequests(Array.isArray(r) ? r : [r]) }
  })
  if (latencies !== null) inst.on('response', (_client, _status, _bytes, ms) => { latencies.push(ms) })
  const r = await inst
  return { r, latencies }
}

function percentile (sorted, p) {
  if (sorted.length === 0) return null
  return sorted[Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1)]
}

function summary (r) {
  const codes = {}
  for (const [code, v] of Object.entries(r.statusCodeStats ?? {})) codes[code] = v.count
  return { requests: r.requests.total, errors: r.errors, timeouts: r.timeouts, non2xx: r.non2xx, statusCodes: codes }
}

const warm = job.warmup > 0 ? summary((await run(job.warmup, false)).r) : null
const { r, latencies } = await run(job.duration, true)
const sorted = Float64Array.from(latencies).sort()
process.stdout.write(JSON.stringify({
  ...summary(r),
  duration: r.duration,
  rps: r.requests.total / r.duration,
  p50: percentile(sorted, 50),
  p99: percentile(sorted, 99),
  max: sorted.length === 0 ? null : sorted[sorted.length - 1],
  warmup: warm,
  bearer: job.kind === 'bearer' ? { issued: bearerTokens.length, used: nextBearer, exhausted: bearerExhausted } : undefined
}) + '\n')

/**
 * Body integrity for signed requests: the `Digest` (RFC 3230,
 * `SHA-256=<base64>, SHA-512=<base64>`) and `Content-Digest` (RFC 9530, a
 * structured dictionary `sha-256=:<base64>:, sha-512=:<base64>:`) headers.
 * A digest header proves something only when the signature lists it: the
 * signature authenticator parses the signed ones (signedDigests), the
 * pipeline reads the body and checks it (bodyMatches) before it is
 * forwarded. Pure; they throw only 401 invalid_digest.
 */
import { createHash } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { parseDictionary } from 'structured-headers'
import { E } from '../errors.js'
import { equalBytes } from '../crypto.js'

export type DigestAlgorithm = 'sha256' | 'sha512'

/** One digest the client signed: which header, which algorithm, the bytes it names. */
export interface ExpectedDigest {
  header: 'digest' | 'content-digest'
  algorithm: DigestAlgorithm
  value: Buffer
}

const SIZE: Record<DigestAlgorithm, number> = { sha256: 32, sha512: 64 }
/** the names each header uses for the algorithms sidegate checks; others (md5, sha, unixsum, …) are ignored */
const RFC3230: Record<string, DigestAlgorithm> = { 'sha-256': 'sha256', 'sha-512': 'sha512' }
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/**
 * RFC 3230 `Digest`: comma-separated `algorithm=value`, the algorithm name
 * case-insensitive, the value the canonical Base64 of the hash. Unknown
 * algorithms are skipped; none that sidegate checks, a malformed entry or a
 * value of the wrong size is 401 invalid_digest.
 */
export function parseDigest (value: string): ExpectedDigest[] {
  const out: ExpectedDigest[] = []
  if (value.length > 4096) throw E.invalidDigest('The Digest header is too long.')
  for (const part of value.split(',')) {
    const entry = part.trim()
    const eq = entry.indexOf('=')
    if (eq <= 0) throw E.invalidDigest('Malformed Digest header.')
    const algorithm = RFC3230[entry.slice(0, eq).toLowerCase()]
    if (algorithm === undefined) continue
    out.push({ header: 'digest', algorithm, value: canonical(entry.slice(eq + 1), algorithm, 'Digest') })
  }
  if (out.length === 0) throw E.invalidDigest('The Digest header names no supported algorithm (SHA-256, SHA-512).')
  return out
}

/**
 * RFC 9530 `Content-Digest`: a structured-field dictionary of byte sequences
 * keyed by lowercase algorithm (`sha-256`, `sha-512`); parameters are ignored,
 * unknown algorithms skipped. Anything else is 401 invalid_digest.
 */
export function parseContentDigest (value: string): ExpectedDigest[] {
  if (value.length > 4096) throw E.invalidDigest('The Content-Digest header is too long.')
  let dict: ReturnType<typeof parseDictionary>
  try { dict = parseDictionary(value) } catch { throw E.invalidDigest('Malformed Content-Digest header.') }
  const out: ExpectedDigest[] = []
  for (const [key, member] of dict) {
    const algorithm = Object.hasOwn(RFC3230, key) ? RFC3230[key] : undefined
    if (algorithm === undefined) continue
    const bytes = member[0]
    if (!(bytes instanceof ArrayBuffer) || bytes.byteLength !== SIZE[algorithm]) throw E.invalidDigest('Malformed Content-Digest header.')
    out.push({ header: 'content-digest', algorithm, value: Buffer.from(bytes) })
  }
  if (out.length === 0) throw E.invalidDigest('The Content-Digest header names no supported algorithm (sha-256, sha-512).')
  return out
}

function canonical (b64: string, algorithm: DigestAlgorithm, header: string): Buffer {
  const v = b64.trim()
  const bytes = BASE64.test(v) ? Buffer.from(v, 'base64') : null
  if (bytes === null || bytes.length !== SIZE[algorithm] || bytes.toString('base64') !== v) throw E.invalidDigest(`Malformed ${header} header.`)
  return bytes
}

/** Does the request carry a body (a non-zero Content-Length or any Transfer-Encoding)? */
export function hasBody (headers: IncomingHttpHeaders): boolean {
  if (headers['transfer-encoding'] !== undefined) return true
  const cl = headers['content-length']
  return cl !== undefined && cl !== '0'
}

/**
 * The digests a signature covers (the digest headers named in its `headers`
 * list), or null when it names none. `requireDigest`: a request with a body
 * must sign one (401 invalid_digest otherwise).
 */
export function signedDigests (
  headers: IncomingHttpHeaders, declared: readonly string[], requireDigest: boolean
): ExpectedDigest[] | null {
  const out: ExpectedDigest[] = []
  if (declared.includes('digest')) out.push(...parseDigest(headerValue(headers.digest)))
  if (declared.includes('content-digest')) out.push(...parseContentDigest(headerValue(headers['content-digest'])))
  if (out.length > 0) return out
  if (requireDigest && hasBody(headers)) throw E.invalidDigest('A signed request with a body must sign a Digest or Content-Digest header.')
  return null
}

function headerValue (v: string | string[] | undefined): string {
  return Array.isArray(v) ? v.join(', ') : v ?? ''
}

/** Every expected digest matches the body's hash. */
export function bodyMatches (body: Buffer, expected: readonly ExpectedDigest[]): boolean {
  let ok = true
  const hashes = new Map<DigestAlgorithm, Buffer>()
  for (const d of expected) {
    let h = hashes.get(d.algorithm)
    if (h === undefined) hashes.set(d.algorithm, h = createHash(d.algorithm).update(body).digest())
    ok = equalBytes(h, d.value) && ok
  }
  return ok
}

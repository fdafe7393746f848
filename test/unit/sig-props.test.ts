/**
 * Property-based tests (fast-check) of the signature's date rule
 * (Date / X-Date) and of the body digest headers (Digest, Content-Digest).
 * For any input each returns or throws a 401 GatewayError with its own code,
 * never anything else; valid values are accepted.
 */
import t from 'tap'
import fc from 'fast-check'
import { GatewayError } from '../../src/errors.js'
import { createHash } from 'node:crypto'
import { checkSignedDate } from '../../src/auth/signature.js'
import { bodyMatches, parseContentDigest, parseDigest, signedDigests, type ExpectedDigest } from '../../src/auth/digest.js'
import { fuzzSeed } from '../fixtures/seed.js'

const seed = fuzzSeed()
const o = { numRuns: 2000, seed }
t.comment(`property seed ${seed} (replay: FUZZ_SEED=${seed})`)

const hostile = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 60 }),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.constantFrom('', ' ', 'Mon, 31 Feb 2025 10:00:00 GMT', 'Sun, 06 Nov 1994 08:49:37 GMT', '__proto__', 'constructor'),
  fc.date({ noInvalidDate: true }).map((d) => d.toUTCString()),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString())
)
const NOW = Date.UTC(2026, 10, 23, 21, 0, 0)
const SKEW = 300

function outcome (fn: () => void): 'ok' | GatewayError {
  try { fn(); return 'ok' } catch (err) {
    if (!(err instanceof GatewayError)) throw new Error(`untyped error: ${String(err)}`)
    return err
  }
}

t.test('Date / X-Date: any values, any declared list: passes only when every signed one is a fresh HTTP date and they agree', async (t) => {
  fc.assert(fc.property(fc.option(hostile), fc.option(hostile), fc.subarray(['date', 'x-date', 'accept']), (d, x, declared) => {
    const headers: Record<string, string> = {}
    if (d !== null) headers.date = d
    if (x !== null) headers['x-date'] = x
    const r = outcome(() => checkSignedDate(headers, declared, NOW, SKEW))
    // the test's own oracle
    const fresh = (v: string | undefined): number | null => {
      if (v === undefined) return null
      const ms = Date.parse(v)
      return !Number.isNaN(ms) && new Date(ms).toUTCString() === v.trim() && Math.abs(NOW - ms) <= SKEW * 1000
        ? ms
        : null
    }
    const signed = declared.filter((h) => h !== 'accept').map((h) => fresh(headers[h]))
    const expectOk = signed.every((v) => v !== null) && new Set(signed).size <= 1
    if (r === 'ok') return expectOk
    return !expectOk && r.status === 401 && r.code === 'signature_expired'
  }), o)
  fc.assert(fc.property(fc.integer({ min: -SKEW, max: SKEW }), fc.boolean(), (off, both) => {
    const v = new Date(NOW + off * 1000).toUTCString()
    const h = both ? { date: v, 'x-date': v } : { 'x-date': v }
    return outcome(() => checkSignedDate(h, both ? ['date', 'x-date'] : ['x-date'], NOW, SKEW)) === 'ok'
  }), o)
  t.pass('properties hold')
})

const B64 = fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/='.split('')), maxLength: 100 })
const digestish = fc.oneof(
  hostile,
  fc.tuple(fc.array(fc.tuple(fc.constantFrom('SHA-256', 'sha-256', 'SHA-512', 'MD5', 'sha', 'unixsum', '', 'x'), fc.constantFrom('=', ':', '=:', ''), B64, fc.constantFrom('', ':', '==')), { maxLength: 4 }), fc.constantFrom(',', ', ', ' ,'))
    .map(([parts, sep]) => parts.map(([a, s, v, e]) => a + s + v + e).join(sep)),
  fc.uint8Array({ minLength: 0, maxLength: 70 }).map((b) => `sha-256=:${Buffer.from(b).toString('base64')}:`)
)

t.test('Digest / Content-Digest: any value parses to SHA-256/512 digests of the right size or is 401 invalid_digest', async (t) => {
  fc.assert(fc.property(digestish, fc.constantFrom('digest', 'content-digest'), (v, name) => {
    const r = (() => { try { return parse(name, v) } catch (err) { return err } })()
    if (r instanceof GatewayError) return r.status === 401 && r.code === 'invalid_digest'
    if (!Array.isArray(r)) throw new Error(`untyped error: ${String(r)}`)
    return r.length > 0 && r.every((d) => d.header === name && d.value.length === (d.algorithm === 'sha256' ? 32 : 64))
  }), o)
  t.pass('properties hold')
})

t.test('Digest / Content-Digest: what a client writes for any body parses back and matches that body, and no other', async (t) => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), fc.uint8Array({ minLength: 1, maxLength: 5 }), fc.subarray(['sha256', 'sha512'] as const, { minLength: 1 }), fc.boolean(), (bytes, extra, algs, upper) => {
    const body = Buffer.from(bytes)
    const h = (a: 'sha256' | 'sha512'): string => createHash(a).update(body).digest('base64')
    const d = algs.map((a) => `${upper ? a.toUpperCase().replace('SHA', 'SHA-') : a.replace('sha', 'sha-')}=${h(a)}`).join(', ')
    const cd = algs.map((a) => `${a.replace('sha', 'sha-')}=:${h(a)}:`).join(', ')
    const all = [...parseDigest(d), ...parseContentDigest(cd)]
    const other = Buffer.concat([body, Buffer.from(extra)])
    return all.length === 2 * algs.length && bodyMatches(body, all) && !bodyMatches(other, all)
  }), o)
  t.pass('properties hold')
})

t.test('signedDigests: only listed digest headers count; require_digest refuses a body without one', async (t) => {
  fc.assert(fc.property(fc.subarray(['digest', 'content-digest', 'date']), fc.boolean(), fc.constantFrom(undefined, '0', '12'), fc.boolean(), (declared, require, cl, te) => {
    const body = 'x'
    const headers: Record<string, string> = {
      digest: `SHA-256=${createHash('sha256').update(body).digest('base64')}`,
      'content-digest': `sha-256=:${createHash('sha256').update(body).digest('base64')}:`
    }
    if (cl !== undefined) headers['content-length'] = cl
    if (te) headers['transfer-encoding'] = 'chunked'
    const r = (() => { try { return signedDigests(headers, declared, require) } catch (err) { return err } })()
    const signsOne = declared.includes('digest') || declared.includes('content-digest')
    const hasBody = te || (cl !== undefined && cl !== '0')
    if (signsOne) return Array.isArray(r) && r.length === (declared.includes('digest') ? 1 : 0) + (declared.includes('content-digest') ? 1 : 0)
    if (require && hasBody) return r instanceof GatewayError && r.code === 'invalid_digest'
    return r === null
  }), o)
  t.pass('properties hold')
})

function parse (name: string, v: string): ExpectedDigest[] {
  return name === 'digest' ? parseDigest(v) : parseContentDigest(v)
}

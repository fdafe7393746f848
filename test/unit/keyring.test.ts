/**
 * Keyring: the key check value, and the generations of earlier keys a
 * rotation leaves (their tags accepted, their lookup hashes used for what they
 * issued, nothing else).
 */
import t from 'tap'
import { KNOWN_MAX, Keyring } from '../../src/crypto.js'

const K1 = 'the-first-secret-key-of-the-keyring-test-00000'
const K2 = 'the-second-secret-key-of-the-keyring-test-1111'

t.test('the key check value: stable per key, different between keys, not the key', async (t) => {
  const a = new Keyring(K1).checkValue()
  t.equal(new Keyring(K1).checkValue(), a, 'the same key, the same value')
  t.not(new Keyring(K2).checkValue(), a, 'another key, another value')
  t.match(a, /^[A-Za-z0-9_-]{43}$/, 'a base64url HMAC-SHA256')
  t.notOk(a.includes(K1) || K1.includes(a), 'not the key')
  t.not(a, new Keyring(K1).lookup('sidegate key check value v1'), 'not a lookup hash either (its own derived key)')
})

t.test('a rotated keyring accepts what the old key issued, and hashes it as the old key did', async (t) => {
  const old = new Keyring(K1)
  const cur = new Keyring(K2)
  const pt = old.issue('private token')
  const sess = old.issue('session id')
  t.notOk(cur.tagged('private token', pt), 'without the old generation: refused')
  cur.setLegacy([old.exportGeneration()])
  t.ok(cur.tagged('private token', pt), 'with it: accepted')
  t.notOk(cur.tagged('bearer token', pt), 'as its own kind only')
  t.equal(cur.lookup(pt), old.lookup(pt), 'looked up where the old key wrote it')
  t.equal(cur.lookup(`csrf:${sess}`), old.lookup(`csrf:${sess}`), 'a session\'s CSRF token too')
  const mine = cur.issue('private token')
  t.ok(cur.tagged('private token', mine))
  t.not(cur.lookup(mine), old.lookup(mine), 'its own credentials under its own lookup key')
  t.equal(cur.lookup('alice\n10.0.0.1'), new Keyring(K2).lookup('alice\n10.0.0.1'), 'anything else under its own key')
  const forged = pt.slice(0, 32) + 'A'.repeat(12)
  t.notOk(cur.tagged('private token', forged), 'a wrong tag is still refused')
  t.same(cur.legacy, [old.exportGeneration()], 'the generations read back')
  cur.setLegacy([cur.exportGeneration(), old.exportGeneration()])
  t.equal(cur.legacy.length, 1, 'its own generation is never a legacy one')
  t.equal(cur.tryDecrypt(old.encrypt('x', 'aad'), 'aad'), null, 'no old encryption key: old ciphertexts stay unreadable')
})

t.test('accepted credentials are remembered (no HMAC when sent again): the same answers, forged ones never kept, bounded, forgotten when the generations change', async (t) => {
  const old = new Keyring(K1)
  const cur = new Keyring(K2)
  const fresh = (): Keyring => { const k = new Keyring(K2); k.setLegacy([old.exportGeneration()]); return k }
  cur.setLegacy([old.exportGeneration()])
  const mine = cur.issue('private token')
  const theirs = old.issue('session id')
  for (let i = 0; i < 3; i++) {
    t.ok(cur.tagged('private token', mine), `its own, time ${i + 1}`)
    t.equal(cur.lookup(mine), fresh().lookup(mine), `its lookup hash, time ${i + 1}`)
    t.ok(cur.tagged('session id', theirs), `the old key's, time ${i + 1}`)
    t.equal(cur.lookup(theirs), old.lookup(theirs), `hashed as the old key did, time ${i + 1}`)
    t.equal(cur.lookup(`csrf:${theirs}`), old.lookup(`csrf:${theirs}`), `its CSRF token too, time ${i + 1}`)
  }
  t.equal(cur.remembered, 2, 'two credentials remembered')
  t.notOk(cur.tagged('bearer token', mine), 'a remembered value is still only its own kind')
  const forged = mine.slice(0, 32) + (mine.endsWith('AAAA') ? 'B' : 'A').repeat(12)
  t.notOk(cur.tagged('private token', forged))
  t.notOk(cur.tagged('private token', forged), 'a forged one, twice: refused')
  t.equal(cur.remembered, 2, 'and never remembered')
  cur.setLegacy([])
  t.equal(cur.remembered, 0, 'the generations changed: everything forgotten')
  t.notOk(cur.tagged('session id', theirs), 'so the old key\'s credential is refused once its generation is gone')
  t.ok(cur.tagged('private token', mine), 'its own still accepted')
  for (let i = 0; i < KNOWN_MAX + 100; i++) cur.tagged('session id', cur.issue('session id'))
  t.equal(cur.remembered, KNOWN_MAX, `at most ${KNOWN_MAX}: the oldest go`)
  t.ok(cur.tagged('private token', mine), 'one that went is checked again, and accepted')
})

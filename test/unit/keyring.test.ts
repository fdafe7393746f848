/**
 * Keyring: the key check value, and the generations of earlier keys a
 * rotation leaves (their tags accepted, their lookup hashes used for what they
 * issued, nothing else).
 */
import t from 'tap'
import { Keyring } from '../../src/crypto.js'

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

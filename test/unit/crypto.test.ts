/**
 * src/crypto.ts below the Keyring: what must never change between releases (the keys derived from a
 * secret, so stored credentials outlive an upgrade), the published test vectors of HOTP, TOTP and
 * base32, and the stored password hashes a login may meet (sidegate's scrypt, imported Django PBKDF2).
 */
import { randomBytes, scryptSync } from 'node:crypto'
import t from 'tap'
import {
  CREDENTIAL_LENGTH, Keyring, LEGACY_ITERATIONS, base32Decode, base32Encode, credentialShaped, equalBytes, hashPassword,
  hotp, matchTotp,
  newRecoveryCode, normalizeRecoveryCode, parseLegacyHash, safeEqual, totpStep, verifyPassword
} from '../../src/crypto.js'
import { djangoHash } from '../fixtures/django-hashes.js'

const SECRET = 'the-first-secret-key-of-the-keyring-test-00000'

// Written by this module as it is (2026-12): a release that derives other keys from the same secret
// would lock every user out of every session, token and second factor it stored.
const PINNED = {
  check: 'c6u9tNyNjUYOg-jE1VGToGcWOVf9Be5Qd8ZhJAWJ2Kw',
  lookup: 'cT5lzvmQEo_Lvx6Gu8F0JNwmz6QvUKAG2cBRlfwO0Yg',
  ref: 'aa9f802e0d84b7d1',
  file: 'BMhvma5Ku9pLjYi68yrPIB_yRsgGi2hf8aj8k5YXwyI',
  gen: {
    lookup: 'i2-Qyp4kVydDfISqtBRvCySi6tybnTJ_8WldbBoUJuY',
    tags: {
      'private token': 'h81WcqpfOfP4HApBT3OUn-3p1CoibtCJfG5dqRR8Z7c',
      'bearer token': '_Z237YYPjz6wWjCDel5W2IwNIU0udcET8uaqik67348',
      'session id': 'db9qqBYKJcWixqhplgv7YBAQ8oaZcM4nzwpGrmiPjnY'
    }
  },
  issued: {
    'private token': 'IQf5gcVVz2bO33UixxHutx3FKqqsdJQfvfVWm62VnIh8',
    'bearer token': 'Pe5-AKlaflx-JPUpMPdSrAD8VFqLkO6kMLYAM41lsEA_',
    'session id': 'B9PW-EnCRwcZzvaSrjNhJ14DypEnAYoHMtvduuH5AUEZ'
  },
  sealed: 'v1.0agZdcBT9A0Cv6zV.EGUXxGN4vLtnggkkVMwFPQ.o1zK-FVdwFdjzLAtG18'
} as const

t.test('the keys derived from a secret are the same in every release', async (t) => {
  const k = new Keyring(SECRET)
  t.equal(k.checkValue(), PINNED.check, 'the key check value')
  t.equal(k.lookup('alice'), PINNED.lookup, 'a lookup hash')
  t.equal(k.auditRef('alice'), PINNED.ref, 'an audit ref')
  t.equal(k.storeFileMac('alice'), PINNED.file, 'a store file MAC')
  t.ok(k.storeFileMacMatches('alice', PINNED.file), 'which it accepts')
  t.same(k.exportGeneration(), { check: PINNED.check, ...PINNED.gen }, 'the generation a rotation keeps')
  for (const [kind, value] of Object.entries(PINNED.issued) as Array<[keyof typeof PINNED.issued, string]>) {
    t.ok(k.tagged(kind, value), `a ${kind} issued by an earlier release`)
    for (const other of Object.keys(PINNED.issued) as Array<keyof typeof PINNED.issued>) {
      if (other !== kind) t.notOk(k.tagged(other, value), `is no ${other}`)
    }
  }
  t.equal(k.decrypt(PINNED.sealed, 'users:1:totp'), 'the plain text', 'a value sealed by an earlier release')
  t.equal(k.tryDecrypt(PINNED.sealed, 'users:2:totp'), null, 'bound to its record')
})

t.test('a value of any other shape is no credential: refused in process, never throws, never looked up by its tag', async (t) => {
  const k = new Keyring(SECRET)
  const old = new Keyring(`${SECRET}-old`)
  k.setLegacy([old.exportGeneration()])
  const good = PINNED.issued['private token']
  t.equal(CREDENTIAL_LENGTH, 44)
  t.ok(credentialShaped(good))
  const odd = ['', 'short', good.slice(1), `${good}A`, `!${good.slice(1)}`, `${good.slice(0, 43)}.`, `${good.slice(0, 20)}+${good.slice(21)}`]
  for (const v of odd) {
    t.notOk(credentialShaped(v), `not shaped: ${JSON.stringify(v)}`)
    t.notOk(k.tagged('private token', v), `not tagged: ${JSON.stringify(v)}`)
    t.equal(k.lookup(v), new Keyring(SECRET).lookup(v), `hashed under the current key: ${JSON.stringify(v)}`)
    t.equal(k.lookup(`csrf:${v}`), new Keyring(SECRET).lookup(`csrf:${v}`))
  }
  const theirs = old.issue('session id')
  t.equal(k.lookup(`csrf:${theirs}`), old.lookup(`csrf:${theirs}`), 'what follows the last colon names the issuer')
})

t.test('sealed values: anything but the v1 form is refused, never half-read', async (t) => {
  const k = new Keyring(SECRET)
  const [, iv, tag, ct] = PINNED.sealed.split('.')
  for (const bad of [`v2.${iv}.${tag}.${ct}`, `v1..${tag}.${ct}`, `v1.${iv}..${ct}`, `v1.${iv}.${tag}`, '']) {
    t.throws(() => k.decrypt(bad, 'users:1:totp'), /unknown format/, JSON.stringify(bad))
  }
  t.equal(k.decrypt(k.encrypt('', 'a'), 'a'), '', 'an empty plain text has an empty last part, and is read back')
  t.not(k.encrypt('x', 'a'), k.encrypt('x', 'a'), 'a fresh IV each time')
})

t.test('the store file MAC: another length or another file is refused without throwing', async (t) => {
  const k = new Keyring(SECRET)
  t.notOk(k.storeFileMacMatches('alice', PINNED.file.slice(0, -2)), 'a shorter MAC')
  t.notOk(k.storeFileMacMatches('alice', PINNED.file + 'AA'), 'a longer one')
  t.notOk(k.storeFileMacMatches('alicf', PINNED.file), 'another file')
  t.notOk(new Keyring(`${SECRET}x`).storeFileMacMatches('alice', PINNED.file), 'another key')
})

t.test('constant-time comparisons answer as === would, whatever the lengths', async (t) => {
  t.ok(equalBytes(Buffer.from('abc'), Buffer.from('abc')))
  t.notOk(equalBytes(Buffer.from('abc'), Buffer.from('abd')))
  t.notOk(equalBytes(Buffer.from('abc'), Buffer.from('abcd')), 'another length: false, no throw')
  t.ok(safeEqual('csrf-token', 'csrf-token'))
  t.notOk(safeEqual('csrf-token', 'csrf-tokeN'))
  t.notOk(safeEqual('csrf-token', 'csrf-token-longer'))
  t.notOk(safeEqual('', 'x'))
})

// RFC 4226 appendix D; RFC 6238 appendix B (SHA-1, the last six of its eight digits)
const RFC4226 = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489']
const RFC6238: Array<[number, string]> = [
  [59, '287082'], [1111111109, '081804'], [1111111111, '050471'], [1234567890, '005924'],
  [2000000000, '279037'], [20000000000, '353130']
]
const RFC_KEY = Buffer.from('12345678901234567890')

t.test('HOTP and TOTP: the RFCs\' test vectors', async (t) => {
  RFC4226.forEach((code, counter) => t.equal(hotp(RFC_KEY, counter), code, `HOTP counter ${counter}`))
  const secret = base32Encode(RFC_KEY)
  t.equal(secret, 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ')
  for (const [s, code] of RFC6238) {
    t.equal(hotp(RFC_KEY, totpStep(s * 1000)), code, `TOTP at ${s}`)
    t.equal(matchTotp(secret, code, s * 1000), totpStep(s * 1000), `matched at ${s} (a leading zero kept)`)
  }
})

t.test('matchTotp: one step either side by default, the step it matched, six digits only', async (t) => {
  const secret = base32Encode(RFC_KEY)
  const now = 1111111111 * 1000
  const step = totpStep(now)
  t.equal(matchTotp(secret, hotp(RFC_KEY, step - 1), now), step - 1, 'the step before')
  t.equal(matchTotp(secret, hotp(RFC_KEY, step + 1), now), step + 1, 'the step after')
  t.equal(matchTotp(secret, hotp(RFC_KEY, step - 2), now), null, 'two before: refused')
  t.equal(matchTotp(secret, hotp(RFC_KEY, step + 2), now), null, 'two after: refused')
  t.equal(matchTotp(secret, hotp(RFC_KEY, step + 2), now, 2), step + 2, 'unless the drift allows it')
  t.equal(matchTotp(secret, hotp(RFC_KEY, step + 1), now, 0), null, 'drift 0: this step only')
  const code = hotp(RFC_KEY, step)
  for (const bad of [code.slice(0, 5), `${code} `, ` ${code}`, `${code}0`, code.slice(0, 5) + 'a', '']) {
    t.equal(matchTotp(secret, bad, now), null, JSON.stringify(bad))
  }
  t.equal(matchTotp(secret.toLowerCase(), code, now), step, 'a secret in lower case')
  t.equal(matchTotp('', hotp(Buffer.alloc(0), step), now), null, 'no secret: not even the empty key\'s own code')
  t.equal(matchTotp('not base32!', code, now), null, 'not base32')
})

t.test('matchTotp: a code that two steps share is the earlier one\'s (a later step would mark the next code used early)', async (t) => {
  // found by search (the first 32-bit big-endian prefix of 20 zero bytes whose codes at steps 6 and 8 agree)
  const key = Buffer.alloc(20)
  key.writeUInt32BE(2398646)
  t.equal(hotp(key, 6), hotp(key, 8), 'steps 6 and 8 share a code')
  t.not(hotp(key, 7), hotp(key, 6))
  t.equal(matchTotp(base32Encode(key), hotp(key, 6), 7 * 30_000 + 1000), 6)
})

t.test('base32 (RFC 4648 section 10, unpadded out, either in)', async (t) => {
  const vectors: Array<[string, string]> = [
    ['', ''], ['f', 'MY'], ['fo', 'MZXQ'], ['foo', 'MZXW6'], ['foob', 'MZXW6YQ'], ['fooba', 'MZXW6YTB'], ['foobar', 'MZXW6YTBOI']
  ]
  for (const [plain, enc] of vectors) {
    t.equal(base32Encode(Buffer.from(plain)), enc, `encode ${JSON.stringify(plain)}`)
    t.equal(base32Decode(enc)?.toString(), plain, `decode ${enc}`)
    t.equal(base32Decode(enc.toLowerCase())?.toString(), plain, `decode ${enc.toLowerCase()}`)
    t.equal(base32Decode(enc.padEnd(Math.ceil(enc.length / 8) * 8, '='))?.toString(), plain, `decode ${enc} padded`)
  }
  t.equal(base32Decode('MZXW6YT1'), null, 'a 1 is no base32 digit')
  t.equal(base32Decode('MZ=XW6'), null, 'padding only at the end')
})

t.test('recovery codes: xxxxx-xxxxx of base32, read in any case with spaces or dashes', async (t) => {
  const seen = new Set<string>()
  for (let i = 0; i < 50; i++) {
    const c = newRecoveryCode()
    t.match(c, /^[a-z2-7]{5}-[a-z2-7]{5}$/)
    seen.add(c)
  }
  t.equal(seen.size, 50, 'random')
  t.equal(normalizeRecoveryCode(' ABCDE-fghij\t'), 'abcdefghij')
  t.equal(normalizeRecoveryCode('abc de-\nfg-hij'), 'abcdefghij')
})

// made by Python's hashlib.pbkdf2_hmac, as Django's hashers do (test/fixtures/django-hashes.ts has the script)
const DJANGO_1000 = djangoHash('kim-jms-password', 'fixedSalt123', 1000)
const DJANGO_1000_HASH = DJANGO_1000.split('$')[3]
const DJANGO_SHA1 = djangoHash('dave-jms-password', 'd4veSalt', 120_000, 'sha1')

t.test('an imported Django hash: taken apart, or a sentence saying why not', async (t) => {
  const h = parseLegacyHash(DJANGO_1000)
  t.same(typeof h === 'string' ? h : { ...h, hash: h.hash.toString('base64') },
    { algorithm: 'pbkdf2_sha256', iterations: 1000, salt: 'fixedSalt123', hash: DJANGO_1000_HASH })
  const why = (s: string): string => { const r = parseLegacyHash(s); return typeof r === 'string' ? r : 'parsed' }
  t.match(why('argon2$argon2id$v=19$m=102400'), /^Django's argon2 hasher: only pbkdf2_sha256 and pbkdf2_sha1 hashes can be imported/)
  t.match(why('argon2'), /^not a Django password hash: /, 'no $: not a hasher\'s value at all')
  t.match(why('Argon2$x'), /^not a Django password hash: /, 'a name Django would not give')
  t.match(why(`${'a'.repeat(41)}$x`), /^not a Django password hash: /)
  t.match(why(`${'a'.repeat(40)}$x`), /^Django's a{40} hasher/)
  t.match(why('pbkdf2_sha256$1000$salt'), /^a pbkdf2_sha256 hash has four \$-separated parts/)
  t.match(why(`${DJANGO_1000}$x`), /four/)
  const iter = (n: string): string => why(`pbkdf2_sha256$${n}$fixedSalt123$${DJANGO_1000_HASH}`)
  t.equal(iter(String(LEGACY_ITERATIONS.min)), 'parsed', 'the least count')
  t.equal(iter('10000000'), 'parsed', 'the greatest count')
  for (const n of [String(LEGACY_ITERATIONS.min - 1), '10000001', '1e4', ' 1000', '0x3e8', '', '1000000000']) {
    t.equal(iter(n), 'the iteration count must be a number from 1000 to 10000000', JSON.stringify(n))
  }
  const salt = (s: string): string => why(`pbkdf2_sha256$1000$${s}$${DJANGO_1000_HASH}`)
  t.equal(salt('a'.repeat(128)), 'parsed')
  t.equal(salt('Az09+/=._-'), 'parsed', 'every character a salt may have')
  for (const s of ['', 'a'.repeat(129), 'salt with space', 'sälz']) {
    t.equal(salt(s), 'the salt must be 1 to 128 characters of letters, digits and + / = . _ -', JSON.stringify(s))
  }
  const hash = (s: string, algo = 'pbkdf2_sha256'): string => why(`${algo}$1000$salt$${s}`)
  const b64 = (n: number): string => Buffer.alloc(n, 7).toString('base64')
  t.equal(hash(b64(32)), 'parsed')
  t.equal(hash(b64(20), 'pbkdf2_sha1'), 'parsed', 'SHA-1\'s is 20 bytes')
  t.equal(hash(b64(31)), 'the hash must be 32 bytes in base64')
  t.equal(hash(b64(20)), 'the hash must be 32 bytes in base64')
  t.equal(hash(b64(32), 'pbkdf2_sha1'), 'the hash must be 20 bytes in base64')
  t.equal(hash(b64(32).replace(/=$/, '')), 'the hash must be 32 bytes in base64', 'one spelling only: padded')
  t.equal(hash(b64(32).replace('B', '-')), 'the hash must be 32 bytes in base64', 'standard base64, not url')
})

t.test('verifyPassword: the right password only, and a malformed stored hash never matches', async (t) => {
  t.ok(await verifyPassword('kim-jms-password', DJANGO_1000), 'a Django hash')
  t.notOk(await verifyPassword('kim-jms-passworD', DJANGO_1000))
  t.ok(await verifyPassword('dave-jms-password', DJANGO_SHA1), 'a Django SHA-1 hash')
  t.notOk(await verifyPassword('dave-jms-passworD', DJANGO_SHA1))
  t.notOk(await verifyPassword('kim-jms-password', DJANGO_1000.replace('$1000$', '$999$')), 'an unparsable one')
  const mine = await hashPassword('alice-password')
  t.match(mine, /^scrypt\$16384\$8\$1\$[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=$/)
  t.not(await hashPassword('alice-password'), mine, 'salted')
  t.ok(await verifyPassword('alice-password', mine))
  t.notOk(await verifyPassword('alice-passworD', mine))
  const [, n, r, p, salt, hash] = mine.split('$')
  const bad = [
    `scrypt$${n}$${r}$${p}$${salt}`, `${mine}$x`, `Scrypt$${n}$${r}$${p}$${salt}$${hash}`,
    `scrypt$0$${r}$${p}$${salt}$${hash}`, `scrypt$${n}$0$${p}$${salt}$${hash}`, `scrypt$${n}$${r}$0$${salt}$${hash}`,
    `scrypt$x$${r}$${p}$${salt}$${hash}`, `scrypt$${n}$${r}$${p}$${salt}$`
  ]
  for (const s of bad) t.notOk(await verifyPassword('alice-password', s), s)
  t.ok(await verifyPassword('alice-password', `scrypt$${n}$${r}$${p}$${salt}$${hash.replace(/=$/, '')}`),
    'base64 read as Node reads it')
  // a hash made with more memory than Node's default scrypt limit (32 MiB): parameters raised later must still verify
  const salt2 = randomBytes(16)
  const strong = scryptSync('alice-password', salt2, 32, { N: 65536, r: 8, p: 1, maxmem: 128 * 1024 * 1024 })
  t.ok(await verifyPassword('alice-password', `scrypt$65536$8$1$${salt2.toString('base64')}$${strong.toString('base64')}`),
    'N = 2^16 (64 MiB)')
})

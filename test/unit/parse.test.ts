/**
 * Unit tests of the credential parsers (src/auth/parse.ts), the HTTP parsers
 * they use (src/http/: cookies, dates, UUIDs) and of the
 * signature's string to sign (src/auth/signature.ts).
 */
import t from 'tap'
import { parseAuthorization, parseSignatureParams, parseTokenCredential } from '../../src/auth/parse.js'
import { parseCookies, withoutCookies } from '../../src/http/cookies.js'
import { parseHttpDate } from '../../src/http/date.js'
import { isUuid } from '../../src/http/uuid.js'
import { decodeMac, normalizeKeyId, sign, stringToSign } from '../../src/auth/signature.js'
import { GatewayError } from '../../src/errors.js'

/** A subtest's `t`. */
type T = Parameters<Parameters<typeof t.test>[0]>[0]

/** Returns (never throws) a 401 malformed_authorization GatewayError. */
function malformedReturned (t: T, fn: () => unknown, why?: RegExp): void {
  let err: unknown
  try { err = fn() } catch (e) { t.fail(`threw ${String(e)}`) }
  t.type(err, GatewayError)
  t.equal((err as GatewayError)?.status, 401)
  t.equal((err as GatewayError)?.code, 'malformed_authorization')
  if (why) t.match((err as Error)?.message, why)
}

/** Throws a 401 malformed_authorization GatewayError. */
function malformed (t: T, fn: () => unknown, why?: RegExp): void {
  let err: unknown
  try { fn() } catch (e) { err = e }
  t.type(err, GatewayError)
  t.equal((err as GatewayError)?.status, 401)
  t.equal((err as GatewayError)?.code, 'malformed_authorization')
  if (why) t.match((err as Error)?.message, why)
}

t.test('parseAuthorization: scheme lowercased, credentials trimmed', async (t) => {
  t.same(parseAuthorization('Bearer abc.def'), { scheme: 'bearer', credentials: 'abc.def' })
  t.same(parseAuthorization('TOKEN   abc  '), { scheme: 'token', credentials: 'abc' })
  t.same(parseAuthorization('  PrivateToken\tabc'), { scheme: 'privatetoken', credentials: 'abc' })
  t.same(parseAuthorization('Bearer'), { scheme: 'bearer', credentials: '' }, 'scheme alone')
  t.same(parseAuthorization('Signature keyId="a", signature="b c"'), { scheme: 'signature', credentials: 'keyId="a", signature="b c"' }, 'the rest kept as is')
  malformed(t, () => parseAuthorization(''), /empty header/)
  malformed(t, () => parseAuthorization('   \t '), /empty header/)
})

t.test('parseTokenCredential: one token68 value; anything else is the refusal returned', async (t) => {
  t.equal(parseTokenCredential('abc-DEF_123.~+/'), 'abc-DEF_123.~+/')
  t.equal(parseTokenCredential('YWJj=='), 'YWJj==', 'padding at the end')
  t.equal(parseTokenCredential('a'.repeat(512)), 'a'.repeat(512))
  malformedReturned(t, () => parseTokenCredential(''), /token missing/)
  malformedReturned(t, () => parseTokenCredential('a'.repeat(513)), /invalid characters/)
  for (const bad of ['a b', 'a=b', '=abc', 'tok"en', 'tök', 'a,b', 'a;b']) malformedReturned(t, () => parseTokenCredential(bad), /invalid characters/)
})

t.test('parseSignatureParams: quoted, bare, escapes, whitespace, names case-insensitive', async (t) => {
  const spec = 'keyId="a5b7c0d1-2e3f-4a5b-8c6d-7e8f9a0b1c2d",algorithm="hmac-sha256",headers="(request-target) accept date",signature="aGAF86Tx+/=="'
  t.same([...parseSignatureParams(spec)], [
    ['keyid', 'a5b7c0d1-2e3f-4a5b-8c6d-7e8f9a0b1c2d'],
    ['algorithm', 'hmac-sha256'],
    ['headers', '(request-target) accept date'],
    ['signature', 'aGAF86Tx+/==']
  ])
  t.same([...parseSignatureParams('KEYID=abc, Algorithm=hmac-sha256')], [['keyid', 'abc'], ['algorithm', 'hmac-sha256']], 'bare values')
  t.same([...parseSignatureParams('  keyId = "a" ,\tsignature\t=\t"b"  ')], [['keyid', 'a'], ['signature', 'b']], 'whitespace around = and ,')
  t.same([...parseSignatureParams('a="x\\"y",b="back\\\\slash",c="\\q"')], [['a', 'x"y'], ['b', 'back\\slash'], ['c', 'q']], 'backslash escapes')
  t.same([...parseSignatureParams('a="has, comma and = sign"')], [['a', 'has, comma and = sign']], 'separators inside quotes')
  t.same([...parseSignatureParams('a="",b=')], [['a', ''], ['b', '']], 'empty values')
  t.same([...parseSignatureParams('ext-param_1="x",keyId="k"')], [['ext-param_1', 'x'], ['keyid', 'k']], 'unknown parameters kept for the caller to ignore')
  t.same([...parseSignatureParams('')], [], 'nothing at all')
  t.same([...parseSignatureParams('a="1",')], [['a', '1']], 'a trailing comma')
})

t.test('parseSignatureParams: duplicates and garbage are rejected', async (t) => {
  malformed(t, () => parseSignatureParams('keyId="a",keyId="a"'), /duplicate parameter keyid/)
  malformed(t, () => parseSignatureParams('keyId="a",KEYID="b"'), /duplicate parameter keyid/)
  malformed(t, () => parseSignatureParams('keyId="a'), /unterminated quoted value/)
  malformed(t, () => parseSignatureParams('keyId="a\\'), /unterminated quoted value/)
  malformed(t, () => parseSignatureParams('keyId'), /expected "=" after keyid/)
  malformed(t, () => parseSignatureParams('keyId:"a"'), /expected "=" after keyid/)
  malformed(t, () => parseSignatureParams('="a"'), /expected a parameter name/)
  malformed(t, () => parseSignatureParams('"a"'), /expected a parameter name/)
  malformed(t, () => parseSignatureParams('1a="x"'), /expected a parameter name/)
  malformed(t, () => parseSignatureParams('   '), /expected a parameter name/)
  malformed(t, () => parseSignatureParams('a="1",   '), /expected a parameter name/)
  malformed(t, () => parseSignatureParams('a="x\\"y'), /unterminated quoted value/)
  malformed(t, () => parseSignatureParams('a="1" b="2"'), /expected "," between parameters/)
  malformed(t, () => parseSignatureParams('a=1"2"'), /expected "," between parameters/)
  malformed(t, () => parseSignatureParams('a="1";b="2"'), /expected "," between parameters/)
  malformed(t, () => parseSignatureParams('a="1",,b="2"'), /expected a parameter name/)
  malformed(t, () => parseSignatureParams('a="1", , b="2"'), /expected a parameter name/)
  malformed(t, () => parseSignatureParams(`${'a'.repeat(70)}="x"`))
})

t.test('parseCookies: a name sent with two values is null (ambiguous), quotes removed, malformed pairs skipped', async (t) => {
  const c = parseCookies('a=1; a=2;b="quoted"; c=x=y; junk; =z; d=; e = spaced ; f=same; f="same"; a=1')
  t.same({ ...c }, { a: null, b: 'quoted', c: 'x=y', d: '', e: 'spaced', f: 'same' })
  t.equal(Object.getPrototypeOf(c), null)
  const odd = parseCookies('__proto__=p; constructor=c')
  t.same(Object.entries(odd), [['__proto__', 'p'], ['constructor', 'c']], 'plain data, no prototype pollution')
  t.equal(({} as any).p, undefined)
  t.same({ ...parseCookies(undefined) }, {})
  t.same({ ...parseCookies('') }, {})
  t.same({ ...parseCookies('a="') }, { a: '"' }, 'a lone quote is a value')
  t.same({ ...parseCookies('SVC_SESSIONID=x') }, { SVC_SESSIONID: 'x' }, 'names are case-sensitive')
})

t.test('withoutCookies: removes the named cookies only', async (t) => {
  const names = new Set(['svc_sessionid', 'sessionid', 'svc_csrftoken'])
  t.equal(withoutCookies('theme=dark; svc_sessionid=s; lang=en; sessionid=t; svc_csrftoken=c', names), 'theme=dark; lang=en')
  t.equal(withoutCookies('svc_sessionid=s;sessionid=t', names), undefined, 'nothing left: no header')
  t.equal(withoutCookies(' svc_sessionid = s ;x=1', names), 'x=1', 'names trimmed as parseCookies trims them')
  t.equal(withoutCookies('a=1;;  ; junk ; svc_sessionid=x; =y', names), 'a=1; junk; =y', 'unparsable parts are passed on, empty ones dropped')
  t.equal(withoutCookies('SVC_SESSIONID=x; my_sessionid=y; svc_sessionidx=z', names), 'SVC_SESSIONID=x; my_sessionid=y; svc_sessionidx=z', 'exact names only')
  t.equal(withoutCookies('a=svc_sessionid=1', names), 'a=svc_sessionid=1', 'values are not names')
  t.equal(withoutCookies(undefined, names), undefined)
  t.equal(withoutCookies('', names), undefined)
})

t.test('parseHttpDate: IMF-fixdate only, real dates only', async (t) => {
  t.equal(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT'), Date.UTC(1994, 10, 6, 8, 49, 37))
  t.equal(parseHttpDate(' Sun, 06 Nov 1994 08:49:37 GMT '), Date.UTC(1994, 10, 6, 8, 49, 37), 'surrounding whitespace')
  const now = new Date(Math.floor(Date.now() / 1000) * 1000)
  t.equal(parseHttpDate(now.toUTCString()), now.getTime(), 'what clients send: toUTCString / %a, %d %b %Y %H:%M:%S GMT')
  t.equal(parseHttpDate('Thu, 29 Feb 2024 23:59:59 GMT'), Date.UTC(2024, 1, 29, 23, 59, 59), 'a leap day')
  for (const bad of [
    undefined, '', 'yesterday', '784111777',
    'Sunday, 06-Nov-94 08:49:37 GMT', // RFC 850
    'Sun Nov  6 08:49:37 1994', // asctime
    'Sun, 6 Nov 1994 08:49:37 GMT', // one-digit day
    'Sun, 06 Nov 1994 08:49:37 UTC',
    'Sun, 06 Nov 1994 08:49:37 +0000',
    'sun, 06 nov 1994 08:49:37 GMT',
    '2026-01-01T00:00:00Z',
    'Sun, 32 Nov 1994 08:49:37 GMT',
    'Sun, 06 Nov 1994 25:49:37 GMT',
    'Sun, 06 Nov 1994 08:60:37 GMT'
  ]) t.equal(parseHttpDate(bad), null, JSON.stringify(bad))
  t.equal(parseHttpDate('Thu, 31 Feb 2024 08:49:37 GMT'), null, 'no 31 February (Date.parse would roll it to 2 March)')
  t.equal(parseHttpDate('Fri, 29 Feb 2023 08:49:37 GMT'), null, 'no 29 February in a common year')
  t.equal(parseHttpDate('Sun, 06 Nov 1994 08:49:60 GMT'), null, 'no second 60 (Date.parse would read it as :00)')
  t.equal(parseHttpDate('Mon, 06 Nov 1994 08:49:37 GMT'), null, 'the weekday must match the date')
})

t.test('isUuid', async (t) => {
  for (const ok of ['a5b7c0d1-2e3f-4a5b-8c6d-7e8f9a0b1c2d', 'A5B7C0D1-2E3F-4A5B-8C6D-7E8F9A0B1C2D', '00000000-0000-0000-0000-000000000000', '00000000-0000-0000-0000-000000000002']) t.ok(isUuid(ok), ok)
  for (const bad of ['', 'root', 'a5b7c0d12e3f4a5b8c6d7e8f9a0b1c2d', '{a5b7c0d1-2e3f-4a5b-8c6d-7e8f9a0b1c2d}', ' a5b7c0d1-2e3f-4a5b-8c6d-7e8f9a0b1c2d', 'a5b7c0d1-2e3f-4a5b-8c6d-7e8f9a0b1c2d\n', 'g5b7c0d1-2e3f-4a5b-8c6d-7e8f9a0b1c2d', 'a5b7c0d1-2e3f-4a5b-8c6d-7e8f9a0b1c2', 'a5b7c0d1-2e3f4-a5b-8c6d-7e8f9a0b1c2d']) t.notOk(isUuid(bad), JSON.stringify(bad))
})

t.test('stringToSign: the spec example, byte for byte', async (t) => {
  const date = 'Sun, 06 Nov 1994 08:49:37 GMT'
  const c = { method: 'GET', url: '/api/v1/users/profile/', headers: { accept: 'application/json', date } }
  const text = stringToSign(c, ['(request-target)', 'accept', 'date'])
  const expected = '(request-target): get /api/v1/users/profile/\naccept: application/json\ndate: Sun, 06 Nov 1994 08:49:37 GMT'
  t.equal(text, expected)
  t.same(Buffer.from(text), Buffer.from([
    ...Buffer.from('(request-target): get /api/v1/users/profile/'), 0x0a,
    ...Buffer.from('accept: application/json'), 0x0a,
    ...Buffer.from(`date: ${date}`)
  ]), 'LF separators, no trailing LF')
  // computed independently: printf '…' | openssl dgst -sha256 -hmac "$SECRET" -binary | base64
  t.equal(sign('a5b7c0d1-2e3f-4a5b-8c6d-7e8f9a0b1c2d', text), 'aGAF86TxbK2mcLGMGLAkLqHhcL4qdFrPrKDDJP64wHQ=')
})

t.test('stringToSign: declared order, query as sent, trimmed values, missing header', async (t) => {
  const c = { method: 'POST', url: '/api/v1/x/?b=2&a=%20c', headers: { date: '  Sun, 06 Nov 1994 08:49:37 GMT ', accept: ' application/json ', 'x-dup': ['one', 'two'], host: 'gw:8080' } }
  t.equal(stringToSign(c, ['date', '(request-target)']), 'date: Sun, 06 Nov 1994 08:49:37 GMT\n(request-target): post /api/v1/x/?b=2&a=%20c')
  t.equal(stringToSign(c, ['(request-target)', 'accept', 'x-dup', 'host']), '(request-target): post /api/v1/x/?b=2&a=%20c\naccept: application/json\nx-dup: one, two\nhost: gw:8080')
  t.equal(stringToSign({ ...c, method: 'DeLeTe' }, ['(request-target)']), '(request-target): delete /api/v1/x/?b=2&a=%20c')
  let err: unknown
  try { stringToSign(c, ['(request-target)', 'digest']) } catch (e) { err = e }
  t.type(err, GatewayError)
  t.equal((err as GatewayError).status, 401)
  t.equal((err as GatewayError).code, 'invalid_signature', 'a declared header that was not sent')
  t.not(sign('k', 'a'), sign('k', 'b'))
  t.not(sign('k1', 'a'), sign('k2', 'a'))
})

t.test('a MAC as sent: only the canonical Base64 of its length', async (t) => {
  const mac = Buffer.alloc(32, 0xab)
  const sent = mac.toString('base64') // 43 characters and one '='; the last character's 2 spare bits zero
  t.same(decodeMac(sent), mac)
  // the same bytes with a spare bit set decode alike: one MAC, four spellings, unless refused
  const spare = sent.slice(0, 42) + String.fromCharCode(sent.charCodeAt(42) + 1) + '='
  t.same(Buffer.from(spare, 'base64'), mac)
  t.equal(decodeMac(spare), null, 'a spare bit set')
  for (const bad of [sent.slice(0, -1), sent + '=', sent.replace('=', ''), '*' + sent.slice(1), sent.slice(0, 42) + '-=']) {
    t.equal(decodeMac(bad), null, bad)
  }
  const long = Buffer.alloc(64, 7)
  t.same(decodeMac(long.toString('base64'), 64), long)
  t.equal(decodeMac(long.toString('base64')), null, 'a 64-byte MAC where 32 are expected')
})

t.test('a keyId: a UUID in any case, with or without its hyphens; nothing else', async (t) => {
  const id = '0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9'
  t.equal(normalizeKeyId(id), id)
  t.equal(normalizeKeyId(id.toUpperCase()), id)
  t.equal(normalizeKeyId(id.replaceAll('-', '')), id)
  t.equal(normalizeKeyId(id.replaceAll('-', '').toUpperCase()), id)
  for (const bad of ['nope', '', id.replaceAll('-', '') + 'a', 'x' + id.replaceAll('-', ''), id.replaceAll('-', '').slice(1),
    'g'.repeat(32), id + '-', 'a'.repeat(31)]) {
    t.equal(normalizeKeyId(bad), null, JSON.stringify(bad))
  }
})

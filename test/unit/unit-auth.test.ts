/**
 * The authenticators as tables: request headers → the claim (method and
 * user) or the error (status and code), through Authenticators on a
 * SqliteStore on a file of its own. No sockets, no Redis: a row costs microseconds, so every rule
 * gets its row (the same rules are tested over real HTTP elsewhere).
 * The store's clock is stepped for expiries; the session's absolute timeout
 * is measured by the authenticator against the real clock, so that row puts
 * the store's clock back in time instead.
 */
import t from 'tap'
import { createHmac } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { buildConfig, type Config } from '../../src/config/index.js'
import { Keyring } from '../../src/crypto.js'
import { GatewayError } from '../../src/errors.js'
import { Authenticators, readCredentials, type Identity } from '../../src/auth/index.js'
import { SignatureAuthenticator } from '../../src/auth/signature.js'
import { SqliteStore } from '../../src/store/sqlite/index.js'
import { join } from 'node:path'
import { tempDir } from '../fixtures/cleanup.js'
import type { User } from '../../src/store/types.js'
import { SECRET } from '../fixtures/gateway.js'
import { sqliteStore } from '../fixtures/sqlite-store.js'

type Headers = Record<string, string | string[]>
interface Request { method?: string, url?: string, headers: Headers }
type Outcome = { method: string, user: string } | { status: number, code: string, detail?: string }

interface Fixture {
  store: SqliteStore
  clock: { now: number }
  config: Config
  alice: User
  /** disabled after its credentials were made */
  dora: User
  key: { id: string, secret: string }
  doraKey: { id: string, secret: string }
  disabledKey: { id: string, secret: string }
  /** a key whose user does not exist */
  orphanKey: { id: string, secret: string }
  privateToken: string
  doraToken: string
  auth: (r: Request) => Promise<Outcome>
}

interface Row {
  name: string
  config?: Record<string, unknown>
  /** builds the request; may use up credentials or step the clock first */
  req: (f: Fixture) => Promise<Request> | Request
  want: Outcome
}

const ok = (method: string, user = 'alice'): Outcome => ({ method, user })
/** with `detail`: the refusal's message too */
const no = (status: number, code: string, detail?: string): Outcome =>
  detail === undefined ? { status, code } : { status, code, detail }

async function fixture (doc: Record<string, unknown> = {}): Promise<Fixture> {
  const config = buildConfig({ secret_key: SECRET, ...doc })
  const clock = { now: Date.now() }
  const store = await sqliteStore({ now: () => clock.now })
  const alice = await store.users.create({ username: 'alice', password: null })
  const dora = await store.users.create({ username: 'dora', password: null })
  const key = await store.accessKeys.create(alice.id)
  const disabledKey = await store.accessKeys.create(alice.id)
  await store.accessKeys.setActive(disabledKey.key.id, false)
  const doraKey = await store.accessKeys.create(dora.id)
  const orphanKey = await store.accessKeys.create('6f1a1c7e-1111-4222-8333-944455556666')
  const privateToken = await store.privateTokens.create(alice.id)
  const doraToken = await store.privateTokens.create(dora.id)
  await store.users.setActive(dora.id, false)
  const pipeline = new Authenticators(store, config)
  const auth = async (r: Request): Promise<Outcome> => {
    const req = { method: r.method ?? 'GET', url: r.url ?? '/api/v1/users/profile/', headers: r.headers } as unknown as IncomingMessage
    try {
      const id = await pipeline.authenticate(req)
      return { method: id.method, user: id.user.username }
    } catch (err) {
      if (err instanceof GatewayError) return { status: err.status, code: err.code, detail: err.message }
      throw err
    }
  }
  const pair = (
    k: { key: { id: string }, secret: string }
  ): { id: string, secret: string } => ({ id: k.key.id, secret: k.secret })
  return {
    store,
    clock,
    config,
    alice,
    dora,
    key: pair(key),
    doraKey: pair(doraKey),
    disabledKey: pair(disabledKey),
    orphanKey: pair(orphanKey),
    privateToken,
    doraToken,
    auth
  }
}

function runTable (name: string, rows: Row[]): void {
  t.test(name, async (t) => {
    const fixtures = new Map<string, Fixture>()
    for (const row of rows) {
      const k = JSON.stringify(row.config ?? {})
      if (!fixtures.has(k)) fixtures.set(k, await fixture(row.config))
      const f = fixtures.get(k)!
      f.clock.now = Date.now()
      const got = await f.auth(await row.req(f))
      // a row names the message only where the message is what it tests
      if ('detail' in got && !('detail' in row.want)) delete got.detail
      t.same(got, row.want, row.name)
    }
  })
}

/** The last character changed: the same random part with another (wrong) check tag. */
const wrongTag = (v: string): string => v.slice(0, -1) + (v.endsWith('A') ? 'B' : 'A')

// ---- access-key signatures

interface SignOptions {
  keyId?: string
  secret?: string
  method?: string
  path?: string
  /** the Date header sent (null: none) */
  date?: string | null
  /** the headers declared and signed */
  headers?: string[]
  /** more headers sent, to be declared in `headers` (x-date among them) */
  extra?: Record<string, string>
  algorithm?: string
  /** rewrites the Base64 MAC before it is sent */
  mac?: (m: string) => string
  /** replaces the whole Authorization value */
  raw?: (p: { keyId: string, signature: string, headers: string }) => string
}

let requests = 0

/**
 * A client's signed request, computed here independently of
 * src/auth/signature.ts. Each goes to a path of its own (a query counter), so
 * no two rows send the same signature unless they mean to.
 */
function signed (k: { id: string, secret: string }, o: SignOptions = {}): Request {
  const method = o.method ?? 'GET'
  const path = o.path ?? `/api/v1/users/profile/?n=${requests++}`
  const date = o.date === undefined ? new Date().toUTCString() : o.date
  const list = o.headers ?? ['(request-target)', 'accept', 'date']
  const values: Record<string, string> = { '(request-target)': `${method.toLowerCase()} ${path}`, accept: 'application/json', date: date ?? '', ...o.extra }
  const text = list.map((h) => `${h}: ${values[h]}`).join('\n')
  const hash = (o.algorithm ?? 'hmac-sha256').toLowerCase().replace(/^hmac-/, '')
  const mac = createHmac(hash, o.secret ?? k.secret).update(text).digest('base64')
  const signature = o.mac?.(mac) ?? mac
  const keyId = o.keyId ?? k.id
  const authorization = o.raw?.({ keyId, signature, headers: list.join(' ') }) ??
    `Signature keyId="${keyId}",algorithm="${o.algorithm ?? 'hmac-sha256'}",headers="${list.join(' ')}",signature="${signature}"`
  const headers: Headers = { accept: 'application/json', authorization, ...o.extra }
  if (date !== null) headers.date = date
  return { method, url: path, headers }
}

/** Another spelling of the same 32 bytes: the last Base64 digit's two spare bits set (decoders ignore them). */
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
const spareBits = (m: string): string => m.slice(0, 42) + B64[B64.indexOf(m[42]) ^ 1] + '='

const REPLAY = { auth: { signature: { replay_cache: true } } }
const NO_SKEW_REPLAY = { auth: { signature: { replay_cache: true, clock_skew: 0 } } }
const GRACE = { auth: { signature: { replay_cache: true, replay_grace: 1 } } }
// clock_skew 5: a Date made now (whole seconds) is fresh at its first use however slow the machine
const WINDOW = { auth: { signature: { clock_skew: 5, date_window: 600 } } }
const WITH_ACCEPT = { auth: { signature: { required_headers: ['(request-target)', 'date', 'accept'] } } }
const DATE_ONLY = { auth: { signature: { required_headers: ['date'] } } }
/** `n` more headers sent and signed, beside (request-target) and date */
const many = (n: number): SignOptions => {
  const extra = Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-h${i}`, `${i}`]))
  return { headers: ['(request-target)', 'date', ...Object.keys(extra)], extra }
}

runTable('signature (Authorization: Signature …)', [
  { name: 'valid: (request-target) accept date', req: (f) => signed(f.key), want: ok('access_key') },
  { name: 'keyId in upper case: the same key', req: (f) => signed(f.key, { keyId: f.key.id.toUpperCase() }), want: ok('access_key') },
  { name: 'parameters bare, spaced and in any case', req: (f) => signed(f.key, { raw: (p) => `Signature  KEYID=${p.keyId} , Algorithm = hmac-sha256, headers="${p.headers}",signature="${p.signature}"` }), want: ok('access_key') },
  { name: 'a POST signs its method', req: (f) => signed(f.key, { method: 'POST' }), want: ok('access_key') },
  { name: 'wrong secret', req: (f) => signed(f.key, { secret: 'not-the-secret' }), want: no(401, 'invalid_signature') },
  { name: 'signed for another path', req: (f) => ({ ...signed(f.key, { path: '/other/' }), url: '/api/v1/users/profile/' }), want: no(401, 'invalid_signature') },
  { name: 'signed for another query', req: (f) => ({ ...signed(f.key, { path: '/p/?a=1' }), url: '/p/?a=2' }), want: no(401, 'invalid_signature') },
  { name: 'signed for another method', req: (f) => ({ ...signed(f.key), method: 'DELETE' }), want: no(401, 'invalid_signature') },
  { name: 'unknown key id', req: (f) => signed(f.key, { keyId: '11111111-2222-4333-8444-555555555555' }), want: no(401, 'invalid_signature') },
  { name: 'key id not a UUID', req: (f) => signed(f.key, { keyId: 'admin' }), want: no(401, 'invalid_signature') },
  { name: 'disabled key', req: (f) => signed(f.disabledKey), want: no(401, 'key_disabled') },
  { name: 'disabled key, wrong secret', req: (f) => signed(f.disabledKey, { secret: 'not-the-secret' }), want: no(401, 'invalid_signature') },
  { name: "a disabled user's key", req: (f) => signed(f.doraKey), want: no(401, 'user_inactive') },
  { name: 'a key whose user is gone', req: (f) => signed(f.orphanKey), want: no(401, 'authentication_failed') },
  { name: 'a deleted key', req: async (f) => { const k = await f.store.accessKeys.create(f.alice.id); await f.store.accessKeys.delete(k.key.id); return signed({ id: k.key.id, secret: k.secret }) }, want: no(401, 'invalid_signature') },
  { name: 'Date 10 minutes old (clock_skew 300 s)', req: (f) => signed(f.key, { date: new Date(Date.now() - 600_000).toUTCString() }), want: no(401, 'signature_expired') },
  { name: 'Date 10 minutes ahead', req: (f) => signed(f.key, { date: new Date(Date.now() + 600_000).toUTCString() }), want: no(401, 'signature_expired') },
  { name: 'Date 4 minutes old: within the skew', req: (f) => signed(f.key, { date: new Date(Date.now() - 240_000).toUTCString() }), want: ok('access_key') },
  { name: 'Date signed but not sent', req: (f) => signed(f.key, { date: null }), want: no(401, 'signature_expired') },
  { name: 'Date not an RFC 1123 date', req: (f) => signed(f.key, { date: new Date().toISOString() }), want: no(401, 'signature_expired') },
  { name: 'Date an impossible day (31 Feb)', req: (f) => signed(f.key, { date: 'Mon, 31 Feb 2025 10:00:00 GMT' }), want: no(401, 'signature_expired') },
  { name: '(request-target) not signed', req: (f) => signed(f.key, { headers: ['accept', 'date'] }), want: no(401, 'malformed_authorization') },
  { name: 'date not signed', req: (f) => signed(f.key, { headers: ['(request-target)', 'accept'] }), want: no(401, 'malformed_authorization') },
  { name: 'a header declared twice', req: (f) => signed(f.key, { headers: ['(request-target)', 'date', 'date'] }), want: no(401, 'malformed_authorization', 'Malformed Authorization header: bad headers list.') },
  { name: '32 headers declared: the most there may be', req: (f) => signed(f.key, many(30)), want: ok('access_key') },
  { name: '33 headers declared', req: (f) => signed(f.key, many(31)), want: no(401, 'malformed_authorization', 'Malformed Authorization header: bad headers list.') },
  { name: 'the headers list spaced around and between', req: (f) => signed(f.key, { raw: (p) => `Signature keyId="${p.keyId}",headers=" ${p.headers.replaceAll(' ', '  ')} ",signature="${p.signature}"` }), want: ok('access_key') },
  { name: 'no headers parameter: Date alone is signed (required_headers [date])', config: DATE_ONLY, req: (f) => signed(f.key, { headers: ['date'], raw: (p) => `Signature keyId="${p.keyId}",signature="${p.signature}"` }), want: ok('access_key') },
  { name: 'no headers parameter with the default required_headers: (request-target) is missing', req: (f) => signed(f.key, { headers: ['date'], raw: (p) => `Signature keyId="${p.keyId}",signature="${p.signature}"` }), want: no(401, 'malformed_authorization', 'Malformed Authorization header: headers must include (request-target).') },
  { name: 'x-date stands in for date', req: (f) => signed(f.key, { headers: ['(request-target)', 'x-date'], date: null, extra: { 'x-date': new Date().toUTCString() } }), want: ok('access_key') },
  { name: 'x-date stands in for date only: not for accept', config: WITH_ACCEPT, req: (f) => signed(f.key, { headers: ['(request-target)', 'x-date'], date: null, extra: { 'x-date': new Date().toUTCString() } }), want: no(401, 'malformed_authorization', 'Malformed Authorization header: headers must include accept.') },
  { name: 'a declared header not sent', req: (f) => signed(f.key, { headers: ['(request-target)', 'date', 'x-missing'] }), want: no(401, 'invalid_signature') },
  { name: 'a declared header named like an Object property', req: (f) => signed(f.key, { headers: ['(request-target)', 'date', 'constructor'] }), want: no(401, 'invalid_signature') },
  { name: 'algorithm hmac-sha1', req: (f) => signed(f.key, { algorithm: 'hmac-sha1' }), want: no(401, 'malformed_authorization', 'Malformed Authorization header: algorithm must be one of hmac-sha256, hmac-sha512.') },
  { name: 'algorithm hmac-sha1 once listed in auth.signature.algorithms', config: { auth: { signature: { algorithms: ['hmac-sha1', 'hmac-sha256'] } } }, req: (f) => signed(f.key, { algorithm: 'hmac-sha1' }), want: ok('access_key') },
  { name: 'algorithm hmac-sha512', req: (f) => signed(f.key, { algorithm: 'hmac-sha512' }), want: ok('access_key') },
  { name: 'hmac-sha512 named, the MAC an hmac-sha256 one (its length)', req: (f) => signed(f.key, { raw: (p) => `Signature keyId="${p.keyId}",algorithm="hmac-sha512",headers="${p.headers}",signature="${p.signature}"` }), want: no(401, 'invalid_signature') },
  { name: 'no algorithm parameter: hmac-sha256', req: (f) => signed(f.key, { raw: (p) => `Signature keyId="${p.keyId}",headers="${p.headers}",signature="${p.signature}"` }), want: ok('access_key') },
  { name: 'algorithm in upper case', req: (f) => signed(f.key, { algorithm: 'HMAC-SHA256' }), want: ok('access_key') },
  { name: 'no signature parameter', req: (f) => signed(f.key, { raw: (p) => `Signature keyId="${p.keyId}",headers="${p.headers}"` }), want: no(401, 'malformed_authorization', 'Malformed Authorization header: keyId and signature are required.') },
  { name: 'no keyId parameter', req: (f) => signed(f.key, { raw: (p) => `Signature headers="${p.headers}",signature="${p.signature}"` }), want: no(401, 'malformed_authorization') },
  { name: 'a parameter twice', req: (f) => signed(f.key, { raw: (p) => `Signature keyId="${p.keyId}",keyId="${p.keyId}",headers="${p.headers}",signature="${p.signature}"` }), want: no(401, 'malformed_authorization') },
  { name: 'an unterminated quoted value', req: (f) => signed(f.key, { raw: (p) => `Signature keyId="${p.keyId}",signature="${p.signature}` }), want: no(401, 'malformed_authorization') },
  { name: 'the MAC as hex, not Base64', req: (f) => signed(f.key, { mac: (m) => Buffer.from(m, 'base64').toString('hex') }), want: no(401, 'invalid_signature') },
  { name: 'the MAC without its padding', req: (f) => signed(f.key, { mac: (m) => m.replace(/=$/, '') }), want: no(401, 'invalid_signature') },
  { name: 'the same MAC bytes with the spare bits set: not canonical Base64', req: (f) => signed(f.key, { mac: spareBits }), want: no(401, 'invalid_signature') },
  { name: 'the MAC one byte short', req: (f) => signed(f.key, { mac: (m) => Buffer.from(m, 'base64').subarray(0, 31).toString('base64') }), want: no(401, 'invalid_signature') },
  { name: 'replay cache off: the same signature twice is accepted', req: async (f) => { const r = signed(f.key); await f.auth(r); return r }, want: ok('access_key') },
  { name: 'replay cache on: first use', config: REPLAY, req: (f) => signed(f.key), want: ok('access_key') },
  { name: 'replay cache on: the same signature again', config: REPLAY, req: async (f) => { const r = signed(f.key); await f.auth(r); return r }, want: no(401, 'signature_replayed') },
  {
    name: 'replay cache on: again with the keyId in upper case (the same signature)',
    config: REPLAY,
    req: async (f) => { const same = { date: new Date().toUTCString(), path: '/same/' }; await f.auth(signed(f.key, same)); return signed(f.key, { ...same, keyId: f.key.id.toUpperCase() }) },
    want: no(401, 'signature_replayed')
  },
  {
    name: 'replay cache on: accepted again once the mark expired (2 × clock_skew)',
    config: REPLAY,
    req: async (f) => { const r = signed(f.key); await f.auth(r); f.clock.now += 601_000; return r },
    want: ok('access_key')
  },
  { name: 'replay cache on: still a replay at 1.5 × clock_skew (the mark lives 2 × clock_skew)', config: REPLAY, req: async (f) => { const r = signed(f.key); await f.auth(r); f.clock.now += 450_000; return r }, want: no(401, 'signature_replayed') },
  { name: 'replay cache and date_window 600: still a replay at 750 s (the mark lives clock_skew + date_window)', config: { auth: { signature: { replay_cache: true, date_window: 600 } } }, req: async (f) => { const r = signed(f.key); await f.auth(r); f.clock.now += 750_000; return r }, want: no(401, 'signature_replayed') },
  { name: 'replay cache, clock_skew 0: the same signature again (the mark lives a day)', config: NO_SKEW_REPLAY, req: async (f) => { const r = signed(f.key); await f.auth(r); f.clock.now += 3600_000; return r }, want: no(401, 'signature_replayed') },
  { name: 'replay_grace 1: the same GET 1 s later', config: GRACE, req: async (f) => { const r = signed(f.key); await f.auth(r); f.clock.now += 1000; return r }, want: ok('access_key') },
  { name: 'replay_grace 1: the same GET 1.001 s later', config: GRACE, req: async (f) => { const r = signed(f.key); await f.auth(r); f.clock.now += 1001; return r }, want: no(401, 'signature_replayed') },
  { name: 'replay_grace 1: the same HEAD again', config: GRACE, req: async (f) => { const r = signed(f.key, { method: 'HEAD' }); await f.auth(r); return r }, want: ok('access_key') },
  { name: 'replay_grace 1, the method not signed (required_headers [date]): a GET, then its signature on a POST', config: { auth: { signature: { ...GRACE.auth.signature, required_headers: ['date'] } } }, req: async (f) => { const r = signed(f.key, { headers: ['date'] }); await f.auth(r); return { ...r, method: 'POST' } }, want: no(401, 'signature_replayed') },
  { name: 'replay_grace 1: the same POST again', config: GRACE, req: async (f) => { const r = signed(f.key, { method: 'POST' }); await f.auth(r); return r }, want: no(401, 'signature_replayed') },
  { name: 'clock_skew 0: a Date 10 minutes old (no freshness check, as JumpServer)', config: { auth: { signature: { clock_skew: 0 } } }, req: (f) => signed(f.key, { date: new Date(Date.now() - 600_000).toUTCString() }), want: ok('access_key') },
  { name: 'date_window without the replay cache: the same signature twice', config: WINDOW, req: async (f) => { const r = signed(f.key); await f.auth(r); return r }, want: ok('access_key') },
  {
    name: 'date_window: a stale signed X-Date is not rescued by an unsigned Date this key sent fresh',
    config: WINDOW,
    req: async (f) => {
      const fresh = new Date().toUTCString()
      await f.auth(signed(f.key, { headers: ['(request-target)', 'x-date'], date: null, extra: { 'x-date': fresh } }))
      return signed(f.key, { headers: ['(request-target)', 'x-date'], date: fresh, extra: { 'x-date': new Date(Date.now() - 60_000).toUTCString() } })
    },
    want: no(401, 'signature_expired')
  },
  { name: 'required_headers adds accept: signed without it', config: WITH_ACCEPT, req: (f) => signed(f.key, { headers: ['(request-target)', 'date'] }), want: no(401, 'malformed_authorization') },
  { name: 'required_headers adds accept: signed with it', config: WITH_ACCEPT, req: (f) => signed(f.key), want: ok('access_key') }
])

// ---- private tokens

const token = (scheme: string, v: string): Request => ({ headers: { authorization: `${scheme} ${v}` } })

runTable('private token (Authorization: Token … / PrivateToken …)', [
  { name: 'Token', req: (f) => token('Token', f.privateToken), want: ok('private_token') },
  { name: 'PrivateToken', req: (f) => token('PrivateToken', f.privateToken), want: ok('private_token') },
  { name: 'the scheme in any case, spaces around', req: (f) => token('tOKEN', `  ${f.privateToken}  `), want: ok('private_token') },
  { name: 'wrong check tag', req: (f) => token('Token', wrongTag(f.privateToken)), want: no(401, 'invalid_token') },
  { name: 'one character short', req: (f) => token('Token', f.privateToken.slice(1)), want: no(401, 'invalid_token') },
  { name: 'well tagged, never stored', req: () => token('Token', new Keyring(SECRET).issue('private token')), want: no(401, 'invalid_token') },
  { name: 'tagged under another secret key', req: () => token('Token', new Keyring('another-secret-key-that-is-long-enough-xyz').issue('private token')), want: no(401, 'invalid_token') },
  { name: 'a bearer token is not a private token', req: async (f) => token('Token', (await f.store.bearerTokens.issue(f.alice.id, 60)).token), want: no(401, 'invalid_token') },
  { name: 'a session id is not a private token', req: async (f) => token('Token', (await f.store.sessions.create(f.alice.id, 60)).id), want: no(401, 'invalid_token') },
  { name: "a disabled user's token", req: (f) => token('Token', f.doraToken), want: no(401, 'user_inactive') },
  { name: 'revoked', req: async (f) => { const u = await f.store.users.create({ username: `r${Math.random()}`, password: null }); const v = await f.store.privateTokens.create(u.id); await f.store.privateTokens.revoke(u.id); return token('Token', v) }, want: no(401, 'invalid_token') },
  { name: 'replaced', req: async (f) => { const u = await f.store.users.create({ username: `p${Math.random()}`, password: null }); const v = await f.store.privateTokens.create(u.id); await f.store.privateTokens.create(u.id); return token('Token', v) }, want: no(401, 'invalid_token') },
  { name: 'kept across a password change', req: async (f) => { await f.store.passwords.set(f.alice.id, 'a-new-password'); return token('Token', f.privateToken) }, want: ok('private_token') },
  { name: 'no token after the scheme', req: () => ({ headers: { authorization: 'Token' } }), want: no(401, 'malformed_authorization') },
  { name: 'characters outside token68', req: () => token('Token', 'abc"def'), want: no(401, 'malformed_authorization') },
  { name: 'two tokens', req: (f) => token('Token', `${f.privateToken} ${f.privateToken}`), want: no(401, 'malformed_authorization') },
  { name: 'over 512 characters', req: () => token('Token', 'a'.repeat(513)), want: no(401, 'malformed_authorization') }
])

// ---- one-time bearer tokens

const bearer = async (f: Fixture, user = f.alice): Promise<string> => (
  await f.store.bearerTokens.issue(user.id, f.config.auth.bearer.ttl)
).token

runTable('bearer token (Authorization: Bearer …)', [
  { name: 'first use', req: async (f) => token('Bearer', await bearer(f)), want: ok('bearer') },
  { name: 'second use: single use', req: async (f) => { const v = await bearer(f); await f.auth(token('Bearer', v)); return token('Bearer', v) }, want: no(401, 'invalid_token') },
  { name: 'a failed request with a wrong tag uses up nothing', req: async (f) => { const v = await bearer(f); await f.auth(token('Bearer', wrongTag(v))); return token('Bearer', v) }, want: ok('bearer') },
  { name: 'wrong check tag', req: async (f) => token('Bearer', wrongTag(await bearer(f))), want: no(401, 'invalid_token') },
  { name: 'expired (auth.bearer.ttl passed)', req: async (f) => { const v = await bearer(f); f.clock.now += f.config.auth.bearer.ttl * 1000; return token('Bearer', v) }, want: no(401, 'invalid_token') },
  { name: 'a second before it expires', req: async (f) => { const v = await bearer(f); f.clock.now += f.config.auth.bearer.ttl * 1000 - 1000; return token('Bearer', v) }, want: ok('bearer') },
  { name: 'a private token is not a bearer token', req: (f) => token('Bearer', f.privateToken), want: no(401, 'invalid_token') },
  { name: 'ended by a password change', req: async (f) => { const v = await bearer(f); await f.store.passwords.set(f.alice.id, 'another-password'); return token('Bearer', v) }, want: no(401, 'invalid_token') },
  { name: "a disabled user's token", req: async (f) => token('Bearer', await bearer(f, f.dora)), want: no(401, 'user_inactive') },
  { name: "a disabled user's token is used up by the refused request", req: async (f) => { const v = await bearer(f, f.dora); await f.auth(token('Bearer', v)); return token('Bearer', v) }, want: no(401, 'invalid_token') },
  { name: 'the scheme only', req: () => ({ headers: { authorization: 'Bearer' } }), want: no(401, 'malformed_authorization') },
  { name: 'a bearer token with a session cookie: the header decides', req: async (f) => ({ headers: { authorization: `Bearer ${await bearer(f)}`, cookie: 'svc_sessionid=garbage' } }), want: ok('bearer') },
  { name: 'a bad bearer token with a good session cookie: the header decides', req: async (f) => ({ headers: { authorization: 'Bearer nonsense', cookie: `svc_sessionid=${(await f.store.sessions.create(f.alice.id, 60)).id}` } }), want: no(401, 'invalid_token') }
])

// ---- sessions

const session = async (
  f: Fixture, user = f.alice
): Promise<{ id: string, csrf: string }> => await f.store.sessions.create(
  user.id, f.config.session.idle_timeout, f.config.session.absolute_timeout
)
const cookie = (c: string, more: Headers = {}, method = 'GET'): Request => ({ method, headers: { cookie: c, ...more } })
const NO_LEGACY = { session: { accept_legacy_cookie: false } }

runTable('session (Cookie: svc_sessionid=…)', [
  { name: 'GET with the session cookie', req: async (f) => cookie(`svc_sessionid=${(await session(f)).id}`), want: ok('session') },
  { name: 'among other cookies, quoted', req: async (f) => cookie(`a=1; svc_sessionid="${(await session(f)).id}"; b=2`), want: ok('session') },
  { name: 'the legacy name sessionid', req: async (f) => cookie(`sessionid=${(await session(f)).id}`), want: ok('session') },
  { name: 'the legacy name when accept_legacy_cookie is false: no credentials', config: NO_LEGACY, req: async (f) => cookie(`sessionid=${(await session(f)).id}`), want: no(401, 'not_authenticated') },
  { name: 'both names, the same id', req: async (f) => { const s = await session(f); return cookie(`svc_sessionid=${s.id}; sessionid=${s.id}`) }, want: ok('session') },
  { name: 'both names, different ids (one tossed from a sibling domain)', req: async (f) => cookie(`svc_sessionid=${(await session(f)).id}; sessionid=${(await session(f)).id}`), want: no(401, 'invalid_session') },
  { name: 'both names, a valid and a garbage id', req: async (f) => cookie(`sessionid=garbage; svc_sessionid=${(await session(f)).id}`), want: no(401, 'invalid_session') },
  { name: 'legacy off: a stray legacy cookie beside a valid one is ignored', config: NO_LEGACY, req: async (f) => cookie(`sessionid=garbage; svc_sessionid=${(await session(f)).id}`), want: ok('session') },
  { name: 'the name twice, the same id', req: async (f) => { const s = await session(f); return cookie(`svc_sessionid=${s.id}; svc_sessionid=${s.id}`) }, want: ok('session') },
  { name: 'the name twice, different ids', req: async (f) => cookie(`svc_sessionid=${(await session(f)).id}; svc_sessionid=${(await session(f)).id}`), want: no(401, 'invalid_session') },
  { name: 'the name twice, one of them garbage', req: async (f) => cookie(`svc_sessionid=${(await session(f)).id}; svc_sessionid=x`), want: no(401, 'invalid_session') },
  { name: 'wrong check tag', req: async (f) => cookie(`svc_sessionid=${wrongTag((await session(f)).id)}`), want: no(401, 'invalid_session') },
  { name: 'a private token as session id', req: (f) => cookie(`svc_sessionid=${f.privateToken}`), want: no(401, 'invalid_session') },
  { name: 'empty', req: () => cookie('svc_sessionid='), want: no(401, 'invalid_session') },
  { name: 'over 256 characters', req: () => cookie(`svc_sessionid=${'a'.repeat(257)}`), want: no(401, 'invalid_session') },
  { name: 'logged out', req: async (f) => { const s = await session(f); await f.store.sessions.delete(s.id); return cookie(`svc_sessionid=${s.id}`) }, want: no(401, 'invalid_session') },
  { name: 'idle past session.idle_timeout', req: async (f) => { const s = await session(f); f.clock.now += f.config.session.idle_timeout * 1000; return cookie(`svc_sessionid=${s.id}`) }, want: no(401, 'invalid_session') },
  {
    name: 'a request pushes the idle timeout forward',
    req: async (f) => { const s = await session(f); f.clock.now += f.config.session.idle_timeout * 500; await f.auth(cookie(`svc_sessionid=${s.id}`)); f.clock.now += f.config.session.idle_timeout * 600; return cookie(`svc_sessionid=${s.id}`) },
    want: ok('session')
  },
  {
    name: 'older than session.absolute_timeout, however active',
    req: async (f) => { f.clock.now = Date.now() - f.config.session.absolute_timeout * 1000 - 60_000; return cookie(`svc_sessionid=${(await session(f)).id}`) },
    want: no(401, 'invalid_session')
  },
  {
    name: 'just under session.absolute_timeout',
    req: async (f) => { f.clock.now = Date.now() - f.config.session.absolute_timeout * 1000 + 60_000; return cookie(`svc_sessionid=${(await session(f)).id}`) },
    want: ok('session')
  },
  { name: "a disabled user's session is ended", req: async (f) => { const u = await f.store.users.create({ username: `d${Math.random()}`, password: null }); const s = await session(f, u); await f.store.users.setActive(u.id, false); return cookie(`svc_sessionid=${s.id}`) }, want: no(401, 'invalid_session') },
  { name: 'ended by a password change', req: async (f) => { const s = await session(f); await f.store.passwords.set(f.alice.id, 'yet-another-password'); return cookie(`svc_sessionid=${s.id}`) }, want: no(401, 'invalid_session') },
  { name: 'HEAD and OPTIONS need no CSRF token', req: async (f) => cookie(`svc_sessionid=${(await session(f)).id}`, {}, 'HEAD'), want: ok('session') },
  { name: 'OPTIONS', req: async (f) => cookie(`svc_sessionid=${(await session(f)).id}`, {}, 'OPTIONS'), want: ok('session') },
  { name: 'POST without X-CSRFToken', req: async (f) => cookie(`svc_sessionid=${(await session(f)).id}`, {}, 'POST'), want: no(403, 'csrf_failed') },
  { name: 'POST with the right X-CSRFToken', req: async (f) => { const s = await session(f); return cookie(`svc_sessionid=${s.id}`, { 'x-csrftoken': s.csrf }, 'POST') }, want: ok('session') },
  { name: "POST with another session's X-CSRFToken", req: async (f) => { const s = await session(f); const o = await session(f); return cookie(`svc_sessionid=${s.id}`, { 'x-csrftoken': o.csrf }, 'POST') }, want: no(403, 'csrf_failed') },
  { name: 'PUT with the token one character short', req: async (f) => { const s = await session(f); return cookie(`svc_sessionid=${s.id}`, { 'x-csrftoken': s.csrf.slice(1) }, 'PUT') }, want: no(403, 'csrf_failed') },
  { name: 'DELETE with the token sent twice', req: async (f) => { const s = await session(f); return cookie(`svc_sessionid=${s.id}`, { 'x-csrftoken': [s.csrf, s.csrf] }, 'DELETE') }, want: no(403, 'csrf_failed') },
  { name: 'PATCH with the session id as CSRF token', req: async (f) => { const s = await session(f); return cookie(`svc_sessionid=${s.id}`, { 'x-csrftoken': s.id }, 'PATCH') }, want: no(403, 'csrf_failed') },
  { name: 'an invalid session on a POST: 401 before any CSRF check', req: () => cookie('svc_sessionid=garbage', {}, 'POST'), want: no(401, 'invalid_session') },
  { name: 'another abbrev names another cookie', config: { names: { abbrev: 'JMS' } }, req: async (f) => cookie(`jms_sessionid=${(await session(f)).id}`), want: ok('session') },
  { name: 'another abbrev: the default name is no credential', config: { names: { abbrev: 'JMS' }, ...NO_LEGACY }, req: async (f) => cookie(`svc_sessionid=${(await session(f)).id}`), want: no(401, 'not_authenticated') }
])

// ---- which authenticator decides

runTable('the pipeline: no credentials, unknown schemes, malformed headers', [
  { name: 'nothing at all', req: () => ({ headers: {} }), want: no(401, 'not_authenticated') },
  { name: 'unrelated cookies only', req: () => cookie('theme=dark; lang=en'), want: no(401, 'not_authenticated') },
  { name: 'Basic', req: () => ({ headers: { authorization: 'Basic YWxpY2U6cHc=' } }), want: no(401, 'unsupported_scheme') },
  { name: 'Digest', req: () => ({ headers: { authorization: 'Digest username="alice"' } }), want: no(401, 'unsupported_scheme') },
  { name: 'an empty Authorization header', req: () => ({ headers: { authorization: '' } }), want: no(401, 'malformed_authorization') },
  { name: 'whitespace only', req: () => ({ headers: { authorization: '   ' } }), want: no(401, 'malformed_authorization') },
  { name: 'an unknown scheme with a valid session cookie: the header decides', req: async (f) => ({ headers: { authorization: 'Negotiate abc', cookie: `svc_sessionid=${(await session(f)).id}` } }), want: no(401, 'unsupported_scheme') },
  { name: 'Signature without parameters', req: () => ({ headers: { authorization: 'Signature' } }), want: no(401, 'malformed_authorization') }
])

// ---- the synchronous fast path (Authenticators.resolve, what the request path calls)

t.test('resolve answers at once where in-process state decides, else with a promise', async (t) => {
  const f = await fixture()
  const pipeline = new Authenticators(f.store, f.config)
  const req = (authorization: string): IncomingMessage => ({ method: 'GET', url: '/api/v1/x', headers: { authorization } }) as unknown as IncomingMessage
  // in process the store knows what it has read: an earlier request of each token's
  await pipeline.authenticate(req(`Token ${f.privateToken}`))
  await pipeline.authenticate(req(`Token ${f.doraToken}`)).catch(() => {})
  const who = pipeline.resolve(req(`Token ${f.privateToken}`))
  t.notOk(who instanceof Promise, 'a known private token of an active user: the identity itself')
  t.equal((who as { user: User }).user.username, 'alice')
  t.match(pipeline.resolve(req(`Token ${wrongTag(f.privateToken)}`)), { code: 'invalid_token', status: 401 }, 'a wrong check tag: the refusal returned at once, not thrown (no stack walk)')
  t.ok(pipeline.resolve(req(`Token ${wrongTag(f.privateToken)}`)) instanceof GatewayError)
  await t.rejects(pipeline.authenticate(req(`Token ${wrongTag(f.privateToken)}`)), { code: 'invalid_token' }, 'authenticate rejects with it')
  t.match(pipeline.resolve(req(`Token ${f.doraToken}`)), { code: 'user_inactive' }, 'a disabled user: refused synchronously, as authenticate refuses')
  t.ok(pipeline.resolve(req(`Token ${f.doraToken}`)) instanceof GatewayError, 'the refusal returned, not thrown')
  const bearer = pipeline.resolve(req(`Bearer ${(await f.store.bearerTokens.issue(f.alice.id, 60)).token}`))
  t.ok(bearer instanceof Promise, 'a single-use bearer token needs the store: a promise')
  t.equal((await bearer as Identity).method, 'bearer')
  t.equal((await pipeline.authenticate(req(`Token ${f.privateToken}`))).user.username, 'alice', 'authenticate: the same identity, as a promise')

  const s = await f.store.sessions.create(f.alice.id, 600)
  const withCookie = (method: string, headers: Record<string, string> = {}): IncomingMessage => ({ method, url: '/api/v1/x', headers: { cookie: `svc_sessionid=${s.id}`, ...headers } }) as unknown as IncomingMessage
  const first = pipeline.resolve(withCookie('GET'))
  t.ok(first instanceof Promise, "a session's first request pushes its idle timeout back in the store: a promise")
  t.equal((await first as Identity).method, 'session')
  const again = pipeline.resolve(withCookie('GET'))
  t.notOk(again instanceof Promise, 'then, while it was touched recently, the identity itself')
  t.equal((again as { method: string }).method, 'session')
  t.match(pipeline.resolve(withCookie('POST')), { code: 'csrf_failed', status: 403 }, 'an unsafe method without the CSRF token: refused synchronously')
  t.ok(pipeline.resolve(withCookie('POST')) instanceof GatewayError, 'the refusal returned, not thrown')
  t.notOk(pipeline.resolve(withCookie('POST', { 'x-csrftoken': s.csrf })) instanceof Promise, 'with it: at once')
  t.match(pipeline.resolve(withCookie('GET', { cookie: `svc_sessionid=${wrongTag(s.id)}` })), { code: 'invalid_session' }, 'a wrong check tag: refused synchronously')
  t.ok(pipeline.resolve(withCookie('GET', { cookie: `svc_sessionid=${wrongTag(s.id)}` })) instanceof GatewayError, 'the refusal returned, not thrown')
  f.clock.now = Date.now() + (f.config.session.idle_timeout + 1) * 1000
  // past the in-process cache's few seconds too: the store is asked (a promise), as in the gateway
  const idle = pipeline.resolve(withCookie('GET'))
  t.ok(idle instanceof Promise, 'the store is asked')
  const idleRefusal = await idle
  t.ok(idleRefusal instanceof GatewayError, 'the promise resolves to the refusal (never rejects for one)')
  t.match(idleRefusal, { code: 'invalid_session' }, 'idle past its timeout in the store: refused')
})

t.test('an access-key signature is decided at once when its key is cached, with the same checks', async (t) => {
  const dir = tempDir('sidegate-sig-')
  const clock = { now: Date.now() }
  const open = async (): Promise<SqliteStore> => {
    const s = new SqliteStore({ path: join(dir, 'store.db'), busyTimeout: 1000, now: () => clock.now, cache: { max: 1000, ttl: 60 } }, new Keyring(SECRET))
    await s.connect()
    return s
  }
  const store = await open()
  t.teardown(async () => await store.close())
  const alice = await store.users.create({ username: 'alice', password: null })
  const created = await store.accessKeys.create(alice.id)
  const key = { id: created.key.id, secret: created.secret }
  const soon = new Date(Date.now() + 1000).toISOString()
  const expired = await store.accessKeys.create(alice.id, 0, { date_expired: soon })
  const config = buildConfig({ secret_key: SECRET })
  const pipeline = new Authenticators(store, config)
  const req = (r: Request): IncomingMessage => ({ method: r.method ?? 'GET', url: r.url, headers: r.headers }) as unknown as IncomingMessage

  const first = pipeline.resolve(req(signed(key)))
  t.ok(first instanceof Promise, 'the key not yet cached: a promise (the store is asked)')
  t.equal((await first as Identity).user.username, 'alice')
  const again = pipeline.resolve(req(signed(key)))
  t.notOk(again instanceof Promise, 'then: the identity itself')
  t.equal((again as Identity).method, 'access_key')
  t.equal((again as Identity & { method: 'access_key' }).keyId, key.id)

  // the refusals, each returned at once (not thrown, no promise) with authenticate's code
  const refused = (r: Request): unknown => pipeline.resolve(req(r))
  t.match(refused(signed(key, { mac: (m) => m.replace(/^./, (c) => c === 'A' ? 'B' : 'A') })), { code: 'invalid_signature', status: 401 }, 'a wrong MAC')
  t.match(refused(signed(key, { secret: 'not-the-secret' })), { code: 'invalid_signature' }, 'signed with another secret')
  t.match(refused(signed(key, { date: new Date(clock.now - 3600_000).toUTCString() })), { code: 'signature_expired' }, 'a stale Date')
  t.match(refused(signed(key, { mac: spareBits })), { code: 'invalid_signature' }, 'a non-canonical spelling of the MAC')
  t.ok(refused(signed(key, { mac: spareBits })) instanceof GatewayError)
  // a MAC that is not the algorithm's length in canonical Base64 is refused before the key is looked up
  const unseen = await store.accessKeys.create(alice.id)
  const fresh = { id: unseen.key.id, secret: unseen.secret }
  for (const [why, mac] of [
    ['the spare bits set', spareBits],
    ['one byte short', (m: string) => Buffer.from(m, 'base64').subarray(0, 31).toString('base64')],
    ['base64url', (m: string) => m.replaceAll('+', '-').replaceAll('/', '_').padEnd(44, 'A') + (/[-_]/.test(m) ? '' : '-')]
  ] as const) {
    const r = refused(signed(fresh, { mac }))
    t.notOk(r instanceof Promise, `a MAC with ${why}: refused at once, its key never looked up`)
    t.match(r, { code: 'invalid_signature' })
  }

  // an expiring key, cached while valid: past its expiry it is refused from memory
  const exp = { id: expired.key.id, secret: expired.secret }
  t.equal((await pipeline.authenticate(req(signed(exp)))).method, 'access_key')
  await new Promise((resolve) => setTimeout(resolve, Date.parse(expired.key.date_expired!) - Date.now() + 20))
  t.match(refused(signed(exp)), { code: 'key_expired', status: 401 }, 'past its expiry, from memory')

  // disabled: the change evicts the cached key, so the next request asks the store again
  await store.accessKeys.setActive(key.id, false)
  const after = pipeline.resolve(req(signed(key)))
  t.ok(after instanceof Promise, 'disabled: evicted, the store is asked')
  const afterRefusal = await after
  t.ok(afterRefusal instanceof GatewayError, 'the promise resolves to the refusal (never rejects for one)')
  t.match(afterRefusal, { code: 'key_disabled' })
  t.match(refused(signed(key)), { code: 'key_disabled' }, 'the disabled key cached again: refused from memory')

  // the replay cache needs the store on every request: never decided from memory
  const strict = new Authenticators(
    store, buildConfig({ secret_key: SECRET, auth: { signature: { replay_cache: true } } })
  )
  const k2 = await store.accessKeys.create(alice.id)
  const once = signed({ id: k2.key.id, secret: k2.secret })
  t.ok(strict.resolve(req(once)) instanceof Promise)
  await strict.authenticate(req(signed({ id: k2.key.id, secret: k2.secret })))
  const used = strict.resolve(req(once))
  t.ok(used instanceof Promise, 'with replay_cache: a promise even when the key is cached')
  const usedRefusal = await used
  t.ok(usedRefusal instanceof GatewayError, 'the promise resolves to the refusal (never rejects for one)')
  t.match(usedRefusal, { code: 'signature_replayed' })
})

t.test("a signed request's claim carries its key's allow-list and factors; a key's expiry is its first refused instant", async (t) => {
  const store = await sqliteStore()
  t.teardown(async () => await store.close())
  const alice = await store.users.create({ username: 'alice', password: null })
  const config = buildConfig({ secret_key: SECRET })
  const pipeline = new Authenticators(store, config)
  const req = (r: Request): IncomingMessage => ({ method: r.method ?? 'GET', url: r.url, headers: r.headers }) as unknown as IncomingMessage
  type Pair = { id: string, secret: string }
  const pair = (k: { key: { id: string }, secret: string }): Pair => ({ id: k.key.id, secret: k.secret })

  const bound = await store.accessKeys.create(alice.id, 0, { allow_ips: ['10.0.0.0/8'], factors: ['pwd', 'otp'] })
  const id = await pipeline.authenticate(req(signed(pair(bound)))) as Identity & { method: 'access_key' }
  t.same(id.keyAllowIps, ['10.0.0.0/8'], 'the allow-list the pipeline checks the client address against')
  t.same(id.keyFactors, ['pwd', 'otp'], "the factors of its owner's sign-in (two_factor rules)")
  const plainKey = await store.accessKeys.create(alice.id)
  const plain = await pipeline.authenticate(req(signed(pair(plainKey)))) as Identity & { method: 'access_key' }
  t.equal(plain.keyAllowIps, undefined, 'no allow-list: used from anywhere')
  t.equal(plain.keyFactors, undefined, "an operator's key: no factors (admitted as the operator's)")

  // clock_skew 0: the request's Date is not held against the clock set here
  const at = Date.parse('2030-01-01T00:00:00.000Z')
  const decide = async (k: { id: string, secret: string }, now = Date.now()): Promise<unknown> => {
    const o = { clockSkew: 0, algorithms: ['hmac-sha256'] as const, requiredHeaders: ['date'], replayCache: false, now: () => now }
    return await new SignatureAuthenticator(store, o).check(readCredentials(req(signed(k))))
  }
  t.strictSame(await decide(pair(plainKey)), { userId: alice.id, method: 'access_key', keyId: plainKey.key.id }, 'the claim, nothing unset in it')
  const expiring = pair(await store.accessKeys.create(alice.id, 0, { date_expired: new Date(at).toISOString() }))
  t.match(await decide(expiring, at - 1), { method: 'access_key' }, 'a millisecond before date_expired: accepted')
  t.match(await decide(expiring, at), { code: 'key_expired' }, 'at date_expired: refused')
})

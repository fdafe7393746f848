/**
 * `sidegate store export|import`: every durable record of a store as NDJSON,
 * the same for every backend (./sqlite/transfer.ts, ./redis/transfer.ts), so
 * a team moves between the embedded store and Redis without re-creating a
 * credential. The first line is a header naming the format, its version and
 * the key check value of the store it came from; then one record per line.
 * Secrets stay as stored: sealed under the secret key (access-key secrets, TOTP secrets,
 * private tokens, signing keys, legacy generations), credentials only as
 * their keyed lookup hashes; nothing is decrypted, so the file is only
 * usable with the same secret key. Transient counters (login attempts,
 * replay marks, rate-limit hits, locks, the invalidation log) are not
 * records: they are not exported.
 *
 * An import reads and checks the whole file first (parseTransfer, then
 * planImport: ./transfer-plan.ts) and writes only when every line is valid.
 *
 * Version 2 ends with a MAC line, `{"mac":"…"}`: HMAC-SHA256 of every byte
 * before it under a key derived from the secret key (Keyring.storeFileMac),
 * checked before anything else: a record added or changed by someone without
 * the key (a superuser with a chosen password, a passkey on `admin`, a forged
 * audit entry) is refused. Version 1 files (no MAC) are read only when the
 * operator says so (--allow-unsigned). Into a store that holds data (--merge),
 * the records that grant a privilege are listed (planImport's `privileged`)
 * and written only with --allow-superuser / --allow-takeover.
 */
import type { KeyRecords } from './secret/records.js'
import type { StoredKeySet } from './keyset.js'
import type { SsoMark, StoredKey, StoredUser } from './ports.js'
import type { Factor, Group, Link, Org, StoredPasskey } from './model.js'

export const FORMAT = 'sidegate-store'
export const FORMAT_VERSION = 2
/** The version before the MAC line: read only when the operator allows an unsigned file. */
export const UNSIGNED_VERSION = 1

export interface TransferHeader {
  format: typeof FORMAT
  version: typeof FORMAT_VERSION | typeof UNSIGNED_VERSION
  /** the exporting store's key check value (../secret/check.ts) */
  key_check: string
  /** ISO time of the export */
  exported: string
}

/** One record of the file; `kind` says which. Expiries are absolute (epoch ms). */
export type TransferRecord =
  | { kind: 'org', org: Org }
  /** a group (its members are on the user records: `user.groups`, every source) */
  | { kind: 'group', group: Group }
  | { kind: 'user', user: StoredUser }
  /** an account elsewhere (OIDC, LDAP) linked to a user */
  | { kind: 'link', link: Link }
  | { kind: 'access_key', key: StoredKey, last_used: string | null }
  /**
   * the user's own token: its lookup hash (null in old records) and the token sealed (additional data `pt:<user id>`)
   */
  | { kind: 'private_token', user_id: string, hash: string | null, sealed: string }
  /** a lookup entry: hash(token) → user id (a token issued under an earlier key keeps its own) */
  | { kind: 'private_token_lookup', hash: string, user_id: string }
  /** an imported (JumpServer), untagged token's lookup hash */
  | { kind: 'private_token_imported', hash: string }
  /** `factors`: what it was obtained with, absent for the password alone */
  | { kind: 'bearer_token', hash: string, user_id: string, expires: number, factors?: readonly Factor[] }
  /** `sso`: made through a provider (its source, and the tags its back-channel logout finds it by) */
  | { kind: 'session', hash: string, user_id: string, created: number, expires: number, factors?: readonly Factor[], sso?: SsoMark }
  /** a user's TOTP record as stored (JSON, its secret sealed with additional data `user-totp:<user id>`) */
  | { kind: 'totp', user_id: string, stored: string }
  /** the lookup hash of one of a user's unused recovery codes */
  | { kind: 'recovery_code', user_id: string, hash: string }
  /**
   * a passkey as stored (its public key, counter, user handle;
   * no secret: the private key never leaves the authenticator)
   */
  | { kind: 'passkey', passkey: StoredPasskey }
  | { kind: 'signing_keys', set: StoredKeySet }
  /** the lookup and tag keys of the keys this store was rotated away from, sealed (`key-legacy:<check>`) */
  | { kind: 'key_legacy', check: string, sealed: string }
  /** an audit trail entry: its stream id `<ms>-<seq>` and the event's JSON text */
  | { kind: 'audit', id: string, event: string }

export type Kind = TransferRecord['kind']

/** The kinds in the file's order, with the words a summary uses. */
export const KINDS: ReadonlyArray<[Kind, string, string]> = [
  ['org', 'org', 'orgs'], ['group', 'group', 'groups'], ['user', 'user', 'users'], ['link', 'link', 'links'], ['access_key', 'access key', 'access keys'],
  ['private_token', 'private token', 'private tokens'], ['private_token_lookup', 'token lookup entry', 'token lookup entries'],
  ['private_token_imported', 'imported token hash', 'imported token hashes'], ['bearer_token', 'bearer token', 'bearer tokens'],
  ['session', 'session', 'sessions'], ['totp', 'second factor', 'second factors'], ['recovery_code', 'recovery code', 'recovery codes'],
  ['passkey', 'passkey', 'passkeys'],
  ['signing_keys', 'signing key set', 'signing key sets'],
  ['key_legacy', 'legacy key generation', 'legacy key generations'], ['audit', 'audit entry', 'audit entries']
]
const KIND_NAMES = new Set<string>(KINDS.map(([k]) => k))

/** What a backend reads and writes for a transfer: its records, and what the target already holds. */
export interface StoreTransfer {
  /** the store's place, for messages */
  readonly where: string
  /** the secret key's records (the key check value, a rotation marker) */
  readonly keys: KeyRecords
  /** Every record, expired credentials left out, in KINDS order (SQLite: one consistent snapshot). */
  read(now: number): Promise<TransferRecord[]>
  /** How many users and orgs the store holds. */
  counts(): Promise<{ users: number, orgs: number }>
  /** For each record: whether its id is in the store already (audit entries: one at or after its id). */
  exists(records: TransferRecord[]): Promise<boolean[]>
  /** The id of the group holding the name key (groupNameKey), or null. */
  groupNameOwner(nameKey: string): Promise<string | null>
  /** The subject the user's link of `source` holds, or null. */
  linkOf(userId: string, source: string): Promise<string | null>
  /** The id of the user holding the lowercase username, or null. */
  usernameOwner(usernameLower: string): Promise<string | null>
  /** Writes the records (none of them in the store) and records `keyCheck` when the store has none. */
  write(records: TransferRecord[], keyCheck: string, o: WriteOptions): Promise<void>
}

export interface WriteOptions {
  /** the clock, epoch ms: expiries are kept absolute */
  now: number
  /** session.absolute_timeout in ms: how long a user's index of sessions must last past a session's creation */
  sessionLifetimeMs: number
}

/** A line that is not a valid record: its number (the header is line 1) and why. */
export class TransferProblem extends Error {
  constructor (readonly line: number, message: string) {
    super(`line ${line}: ${message}`)
    this.name = 'TransferProblem'
  }
}

/** The identity of a record within its kind: what a duplicate or an existing record shares. */
export function recordId (r: TransferRecord): string {
  switch (r.kind) {
    case 'org': return r.org.id
    case 'group': return r.group.id
    case 'user': return r.user.id
    case 'link': return `${r.link.source} ${r.link.subject}`
    case 'access_key': return r.key.id
    case 'private_token': case 'totp': return r.user_id
    case 'private_token_lookup': case 'private_token_imported': case 'bearer_token': case 'session': return r.hash
    case 'recovery_code': return `${r.user_id}:${r.hash}`
    case 'passkey': return r.passkey.id
    case 'signing_keys': return 'jwks'
    case 'key_legacy': return r.check
    case 'audit': return r.id
  }
}

/** The user a record belongs to, if any. */
export function ownerOf (r: TransferRecord): string | null {
  switch (r.kind) {
    case 'access_key': return r.key.user_id
    case 'link': return r.link.user_id
    case 'private_token': case 'private_token_lookup': case 'bearer_token': case 'session': case 'totp': case 'recovery_code': return r.user_id
    case 'passkey': return r.passkey.user_id
    default: return null
  }
}

/** The header and records as file lines, then the MAC line over them (`mac`: Keyring.storeFileMac). */
export function serialize (header: TransferHeader, records: TransferRecord[], mac: (data: string) => string): string {
  const text = [header, ...records].map((x) => JSON.stringify(x)).join('\n') + '\n'
  return text + JSON.stringify({ mac: mac(text) }) + '\n'
}

/**
 * A file split into what its MAC covers (every byte before the last line)
 * and the MAC, or null when the last line is not a MAC line (a version 1
 * file, or none at all).
 */
export function splitMac (text: string): { body: string, mac: string | null } {
  const end = text.endsWith('\n') ? text.length - 1 : text.length
  const start = text.lastIndexOf('\n', end - 1) + 1
  let last: unknown
  try { last = JSON.parse(text.slice(start, end)) } catch { last = null }
  if (!isObj(last) || Object.keys(last).length !== 1 || typeof last.mac !== 'string') return { body: text, mac: null }
  return { body: text.slice(0, start), mac: last.mac }
}

/** An audit entry's stream id as two numbers, or null when it is not one. */
export function auditId (id: string): [number, number] | null {
  const m = /^(\d{1,15})-(\d{1,15})$/.exec(id)
  return m === null ? null : [Number(m[1]), Number(m[2])]
}
export const auditAfter = (a: [number, number], b: [number, number]): boolean =>
  a[0] > b[0] || (a[0] === b[0] && a[1] > b[1])

// ── checking one line ────────────────────────────────────────────────────────

const FACTORS = new Set<unknown>(['pwd', 'otp', 'hwk', 'swk'] satisfies Factor[])

/** A bearer token's or session's record with its factors, when it has any besides the password alone. */
export function withFactors<R extends TransferRecord & { kind: 'bearer_token' | 'session' }> (r: R, factors: readonly Factor[] | undefined): R {
  if (factors !== undefined) r.factors = factors
  return r
}

/** A session's record with its provider's mark, when it was made through one. */
export function withSso<R extends TransferRecord & { kind: 'session' }> (r: R, sso: SsoMark | null | undefined): R {
  if (sso !== undefined && sso !== null) r.sso = sso
  return r
}

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

class Fields {
  constructor (private readonly o: Obj, private readonly where: string) {}
  #bad (f: string, want: string): never { throw new Error(`${this.where}${f} must be ${want}`) }
  str (f: string): string { const v = this.o[f]; if (typeof v !== 'string' || v === '') this.#bad(f, 'a non-empty string'); return v }
  text (f: string): string { const v = this.o[f]; if (typeof v !== 'string') this.#bad(f, 'a string'); return v }
  strOrNull (f: string): string | null { const v = this.o[f]; if (v !== null && (typeof v !== 'string' || v === '')) this.#bad(f, 'a non-empty string or null'); return v }
  optStr (f: string): void { if (this.o[f] !== undefined) this.str(f) }
  bool (f: string): boolean { const v = this.o[f]; if (typeof v !== 'boolean') this.#bad(f, 'true or false'); return v }
  ms (f: string): number { const v = this.o[f]; if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) this.#bad(f, 'a time in epoch ms'); return v }
  obj (f: string): Obj { const v = this.o[f]; if (!isObj(v)) this.#bad(f, 'an object'); return v }
  factors (f: string): void {
    const v = this.o[f]
    if (v !== undefined && (!Array.isArray(v) || v.length === 0 || !v.every((x) => FACTORS.has(x)))) this.#bad(f, `absent or a non-empty list of ${[...FACTORS].join(', ')}`)
  }

  limit (f: string): void {
    const v = this.o[f]
    if (v === undefined || v === null) return
    if (!isObj(v) || !Number.isInteger(v.limit) || !Number.isInteger(v.window)) this.#bad(f, 'null or {limit, window}')
  }
}

/** Checks one parsed line against its kind; returns it typed, or throws an Error saying what is wrong. */
function checkRecord (v: unknown): TransferRecord {
  if (!isObj(v)) throw new Error('not a JSON object')
  const kind = v.kind
  if (typeof kind !== 'string' || !KIND_NAMES.has(kind)) throw new Error(`unknown kind ${JSON.stringify(kind)} (one of ${[...KIND_NAMES].join(', ')})`)
  const f = new Fields(v, '')
  switch (kind) {
    case 'org': {
      const o = new Fields(f.obj('org'), 'org.')
      o.str('id'); o.text('name'); o.str('date_created')
      break
    }
    case 'group': {
      const g = new Fields(f.obj('group'), 'group.')
      g.str('id'); g.str('name'); g.strOrNull('org'); g.str('date_created')
      break
    }
    case 'user': {
      const raw = f.obj('user')
      const u = new Fields(raw, 'user.')
      u.str('id'); u.str('username'); u.bool('is_active')
      // the rest as records of any earlier version may have them: checked when present
      const has = (k: string): boolean => raw[k] !== undefined
      if (has('name')) u.text('name')
      if (has('email')) u.text('email')
      if (has('is_superuser')) u.bool('is_superuser')
      if (has('date_joined')) u.str('date_joined')
      if (has('last_login')) u.strOrNull('last_login')
      if (has('default_org')) u.strOrNull('default_org')
      if (has('password_hash')) u.strOrNull('password_hash')
      u.optStr('password_imported'); u.limit('rate_limit')
      // cjson may have written an empty object as [] (Redis)
      const orgs = Array.isArray(raw.orgs) && raw.orgs.length === 0 ? (raw.orgs = {}) : raw.orgs ?? (raw.orgs = {})
      if (!isObj(orgs)) throw new Error('user.orgs must be an object')
      for (const [org, role] of Object.entries(orgs)) if (role !== 'admin' && role !== 'user') throw new Error(`user.orgs.${org} must be admin or user`)
      // memberships by source (local, idp:…); an empty table cjson wrote as [] is none
      if (Array.isArray(raw.groups) && raw.groups.length === 0) delete raw.groups
      if (has('groups')) {
        const groups = raw.groups
        if (!isObj(groups) || !Object.values(groups).every((ids) => Array.isArray(ids) && ids.every((x) => typeof x === 'string' && x !== ''))) {
          throw new Error('user.groups must be an object of source → list of group ids')
        }
      }
      break
    }
    case 'link': {
      const raw = f.obj('link')
      const l = new Fields(raw, 'link.')
      l.str('source'); l.str('subject'); l.str('user_id'); l.str('date_created')
      if (raw.provisioned !== undefined && typeof raw.provisioned !== 'boolean') throw new Error('link.provisioned must be true or false')
      if (raw.orgs !== undefined && (!isObj(raw.orgs) || !Object.values(raw.orgs).every((x) => x === 'admin' || x === 'user'))) {
        throw new Error('link.orgs must be an object of org id → admin or user')
      }
      break
    }
    case 'access_key': {
      const k = new Fields(f.obj('key'), 'key.')
      k.str('id'); k.str('user_id'); k.bool('is_active'); k.str('date_created'); k.str('secret'); k.optStr('date_expired'); k.optStr('date_enabled'); k.limit('rate_limit')
      f.strOrNull('last_used')
      break
    }
    case 'private_token': f.str('user_id'); f.strOrNull('hash'); f.str('sealed'); break
    case 'private_token_lookup': f.str('hash'); f.str('user_id'); break
    case 'private_token_imported': f.str('hash'); break
    case 'bearer_token': f.str('hash'); f.str('user_id'); f.ms('expires'); f.factors('factors'); break
    case 'session': {
      f.str('hash'); f.str('user_id'); f.ms('created'); f.ms('expires'); f.factors('factors')
      const sso = (v as Obj).sso
      if (sso !== undefined && !(isObj(sso) && typeof sso.source === 'string' && sso.source !== '' &&
        Array.isArray(sso.tags) && sso.tags.every((x) => typeof x === 'string' && x !== ''))) {
        throw new Error('sso must be an object of source (a string) and tags (a list of strings)')
      }
      break
    }
    case 'totp': f.str('user_id'); f.str('stored'); break
    case 'recovery_code': f.str('user_id'); f.str('hash'); break
    case 'passkey': {
      const raw = f.obj('passkey')
      const p = new Fields(raw, 'passkey.')
      p.str('id'); p.str('user_id'); p.str('user_handle'); p.str('public_key'); p.text('name'); p.str('created'); p.strOrNull('last_used'); p.bool('backed_up')
      if (!Number.isSafeInteger(raw.counter) || (raw.counter as number) < 0) throw new Error('passkey.counter must be a whole number, 0 or more')
      if (raw.device_type !== 'singleDevice' && raw.device_type !== 'multiDevice') throw new Error('passkey.device_type must be singleDevice or multiDevice')
      if (!Array.isArray(raw.transports) || !raw.transports.every((x) => typeof x === 'string')) throw new Error('passkey.transports must be a list of strings')
      break
    }
    case 'signing_keys': {
      const s = f.obj('set')
      if (!Number.isSafeInteger(s.rev) || (s.rev as number) < 1 || !Array.isArray(s.keys)) throw new Error('set must be {rev (at least 1), keys: [...]}')
      s.keys.forEach((k, i) => {
        if (!isObj(k)) throw new Error(`set.keys[${i}] must be an object`)
        const x = new Fields(k, `set.keys[${i}].`)
        x.str('kid'); x.str('alg'); x.ms('created'); x.ms('active_from'); x.obj('public'); x.str('private')
      })
      break
    }
    case 'key_legacy': f.str('check'); f.str('sealed'); break
    case 'audit':
      if (auditId(f.str('id')) === null) throw new Error('id must be a stream id <ms>-<seq>')
      f.text('event')
      break
  }
  return v as unknown as TransferRecord
}

export interface Parsed { header: TransferHeader, records: Array<{ line: number, record: TransferRecord }> }

/**
 * The file's header and records; throws TransferProblem at the first line
 * that is not valid: a missing header or another version of the format, a
 * line that is not JSON, not a record of a known kind, or lacks a field.
 */
export function parseTransfer (text: string): Parsed {
  const lines = text.split('\n')
  if (lines[lines.length - 1] === '') lines.pop()
  let head: unknown
  try { head = JSON.parse(lines[0] ?? '') } catch { head = null }
  if (!isObj(head) || head.format !== FORMAT) throw new TransferProblem(1, `no header: the first line must be {"format":"${FORMAT}","version":${FORMAT_VERSION},…} (a file of \`sidegate store export\`)`)
  if (head.version !== FORMAT_VERSION && head.version !== UNSIGNED_VERSION) throw new TransferProblem(1, `the file is version ${JSON.stringify(head.version)} of the format; this sidegate reads versions ${UNSIGNED_VERSION} and ${FORMAT_VERSION}`)
  if (typeof head.key_check !== 'string' || head.key_check === '') throw new TransferProblem(1, 'the header has no key_check')
  const records: Parsed['records'] = []
  for (let i = 1; i < lines.length; i++) {
    const line = i + 1
    if (lines[i].trim() === '') continue
    let v: unknown
    try { v = JSON.parse(lines[i]) } catch (err) { throw new TransferProblem(line, `not JSON (${(err as Error).message})`) }
    try { records.push({ line, record: checkRecord(v) }) } catch (err) {
      throw new TransferProblem(line, (err as Error).message)
    }
  }
  return { header: head as unknown as TransferHeader, records }
}

/** "3 users, 1 org, …" for the kinds counted (none: "nothing"). */
export function describeCounts (counts: Partial<Record<Kind, number>>): string {
  const parts = KINDS.filter(([k]) => (counts[k] ?? 0) > 0).map(([k, one, many]) => `${counts[k]!} ${counts[k] === 1 ? one : many}`)
  return parts.length === 0 ? 'nothing' : parts.join(', ')
}

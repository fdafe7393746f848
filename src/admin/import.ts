/**
 * `sidegate import --from FILE`: users (with their Django password hashes),
 * orgs, memberships, access keys and private tokens moved over from
 * JumpServer, so existing clients keep their credentials. Three phases:
 *   1. read: every line parsed and checked on its own (JSON lines or CSV);
 *   2. plan: every record checked against the others and against the store,
 *      and classed as created, updated or unchanged; any problem stops the
 *      run here, with every bad line named, before anything is written;
 *   3. write (not with --dry-run): through the store's own methods, so
 *      secrets are sealed and hashed exactly as natively created ones.
 * Every write is idempotent, so a run cut short by a store failure is
 * finished by running the same file again. Every change is audited (`via`
 * import). Changes that give a file's author power over accounts (making a
 * superuser; replacing an existing user's password or private token; a
 * record that names a stored user by another case of its username) are listed
 * apart, and written only when the run allows them (--allow-superuser,
 * --allow-takeover); otherwise nothing is written.
 */
import { randomUUID } from 'node:crypto'
import { parse as parseCsv } from 'csv-parse/sync'
import { credentialShaped, parseLegacyHash, safeEqual } from '../crypto.js'
import { normalizeKeyId } from '../auth/signature.js'
import { ROOT_ORG_ID, SYSTEM_ORG_ID } from '../auth/org.js'
import type { OrgRole, Store, User } from '../store/types.js'
import type { AuditRecord } from '../observability/audit.js'
import { hasControl, NO_CONTROLS } from '../text.js'

export type RecordType = 'org' | 'user' | 'membership' | 'access_key' | 'private_token'
export const RECORD_TYPES: RecordType[] = ['org', 'user', 'membership', 'access_key', 'private_token']
export type ImportFormat = 'jsonl' | 'csv'

/** The fields each record type may have besides `type` (CSV: the columns; a cell left empty is a field not given). */
const FIELDS: Record<RecordType, string[]> = {
  org: ['id', 'name'],
  user: ['id', 'username', 'name', 'email', 'password', 'is_active', 'is_superuser'],
  membership: ['username', 'user_id', 'org', 'org_name', 'role'],
  access_key: ['username', 'user_id', 'id', 'secret', 'is_active'],
  private_token: ['username', 'user_id', 'key']
}

/** Usernames: letters of any script (and their combining marks), digits and @ . + - _, as Django's \w allows. */
export const USERNAME = /^[\p{L}\p{M}\p{N}_.@+-]{1,150}$/u

/**
 * JumpServer's built-in org roles (rbac/builtin.py) as role ids or names, and
 * sidegate's own names. OrgAuditor (…06) has no sidegate equivalent: refused.
 */
const ROLES: Record<string, OrgRole> = {
  admin: 'admin',
  user: 'user',
  orgadmin: 'admin',
  orguser: 'user',
  '00000000-0000-0000-0000-000000000005': 'admin',
  '00000000-0000-0000-0000-000000000007': 'user'
}

/** A private token as the Authorization parser accepts it (TOKEN68), long enough to be a secret. */
const TOKEN = /^[A-Za-z0-9\-._~+/]{20,512}=*$/

type UserRef = { username: string } | { user_id: string }
interface Line { line: number }
interface OrgRec extends Line { id: string, name: string }
interface UserRec extends Line { id?: string, username: string, name?: string, email?: string, password?: string, is_active?: boolean, is_superuser?: boolean }
interface MemberRec extends Line { user: UserRef, org: string, org_name?: string, role: OrgRole }
interface KeyRec extends Line { user: UserRef, id: string, secret: string, is_active: boolean }
interface TokenRec extends Line { user: UserRef, key: string }

export interface Parsed {
  orgs: OrgRec[]
  users: UserRec[]
  memberships: MemberRec[]
  keys: KeyRec[]
  tokens: TokenRec[]
}

export interface Problem { line: number, message: string }

/** The run stopped before writing anything: every problem found, with its line. */
export class ImportProblems extends Error {
  constructor (readonly problems: Problem[]) {
    super(problems.map((p) => p.line > 0 ? `line ${p.line}: ${p.message}` : p.message).join('\n'))
    this.name = 'ImportProblems'
  }
}

/** Collecting the problems of one phase; `fail` ends it when any was found. */
class Problems {
  readonly list: Problem[] = []
  add (line: number, message: string): void { this.list.push({ line, message }) }
  fail (): void { if (this.list.length > 0) throw new ImportProblems(this.list.sort((a, b) => a.line - b.line)) }
}

class FieldError extends Error {}

/** One raw record's fields, read with its type's rules. */
class Fields {
  constructor (private readonly raw: Record<string, unknown>, private readonly csv: boolean) {}

  #value (name: string): unknown {
    const v = this.raw[name]
    return v === null || (this.csv && v === '') ? undefined : v
  }

  has (name: string): boolean { return this.#value(name) !== undefined }

  str (name: string, o: { max?: number, required?: boolean } = {}): string | undefined {
    const v = this.#value(name)
    if (v === undefined) {
      if (o.required === true) throw new FieldError(`"${name}" is required`)
      return undefined
    }
    if (typeof v !== 'string') throw new FieldError(`"${name}" must be a string`)
    if (hasControl(v)) throw new FieldError(`"${name}": ${NO_CONTROLS}`)
    if (o.max !== undefined && v.length > o.max) throw new FieldError(`"${name}" has more than ${o.max} characters`)
    return v
  }

  req (name: string, max?: number): string { return this.str(name, { max, required: true })! }

  bool (name: string): boolean | undefined {
    const v = this.#value(name)
    if (v === undefined) return undefined
    // MySQL's JSON_OBJECT and CSV exports give 1/0
    if (v === true || v === 1 || v === 'true' || v === '1' || v === 'True') return true
    if (v === false || v === 0 || v === 'false' || v === '0' || v === 'False') return false
    throw new FieldError(`"${name}" must be true or false (or 1 or 0)`)
  }

  /** A UUID in any case, with or without hyphens (MySQL keeps Django's UUIDs as 32 hex digits) → lowercase, hyphenated. */
  uuid (name: string): string {
    const v = this.req(name, 64)
    const id = normalizeKeyId(v)
    if (id === null) throw new FieldError(`"${name}" must be a UUID, got ${JSON.stringify(v)}`)
    return id
  }

  /** An org's id: not JumpServer's root or system org, which sidegate has as literals (superusers alone act in them). */
  org (name: string): string {
    const id = this.uuid(name)
    if (id === ROOT_ORG_ID || id === SYSTEM_ORG_ID) throw new FieldError(`"${name}": ${id} is JumpServer's ${id === ROOT_ORG_ID ? 'root' : 'system'} org, which sidegate has built in (superusers alone act in it): leave it out`)
    return id
  }

  user (): UserRef {
    const username = this.str('username', { max: 150 })
    const userId = this.has('user_id') ? this.uuid('user_id') : undefined
    if ((username === undefined) === (userId === undefined)) throw new FieldError('give the user by exactly one of "username" and "user_id"')
    return username !== undefined ? { username: username.normalize('NFC') } : { user_id: userId! }
  }
}

function parseRecord (raw: Record<string, unknown>, line: number, csv: boolean, into: Parsed): void {
  const type = raw.type
  if (typeof type !== 'string' || !(RECORD_TYPES as string[]).includes(type)) {
    throw new FieldError(`"type" must be one of ${RECORD_TYPES.join(', ')}, got ${JSON.stringify(type ?? null)}`)
  }
  const t = type as RecordType
  const f = new Fields(raw, csv)
  const extra = Object.keys(raw).filter((k) => k !== 'type' && !FIELDS[t].includes(k) && f.has(k))
  if (extra.length > 0) throw new FieldError(`a ${t} record has no field ${extra.map((k) => JSON.stringify(k)).join(', ')} (its fields: ${FIELDS[t].join(', ')})`)
  switch (t) {
    case 'org': {
      const name = f.req('name', 128).trim()
      if (name === '') throw new FieldError('"name" must not be empty')
      into.orgs.push({ line, id: f.org('id'), name })
      return
    }
    case 'user': {
      const username = f.req('username', 150).normalize('NFC')
      if (!USERNAME.test(username)) throw new FieldError('"username": 1 to 150 letters (any script), digits and @ . + - _')
      const email = f.str('email', { max: 254 })
      if (email !== undefined && email !== '' && !email.includes('@')) throw new FieldError('"email" must be an address (or empty)')
      let password = f.str('password', { max: 512 })
      // Django's unusable passwords ("!…": SSO, LDAP users) and empty ones: no password
      if (password === '' || password?.startsWith('!') === true) password = undefined
      if (password !== undefined) {
        const h = parseLegacyHash(password)
        if (typeof h === 'string') throw new FieldError(`"password": ${h}`)
      }
      into.users.push({ line, id: f.has('id') ? f.uuid('id') : undefined, username, name: f.str('name', { max: 128 }), email, password, is_active: f.bool('is_active'), is_superuser: f.bool('is_superuser') })
      return
    }
    case 'membership': {
      const roleName = f.req('role', 64)
      const role = ROLES[(normalizeKeyId(roleName) ?? roleName).toLowerCase()]
      if (role === undefined) throw new FieldError(`"role" must be admin or user (or JumpServer's OrgAdmin or OrgUser, by name or id), got ${JSON.stringify(roleName)}`)
      const orgName = f.str('org_name', { max: 128 })?.trim()
      into.memberships.push({ line, user: f.user(), org: f.org('org'), org_name: orgName === '' ? undefined : orgName, role })
      return
    }
    case 'access_key': {
      const secret = f.req('secret', 256)
      if (secret.length < 16 || /\s/.test(secret)) throw new FieldError('"secret" must be at least 16 characters without spaces (JumpServer\'s are UUIDs)')
      // JumpServer signs with str(uuid): lowercase and hyphenated, whatever form the database export gave
      into.keys.push({ line, user: f.user(), id: f.uuid('id'), secret: normalizeKeyId(secret) ?? secret, is_active: f.bool('is_active') ?? true })
      return
    }
    case 'private_token': {
      const key = f.req('key', 512)
      if (!TOKEN.test(key)) throw new FieldError('"key" must be 20 to 512 letters, digits and - . _ ~ + / (JumpServer\'s are 40 hex digits)')
      if (credentialShaped(key)) throw new FieldError('"key" has the shape of a token sidegate makes (44 characters of A-Z a-z 0-9 _ -), which it checks by their tag alone: not importable')
      into.tokens.push({ line, user: f.user(), key })
    }
  }
}

/** Reads every record; throws ImportProblems naming every bad line (or the file's CSV syntax error). */
export function parseImport (text: string, format: ImportFormat): Parsed {
  const out: Parsed = { orgs: [], users: [], memberships: [], keys: [], tokens: [] }
  const problems = new Problems()
  const each = (raw: unknown, line: number, csv: boolean): void => {
    try {
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new FieldError('a record must be a JSON object')
      parseRecord(raw as Record<string, unknown>, line, csv, out)
    } catch (err) {
      if (!(err instanceof FieldError)) throw err
      problems.add(line, err.message)
    }
  }
  if (format === 'jsonl') {
    text.replace(/^\uFEFF/, '').split('\n').forEach((l, i) => {
      if (l.trim() === '') return
      let raw: unknown
      // not the parser's message: it quotes the line, which may hold a secret
      try { raw = JSON.parse(l) } catch { problems.add(i + 1, 'not JSON (JSON lines: one object per line)'); return }
      each(raw, i + 1, false)
    })
  } else {
    let rows: Array<{ record: Record<string, string>, info: { lines: number } }>
    try {
      rows = parseCsv(text, { bom: true, columns: true, skip_empty_lines: true, info: true, trim: true }) as typeof rows
    } catch (err) {
      // its code, not its message: that may quote a field, which may hold a secret
      const e = err as Error & { lines?: number, code?: string }
      throw new ImportProblems([{ line: e.lines ?? 0, message: `not CSV (${e.code ?? 'unreadable'}): a header row, then one record per row` }])
    }
    for (const { record, info } of rows) each(record, info.lines, true)
  }
  problems.fail()
  return out
}

export type Action = 'created' | 'updated' | 'unchanged'
export type Counts = Record<RecordType, Record<Action, number>>

/** What a run found and did: per type, how many records were (or with --dry-run would be) created, updated or left unchanged. */
export interface Summary {
  counts: Counts
  /** things worth a line that are not errors, with their line */
  notes: Problem[]
  /** the changes that needed (or, in a dry run, would need) an --allow-… flag */
  privileged: Privileged[]
}

/** superuser: makes a superuser. takeover: replaces an existing user's password or private token, or names a stored user by another case of its username. */
export type PrivilegeKind = 'superuser' | 'takeover'
export const PRIVILEGE_FLAGS: Record<PrivilegeKind, string> = { superuser: '--allow-superuser', takeover: '--allow-takeover' }
export interface Privileged extends Problem { kind: PrivilegeKind }

/** Privileged changes the run did not allow: nothing was written. */
export class PrivilegedRefused extends Error {
  constructor (readonly refused: Privileged[]) {
    super(refused.map((p) => `line ${p.line}: ${p.message} (${PRIVILEGE_FLAGS[p.kind]})`).join('\n'))
    this.name = 'PrivilegedRefused'
  }
}

/** An audit event of the import (src/observability/audit.ts; the command line's Auditor adds the operator). */
export type ImportAudit = (r: AuditRecord) => void

interface Step { type: RecordType, action: Action, write: () => Promise<void> }

/**
 * Checks every record against the others and against the store and returns
 * what to write; throws ImportProblems (nothing written) when any record is
 * wrong or conflicts with the store.
 */
export async function planImport (store: Store, p: Parsed, audit: ImportAudit = () => {}): Promise<{ steps: Step[], notes: Problem[], privileged: Privileged[] }> {
  const problems = new Problems()
  const notes: Problem[] = []
  const privileged: Privileged[] = []
  const steps: Step[] = []
  const step = (type: RecordType, action: Action, write: () => Promise<void> = async () => {}): void => { steps.push({ type, action, write }) }
  const flag = (line: number, kind: PrivilegeKind, message: string): void => { privileged.push({ line, kind, message }) }
  const via = 'import'
  /** a stored user named by another case of its username: a takeover */
  const otherCase = (line: number, given: string, stored: User): void => {
    if (given !== stored.username) flag(line, 'takeover', `"${given}" names the existing user "${stored.username}" (usernames match whatever their case)`)
  }

  // orgs
  const orgs = new Map<string, OrgRec>()
  for (const o of p.orgs) {
    const dup = orgs.get(o.id)
    if (dup !== undefined) { problems.add(o.line, `org ${o.id} is also on line ${dup.line}`); continue }
    orgs.set(o.id, o)
    const have = await store.getOrg(o.id)
    if (have === null) step('org', 'created', async () => { await createOrg(store, o.name, o.id); audit({ event: 'org.created', org: o.id, via }) })
    else {
      if (have.name !== o.name) notes.push({ line: o.line, message: `org ${o.id} exists as "${have.name}": its name is kept` })
      step('org', 'unchanged')
    }
  }

  // users: by username; the file's user_id refs resolve through the file's ids, then the store's
  const byName = new Map<string, { rec: UserRec, id: string, existing: User | null }>()
  const fileIds = new Map<string, string>()
  for (const u of p.users) {
    const lower = u.username.toLowerCase()
    const dup = byName.get(lower)
    if (dup !== undefined) { problems.add(u.line, `user ${u.username} is also on line ${dup.rec.line}`); continue }
    if (u.id !== undefined && fileIds.has(u.id)) { problems.add(u.line, `user id ${u.id} is also on line ${byName.get(fileIds.get(u.id)!)!.rec.line}`); continue }
    const existing = await store.getUserByUsername(u.username)
    if (existing !== null) otherCase(u.line, u.username, existing)
    let id = existing?.id ?? u.id ?? randomUUID()
    if (existing === null && u.id !== undefined) {
      const holder = await store.getUser(u.id)
      if (holder !== null) { problems.add(u.line, `user id ${u.id} belongs to the user ${holder.username} in the store`); continue }
    }
    if (existing !== null && u.id !== undefined && existing.id !== u.id) {
      notes.push({ line: u.line, message: `user ${u.username} exists with id ${existing.id}: records naming user_id ${u.id} apply to it` })
    }
    id = id.toLowerCase()
    byName.set(lower, { rec: u, id, existing })
    if (u.id !== undefined) fileIds.set(u.id, lower)
    if (existing === null) {
      if (u.is_superuser === true) flag(u.line, 'superuser', `creates ${u.username} as a superuser`)
      step('user', 'created', async () => {
        const made = await store.createUser({ id, username: u.username, name: u.name, email: u.email, password: null, password_hash: u.password, superuser: u.is_superuser === true })
        audit({ event: 'user.created', user: made, superuser: made.is_superuser, via })
        if (u.is_active === false) { await store.setUserActive(id, false); audit({ event: 'user.disabled', user: made, via }) }
      })
      continue
    }
    const fields: Partial<Pick<User, 'name' | 'email' | 'is_superuser'>> = {}
    if (u.name !== undefined && u.name !== existing.name) fields.name = u.name
    if (u.email !== undefined && u.email !== existing.email) fields.email = u.email
    if (u.is_superuser !== undefined && u.is_superuser !== existing.is_superuser) fields.is_superuser = u.is_superuser
    const active = u.is_active !== undefined && u.is_active !== existing.is_active ? u.is_active : undefined
    const password = u.password !== undefined && !(await store.isImportedPasswordHash(id, u.password)) ? u.password : undefined
    if (Object.keys(fields).length === 0 && active === undefined && password === undefined) { step('user', 'unchanged'); continue }
    if (fields.is_superuser === true) flag(u.line, 'superuser', `makes the existing user ${existing.username} a superuser`)
    if (password !== undefined) flag(u.line, 'takeover', `replaces the password of the existing user ${existing.username}`)
    const who = { id, username: existing.username }
    step('user', 'updated', async () => {
      if (Object.keys(fields).length > 0) {
        await store.setUserFields(id, fields)
        audit({ event: 'user.updated', user: who, superuser: fields.is_superuser ?? existing.is_superuser, via })
      }
      if (active !== undefined) { await store.setUserActive(id, active); audit({ event: active ? 'user.enabled' : 'user.disabled', user: who, via }) }
      if (password !== undefined) { await store.setLegacyPasswordHash(id, password); audit({ event: 'password.changed', user: who, via }) }
    })
  }

  /** The user a record names (in the file or the store), or null with a problem added. */
  const resolve = async (ref: UserRef, line: number): Promise<{ id: string, username: string, user: User | null } | null> => {
    const lower = 'username' in ref ? ref.username.toLowerCase() : fileIds.get(ref.user_id)
    const inFile = lower === undefined ? undefined : byName.get(lower)
    if (inFile !== undefined) {
      if (inFile.existing !== null && 'username' in ref) otherCase(line, ref.username, inFile.existing)
      return { id: inFile.id, username: inFile.existing?.username ?? inFile.rec.username, user: inFile.existing }
    }
    const user = 'username' in ref ? await store.getUserByUsername(ref.username) : await store.getUser(ref.user_id)
    if (user !== null && 'username' in ref) otherCase(line, ref.username, user)
    if (user !== null) return { id: user.id, username: user.username, user }
    problems.add(line, `no user ${'username' in ref ? ref.username : `with id ${ref.user_id}`} in this file or in the store`)
    return null
  }

  // memberships: an org missing from the file and the store is created when the record names it
  const members = new Map<string, number>()
  const newOrgs = new Set<string>()
  for (const m of p.memberships) {
    const who = await resolve(m.user, m.line)
    if (who === null) continue
    const k = `${who.id} ${m.org}`
    if (members.has(k)) { problems.add(m.line, `the same membership is also on line ${members.get(k)!}`); continue }
    members.set(k, m.line)
    if (!orgs.has(m.org) && !newOrgs.has(m.org) && (await store.getOrg(m.org)) === null) {
      if (m.org_name === undefined) { problems.add(m.line, `org ${m.org} is neither in this file nor in the store: add an org record or "org_name"`); continue }
      newOrgs.add(m.org)
      const name = m.org_name
      steps.unshift({ type: 'org', action: 'created', write: async () => { await createOrg(store, name, m.org); audit({ event: 'org.created', org: m.org, via }) } })
    }
    const had = who.user?.orgs[m.org]
    if (had === m.role) { step('membership', 'unchanged'); continue }
    step('membership', had === undefined ? 'created' : 'updated', async () => {
      await store.setMembership(who.id, m.org, m.role)
      audit({ event: 'membership.changed', user: { id: who.id, username: who.username }, org: m.org, role: m.role, via })
    })
  }

  // access keys: the same id, owner and secret is unchanged; the same id otherwise is a conflict
  const keyLines = new Map<string, number>()
  for (const k of p.keys) {
    const who = await resolve(k.user, k.line)
    if (who === null) continue
    if (keyLines.has(k.id)) { problems.add(k.line, `access key ${k.id} is also on line ${keyLines.get(k.id)!}`); continue }
    keyLines.set(k.id, k.line)
    const have = await store.getAccessKey(k.id)
    if (have === null) {
      step('access_key', 'created', async () => {
        if (!(await store.importAccessKey(who.id, { id: k.id, secret: k.secret, is_active: k.is_active }))) {
          throw new Error(`line ${k.line}: access key ${k.id} was created meanwhile (or is unreadable): run the import again to see why`)
        }
        audit({ event: 'key.created', user: { id: who.id, username: who.username }, keyId: k.id, via })
        if (!k.is_active) audit({ event: 'key.disabled', user: { id: who.id, username: who.username }, keyId: k.id, via })
      })
    } else if (have.key.user_id !== who.id) {
      problems.add(k.line, `access key ${k.id} exists and belongs to another user`)
    } else if (!safeEqual(have.secret, k.secret)) {
      problems.add(k.line, `access key ${k.id} exists with another secret (\`sidegate key revoke ${k.id}\` first to replace it)`)
    } else if (have.key.is_active !== k.is_active) {
      step('access_key', 'updated', async () => {
        await store.setAccessKeyActive(k.id, k.is_active)
        audit({ event: k.is_active ? 'key.enabled' : 'key.disabled', user: { id: who.id, username: who.username }, keyId: k.id, via })
      })
    } else step('access_key', 'unchanged')
  }

  // private tokens: one per user; a user's other token is replaced
  const tokenUsers = new Map<string, number>()
  const tokenKeys = new Map<string, number>()
  for (const t of p.tokens) {
    const who = await resolve(t.user, t.line)
    if (who === null) continue
    if (tokenUsers.has(who.id)) { problems.add(t.line, `this user's private token is also on line ${tokenUsers.get(who.id)!}`); continue }
    if (tokenKeys.has(t.key)) { problems.add(t.line, `the same private token is also on line ${tokenKeys.get(t.key)!}`); continue }
    tokenUsers.set(who.id, t.line)
    tokenKeys.set(t.key, t.line)
    const owner = await store.userIdForPrivateToken(t.key)
    if (owner !== null && owner !== who.id) { problems.add(t.line, 'this private token belongs to another user in the store'); continue }
    if (owner === who.id) { step('private_token', 'unchanged'); continue }
    const had = who.user === null ? null : await store.readPrivateToken(who.id)
    if (had !== null) flag(t.line, 'takeover', `replaces the private token of the existing user ${who.username}`)
    step('private_token', had === null ? 'created' : 'updated', async () => {
      await store.importPrivateToken(who.id, t.key)
      audit({ event: 'private_token.created', user: { id: who.id, username: who.username }, via })
    })
  }

  problems.fail()
  return { steps, notes, privileged: privileged.sort((a, b) => a.line - b.line) }
}

async function createOrg (store: Store, name: string, id: string): Promise<void> {
  // a rerun after a partial write, or another replica's Default org: already there is fine
  if ((await store.getOrg(id)) === null) await store.createOrg(name, id)
}

/**
 * Plans and (unless `dryRun`) writes, in order: orgs, users, memberships,
 * access keys, private tokens, auditing each change. A privileged change of a
 * kind not in `allow` refuses the whole run (PrivilegedRefused) before any write.
 */
export async function runImport (store: Store, p: Parsed, dryRun: boolean, o: { allow?: ReadonlySet<PrivilegeKind>, audit?: ImportAudit } = {}): Promise<Summary> {
  const { steps, notes, privileged } = await planImport(store, p, o.audit)
  const counts = Object.fromEntries(RECORD_TYPES.map((t) => [t, { created: 0, updated: 0, unchanged: 0 }])) as Counts
  for (const s of steps) counts[s.type][s.action]++
  const refused = privileged.filter((x) => o.allow?.has(x.kind) !== true)
  if (!dryRun && refused.length > 0) throw new PrivilegedRefused(refused)
  if (!dryRun) {
    const order = (s: Step): number => RECORD_TYPES.indexOf(s.type)
    for (const s of [...steps].sort((a, b) => order(a) - order(b))) await s.write()
  }
  return { counts, notes, privileged }
}

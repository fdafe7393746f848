/**
 * `sidegate import`, phase 1 (./import.ts): every line of the file parsed and
 * checked on its own, JSON lines or CSV, each problem named by its line.
 */
import { parse as parseCsv } from 'csv-parse/sync'
import { credentialShaped, parseLegacyHash } from '../crypto.js'
import { normalizeKeyId } from '../auth/signature.js'
import { ROOT_ORG_ID, SYSTEM_ORG_ID } from '../auth/org.js'
import type { AuditRecord } from '../observability/audit.js'
import type { OrgRole } from '../store/types.js'
import { checkGroupName } from '../store/policy/groups.js'
import { hasControl, NO_CONTROLS } from '../text.js'

export type RecordType = 'org' | 'user' | 'membership' | 'group' | 'group_member' | 'access_key' | 'private_token'
/** Also the order the records are written in: a group after its org, a group's member after both. */
export const RECORD_TYPES: RecordType[] = ['org', 'user', 'membership', 'group', 'group_member', 'access_key', 'private_token']
export type ImportFormat = 'jsonl' | 'csv'
export type Action = 'created' | 'updated' | 'unchanged'
/** An audit event of the import (src/observability/audit.ts; the command line's Auditor adds the operator). */
export type ImportAudit = (r: AuditRecord) => void

/** The fields each record type may have besides `type` (CSV: the columns; a cell left empty is a field not given). */
const FIELDS: Record<RecordType, string[]> = {
  org: ['id', 'name'],
  user: ['id', 'username', 'name', 'email', 'password', 'is_active', 'is_superuser'],
  membership: ['username', 'user_id', 'org', 'org_name', 'role'],
  group: ['id', 'name', 'org'],
  group_member: ['username', 'user_id', 'group'],
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

export type UserRef = { username: string } | { user_id: string }
interface Line { line: number }
export interface OrgRec extends Line { id: string, name: string }
export interface UserRec extends Line {
  id?: string,
  username: string,
  name?: string,
  email?: string,
  password?: string,
  is_active?: boolean,
  is_superuser?: boolean
}
export interface MemberRec extends Line { user: UserRef, org: string, org_name?: string, role: OrgRole }
/** JumpServer's users_usergroup row: `org` its org_id (null: a global group, which JumpServer has not) */
export interface GroupRec extends Line { id: string, name: string, org: string | null }
/** A users_user_groups row (user_id, usergroup_id): a membership of source `local` */
export interface GroupMemberRec extends Line { user: UserRef, group: string }
export interface KeyRec extends Line { user: UserRef, id: string, secret: string, is_active: boolean }
export interface TokenRec extends Line { user: UserRef, key: string }

export interface Parsed {
  orgs: OrgRec[]
  users: UserRec[]
  memberships: MemberRec[]
  groups: GroupRec[]
  groupMembers: GroupMemberRec[]
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
export class Problems {
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

  /**
   * A UUID in any case, with or without hyphens (MySQL keeps Django's UUIDs as 32 hex digits) → lowercase, hyphenated.
   */
  uuid (name: string): string {
    const v = this.req(name, 64)
    const id = normalizeKeyId(v)
    if (id === null) throw new FieldError(`"${name}" must be a UUID, got ${JSON.stringify(v)}`)
    return id
  }

  /**
   * An org's id: not JumpServer's root or system org, which sidegate has as literals (superusers alone act in them).
   */
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
      into.users.push({
        line,
        id: f.has('id') ? f.uuid('id') : undefined,
        username,
        name: f.str('name', { max: 128 }),
        email,
        password,
        is_active: f.bool('is_active'),
        is_superuser: f.bool('is_superuser')
      })
      return
    }
    case 'membership': {
      const roleName = f.req('role', 64)
      const role = ROLES[(normalizeKeyId(roleName) ?? roleName).toLowerCase()]
      if (role === undefined) throw new FieldError(`"role" must be admin or user (or JumpServer's OrgAdmin or OrgUser, by name or id), got ${JSON.stringify(roleName)}`)
      const orgName = f.str('org_name', { max: 128 })?.trim()
      into.memberships.push({
        line,
        user: f.user(),
        org: f.org('org'),
        org_name: orgName === '' ? undefined : orgName,
        role
      })
      return
    }
    case 'group': {
      // as org names are: the surrounding whitespace of a database's cell is not part of the name
      const name = f.req('name', 128).trim()
      try { checkGroupName(name) } catch (err) { throw new FieldError(`"name": ${(err as Error).message}`) }
      into.groups.push({ line, id: f.uuid('id'), name, org: f.has('org') ? f.org('org') : null })
      return
    }
    case 'group_member':
      into.groupMembers.push({ line, user: f.user(), group: f.uuid('group') })
      return
    case 'access_key': {
      const secret = f.req('secret', 256)
      if (secret.length < 16 || /\s/.test(secret)) throw new FieldError('"secret" must be at least 16 characters without spaces (JumpServer\'s are UUIDs)')
      // JumpServer signs with str(uuid): lowercase and hyphenated, whatever form the database export gave
      into.keys.push({
        line,
        user: f.user(),
        id: f.uuid('id'),
        secret: normalizeKeyId(secret) ?? secret,
        is_active: f.bool('is_active') ?? true
      })
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
  const out: Parsed = { orgs: [], users: [], memberships: [], groups: [], groupMembers: [], keys: [], tokens: [] }
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

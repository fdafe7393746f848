/**
 * `sidegate import --from FILE`: users (with their Django password hashes),
 * orgs, memberships, user groups, access keys and private tokens moved over from
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
import { safeEqual } from '../crypto.js'
import type { Store, User } from '../store/types.js'
import { planGroups } from './import-groups.js'
import {
  Problems, RECORD_TYPES, type Action, type ImportAudit, type OrgRec, type Parsed, type Problem, type RecordType,
  type UserRec, type UserRef
} from './import-parse.js'

export {
  ImportProblems, parseImport, RECORD_TYPES, USERNAME,
  type Action, type ImportAudit, type ImportFormat, type Parsed, type Problem, type RecordType
} from './import-parse.js'
export type Counts = Record<RecordType, Record<Action, number>>

/**
 * What a run found and did: per type, how many records were (or
 * with --dry-run would be) created, updated or left unchanged.
 */
export interface Summary {
  counts: Counts
  /** things worth a line that are not errors, with their line */
  notes: Problem[]
  /** the changes that needed (or, in a dry run, would need) an --allow-… flag */
  privileged: Privileged[]
}

/**
 * superuser: makes a superuser. takeover: replaces an existing user's password
 * or private token, or names a stored user by another case of its username.
 */
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

interface Step { type: RecordType, action: Action, write: () => Promise<void> }

/**
 * Checks every record against the others and against the store and returns
 * what to write; throws ImportProblems (nothing written) when any record is
 * wrong or conflicts with the store.
 */
export async function planImport (store: Store, p: Parsed, audit: ImportAudit = () => {}): Promise<{
  steps: Step[],
  notes: Problem[],
  privileged: Privileged[]
}> {
  const problems = new Problems()
  const notes: Problem[] = []
  const privileged: Privileged[] = []
  const steps: Step[] = []
  const step = (
    type: RecordType, action: Action, write: () => Promise<void> = async () => {}
  ): void => { steps.push({ type, action, write }) }
  const flag = (
    line: number, kind: PrivilegeKind, message: string
  ): void => { privileged.push({ line, kind, message }) }
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
    const have = await store.orgs.get(o.id)
    if (have === null) {
      step('org', 'created', async () => {
        await createOrg(store, o.name, o.id); audit({ event: 'org.created', org: o.id, via })
      })
    } else {
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
    const existing = await store.users.byUsername(u.username)
    if (existing !== null) otherCase(u.line, u.username, existing)
    let id = existing?.id ?? u.id ?? randomUUID()
    if (existing === null && u.id !== undefined) {
      const holder = await store.users.get(u.id)
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
        const made = await store.users.create({
          id,
          username: u.username,
          name: u.name,
          email: u.email,
          password: null,
          password_hash: u.password,
          superuser: u.is_superuser === true
        })
        audit({ event: 'user.created', user: made, superuser: made.is_superuser, via })
        if (u.is_active === false) { await store.users.setActive(id, false); audit({ event: 'user.disabled', user: made, via }) }
      })
      continue
    }
    const fields: Partial<Pick<User, 'name' | 'email' | 'is_superuser'>> = {}
    if (u.name !== undefined && u.name !== existing.name) fields.name = u.name
    if (u.email !== undefined && u.email !== existing.email) fields.email = u.email
    if (u.is_superuser !== undefined && u.is_superuser !== existing.is_superuser) fields.is_superuser = u.is_superuser
    const active = u.is_active !== undefined && u.is_active !== existing.is_active ? u.is_active : undefined
    const password = u.password !== undefined && !(await store.passwords.isImported(id, u.password))
      ? u.password
      : undefined
    if (Object.keys(fields).length === 0 && active === undefined && password === undefined) { step('user', 'unchanged'); continue }
    if (fields.is_superuser === true) flag(u.line, 'superuser', `makes the existing user ${existing.username} a superuser`)
    if (password !== undefined) flag(u.line, 'takeover', `replaces the password of the existing user ${existing.username}`)
    const who = { id, username: existing.username }
    step('user', 'updated', async () => {
      if (Object.keys(fields).length > 0) {
        await store.users.setFields(id, fields)
        audit({ event: 'user.updated', user: who, superuser: fields.is_superuser ?? existing.is_superuser, via })
      }
      if (active !== undefined) {
        await store.users.setActive(id, active)
        audit({ event: active ? 'user.enabled' : 'user.disabled', user: who, via })
      }
      if (password !== undefined) {
        await store.passwords.setLegacy(id, password); audit({ event: 'password.changed', user: who, via })
      }
    })
  }

  /** The user a record names (in the file or the store), or null with a problem added. */
  const resolve = async (ref: UserRef, line: number): Promise<{
    id: string,
    username: string,
    user: User | null
  } | null> => {
    const lower = 'username' in ref ? ref.username.toLowerCase() : fileIds.get(ref.user_id)
    const inFile = lower === undefined ? undefined : byName.get(lower)
    if (inFile !== undefined) {
      if (inFile.existing !== null && 'username' in ref) otherCase(line, ref.username, inFile.existing)
      return { id: inFile.id, username: inFile.existing?.username ?? inFile.rec.username, user: inFile.existing }
    }
    const user = 'username' in ref ? await store.users.byUsername(ref.username) : await store.users.get(ref.user_id)
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
    if (!orgs.has(m.org) && !newOrgs.has(m.org) && (await store.orgs.get(m.org)) === null) {
      if (m.org_name === undefined) { problems.add(m.line, `org ${m.org} is neither in this file nor in the store: add an org record or "org_name"`); continue }
      newOrgs.add(m.org)
      const name = m.org_name
      steps.unshift({
        type: 'org',
        action: 'created',
        write: async () => { await createOrg(store, name, m.org); audit({ event: 'org.created', org: m.org, via }) }
      })
    }
    const had = who.user?.orgs[m.org]
    if (had === m.role) { step('membership', 'unchanged'); continue }
    step('membership', had === undefined ? 'created' : 'updated', async () => {
      await store.users.setMembership(who.id, m.org, m.role)
      audit({ event: 'membership.changed', user: { id: who.id, username: who.username }, org: m.org, role: m.role, via })
    })
  }

  // groups and their members (./import-groups.ts)
  const orgKnown = async (id: string): Promise<boolean> =>
    orgs.has(id) || newOrgs.has(id) || (await store.orgs.get(id)) !== null
  await planGroups({ store, problems, notes, audit, step, resolve, orgKnown }, p)

  // access keys: the same id, owner and secret is unchanged; the same id otherwise is a conflict
  const keyLines = new Map<string, number>()
  for (const k of p.keys) {
    const who = await resolve(k.user, k.line)
    if (who === null) continue
    if (keyLines.has(k.id)) { problems.add(k.line, `access key ${k.id} is also on line ${keyLines.get(k.id)!}`); continue }
    keyLines.set(k.id, k.line)
    const have = await store.accessKeys.get(k.id)
    if (have === null) {
      step('access_key', 'created', async () => {
        if (!(await store.accessKeys.import(who.id, { id: k.id, secret: k.secret, is_active: k.is_active }))) {
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
        await store.accessKeys.setActive(k.id, k.is_active)
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
    const owner = await store.privateTokens.userIdFor(t.key)
    if (owner !== null && owner !== who.id) { problems.add(t.line, 'this private token belongs to another user in the store'); continue }
    if (owner === who.id) { step('private_token', 'unchanged'); continue }
    const had = who.user === null ? null : await store.privateTokens.read(who.id)
    if (had !== null) flag(t.line, 'takeover', `replaces the private token of the existing user ${who.username}`)
    step('private_token', had === null ? 'created' : 'updated', async () => {
      await store.privateTokens.import(who.id, t.key)
      audit({ event: 'private_token.created', user: { id: who.id, username: who.username }, via })
    })
  }

  problems.fail()
  return { steps, notes, privileged: privileged.sort((a, b) => a.line - b.line) }
}

async function createOrg (store: Store, name: string, id: string): Promise<void> {
  // a rerun after a partial write, or another replica's Default org: already there is fine
  if ((await store.orgs.get(id)) === null) await store.orgs.create(name, id)
}

/**
 * Plans and (unless `dryRun`) writes, in order: orgs, users, memberships,
 * groups, group members, access keys, private tokens, auditing each change. A privileged change of a
 * kind not in `allow` refuses the whole run (PrivilegedRefused) before any write.
 */
export async function runImport (
  store: Store, p: Parsed, dryRun: boolean, o: { allow?: ReadonlySet<PrivilegeKind>, audit?: ImportAudit } = {}
): Promise<Summary> {
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

/**
 * `sidegate store import`'s plan (./transfer.ts): the parsed records checked
 * against each other and against the target store, and what to write; into a
 * store that holds data (--merge), the records that grant a privilege listed.
 */
import { groupNameKey, type StoredUser } from './ports.js'
import {
  auditAfter, auditId, KINDS, ownerOf, recordId, TransferProblem,
  type Kind, type Parsed, type StoreTransfer, type TransferRecord
} from './transfer.js'

/**
 * superuser: a new superuser; takeover: a credential or second factor
 * of a user already in the store, or keys credentials are checked with.
 */
export type TransferPrivilege = 'superuser' | 'takeover'
export const TRANSFER_PRIVILEGE_FLAGS: Record<TransferPrivilege, string> = { superuser: '--allow-superuser', takeover: '--allow-takeover' }

/** A record that grants a privilege, to be written only with its flag. */
export interface PrivilegedRecord {
  line: number,
  kind: TransferPrivilege,
  record: Kind,
  userId: string | null,
  message: string
}

export interface Plan {
  /** the records to write, in the file's order */
  write: TransferRecord[]
  /** of those, the ones that grant a privilege in a store that holds data (none into an empty store), in line order */
  privileged: PrivilegedRecord[]
  /** per kind: written, and skipped as already in the store (--merge) */
  written: Partial<Record<Kind, number>>
  skipped: Partial<Record<Kind, number>>
  /** bearer tokens and sessions that expired since the export: not written */
  expired: number
}

/**
 * Checks the records against each other and against the target, and says
 * what to write: throws TransferProblem for a duplicate, a record of a user
 * that is neither in the file nor the store, a username another user holds,
 * audit entries out of order. Records already in the store are skipped.
 * `holdsData`: the store already has users or orgs (a --merge): the records
 * to write that make a superuser, give a user already there a credential or a
 * second factor (access key, private token or its lookup entry, session,
 * bearer token, TOTP, recovery code, passkey), or add signing keys or legacy
 * key generations, are listed in `privileged`. (A merge never replaces a
 * stored record, so no password is ever replaced.)
 */
export async function planImport (
  parsed: Parsed, target: StoreTransfer, now: number, holdsData = false
): Promise<Plan> {
  const seen = new Map<string, number>()
  const users = new Map<string, string>()
  const usernames = new Map<string, number>()
  const groupNames = new Map<string, number>()
  const linkSources = new Map<string, number>()
  let lastAudit: [number, number] | null = null
  for (const { line, record: r } of parsed.records) {
    const id = `${r.kind} ${recordId(r)}`
    const first = seen.get(id)
    if (first !== undefined) throw new TransferProblem(line, `${r.kind} ${JSON.stringify(recordId(r))} is already on line ${first}`)
    seen.set(id, line)
    if (r.kind === 'user') {
      const lower = r.user.username.toLowerCase()
      const other = usernames.get(lower)
      if (other !== undefined) throw new TransferProblem(line, `username ${JSON.stringify(r.user.username)} is already on line ${other}`)
      usernames.set(lower, line)
      users.set(r.user.id, lower)
    }
    if (r.kind === 'group') {
      const key = groupNameKey(r.group.org, r.group.name.toLowerCase())
      const other = groupNames.get(key)
      if (other !== undefined) throw new TransferProblem(line, `group name ${JSON.stringify(r.group.name)} is already on line ${other}`)
      groupNames.set(key, line)
    }
    if (r.kind === 'link') {
      const key = `${r.link.user_id} ${r.link.source}`
      const other = linkSources.get(key)
      if (other !== undefined) throw new TransferProblem(line, `user ${r.link.user_id} already has a link of ${r.link.source} on line ${other}`)
      linkSources.set(key, line)
    }
    if (r.kind === 'audit') {
      const at = auditId(r.id)!
      if (lastAudit !== null && !auditAfter(at, lastAudit)) throw new TransferProblem(line, `audit entry ${r.id} is not after the one before it`)
      lastAudit = at
    }
  }
  const exists = await target.exists(parsed.records.map((x) => x.record))
  const inStore = new Set<string>()
  for (const [i, { record: r }] of parsed.records.entries()) if (r.kind === 'user' && exists[i]) inStore.add(r.user.id)
  const plan: Plan = { write: [], privileged: [], written: {}, skipped: {}, expired: 0 }
  const missing = new Map<string, boolean>()
  for (const [i, { line, record: r }] of parsed.records.entries()) {
    const owner = ownerOf(r)
    if (owner !== null && !users.has(owner) && !inStore.has(owner)) {
      if (!missing.has(owner)) missing.set(owner, (await target.exists([userStub(owner)]))[0])
      if (missing.get(owner) !== true) throw new TransferProblem(line, `${r.kind} of user ${owner}, who is neither in the file nor in ${target.where}`)
    }
    if (r.kind === 'user' && !exists[i]) {
      const holder = await target.usernameOwner(users.get(r.user.id)!)
      if (holder !== null && holder !== r.user.id) throw new TransferProblem(line, `username ${JSON.stringify(r.user.username)} belongs to another user (${holder}) in ${target.where}`)
    }
    if (r.kind === 'group' && !exists[i]) {
      const holder = await target.groupNameOwner(groupNameKey(r.group.org, r.group.name.toLowerCase()))
      if (holder !== null && holder !== r.group.id) throw new TransferProblem(line, `group ${JSON.stringify(r.group.name)} belongs to another group (${holder}) in ${target.where}`)
    }
    if (r.kind === 'link' && !exists[i]) {
      const held = await target.linkOf(r.link.user_id, r.link.source)
      if (held !== null) throw new TransferProblem(line, `user ${r.link.user_id} already has a link of ${r.link.source} (${held}) in ${target.where}`)
    }
    if (exists[i]) { plan.skipped[r.kind] = (plan.skipped[r.kind] ?? 0) + 1; continue }
    if ((r.kind === 'bearer_token' || r.kind === 'session') && r.expires <= now) { plan.expired++; continue }
    plan.write.push(r)
    plan.written[r.kind] = (plan.written[r.kind] ?? 0) + 1
    if (!holdsData) continue
    const flag = (kind: TransferPrivilege, userId: string | null, message: string): void => {
      plan.privileged.push({ line, kind, record: r.kind, userId, message })
    }
    if (r.kind === 'user' && r.user.is_superuser === true) flag('superuser', r.user.id, `creates ${r.user.username} (${r.user.id}) as a superuser`)
    // a credential or factor of a user the store holds (skipped
    // in the file, or not in it): written beside what they have
    if (owner !== null && (inStore.has(owner) || (!users.has(owner) && missing.get(owner) === true))) {
      flag('takeover', owner, `adds ${KINDS.find(([k]) => k === r.kind)![1]} ${JSON.stringify(shortId(r))} to user ${owner}, who is already in ${target.where}`)
    }
    if (r.kind === 'signing_keys') flag('takeover', null, 'adds the identity JWT\'s signing keys (whoever holds them signs identity tokens the upstream trusts)')
    if (r.kind === 'key_legacy') flag('takeover', null, `adds the legacy key generation ${r.check} (credentials issued under it are accepted)`)
  }
  return plan
}

/** A record's id as a listing shows it: hashes cut short. */
function shortId (r: TransferRecord): string {
  const id = recordId(r)
  return id.length > 24 ? `${id.slice(0, 12)}…` : id
}

/** A user record that stands for an id only (to ask a store whether it has that user). */
function userStub (id: string): TransferRecord {
  return { kind: 'user', user: { id } as StoredUser }
}

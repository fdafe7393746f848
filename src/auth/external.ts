/**
 * A sign-in vouched for elsewhere (an OIDC provider, an LDAP directory) made a
 * local user's, written once for both. The account is found by its link
 * (source, subject) only, never by a mutable claim. At the first sign-in it is
 * linked by a verified email where the operator allows it, or provisioned as a
 * user of its own: a username a local user holds is never a link, so an account
 * elsewhere cannot take over a local one. Every sign-in then replaces the
 * groups that source gives and the org memberships it granted (an operator's
 * own memberships are left alone). A disabled user is refused whatever the
 * provider says.
 */
import { E, GatewayError, type ErrorCode } from '../errors.js'
import type { AuditContext, AuditRecord } from '../observability/audit.js'
import { USERNAME } from '../admin/import-parse.js'
import { checkGroupName } from '../store/policy/groups.js'
import { sourceOf, type LinkKind } from '../store/policy/links.js'
import type { Link, OrgRole, Store, User } from '../store/types.js'

export interface ExternalIdentity {
  kind: LinkKind
  /** the provider's id in sign_in (corp) */
  source: string
  /** its stable id for the account: OIDC `sub`, the directory entry's id attribute */
  subject: string
  username?: string
  email?: string
  /** the provider says it checked the email (OIDC email_verified; a directory's entry: its operator's word) */
  emailVerified?: boolean
  name?: string
  /** group names the provider sends */
  groups: readonly string[]
}

export interface ExternalPolicy {
  provision: 'create' | 'link' | 'off'
  /** a verified email may link the first sign-in to the one local user that has it */
  matchEmail: boolean
  orgs: ReadonlyArray<{ group: string, org: string, role: 'member' | 'admin' }>
}

export type ExternalResult =
  | { ok: true, user: User, how: 'linked' | 'matched' | 'created' }
  | { ok: false, error: ErrorCode, reason: string }

/** What a sign-in records (an Auditor's `record`), and of which request. */
export interface ExternalAudit { record: (r: AuditRecord) => void, ctx?: AuditContext }

/** Groups taken from one sign-in at most: a provider sending thousands does not make thousands. */
export const MAX_EXTERNAL_GROUPS = 256
/** How long a first sign-in holds its account's lock, and waits for another's. */
const FIRST_LOCK_MS = 10_000
const FIRST_WAIT_MS = 3_000

/** The refusal as a client gets it. */
export function refusal (r: { error: ErrorCode, reason: string }): GatewayError {
  switch (r.error) {
    case 'user_inactive': return E.userInactive()
    case 'sso_not_linked': return E.ssoNotLinked(r.reason)
    default: return E.ssoFailed(r.reason)
  }
}

export async function signInExternal (
  store: Store, id: ExternalIdentity, policy: ExternalPolicy, audit?: ExternalAudit
): Promise<ExternalResult> {
  const source = sourceOf(id.kind, id.source)
  let found = await linked(store, source, id.subject)
  let how: 'linked' | 'matched' | 'created' = 'linked'
  if (found === null) {
    const first = await firstSignIn(store, source, id, policy, audit)
    if (!first.ok) return first
    found = first
    how = first.how
  }
  const { user, link } = found
  if (!user.is_active) return { ok: false, error: 'user_inactive', reason: 'The user is disabled.' }
  await refreshExternal(store, user, link, id, policy, audit)
  const fresh = await store.users.get(user.id)
  return fresh === null ? { ok: false, error: 'sso_failed', reason: 'The user is gone.' } : { ok: true, user: fresh, how }
}

async function linked (store: Store, source: string, subject: string): Promise<{ user: User, link: Link } | null> {
  const link = await store.links.find(source, subject)
  if (link === null) return null
  const user = await store.users.get(link.user_id)
  return user === null ? null : { user, link }
}

type First = { ok: true, user: User, link: Link, how: 'matched' | 'created' } | { ok: false, error: ErrorCode, reason: string }

/** Links or provisions the account, under a lock so that two first sign-ins of it make one user. */
async function firstSignIn (
  store: Store, source: string, id: ExternalIdentity, policy: ExternalPolicy, audit?: ExternalAudit
): Promise<First | ({ ok: true, how: 'linked' } & { user: User, link: Link })> {
  const lock = `first-sign-in:${source} ${id.subject}`
  const until = Date.now() + FIRST_WAIT_MS
  let token = await store.locks.acquire(lock, FIRST_LOCK_MS)
  while (token === null) {
    if (Date.now() > until) return { ok: false, error: 'sso_failed', reason: 'Another sign-in of this account is in progress; try again.' }
    await new Promise((resolve) => setTimeout(resolve, 50))
    const done = await linked(store, source, id.subject)
    if (done !== null) return { ok: true, how: 'linked', ...done }
    token = await store.locks.acquire(lock, FIRST_LOCK_MS)
  }
  try {
    // another replica may have finished it between our read and the lock
    const done = await linked(store, source, id.subject)
    if (done !== null) return { ok: true, how: 'linked', ...done }
    return await linkOrProvision(store, source, id, policy, audit)
  } finally {
    await store.locks.release(lock, token).catch(() => false)
  }
}

async function linkOrProvision (
  store: Store, source: string, id: ExternalIdentity, policy: ExternalPolicy, audit?: ExternalAudit
): Promise<First> {
  const notLinked = (reason: string): First => ({ ok: false, error: 'sso_not_linked', reason })
  if (policy.provision === 'off') return notLinked(`No account here is linked to this ${source} account; an operator links it with \`sidegate user link\`.`)
  const email = id.email?.trim().toLowerCase() ?? ''
  if (policy.matchEmail && id.emailVerified === true && email !== '') {
    const same = (await store.users.list()).filter((u) => u.email.trim().toLowerCase() === email)
    if (same.length === 1) {
      const link = await tryLink(store, same[0].id, source, id.subject, false)
      if (link === null) return notLinked(`The user with this email is linked to another ${source} account.`)
      audit?.record({ event: 'user.linked', ctx: audit.ctx, user: same[0], source, via: 'sign_in', reason: 'matched' })
      return { ok: true, user: same[0], link, how: 'matched' }
    }
    if (same.length > 1) return notLinked('Several users here have this email; an operator links the right one with `sidegate user link`.')
  }
  if (policy.provision === 'link') return notLinked(`No account here is linked to this ${source} account; an operator links it with \`sidegate user link\`.`)
  const base = usernameFrom(id)
  if (base === null) return { ok: false, error: 'sso_failed', reason: 'The provider sent no usable username.' }
  // the provider's name when it is free; a local user's name is never taken over, so another one beside it
  for (const username of [base, `${base.slice(0, 149 - id.source.length)}@${id.source}`]) {
    let user: User
    try {
      user = await store.users.create({ username, password: null, name: id.name ?? '', email: id.email ?? '' })
    } catch (err) {
      if (err instanceof GatewayError && err.code === 'user_exists') continue
      throw err
    }
    audit?.record({ event: 'user.created', ctx: audit.ctx, user, source, via: 'sign_in', superuser: false })
    const link = await tryLink(store, user.id, source, id.subject, true)
    // only a lock lost to its lease gets here: the user made stays, unlinked, without a password
    if (link === null) return { ok: false, error: 'sso_failed', reason: 'Another sign-in of this account linked it meanwhile; try again.' }
    audit?.record({ event: 'user.linked', ctx: audit.ctx, user, source, via: 'sign_in', reason: 'created' })
    return { ok: true, user, link, how: 'created' }
  }
  return notLinked(`The username ${base} is another user's here, and so is ${base}@${id.source}; an operator links the account with \`sidegate user link\`.`)
}

async function tryLink (
  store: Store, userId: string, source: string, subject: string, provisioned: boolean
): Promise<Link | null> {
  try {
    return await store.links.link(userId, source, subject, { provisioned })
  } catch (err) {
    if (err instanceof GatewayError && err.code === 'link_exists') return null
    throw err
  }
}

/**
 * The provider's username as a local one may be written (USERNAME), or null:
 * spaces become dots, what a username cannot hold is dropped.
 */
export function usernameFrom (id: Pick<ExternalIdentity, 'username' | 'email'>): string | null {
  for (const raw of [id.username, id.email?.split('@')[0]]) {
    if (raw === undefined) continue
    const name = raw.normalize('NFC').trim().replace(/\s+/g, '.').replace(/[^\p{L}\p{M}\p{N}_.@+-]/gu, '').slice(0, 120)
    if (USERNAME.test(name)) return name
  }
  return null
}

/** What a sign-in there would change now (ldap sync's dry run says it; a sign-in does it). */
export interface ExternalPlan {
  /** group names the source gives now, and those it no longer gives */
  groups: { add: string[], remove: string[] }
  /** org memberships set (org id → role) and taken back (org ids) */
  orgs: { set: Record<string, OrgRole>, remove: string[] }
  /** the group ids to give the source, and the orgs to record as the source's */
  ids: () => Promise<string[]>
  granted: Record<string, OrgRole>
}

/** The names a provider sends that can be groups here: valid, each once, at most MAX_EXTERNAL_GROUPS. */
function groupNames (groups: readonly string[]): string[] {
  const ok = groups.filter((g) => { try { checkGroupName(g); return true } catch { return false } })
  return [...new Set(ok)].slice(0, MAX_EXTERNAL_GROUPS)
}

/**
 * The plan for these groups. Org memberships: only what this source granted
 * before (link.orgs records it) is changed or taken back; a membership an
 * operator set stays as it is, and is not recorded as the source's.
 */
export async function planExternal (
  store: Store, user: User, link: Link, groups: readonly string[], policy: ExternalPolicy
): Promise<ExternalPlan> {
  const names = groupNames(groups)
  const lower = new Set(names.map((n) => n.toLowerCase()))
  const source = `idp:${link.source}`
  const had = (user.groups ?? []).filter((g) => g.org === null && g.sources.includes(source)).map((g) => g.name)
  const hadLower = new Set(had.map((n) => n.toLowerCase()))
  const wanted: Record<string, OrgRole> = {}
  for (const m of policy.orgs) {
    if (!lower.has(m.group.toLowerCase())) continue
    if (wanted[m.org] !== 'admin') wanted[m.org] = m.role === 'admin' ? 'admin' : 'user'
  }
  const granted = link.orgs ?? {}
  const plan: ExternalPlan = {
    groups: {
      add: names.filter((n) => !hadLower.has(n.toLowerCase())),
      remove: had.filter((n) => !lower.has(n.toLowerCase()))
    },
    orgs: { set: {}, remove: [] },
    ids: async () => await Promise.all(names.map(async (n) => (await store.groups.ensure(n, null)).id)),
    granted: {}
  }
  for (const [org, role] of Object.entries(granted)) {
    if (wanted[org] === undefined && user.orgs[org] === role) plan.orgs.remove.push(org)
  }
  for (const [org, role] of Object.entries(wanted)) {
    const now = user.orgs[org]
    // an operator's own membership (there before this source granted one) is theirs
    if (now !== undefined && granted[org] !== now) continue
    if ((await store.orgs.get(org)) === null) continue
    if (now !== role) plan.orgs.set[org] = role
    plan.granted[org] = role
  }
  return plan
}

/** Groups, org memberships and (for a user it provisioned) name and email, as the provider says now. */
export async function refreshExternal (
  store: Store, user: User, link: Link, id: Pick<ExternalIdentity, 'groups' | 'name' | 'email'>, policy: ExternalPolicy,
  audit?: ExternalAudit
): Promise<ExternalPlan> {
  const plan = await planExternal(store, user, link, id.groups, policy)
  await store.groups.replaceExternal(user.id, `idp:${link.source}`, await plan.ids())
  const set = async (org: string, role: OrgRole | null): Promise<void> => {
    await store.users.setMembership(user.id, org, role)
    audit?.record({ event: 'membership.changed', ctx: audit.ctx, user, org, role: role ?? 'none', source: link.source, via: 'sign_in' })
  }
  for (const org of plan.orgs.remove) await set(org, null)
  for (const [org, role] of Object.entries(plan.orgs.set)) await set(org, role)
  const before = link.orgs ?? {}
  const same = Object.keys(plan.granted).length === Object.keys(before).length &&
    Object.entries(plan.granted).every(([o, r]) => before[o] === r)
  if (!same) await store.links.setOrgs(link, plan.granted)
  if (link.provisioned === true) {
    const fields: { name?: string, email?: string } = {}
    if (id.name !== undefined && id.name !== user.name) fields.name = id.name
    if (id.email !== undefined && id.email !== user.email) fields.email = id.email
    if (Object.keys(fields).length > 0) await store.users.setFields(user.id, fields)
  }
  return plan
}

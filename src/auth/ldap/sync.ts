/**
 * `sidegate ldap sync <id> [--dry-run]`: the groups and org memberships of
 * every user linked to a directory, refreshed as a sign-in there would, for
 * users who only use tokens and keys (they never sign in with the password).
 * Each linked entry is read by its id; one gone or filtered out (a disabled
 * account) loses what the directory gave (its groups, the orgs it granted):
 * the user is not disabled (the operator's call; the output names them).
 */
import type { AuditRecord } from '../../observability/audit.js'
import type { Store } from '../../store/types.js'
import { planExternal, refreshExternal, type ExternalPlan, type ExternalPolicy } from '../external.js'
import type { Directory } from './directory.js'

export interface SyncChange {
  username: string
  /** the entry is gone, or the filter leaves it out */
  gone: boolean
  groups: ExternalPlan['groups']
  orgs: ExternalPlan['orgs']
}

export async function syncDirectory (
  store: Store, d: Directory, o: { dryRun: boolean, audit?: (r: AuditRecord) => void }
): Promise<SyncChange[]> {
  const source = `ldap:${d.id}`
  const c = d.config
  const policy: ExternalPolicy = { provision: c.provision, matchEmail: c.match_email, orgs: c.orgs }
  const out: SyncChange[] = []
  for (const link of await store.links.bySource(source)) {
    const user = await store.users.get(link.user_id)
    if (user === null) continue
    const answer = await d.lookupById(link.subject)
    const e = answer.ok ? answer.entry : null
    const identity = e === null ? { groups: [] } : { groups: e.groups, name: e.name, email: e.email }
    const audit = o.audit === undefined ? undefined : { record: o.audit }
    const plan = o.dryRun
      ? await planExternal(store, user, link, identity.groups, policy)
      : await refreshExternal(store, user, link, identity, policy, audit)
    const { groups, orgs } = plan
    const changed = groups.add.length + groups.remove.length + orgs.remove.length + Object.keys(orgs.set).length > 0
    if (changed || e === null) out.push({ username: user.username, gone: e === null, groups, orgs })
  }
  return out.sort((a, b) => a.username.localeCompare(b.username))
}

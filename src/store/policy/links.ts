/**
 * Links of accounts elsewhere to users: by (source, subject) only. A source is
 * `oidc:<provider id>` or `ldap:<directory id>`; a user has at most one link
 * per source. Links are not cached: only a sign-in through the source reads
 * one, and it reads the backend.
 */
import { E, UsageError } from '../../errors.js'
import { hasControl, NO_CONTROLS } from '../../text.js'
import type { Link, OrgRole } from '../model.js'
import { isoNow, type Context } from './context.js'

/** A provider's id as the config takes it (sign_in.oidc[].id, sign_in.ldap[].id). */
export const PROVIDER_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/
const SOURCE = /^(oidc|ldap):[a-z0-9][a-z0-9_-]{0,63}$/
export const MAX_SUBJECT = 1024

export type LinkKind = 'oidc' | 'ldap'

/** The source of a provider: `oidc:corp`. */
export const sourceOf = (kind: LinkKind, id: string): string => `${kind}:${id}`

function check (source: string, subject: string): void {
  if (!SOURCE.test(source)) throw new UsageError(`link source must be oidc:<id> or ldap:<id>, got ${JSON.stringify(source.slice(0, 80))}`)
  if (subject.length === 0 || subject.length > MAX_SUBJECT) throw new UsageError(`link subject: 1 to ${MAX_SUBJECT} characters`)
  if (hasControl(subject)) throw new UsageError(`link subject: ${NO_CONTROLS}`)
}

export class Links {
  constructor (private readonly c: Context) {}

  /** Links the account to the user; 409 link_exists (the account, or a link of that source), 404 user_not_found. */
  async link (userId: string, source: string, subject: string, o: { provisioned?: boolean } = {}): Promise<Link> {
    check(source, subject)
    if ((await this.c.storage.users.get(userId)) === null) throw E.userNotFound()
    const link: Link = { source, subject, user_id: userId, date_created: isoNow(this.c) }
    if (o.provisioned === true) link.provisioned = true
    const done = await this.c.storage.links.insert(link)
    if (done === 'subject_taken') throw E.linkExists(`This ${source} account is linked to another user already.`)
    if (done === 'source_taken') throw E.linkExists(`The user has a link of ${source} already; unlink it first.`)
    return link
  }

  /** Removes the user's link of `source`; 404 link_not_found. */
  async unlink (userId: string, source: string): Promise<Link> {
    const link = (await this.list(userId)).find((l) => l.source === source)
    if (link === undefined || !(await this.c.storage.links.remove(link.source, link.subject))) throw E.linkNotFound()
    return link
  }

  /** The link of this account, or null. */
  async find (source: string, subject: string): Promise<Link | null> {
    return await this.c.storage.links.get(source, subject)
  }

  /** Every link of one source (ldap sync), in no particular order. */
  async bySource (source: string): Promise<Link[]> {
    return (await this.c.storage.links.all()).filter((l) => l.source === source)
  }

  /** The user's links, by source. */
  async list (userId: string): Promise<Link[]> {
    return (await this.c.storage.links.list(userId)).sort((a, b) => a.source.localeCompare(b.source))
  }

  /** Records the orgs the link's source granted (what its next sign-in may take back). */
  async setOrgs (link: Link, orgs: Record<string, OrgRole>): Promise<void> {
    await this.c.storage.links.setOrgs(link.source, link.subject, orgs)
  }
}

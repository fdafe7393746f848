/**
 * The directories of sign_in.ldap as the password check sees them. A typed
 * name `corp\alice` or `alice@corp` (corp: a directory's id) asks that
 * directory alone for `alice`; any other name asks each directory in the
 * configured order, and the first that has an entry for it decides (a wrong
 * password there is a failure: one password is not tried against several
 * directories). A directory's yes is then a user by its link (src/auth/external.ts).
 */
import type { Logger } from 'pino'
import type { SignInConfig } from '../../config/sign-in.js'
import { E } from '../../errors.js'
import type { AuditContext, AuditRecord, Auditor } from '../../observability/audit.js'
import type { Store, User } from '../../store/types.js'
import { signInExternal } from '../external.js'
import { Directory } from './directory.js'
import { DirectoryUnavailable } from './servers.js'

export { DirectoryUnavailable } from './servers.js'

/** Which directories a typed name goes to, and the name they search. */
export interface Route { directories: Directory[], name: string }

export class Directories {
  readonly list: Directory[]
  readonly order: SignInConfig['password_order']

  constructor (
    config: SignInConfig, log: Logger, private readonly store: Store, private readonly audit: Auditor | null
  ) {
    this.list = config.ldap.map((d) => new Directory(d, log))
    this.order = config.password_order
  }

  route (raw: string): Route {
    // as a directory compares names (caseIgnoreMatch: case, and runs of spaces, ignored), so the
    // lockout, which counts this name lowercased, sees one name where the directory sees one
    const typed = raw.normalize('NFC').trim().replace(/\s+/g, ' ')
    const slash = typed.indexOf('\\')
    if (slash > 0) {
      const d = this.list.find((x) => x.id === typed.slice(0, slash).toLowerCase())
      if (d !== undefined) return { directories: [d], name: typed.slice(slash + 1) }
    }
    const at = typed.lastIndexOf('@')
    if (at > 0) {
      const d = this.list.find((x) => x.id === typed.slice(at + 1).toLowerCase())
      if (d !== undefined) return { directories: [d], name: typed.slice(0, at) }
    }
    return { directories: this.list, name: typed }
  }

  /**
   * The user a directory vouches for, or null (no directory has the name, or
   * the password is wrong, or the user is disabled: one answer). Throws 403
   * sso_not_linked for an entry that may not sign in here, DirectoryUnavailable
   * when no directory decided and one could not be asked.
   */
  async signIn (typed: string, password: string, ctx: AuditContext, via: string): Promise<User | null> {
    const { directories, name } = this.route(typed)
    let unavailable: DirectoryUnavailable | null = null
    for (const d of directories) {
      let answer
      try {
        answer = await d.authenticate(name, password)
      } catch (err) {
        if (!(err instanceof DirectoryUnavailable)) throw err
        unavailable ??= err
        continue
      }
      const source = `ldap:${d.id}`
      if (!answer.ok && answer.why === 'no_entry') continue
      if (!answer.ok) {
        this.audit?.record({ event: 'sso.refused', ctx, username: typed, source, via, reason: answer.why === 'bad_password' ? 'authentication_failed' : 'sso_failed' })
        return null
      }
      const e = answer.entry
      const c = d.config
      const identity = {
        kind: 'ldap' as const, source: d.id, subject: e.id, username: e.username, email: e.email, emailVerified: true, name: e.name, groups: e.groups
      }
      const audit = this.audit === null ? undefined : { record: (x: AuditRecord) => this.audit!.record(x), ctx }
      const policy = { provision: c.provision, matchEmail: c.match_email, orgs: c.orgs }
      const r = await signInExternal(this.store, identity, policy, audit)
      if (!r.ok) {
        this.audit?.record({ event: 'sso.refused', ctx, username: typed, source, via, reason: r.error })
        if (r.error === 'sso_not_linked') throw E.ssoNotLinked(r.reason)
        return null
      }
      this.audit?.record({ event: 'sso.succeeded', ctx, user: r.user, source, via, authMethod: 'password' })
      return r.user
    }
    if (unavailable !== null) throw unavailable
    return null
  }
}

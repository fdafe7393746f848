/**
 * What every administrative operation runs with, behind both the command line
 * (`sidegate user|org|key|token|limit|session …`, src/cli/admin.ts) and the
 * admin API (/admin/v1/…, src/admin/api.ts): the store, the config, how the
 * caller names its inputs, the audit trail, and the lookups every resource
 * shares. The operations themselves are in their resource's file (./users.ts,
 * ./orgs.ts, …), beside their declarations: the same checks, the same store
 * calls, the same JSON (`--json` prints exactly what the API answers).
 *
 * Bad input is a UsageError (exit 2; 400 bad_request over HTTP), a missing
 * user, key, org or session a UsageError with exit 1 and code not_found or
 * org_not_found (404); the store's own refusals are GatewayErrors (409
 * user_exists, 400 too_many_keys, 503 store_unavailable). Messages name an
 * input as its caller knows it (`Labels`: `--expires` on the command line,
 * `expires` in a JSON body).
 */
import type { AuditRecord } from '../observability/audit.js'
import type { Config } from '../config/index.js'
import { UsageError } from '../errors.js'
import type { Org, Store, User } from '../store/types.js'

export const ADMIN_PREFIX = '/admin/v1/'

/** How the caller names each input, for messages. */
export interface Labels {
  expires: string
  allowIp: string
  name: string
  org: string
  id: string
  /** appended to "no org with id …" */
  orgHint: string
  /** the command that creates a private token, for "has no private token" */
  tokenCreate: (username: string) => string
  tokenRevoke: (username: string) => string
}

export const CLI_LABELS: Labels = {
  expires: '--expires',
  allowIp: '--allow-ip',
  name: '--name',
  org: '--org',
  id: '--id',
  orgHint: ' (see `sidegate org list`)',
  tokenCreate: (u) => `\`sidegate token create ${u}\``,
  tokenRevoke: (u) => `\`sidegate token revoke ${u}\``
}

/** Messages name inputs as the JSON bodies do. */
export const API_LABELS: Labels = {
  expires: 'expires',
  allowIp: 'allow_ips',
  name: 'name',
  org: 'orgs',
  id: 'id',
  orgHint: '',
  tokenCreate: (u) => `POST ${ADMIN_PREFIX}users/${encodeURIComponent(u)}/private-token`,
  tokenRevoke: (u) => `DELETE ${ADMIN_PREFIX}users/${encodeURIComponent(u)}/private-token`
}

export class AdminOps {
  /**
   * `audit`: where each credential event goes (src/observability/audit.ts): the CLI's
   * auditor (actor `cli`), or the admin API's with the request and its
   * superuser (actor that user). Reads that show no secret are not audited.
   */
  constructor (
    readonly store: Store,
    readonly config: Config,
    readonly labels: Labels = CLI_LABELS,
    readonly audit: (r: AuditRecord) => void = () => {}
  ) {}

  async user (username: string): Promise<User> {
    const u = await this.store.users.byUsername(username)
    if (u === null) throw new UsageError(`no user named "${username}"`, 'not_found')
    return u
  }

  async org (id: string): Promise<Org> {
    const org = await this.store.orgs.get(id)
    if (org === null) throw new UsageError(`no org with id ${id}${this.labels.orgHint}`, 'org_not_found')
    return org
  }
}

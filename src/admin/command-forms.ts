/** The command-line form of an admin operation (./operations.ts), and the text helpers its forms share. */
import type { Config } from '../config/index.js'
import { formatPolicy } from '../auth/rate-limit-policy.js'
import { escapeControls } from '../text.js'
import type { AdminOps, KeyJson } from './ops.js'

/** What a command form reads: its positionals, its flags, and the inputs that need the terminal. */
export interface CliInput {
  args: string[]
  flags: { readonly [name: string]: any }
  /** --password-stdin: the password from standard input */
  password: () => Promise<string>
  /** --org ID[:role], each, as given (AdminOps checks both) */
  orgs: () => Array<{ id: string, role: string }>
}

/** An operation's command-line form. */
export interface CliForm {
  /** `sidegate <command>` */
  command: string
  /** of several forms of one command, the first whose `when` holds (absent: always) runs */
  when?: (c: CliInput) => boolean
  /** the positionals, in order: each is a path parameter (or read by `input`) */
  args: string[]
  /** what one positional is, for `expected exactly one …` (default its name) */
  what?: string
  /** the usage error when the positionals do not fit (default from `args`) */
  usage?: string
  /** the body (and query) from the flags; may check before reading stdin */
  input?: (c: CliInput, p: Record<string, string>, ops: AdminOps) => Promise<CliCall> | CliCall
  /** the text it prints (without --json) */
  text: (out: any, config: Config) => string
}

export interface CliCall { body?: Record<string, unknown>, query?: URLSearchParams }

/** `user alice` or `key <id>`: what a rate-limit answer names. */
export function targetOf (r: Record<string, unknown>): string {
  return 'user' in r ? `user ${String(r.user)}` : `key ${String(r.key)}`
}

/** `sidegate key list`: one line a key, never its secret. */
export function keyLines (keys: KeyJson[], now: number): string {
  return keys.map((k) => `${k.id}${k.name === undefined ? '' : `  "${escapeControls(k.name)}"`}  created ${k.date_created}  last used ${k.date_last_used ?? 'never'}` +
    `${k.date_expired === undefined ? '' : `  ${Date.parse(k.date_expired) <= now ? 'EXPIRED' : 'expires'} ${k.date_expired}`}${k.allow_ips === undefined ? '' : `  from ${k.allow_ips.join(',')}`}` +
    `${k.is_active ? '' : '  disabled'}${k.unreadable === true ? '  UNREADABLE (its secret was stored under another secret key; `sidegate key revoke` deletes it)' : ''}`).join('\n')
}

/** `sidegate limit list`: gateway.yml's rate_limit, then each own limit. */
export function limitLines (r: Awaited<ReturnType<AdminOps['listLimits']>>): string {
  const c = r.configured
  const head = `rate_limit ${c.enabled ? 'enabled' : 'disabled (nothing is counted)'}; default ${formatPolicy(c.default)} per user` +
    Object.entries(c.methods).map(([m, v]) => `; ${m} ${v}`).join('')
  const lines = r.overrides.map((x) => `${x.kind.padEnd(4)}  ${x.id}  ${x.username}  ${formatPolicy(x)}`)
  return [head, ...(lines.length === 0 ? ['(no user or key has its own limit)'] : lines)].join('\n')
}

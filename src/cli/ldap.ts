/**
 * `sidegate ldap test <id> <username> [--password-stdin]`: one directory of
 * sign_in.ldap asked for one user, each step said as it happens, so an
 * operator sees where a sign-in fails (a server, TLS, the service bind, the
 * search filter, the groups). A password is read from stdin only, never printed.
 */
import { loadConfig } from '../config/index.js'
import { UsageError } from '../errors.js'
import { Directory } from '../auth/ldap/directory.js'
import { DirectoryUnavailable } from '../auth/ldap/servers.js'
import { createLogger } from '../observability/log.js'
import { escapeControls } from '../text.js'
import type { Values } from './args.js'
import { report, type Io } from './io.js'
import type { Config } from '../config/index.js'
import type { Auditor } from '../observability/audit.js'
import type { Store } from '../store/types.js'
import { syncDirectory } from '../auth/ldap/sync.js'

/** `sidegate ldap sync <id> [--dry-run]`: a line per user whose groups or orgs change. */
export async function ldapSync (
  store: Store, config: Config, rest: string[], values: Values, io: Io, audit: Auditor
): Promise<number> {
  if (rest.length !== 1) throw new UsageError('expected ldap sync <id> [--dry-run]')
  const dir = config.sign_in.ldap.find((d) => d.id === rest[0])
  if (dir === undefined) throw new UsageError(`no sign_in.ldap entry with id "${escapeControls(rest[0])}"`)
  const dryRun = values['dry-run'] === true
  const log = createLogger('warn', { write: (s: string) => io.err(s) })
  let changes
  try {
    changes = await syncDirectory(store, new Directory(dir, log), { dryRun, audit: (r) => audit.record(r) })
  } catch (err) {
    if (err instanceof DirectoryUnavailable) throw new UsageError(`no server of ${dir.id} answered: nothing was changed past the users listed before it failed`, 'failed')
    throw err
  }
  if (values.json === true) { io.out(JSON.stringify({ dry_run: dryRun, changes }) + '\n'); return 0 }
  const list = (xs: string[]): string => xs.map((x) => escapeControls(x)).join(', ')
  for (const c of changes) {
    const parts = [
      ...(c.gone ? ['entry gone or filtered out'] : []),
      ...(c.groups.add.length > 0 ? [`+groups ${list(c.groups.add)}`] : []),
      ...(c.groups.remove.length > 0 ? [`-groups ${list(c.groups.remove)}`] : []),
      ...Object.entries(c.orgs.set).map(([org, role]) => `org ${org}: ${role}`),
      ...c.orgs.remove.map((org) => `org ${org}: none`)
    ]
    io.out(`${escapeControls(c.username)}: ${parts.join('; ')}\n`)
  }
  const n = changes.length
  io.out(`${n} user${n === 1 ? '' : 's'} linked to ${dir.id} ${dryRun ? 'would change (dry run: nothing written)' : 'changed'}\n`)
  return 0
}

export async function ldapTest (rest: string[], values: Values, io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  const json = values.json === true
  try {
    if (rest.length !== 2) throw new UsageError('expected ldap test <id> <username>')
    const [id, username] = rest
    const config = loadConfig(values.config, env)
    const dir = config.sign_in.ldap.find((d) => d.id === id)
    if (dir === undefined) {
      const known = config.sign_in.ldap.map((d) => d.id)
      throw new UsageError(`no sign_in.ldap entry with id "${escapeControls(id)}"${known.length === 0 ? ' (sign_in.ldap is empty)' : ` (known: ${known.join(', ')})`}`)
    }
    const password = values['password-stdin'] === true ? (await io.stdin()).replace(/\r?\n$/, '') : null
    const lines: string[] = []
    const say = (s: string): void => { if (json) lines.push(s); else io.out(`${s}\n`) }
    // the servers' own failures, as the gateway would log them
    const log = createLogger('warn', { write: (s: string) => { const m = JSON.parse(s) as { server?: string, err?: string }; say(`server ${m.server ?? '?'}: failed: ${m.err ?? s}`) } })
    const d = new Directory(dir, log)
    say(`directory ${dir.id}: ${dir.urls.join(', ')}${dir.start_tls ? ' (StartTLS)' : ''}; service bind ${dir.bind_dn ?? '(anonymous)'}`)
    say(`search ${dir.users.base} ${dir.users.filter}`)
    let answer
    try {
      answer = password === null ? await d.lookup(username) : await d.authenticate(username, password)
    } catch (err) {
      if (!(err instanceof DirectoryUnavailable)) throw err
      say('no server answered (every one failed or is skipped): a sign-in would be 503 directory_unavailable')
      if (json) io.out(JSON.stringify({ ok: false, step: 'connect', lines }) + '\n')
      return 1
    }
    if (!answer.ok) {
      const why = {
        no_entry: 'no entry matches: check users.base and users.filter',
        ambiguous: 'several entries match: the filter must find one',
        no_id: `the entry has no ${dir.attributes.id} (attributes.id)`,
        bad_password: 'the entry was found; the directory refused the password'
      }[answer.why]
      say(why)
      if (json) io.out(JSON.stringify({ ok: false, step: answer.why, lines }) + '\n')
      return 1
    }
    const e = answer.entry
    say(`found ${e.dn}`)
    say(`  id (${dir.attributes.id}) ${e.id}; username ${e.username}; email ${e.email || '(none)'}; name ${e.name || '(none)'}`)
    if (password !== null) say('  the password binds')
    if (dir.groups.base !== '') say(`  groups${dir.groups.nested ? ' (nested)' : ''}: ${e.groups.length === 0 ? '(none)' : e.groups.join(', ')}`)
    const orgs = dir.orgs.filter((m) => e.groups.some((g) => g.toLowerCase() === m.group.toLowerCase()))
    if (dir.orgs.length > 0) say(`  orgs: ${orgs.length === 0 ? '(none)' : orgs.map((m) => `${m.org} ${m.role} (group ${m.group})`).join(', ')}`)
    if (json) io.out(JSON.stringify({ ok: true, entry: e, lines }) + '\n')
    return 0
  } catch (err) {
    return report(io, json, err)
  }
}

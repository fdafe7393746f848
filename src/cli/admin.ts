/**
 * `sidegate user|org|key|token|session|limit|jwk|audit|import …`: the
 * administrative commands. The ones the admin API also has are generated
 * from its operations (declared in src/admin/: their positionals, flags and
 * text; src/admin/operations.ts lists them); the rest (import, a user's memberships at once, showing a token,
 * the identity.jwt keys, the audit stream) are here.
 */
import { readFileSync } from 'node:fs'
import { userInfo } from 'node:os'
import type { Config } from '../config/index.js'
import { UsageError } from '../errors.js'
import { keyStates, rotateKeySet, type KeyState } from '../forward/identity.js'
import type { Auditor } from '../observability/audit.js'
import type { Store } from '../store/types.js'
import { escapeControls } from '../text.js'
import { ImportProblems, parseImport, PRIVILEGE_FLAGS, PrivilegedRefused, RECORD_TYPES, runImport, type Action, type PrivilegeKind, type Summary } from '../admin/import.js'
import { ADMIN_ROUTES, AdminOps, CLI_LABELS, type AdminRoute, type CliForm, type CliInput } from '../admin/operations.js'
import { checkPassword, grant } from '../admin/users.js'
import { showToken } from '../admin/private-tokens.js'
import type { Values } from './args.js'
import { tailAudit } from './audit-tail.js'
import type { Io } from './io.js'

/** `sidegate import` lists at most this many bad lines. */
const SHOW_PROBLEMS = 100

/**
 * Who runs a command, for the audit's actorName: the login name, else the uid (a container's user may have no name).
 */
export function operatorName (): string {
  try { return userInfo().username } catch { return `uid ${process.getuid?.() ?? '?'}` }
}

export class Admin {
  readonly #ops: AdminOps
  constructor (
    private readonly store: Store,
    private readonly io: Io,
    private readonly v: Values,
    private readonly config: Config,
    private readonly audit: Auditor
  ) {
    this.#ops = new AdminOps(store, config, CLI_LABELS, (r) => { audit.record(r) })
  }

  #print (json: unknown, text: string): number {
    this.io.out(this.v.json === true ? JSON.stringify(json, null, 2) + '\n' : text + '\n')
    return 0
  }

  async #password (): Promise<string> {
    if (this.v['password-stdin'] !== true) throw new UsageError('the password must come from standard input: add --password-stdin')
    return checkPassword((await this.io.stdin()).replace(/\r?\n$/, ''))
  }

  /** `--org ID[:role]`, each: the org id and the role as given (AdminOps checks both). */
  #orgs (): Array<{ id: string, role: string }> {
    return (this.v.org ?? []).map((o) => { const [id, role = 'user'] = o.split(':'); return { id, role } })
  }

  /** `sidegate import --from FILE [--format jsonl|csv] [--dry-run] [--allow-superuser] [--allow-takeover]` */
  async #import (args: string[]): Promise<number> {
    if (args.length > 0) throw new UsageError('import takes no arguments but its options: --from FILE')
    const file = this.v.from
    if (file === undefined || file === '') throw new UsageError('import needs --from FILE')
    const format = this.v.format ?? (file.toLowerCase().endsWith('.csv') ? 'csv' : 'jsonl')
    if (format !== 'jsonl' && format !== 'csv') throw new UsageError(`--format must be jsonl or csv, got "${format}"`)
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (err) {
      throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'not_found')
    }
    const dryRun = this.v['dry-run'] === true
    const allow = new Set<PrivilegeKind>()
    if (this.v['allow-superuser'] === true) allow.add('superuser')
    if (this.v['allow-takeover'] === true) allow.add('takeover')
    let summary: Summary
    try {
      summary = await runImport(
        this.store, parseImport(text, format), dryRun, { allow, audit: (r) => { this.audit.record(r) } }
      )
    } catch (err) {
      if (err instanceof PrivilegedRefused) {
        const flags = [...new Set(err.refused.map((p) => PRIVILEGE_FLAGS[p.kind]))].join(' ')
        throw new UsageError(`${file}: ${err.refused.length} privileged change${err.refused.length === 1 ? '' : 's'} not allowed, nothing was imported:\n${err.message.split('\n').map((l) => `  ${l}`).join('\n')}\nCheck them (--dry-run lists them), then run again with ${flags}`, 'invalid_import')
      }
      if (!(err instanceof ImportProblems)) throw err
      const n = err.problems.length
      const shown = err.message.split('\n').slice(0, SHOW_PROBLEMS).map((l) => `  ${l}`)
      if (n > SHOW_PROBLEMS) shown.push(`  … and ${n - SHOW_PROBLEMS} more`)
      throw new UsageError(`${file}: ${n} problem${n === 1 ? '' : 's'}, nothing was imported:\n${shown.join('\n')}`, 'invalid_import')
    }
    const { counts, notes, privileged } = summary
    const total = (a: Action): number => RECORD_TYPES.reduce((sum, t) => sum + counts[t][a], 0)
    const head = dryRun ? `dry run of ${file}: nothing was written; it would be:` : `imported ${file}:`
    const rows = RECORD_TYPES.map((t) => `  ${t.padEnd(14)} ${String(counts[t].created).padStart(5)} created  ${String(counts[t].updated).padStart(5)} updated  ${String(counts[t].unchanged).padStart(5)} unchanged`)
    const tail = notes.map((n) => `note: line ${n.line}: ${escapeControls(n.message)}`)
    // what a file's author gains over accounts: always spelled out, allowed or not
    const needs = privileged.map((p) => `privileged: line ${p.line}: ${escapeControls(p.message)} (${PRIVILEGE_FLAGS[p.kind]}${allow.has(p.kind) ? ', allowed' : dryRun ? ' needed' : ''})`)
    return this.#print({ file, format, dry_run: dryRun, counts, created: total('created'), updated: total('updated'), unchanged: total('unchanged'), notes, privileged: privileged.map((p) => ({ ...p, flag: PRIVILEGE_FLAGS[p.kind], allowed: allow.has(p.kind) })) },
      [head, ...rows, ...needs, ...tail].join('\n'))
  }

  async #grant (args: string[]): Promise<number> {
    const username = params(USERNAME, args).username
    await this.#ops.user(username)
    if ((this.v.org ?? []).length === 0) throw new UsageError('user grant needs --org ID[:admin|:none]')
    const after = await grant(this.#ops, username, this.#orgs())
    return this.#print(after, `${after.username}: ${Object.entries(after.orgs).map(([o, r]) => `${o}:${r}`).join(', ') || '(no orgs)'}`)
  }

  async #showToken (args: string[]): Promise<number> {
    const r = await showToken(this.#ops, params(USERNAME, args).username)
    return this.#print(r, r.token)
  }

  async #jwkRotate (args: string[]): Promise<number> {
    if (args.length > 0) throw new UsageError('jwk rotate takes no arguments')
    const c = this.config.identity.jwt
    const { key: k, removed } = await rotateKeySet(this.store, c)
    const from = new Date(k.active_from).toISOString()
    return this.#print(
      { kid: k.kid, alg: k.alg, published: new Date(k.created).toISOString(), signs_from: from, removed },
      [
        `added key ${k.kid} (${k.alg}): published now, signs from ${from}`,
        ...removed.map((r) => `removed retired key ${r}`),
        ...(c.enabled ? [] : ['note: identity.jwt.enabled is false in this configuration: no gateway signs with it until it is turned on'])
      ].join('\n')
    )
  }

  async #jwkList (args: string[]): Promise<number> {
    if (args.length > 0) throw new UsageError('jwk list takes no arguments')
    const set = await this.store.signingKeys.get()
    const states = keyStates(set.keys, Date.now(), this.config.identity.jwt.ttl * 1000)
    const iso = (ms: number | null): string | null => ms === null ? null : new Date(ms).toISOString()
    const WHEN: Record<KeyState, string> = { signing: 'until', next: 'signs from', replaced: 'published until', retired: '' }
    return this.#print(states.map(({ key: k, state, until }) => ({
      kid: k.kid,
      alg: k.alg,
      state,
      created: iso(k.created),
      active_from: iso(k.active_from),
      until: iso(until),
      ...(k.private === null ? { unreadable: true } : {})
    })),
    states.map(({ key: k, state, until }) => `${k.kid}  ${k.alg.padEnd(5)}  ${state.padEnd(8)}${until === null ? '' : `  ${WHEN[state]} ${iso(until)}`}${k.private === null ? '  UNREADABLE (stored under another secret key)' : ''}`).join('\n') || '(no keys: the first gateway started with identity.jwt.enabled creates one)')
  }

  /** The commands written here, not declared as admin operations (OWN_COMMANDS). */
  readonly #own: Record<typeof OWN_COMMANDS[number], (args: string[]) => Promise<number>> = {
    'user grant': async (args) => await this.#grant(args),
    'token show': async (args) => await this.#showToken(args),
    'jwk rotate': async (args) => await this.#jwkRotate(args),
    'jwk list': async (args) => await this.#jwkList(args),
    'audit tail': async (args) => {
      if (args.length > 0) throw new UsageError('audit tail takes no arguments')
      return await tailAudit(this.store, this.io, this.v, this.config)
    }
  }

  async run (cmd: string, sub: string | undefined, args: string[]): Promise<number> {
    if (cmd === 'import') return await this.#import(sub === undefined ? args : [sub, ...args])
    const key = `${cmd} ${sub ?? ''}`.trim()
    if (Object.hasOwn(this.#own, key)) return await this.#own[key as typeof OWN_COMMANDS[number]](args)
    const forms = COMMANDS.get(key)
    if (forms === undefined) throw new UsageError(`unknown command "${key}"; see \`sidegate ${cmd} --help\``)
    const c: CliInput = { args, flags: this.v, password: async () => await this.#password(), orgs: () => this.#orgs() }
    const { route, form } = forms.find((f) => f.form.when?.(c) ?? true)!
    const p = params(form, args)
    const { body = {}, query = new URLSearchParams() } = await form.input?.(c, p, this.#ops) ?? {}
    const out = await route.run(this.#ops, { params: p, body, query })
    this.#print(out, form.text(out, this.config))
    return form.exit?.(out) ?? 0
  }
}

/** The commands of src/cli/index.ts's groups that are not admin operations' forms. */
export const OWN_COMMANDS = ['user grant', 'token show', 'jwk rotate', 'jwk list', 'audit tail'] as const

/** The command forms of the admin operations (src/admin/operations.ts), by command. */
export const COMMANDS = new Map<string, Array<{ route: AdminRoute, form: CliForm }>>()
for (const route of ADMIN_ROUTES) {
  for (const form of route.cli ?? []) {
    const list = COMMANDS.get(form.command) ?? []
    list.push({ route, form })
    COMMANDS.set(form.command, list)
  }
}

/** The positionals of the commands written by hand here (user grant, user show-token). */
const USERNAME = { command: 'user', args: ['username'] }

/** The positionals as the form's parameters, or its usage error. */
function params (form: Pick<CliForm, 'command' | 'args' | 'what' | 'usage'>, args: string[]): Record<string, string> {
  if (args.length !== form.args.length) {
    throw new UsageError(form.usage ?? (form.args.length === 0 ? `${form.command} takes no arguments` : `expected exactly one ${form.what ?? form.args[0]}`))
  }
  return Object.fromEntries(form.args.map((name, i) => [name, args[i]]))
}

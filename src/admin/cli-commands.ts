/**
 * The command-line forms of the admin operations (./operations.ts) as the
 * help lists them, by group: `sidegate user --help`, the subcommands `sidegate
 * --help` names and src/cli/index.ts accepts. src/cli/admin-commands.ts holds
 * them as plain data, generated from here (`npm run cli:commands`), so that
 * `sidegate --help` loads no schema; test/unit/cli-commands.test.ts fails when it
 * is stale.
 */
import type { AdminRoute } from './operation.js'

export interface CommandHelp {
  /** the subcommand: `add` of `user add` */
  sub: string
  /** what follows `sidegate <group> <sub>` (its lines) */
  synopsis: string[]
  /** what it does, its lines */
  help: string[]
}

/** Every command form, by group, in the order of the operations (forms of one command: their order). */
export function adminCommands (routes: readonly AdminRoute[]): Record<string, CommandHelp[]> {
  const out: Record<string, CommandHelp[]> = {}
  for (const route of routes) {
    for (const form of route.cli ?? []) {
      const [group, sub] = form.command.split(' ')
      const synopsis = form.synopsis ?? form.args.map((a) => `<${a}>`).join(' ')
      ;(out[group] ??= []).push({ sub, synopsis: synopsis === '' ? [] : synopsis.split('\n'), help: form.help ?? [] })
    }
  }
  return out
}

/** A string as the linter wants it: single quotes, unless it holds one. */
const quote = (v: string): string => v.includes('\'') ? JSON.stringify(v) : `'${v.replace(/\\/g, '\\\\')}'`
const list = (xs: string[], pad: string): string => xs.length === 0
  ? '[]'
  : `[\n${xs.map((x) => `${pad}  ${quote(x)}`).join(',\n')}\n${pad}]`

/** src/cli/admin-commands.ts, as generated. */
export function adminCommandsModule (routes: readonly AdminRoute[]): string {
  const groups = Object.entries(adminCommands(routes)).map(([group, commands]) => `  ${group}: [\n${commands.map((c) =>
    `    {\n      sub: ${quote(c.sub)},\n      synopsis: ${list(c.synopsis, '      ')},\n      help: ${list(c.help, '      ')}\n    }`
  ).join(',\n')}\n  ]`)
  return [
    '/**',
    ' * The admin operations\' command forms as the help lists them (src/admin/cli-commands.ts):',
    ' * generated from their declarations in src/admin/ by `npm run cli:commands`; do not edit.',
    ' */',
    'import type { CommandHelp } from \'../admin/cli-commands.js\'',
    '',
    `export const ADMIN_COMMANDS: Record<string, CommandHelp[]> = {\n${groups.join(',\n')}\n}`,
    ''
  ].join('\n')
}

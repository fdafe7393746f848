/**
 * `sidegate …`: start the gateway, or administer users, orgs, access keys, sessions,
 * private tokens and the secret key in the same store. Exit codes: 0 ok,
 * 1 not found or failed, 2 usage (and a missing or wrong secret key).
 *
 * This module reads the command line and answers --help and --version; the
 * commands (src/cli/commands.ts, with the store, the server and the config
 * schema) are loaded only to run one.
 */
import { UsageError } from '../errors.js'
import { parseCommandLine, nearest, type Values } from './args.js'
import { HELP, SUBCOMMANDS } from './help.js'
import { defaultIo, report, terminalSafe, VERSION, type Io } from './io.js'

export { VERSION } from './io.js'

const RUN_HELP = '\nRun `sidegate --help` for usage.'

/** A command that does not exist, and the one it is likely a typo of. */
function unknownCommand (cmd: string, json: boolean): UsageError {
  const guess = nearest(cmd, [...Object.keys(HELP).filter(Boolean), 'help'])
  return new UsageError(`unknown command "${cmd}"${guess !== undefined ? `; did you mean "${guess}"?` : json ? '' : RUN_HELP}`)
}

export async function main (
  argv: string[], given: Io = defaultIo, env: NodeJS.ProcessEnv = process.env
): Promise<number> {
  const io = terminalSafe(given)
  let values: Values
  let positionals: string[]
  const json = argv.includes('--json')
  try {
    ;({ values, positionals } = parseCommandLine(argv))
  } catch (err) {
    const message = (err as Error).message
    return report(io, json, new UsageError(`${message}${json || message.includes('did you mean') ? '' : RUN_HELP}`))
  }
  const [cmd = '', sub, ...rest] = positionals
  if (values.version === true) { io.out(`sidegate ${VERSION}\n`); return 0 }
  if (values.help === true || cmd === '' || cmd === 'help') {
    const name = cmd === 'help' ? (sub ?? '') : cmd
    const text = HELP[name]
    if (text === undefined) return report(io, json, unknownCommand(name, json))
    io.out(text + '\n')
    return cmd === '' && values.help !== true ? 2 : 0
  }
  if (!(cmd in HELP)) return report(io, json, unknownCommand(cmd, json))
  const subs = SUBCOMMANDS[cmd]
  if (subs !== undefined && sub === undefined) {
    // a group without its subcommand: the group's help, as a usage error
    if (json) return report(io, json, new UsageError(`${cmd}: a subcommand is needed (${subs.join(', ')})`))
    io.err(`sidegate ${cmd}: a subcommand is needed\n\n${HELP[cmd]}\n`)
    return 2
  }
  if (subs !== undefined && !subs.includes(sub!)) {
    const guess = nearest(sub!, subs)
    return report(io, json, new UsageError(`unknown command "${cmd} ${sub!}"; ${guess === undefined ? `see \`sidegate ${cmd} --help\`` : `did you mean "${cmd} ${guess}"?`}`))
  }
  const { run } = await import('./commands.js')
  return await run(cmd, sub, rest, values, io, env)
}

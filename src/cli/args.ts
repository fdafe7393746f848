/**
 * The command line of `sidegate …`: its options, read by node:util parseArgs,
 * and what a typo gets instead of parseArgs' own text: the nearest command,
 * subcommand or option ("did you mean …?").
 */
import { parseArgs } from 'node:util'
import { UsageError } from '../errors.js'

export const OPTIONS = {
  config: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
  'password-stdin': { type: 'boolean' },
  email: { type: 'string' },
  name: { type: 'string' },
  org: { type: 'string', multiple: true },
  id: { type: 'string' },
  superuser: { type: 'boolean' },
  'new-key-file': { type: 'string' },
  'new-key-stdin': { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  'allow-superuser': { type: 'boolean' },
  'allow-takeover': { type: 'boolean' },
  limit: { type: 'string' },
  expires: { type: 'string' },
  'allow-ip': { type: 'string', multiple: true },
  all: { type: 'boolean' },
  from: { type: 'string' },
  format: { type: 'string' },
  follow: { type: 'boolean', short: 'f' },
  since: { type: 'string' },
  workers: { type: 'string' },
  out: { type: 'string' },
  merge: { type: 'boolean' },
  'allow-unsigned': { type: 'boolean' },
  user: { type: 'string' },
  key: { type: 'string' },
  credential: { type: 'string' },
  factor: { type: 'string', multiple: true },
  ip: { type: 'string' },
  host: { type: 'string' },
  group: { type: 'string', multiple: true },
  oidc: { type: 'string' },
  ldap: { type: 'string' },
  sub: { type: 'string' },
  subject: { type: 'string' },
  'directory-only': { type: 'boolean' },
  url: { type: 'string' }
} as const

export type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS, allowPositionals: true }>>['values']

/** The one-letter options: -h, -f, -v (and -hf). */
const SHORT = new Set<string>(Object.values(OPTIONS).flatMap((o) => 'short' in o ? [o.short] : []))
/** Stands for an argument that starts with "-" but is a value (see dashValues); no argument can contain NUL. */
const DASH_VALUE = '\u0000'

/**
 * An id may start with "-": a session's id is base64url, so one in 64 does
 * (`sidegate session list` prints it, `session revoke <user> <id>` takes it).
 * parseArgs would read "-AQd…" as the options -A -Q -d…; an argument that
 * starts with one "-", is longer than two characters and is not made of the
 * one-letter options is a value instead (a positional, or an option's value:
 * `--name -x-`). Before "--" only; "--" still ends the options.
 */
function dashValues (argv: string[]): { args: string[], restore: (v: string) => string } {
  const end = argv.indexOf('--')
  const args = argv.map((a, i) => (end === -1 || i < end) && a.length > 2 && a[0] === '-' && a[1] !== '-' && ![...a.slice(1)].every((c) => SHORT.has(c)) ? `${DASH_VALUE}${i}` : a)
  return { args, restore: (v) => v.startsWith(DASH_VALUE) ? argv[Number(v.slice(1))] : v }
}

/**
 * The options and positionals of `argv`. An unknown option is a usage error
 * naming the nearest known one, if any is near: `--jsn` → did you mean --json?
 */
export function parseCommandLine (argv: string[]): { values: Values, positionals: string[] } {
  const { args, restore } = dashValues(argv)
  let parsed: { values: Values, positionals: string[] }
  try {
    parsed = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true })
  } catch (err) {
    throw new UsageError(optionProblem(err as Error & { code?: string }))
  }
  const { values } = parsed
  for (const [k, v] of Object.entries(values)) {
    if (typeof v === 'string') (values as Record<string, unknown>)[k] = restore(v)
    else if (Array.isArray(v)) (values as Record<string, unknown>)[k] = v.map(restore)
  }
  return { values, positionals: parsed.positionals.map(restore) }
}

/** parseArgs' error in sidegate's words: what is wrong with which option, and the nearest known one. */
function optionProblem (err: Error & { code?: string }): string {
  const name = /'(-{1,2}[^' =]+)/.exec(err.message)?.[1]
  if (name === undefined) return err.message
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const long = Object.keys(OPTIONS).map((o) => `--${o}`)
    const guess = name.startsWith('--') ? nearest(name, long) : undefined
    return `unknown option ${name}${guess === undefined ? '' : `; did you mean ${guess}?`}`
  }
  if (err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    return /does not take an argument/.test(err.message) ? `${name} takes no value` : `${name} needs a value (one starting with "-": ${name}=-…)`
  }
  return err.message
}

/**
 * The candidate nearest to `word` by edit distance (a swap of two neighbours
 * counts as one edit), if it is near enough to be a typo of it: at most one
 * edit for a word of up to 4 characters, two beyond; null when two are
 * equally near.
 */
export function nearest (word: string, candidates: readonly string[]): string | undefined {
  const max = word.replace(/^-+/, '').length <= 4 ? 1 : 2
  let best: string | undefined
  let bestDistance = Infinity
  let tie = false
  for (const c of candidates) {
    const d = distance(word.toLowerCase(), c.toLowerCase())
    if (d < bestDistance) { best = c; bestDistance = d; tie = false } else if (d === bestDistance) tie = true
  }
  return bestDistance <= max && !tie ? best : undefined
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function distance (a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) d[0][j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] &&
        a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1)
    }
  }
  return d[a.length][b.length]
}

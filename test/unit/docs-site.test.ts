/**
 * The README and docs/ as a reader meets them: the README fits a quick read,
 * every relative link and anchor resolves, every configuration key they name
 * is in the schema, every `sidegate` command they show is one the CLI has,
 * and no test logbook (CI runs, seeds) creeps back into them.
 */
import t from 'tap'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { execFileSync } from 'node:child_process'
import { ROOT } from '../fixtures/gateway.js'
import { configKeys } from '../../src/config/reference.js'
import { AUDIT_EVENTS } from '../../src/observability/audit.js'

const DOCS = ['README.md', 'CHANGELOG.md', 'TESTING.md', 'deploy/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
const text = (f: string): string => readFileSync(join(ROOT, f), 'utf8')

/** The text outside fenced code blocks, and the code blocks' lines. */
function split (md: string): { prose: string, code: string[] } {
  const prose: string[] = []
  const code: string[] = []
  let fence = false
  for (const line of md.split('\n')) {
    if (line.startsWith('```')) { fence = !fence; continue }
    ;(fence ? code : prose).push(line)
  }
  return { prose: prose.join('\n'), code }
}

/** GitHub's heading anchors of a Markdown file. */
function anchors (md: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  for (const line of split(md).prose.split('\n')) {
    const m = /^#{1,6} (.+)$/.exec(line)
    if (m === null) continue
    const base = m[1].trim().toLowerCase().replace(/[^\p{L}\p{N}\- _]/gu, '').replace(/ /g, '-')
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

t.test('the README fits a quick read', async (t) => {
  const lines = text('README.md').split('\n').length
  t.ok(lines <= 300, `README.md has ${lines} lines`)
})

t.test('every relative link and anchor resolves', async (t) => {
  let n = 0
  for (const f of DOCS) {
    for (const m of split(text(f)).prose.matchAll(/\]\(([^)\s]+)\)/g)) {
      const link = m[1]
      if (/^[a-z]+:/i.test(link)) continue
      const [path, anchor] = link.split('#')
      const target = path === '' ? join(ROOT, f) : resolve(dirname(join(ROOT, f)), decodeURI(path))
      n++
      if (!existsSync(target)) { t.fail(`${f}: ${link}: no ${relative(ROOT, target)}`); continue }
      if (anchor !== undefined && target.endsWith('.md') && !anchors(readFileSync(target, 'utf8')).has(anchor)) t.fail(`${f}: ${link}: no heading #${anchor} in ${relative(ROOT, target)}`)
    }
  }
  t.ok(n > 50, `${n} links checked`)
})

/** Dotted names the docs show that are not configuration: audit events, OpenTelemetry attributes. */
const NOT_CONFIG = new Set([...Object.keys(AUDIT_EVENTS), 'server.address', 'server.port'])

t.test('every configuration key the docs name is in the schema', async (t) => {
  const keys = configKeys().map((k) => k.key)
  const paths = new Set(keys.flatMap((k) => k.split('.').map((_, i, a) => a.slice(0, i + 1).join('.'))))
  const tops = new Set(keys.map((k) => k.split('.')[0]))
  let n = 0
  for (const f of DOCS) {
    for (const m of text(f).matchAll(/`([a-z_]+(?:\.[a-z_0-9]+)+)(?:\.\*)?(?::[^`]*)?`/g)) {
      const key = m[1]
      if (!tops.has(key.split('.')[0]) || /\.(ts|js|mjs|json|ya?ml|md|sh|py)$/.test(key) || NOT_CONFIG.has(key)) continue
      n++
      t.ok(paths.has(key), `${f}: \`${key}\` is a key of the schema`)
    }
  }
  t.ok(n > 50, `${n} keys checked`)
})

t.test('every sidegate command the docs show is one the CLI has', async (t) => {
  const help = execFileSync(process.execPath, [join(ROOT, 'bin', 'sidegate.js'), '--help'], { encoding: 'utf8' })
  const commands = new Map<string, string[]>()
  for (const m of help.matchAll(/^ {2}([a-z]+)(?: ([a-z|]+))?(?= |$)/gm)) commands.set(m[1], m[2]?.split('|') ?? [])
  t.ok(commands.has('start') && commands.has('key'), 'the help lists the commands')
  let n = 0
  for (const f of DOCS) {
    const { prose, code } = split(text(f))
    const shown = [...code.flatMap((l) => [...l.matchAll(/(?:^\s*(?:\$ )?|\$\(|\|\s*|&&\s*)(?:npx |npm exec --no -- )?sidegate ([a-z]+)(?: ([a-z]+))?/g)]), ...prose.matchAll(/`(?:npm exec --no -- |npx )?sidegate ([a-z]+)(?: ([a-z]+))?/g)]
    for (const m of shown) {
      const [group, sub] = [m[1], m[2]]
      n++
      if (!commands.has(group)) { t.fail(`${f}: sidegate ${group}: no such command`); continue }
      const subs = commands.get(group)!
      if (subs.length > 0 && sub !== undefined) t.ok(subs.includes(sub), `${f}: sidegate ${group} ${sub}`)
    }
  }
  t.ok(n > 20, `${n} commands checked`)
})

t.test('the docs never run the CLI through npx (which would fetch a stranger\'s package outside this checkout)', async (t) => {
  for (const f of DOCS) t.notMatch(text(f), /npx sidegate/, `${f}: use sidegate (node bin/sidegate.js)`)
})

t.test('no test logbook in the docs', async (t) => {
  for (const f of DOCS) t.notMatch(text(f), /fresh-clone runs?\b|\bCI run \d+\b/i, `${f}: the history of test runs belongs in commit messages`)
})

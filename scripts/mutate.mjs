#!/usr/bin/env node
/**
 * `npm run mutate`: Stryker over the security core (stryker.config.mjs; TESTING.md, "Mutation score").
 *
 *   npm run mutate                          every file of the security core, every test file (hours)
 *   npm run mutate -- src/access/path.ts    these files, run against the test files that killed their mutants before
 *   npm run mutate -- --changed [BASE]      the security-core lines changed since BASE (what .ci/run runs)
 *   npm run mutate -- --record              write the last run's results into test/mutation.json
 *
 * Results accumulate in reports/stryker-incremental.json (not in git): a second run after a small
 * change re-runs only the mutants whose code or tests changed. test/mutation.json (in git) keeps,
 * per file, the score, the test files that kill its mutants (so a narrow run need not run all 54
 * files to find out which reach it) and the survivors known to be equivalent, each with its reason.
 * A run fails when the score, equivalent survivors set aside, is under the target.
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SECURITY_CORE } from '../stryker.config.mjs'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const RECORD = join(ROOT, 'test', 'mutation.json')
const INCREMENTAL = join(ROOT, 'reports', 'stryker-incremental.json')
const REPORT = join(ROOT, 'reports', 'mutation.json')
// .ci/run's allowance: past it the run is stopped and reported as skipped, to be run by hand
const CI_LIMIT_S = Number(process.env.SIDEGATE_MUTATE_LIMIT_S ?? 600)

const record = JSON.parse(readFileSync(RECORD, 'utf8'))
const args = process.argv.slice(2)
const git = (...a) => execFileSync('git', a, { cwd: ROOT, encoding: 'utf8' }).trim()
const inCore = (f) => SECURITY_CORE.some((p) => p.endsWith('/') ? f.startsWith(p) : f === p)

if (args[0] === '--record') {
  writeRecord()
} else if (args[0] === '--changed') {
  process.exitCode = await changed(args[1])
} else {
  const files = args.length > 0 ? args : null
  const code = await stryker(files ?? SECURITY_CORE.map((p) => p.endsWith('/') ? `${p}**/*.ts` : p), files === null ? null : testsFor(files), Infinity)
  process.exitCode = code === 0 ? verdict(files) : code
}

/** The test files that killed a mutant of these files in the recorded runs; null (all) when one is unrecorded. */
function testsFor (files) {
  const tests = new Set()
  for (const f of files) {
    const entry = record.files[f.replace(/:.*$/, '')]
    // recorded without the tests that killed its mutants (an older report, or equivalents written
    // before the first record): as good as unrecorded
    if (entry?.tests === undefined || entry.tests.length === 0) return null
    for (const t of entry.tests) tests.add(t)
  }
  return [...tests]
}

async function changed (base) {
  base ??= mergeBase()
  if (base === null) {
    console.log('mutation: no commit to compare with (a shallow clone?): nothing to run')
    return 0
  }
  const files = git('diff', '--name-only', '--diff-filter=AM', base, 'HEAD', '--', 'src').split('\n').filter((f) => f !== '' && inCore(f))
  if (files.length === 0) {
    console.log(`mutation: no security-core file changed since ${base.slice(0, 12)}: nothing to run`)
    return 0
  }
  // the changed lines of each file, as Stryker's file:start-end ranges
  const ranges = []
  for (const f of files) {
    for (const m of git('diff', '-U0', base, 'HEAD', '--', f).matchAll(/^@@ [^+]*\+(\d+)(?:,(\d+))? @@/gm)) {
      const start = Number(m[1])
      const count = m[2] === undefined ? 1 : Number(m[2])
      if (count > 0) ranges.push(`${f}:${start}-${start + count - 1}`)
    }
  }
  if (ranges.length === 0) {
    console.log('mutation: the security core only lost lines: nothing to run')
    return 0
  }
  let tests = testsFor(files)
  if (tests === null) {
    const missing = files.filter((f) => record.files[f] === undefined)
    // its first run needs every test file: a dry run of about half an hour, past the allowance
    console.log(`mutation: skipped, not yet recorded: ${missing.join(' ')}; run \`npm run mutate -- ${files.join(' ')}\``)
    return 0
  } else {
    const changedTests = git('diff', '--name-only', '--diff-filter=AM', base, 'HEAD', '--', 'test/unit', 'test/http').split('\n').filter((f) => f.endsWith('.test.ts') && f !== 'test/unit/architecture.test.ts')
    tests = [...new Set([...tests, ...changedTests])]
  }
  console.log(`mutation: ${ranges.length} changed range(s) in ${files.join(', ')} since ${base.slice(0, 12)}; ` +
    `${tests.length} test file(s); at most ${CI_LIMIT_S} s`)
  const code = await stryker(ranges, tests, CI_LIMIT_S)
  if (code === 'late') {
    console.log(`mutation: skipped, over ${CI_LIMIT_S} s: run \`npm run mutate -- ${files.join(' ')}\` by hand (TESTING.md)`)
    return 0
  }
  return code === 0 ? verdict(files) : code
}

function mergeBase () {
  const head = git('rev-parse', 'HEAD')
  try {
    const base = git('merge-base', 'HEAD', 'origin/main')
    if (base !== head) return base
  } catch {}
  try { return git('rev-parse', 'HEAD~1') } catch { return null }
}

function stryker (mutate, tests, limitS) {
  return new Promise((resolve) => {
    const env = { ...process.env }
    // the test files named by hand win (a file whose recorded ones a new test file now joins)
    if (tests !== null && process.env.SIDEGATE_MUTATE_TESTS === undefined) env.SIDEGATE_MUTATE_TESTS = tests.join(',')
    const child = spawn(process.execPath, [join(ROOT, 'node_modules', '@stryker-mutator', 'core', 'bin', 'stryker.js'), 'run', '--mutate', mutate.join(',')], { cwd: ROOT, env, stdio: 'inherit', detached: true })
    let late = false
    const timer = Number.isFinite(limitS) ? setTimeout(() => { late = true; process.kill(-child.pid, 'SIGKILL') }, limitS * 1000) : null
    child.on('exit', (code) => {
      if (timer !== null) clearTimeout(timer)
      // a stopped run leaves its sandbox (instrumented copies of src/ and test/) behind
      if (late) rmSync(join(ROOT, '.stryker-tmp'), { recursive: true, force: true })
      resolve(late ? 'late' : code ?? 1)
    })
  })
}

/** Score per file of the last run, equivalents set aside; 1 when one is under the target. */
function verdict (files) {
  const report = JSON.parse(readFileSync(REPORT, 'utf8'))
  let bad = 0
  for (const [file, { mutants }] of Object.entries(report.files)) {
    if (files !== null && !files.some((f) => f.replace(/:.*$/, '') === file)) continue
    const s = score(file, mutants, report.files[file].source)
    const line = `mutation: ${file}: ${s.score.toFixed(1)}% (${s.killed} killed, ${s.survived.length} survived, ${s.equivalent} equivalent set aside)`
    console.log(line)
    for (const m of s.survived) console.log(`  survived ${file}:${m.location.start.line}:${m.location.start.column} ${m.mutatorName} -> ${m.replacement}`)
    if (s.score < record.target) bad++
  }
  if (bad > 0) console.log(`mutation: ${bad} file(s) under the target of ${record.target}%`)
  return bad > 0 ? 1 : 0
}

/**
 * A survivor is equivalent when test/mutation.json names its mutator, the code it replaced and its
 * replacement (whitespace folded: reformatting does not unlist it; the same code twice in a file
 * shares one verdict, which its reason must hold for).
 */
function score (file, mutants, source) {
  const known = record.files[file]?.equivalent ?? []
  const isEquivalent = (m) => {
    const code = fold(codeOf(source, m.location))
    return known.some((e) =>
      e.mutator === m.mutatorName && fold(e.replacement) === fold(m.replacement) && fold(e.code) === code)
  }
  let killed = 0
  let equivalent = 0
  const survived = []
  for (const m of mutants) {
    if (m.status === 'Killed' || m.status === 'Timeout') killed++
    else if (m.status === 'Survived' || m.status === 'NoCoverage') {
      if (isEquivalent(m)) equivalent++
      else survived.push(m)
    }
  }
  const total = killed + survived.length
  return { killed, equivalent, survived, score: total === 0 ? 100 : 100 * killed / total }
}

function fold (text) { return text.replace(/\s+/g, ' ').trim() }

/** The code a mutant replaced: its location is 1-based lines and columns, the end exclusive. */
function codeOf (source, { start, end }) {
  const lines = source.split('\n')
  if (start.line === end.line) return lines[start.line - 1].slice(start.column - 1, end.column - 1)
  return [lines[start.line - 1].slice(start.column - 1), ...lines.slice(start.line, end.line - 1),
    lines[end.line - 1].slice(0, end.column - 1)].join('\n')
}

/** test/mutation.json from the accumulated results: scores and killing tests; equivalents are kept as written. */
function writeRecord () {
  if (!existsSync(INCREMENTAL)) throw new Error('no results yet: run npm run mutate first')
  const report = JSON.parse(readFileSync(INCREMENTAL, 'utf8'))
  const testName = new Map()
  for (const [name, { tests }] of Object.entries(report.testFiles)) for (const t of tests) testName.set(t.id, name)
  for (const [file, { mutants, source }] of Object.entries(report.files)) {
    const counts = new Map()
    for (const m of mutants) {
      for (const id of m.killedBy ?? []) counts.set(testName.get(id), (counts.get(testName.get(id)) ?? 0) + 1)
    }
    const s = score(file, mutants, source)
    record.files[file] = {
      score: Math.round(s.score * 10) / 10,
      mutants: mutants.length,
      killed: s.killed,
      survived: s.survived.length,
      // of the survivors, those no test file run reached: a narrow run may leave out the file that would
      unreached: s.survived.filter((m) => m.status === 'NoCoverage').length,
      tests: [...counts].sort((a, b) => b[1] - a[1]).map(([t]) => t),
      equivalent: record.files[file]?.equivalent ?? []
    }
  }
  record.files = Object.fromEntries(Object.entries(record.files).sort(([a], [b]) => a.localeCompare(b)))
  writeFileSync(RECORD, JSON.stringify(record, null, 2) + '\n')
  // TESTING.md's table, between its markers
  const rows = Object.entries(record.files).map(([f, e]) =>
    `| \`${f}\` | ${e.mutants} | ${e.killed} | ${e.survived} (${e.unreached}) | ${e.equivalent.length} | ${e.score}% |`)
  const head = '| file | mutants | killed | survived (no test reached) | equivalent | score |'
  const table = [head, '|---|---|---|---|---|---|', ...rows].join('\n')
  const doc = join(ROOT, 'TESTING.md')
  writeFileSync(doc, readFileSync(doc, 'utf8').replace(/(<!-- mutation:begin -->\n)[^]*?(<!-- mutation:end -->)/, `$1${table}\n$2`))
  console.log(`wrote ${RECORD} and TESTING.md's table`)
}

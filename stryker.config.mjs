// Mutation testing of the security core (TESTING.md, "Mutation score"): `npm run mutate` (scripts/mutate.mjs).
// Each test file is one Stryker "test": the dry run records which files reach each mutant, and a
// mutant runs only those files (coverageAnalysis perTest). test/cli and test/process are left out:
// they spawn dist/, which Stryker does not instrument.
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = dirname(fileURLToPath(import.meta.url))

/** What decides who gets in: a path ending in / is a folder. */
export const SECURITY_CORE = [
  'src/auth/',
  'src/access/',
  'src/crypto.ts',
  'src/http/target.ts',
  'src/pipeline/headers.ts',
  'src/pipeline/authenticate.ts',
  'src/pipeline/access.ts',
  'src/pipeline/org.ts',
  'src/pipeline/origin.ts',
  'src/store/policy/mfa.ts',
  'src/store/policy/passkeys.ts',
  'src/store/policy/passwords.ts',
  'src/store/policy/sessions.ts',
  'src/store/policy/bearer-tokens.ts',
  'src/store/policy/locks.ts'
]

// architecture.test.ts reads src/ as text (line counts, the syntax tree): instrumented code fails it by design
const SOURCE_READERS = new Set(['test/unit/architecture.test.ts'])
const ALL_TESTS = ['test/unit', 'test/http']
  .flatMap((dir) => readdirSync(join(ROOT, dir)).filter((f) => f.endsWith('.test.ts')).map((f) => `${dir}/${f}`))
  .filter((f) => !SOURCE_READERS.has(f))
// SIDEGATE_MUTATE_TESTS: a comma-separated subset (scripts/mutate.mjs passes the files that killed the mutants before)
const testFiles = process.env.SIDEGATE_MUTATE_TESTS?.split(',') ?? ALL_TESTS

export default {
  packageManager: 'npm',
  testRunner: 'tap',
  tap: { testFiles, nodeArgs: ['--import=tsx'] },
  coverageAnalysis: 'perTest',
  checkers: ['typescript'],
  tsconfigFile: 'tsconfig.json',
  // type-check each mutant on its own file's program: much faster, and a mutant it misses fails at run time anyway
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  mutate: SECURITY_CORE.map((p) => p.endsWith('/') ? `${p}**/*.ts` : p),
  incremental: true,
  incrementalFile: 'reports/stryker-incremental.json',
  // module-level code (tables, constants) would run every test file per mutant: left out, said in TESTING.md
  ignoreStatic: true,
  // tsx strips types without checking them: nothing to disable at run time (the checker compiles each mutant)
  disableTypeChecks: false,
  concurrency: 2,
  timeoutMS: 20000,
  reporters: ['clear-text', 'progress', 'json'],
  jsonReporter: { fileName: 'reports/mutation.json' },
  cleanTempDir: 'always'
}

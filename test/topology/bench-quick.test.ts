/**
 * `npm run bench -- --quick` is the harness's smoke test (CI runs it): it says
 * so and judges no target from its 1 s runs; the bare proxy is the baseline,
 * never "0.5× vs bare" of itself.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { tempDir } from '../fixtures/cleanup.js'
import { ROOT } from '../fixtures/gateway.js'

t.test('--quick: a smoke test, no verdicts', async (t) => {
  const out = tempDir('sidegate-bench-')
  const r = await promisify(execFile)(process.execPath, [join(ROOT, 'bench', 'run.mjs'), '--quick', '--only', 'public,rejected', '--out', out, '--no-latest'], { cwd: ROOT, timeout: 120_000 })
  t.match(r.stdout, /smoke test \(--quick\)[^\n]*no target is judged/)
  t.notMatch(r.stdout, /\b(PASS|FAIL|pass|inconclusive)\b/, 'no verdict from a 1 s run')
  t.notMatch(r.stdout, /drift/, 'no drift figure from a 1 s run')
  t.notMatch(r.stdout, /vs bare/, 'no ratios')
  t.match(r.stdout, /bench ok/)
})

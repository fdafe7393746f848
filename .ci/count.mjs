// Reads tap's TAP stream on stdin, passes it through, and ends with one plain
// line "N passed, N failed" (skips, if any, on the line before) counting leaf assertions (subtest summary lines are
// not counted twice; a subtest that failed with no failing assertion inside it, such as a test
// file that crashed before its first assertion, counts as one failure). Exits 1 when anything
// failed or nothing ran.
import { createInterface } from 'node:readline'

let passed = 0
let failed = 0
let skipped = 0
const open = [] // "# Subtest:" headers awaiting their result line: { indent, failedBefore }
const rl = createInterface({ input: process.stdin })
rl.on('line', (line) => {
  process.stdout.write(line + '\n')
  const indent = line.length - line.trimStart().length
  const s = line.trim()
  if (s.startsWith('# Subtest:')) { open.push({ indent, failedBefore: failed }); return }
  const m = /^(not )?ok \d+/.exec(s)
  if (!m) return
  if (open.length && open[open.length - 1].indent === indent) {
    const sub = open.pop()
    // a failed subtest whose failure no assertion inside it shows (a crash, a timeout before any test)
    if (m[1] && !/# (SKIP|TODO)\b/i.test(s) && failed === sub.failedBefore) failed++
    return
  }
  if (/# (SKIP|TODO)\b/i.test(s)) skipped++
  else if (m[1]) failed++
  else passed++
})
rl.on('close', () => {
  if (skipped) process.stdout.write(`${skipped} skipped\n`)
  process.stdout.write(`${passed} passed, ${failed} failed\n`)
  process.exitCode = failed > 0 || passed === 0 ? 1 : 0
})

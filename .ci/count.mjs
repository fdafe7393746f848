// Reads tap's TAP stream on stdin, passes it through, and ends with one plain
// line "N passed, N failed" (skips, if any, on the line before) counting leaf assertions (subtest summary lines are
// not counted twice). Exits 1 when anything failed or nothing ran.
import { createInterface } from 'node:readline'

let passed = 0
let failed = 0
let skipped = 0
const open = [] // indents of "# Subtest:" headers awaiting their result line
const rl = createInterface({ input: process.stdin })
rl.on('line', (line) => {
  process.stdout.write(line + '\n')
  const indent = line.length - line.trimStart().length
  const s = line.trim()
  if (s.startsWith('# Subtest:')) { open.push(indent); return }
  const m = /^(not )?ok \d+/.exec(s)
  if (!m) return
  if (open.length && open[open.length - 1] === indent) { open.pop(); return }
  if (/# (SKIP|TODO)\b/i.test(s)) skipped++
  else if (m[1]) failed++
  else passed++
})
rl.on('close', () => {
  if (skipped) process.stdout.write(`${skipped} skipped\n`)
  process.stdout.write(`${passed} passed, ${failed} failed\n`)
  process.exitCode = failed > 0 || passed === 0 ? 1 : 0
})

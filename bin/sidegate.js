#!/usr/bin/env node
// dist/cli/index.js bundled (scripts/bundle.mjs): a few files to read at start, not some 700 modules
import { main } from '../dist/bundle/index.js'

// A reader that went away (`sidegate key list | head -1`) ends the output, not the process with a stack trace.
for (const s of [process.stdout, process.stderr]) s.on('error', (err) => { if (err.code !== 'EPIPE') throw err })

// Exit with the command's code even if a stray handle would keep the loop alive.
main(process.argv.slice(2)).then((code) => process.exit(code), (err) => {
  process.stderr.write(`sidegate: ${err?.message ?? err}\n`)
  process.exit(1)
})

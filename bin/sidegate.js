#!/usr/bin/env node
import { main } from '../dist/cli/index.js'

// A reader that went away (`sidegate key list | head -1`) ends the output, not the process with a stack trace.
for (const s of [process.stdout, process.stderr]) s.on('error', (err) => { if (err.code !== 'EPIPE') throw err })

// Exit with the command's code even if a stray handle would keep the loop alive.
main(process.argv.slice(2)).then((code) => process.exit(code), (err) => {
  process.stderr.write(`sidegate: ${err?.message ?? err}\n`)
  process.exit(1)
})

#!/usr/bin/env node
import { main } from '../dist/cli.js'

// Exit with the command's code even if a stray handle would keep the loop alive.
main(process.argv.slice(2)).then((code) => process.exit(code), (err) => {
  process.stderr.write(`sidegate: ${err?.message ?? err}\n`)
  process.exit(1)
})

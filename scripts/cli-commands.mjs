#!/usr/bin/env node
/**
 * `npm run cli:commands`: writes src/cli/admin-commands.ts, the admin
 * operations' command forms as the help lists them, from their declarations
 * (the build's dist/admin/operations.js). test/unit/cli-commands.test.ts fails
 * while it is stale.
 */
import { writeFileSync } from 'node:fs'
import { ADMIN_ROUTES } from '../dist/admin/operations.js'
import { adminCommandsModule } from '../dist/admin/cli-commands.js'

const file = new URL('../src/cli/admin-commands.ts', import.meta.url)
writeFileSync(file, adminCommandsModule(ADMIN_ROUTES))
console.log(`wrote ${file.pathname}`)

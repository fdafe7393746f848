/**
 * Every administrative operation, in the order the document lists them: each
 * declared once (./operation.ts defineOperation) in its resource's file, with
 * its code and its command-line forms. The admin API (./api.ts) serves them,
 * its document (./openapi.ts) publishes them, the CLI (src/cli/admin.ts) runs
 * their command forms and src/cli/help.ts lists them (src/cli/admin-commands.ts,
 * generated from these: `npm run cli:commands`).
 */
import type { AdminRoute } from './operation.js'
import { USER_OPERATIONS } from './users.js'
import { LINK_OPERATIONS } from './links.js'
import { ORG_OPERATIONS } from './orgs.js'
import { GROUP_OPERATIONS } from './groups.js'
import { ACCESS_KEY_OPERATIONS } from './access-keys.js'
import { PRIVATE_TOKEN_OPERATIONS } from './private-tokens.js'
import { SESSION_OPERATIONS } from './sessions.js'
import { MFA_OPERATIONS } from './mfa.js'
import { LIMIT_OPERATIONS } from './limits.js'
import { ACCESS_OPERATIONS } from './access.js'
import { AUDIT_OPERATIONS } from './audit.js'

export { ADMIN_PREFIX, API_LABELS, CLI_LABELS, AdminOps } from './context.js'
export type { AdminRoute, CliCall, CliForm, CliInput, Method } from './operation.js'

export const ADMIN_ROUTES: readonly AdminRoute[] = [
  ...USER_OPERATIONS,
  ...LINK_OPERATIONS,
  ...ORG_OPERATIONS,
  ...GROUP_OPERATIONS,
  ...ACCESS_KEY_OPERATIONS,
  ...PRIVATE_TOKEN_OPERATIONS,
  ...SESSION_OPERATIONS,
  ...MFA_OPERATIONS,
  ...LIMIT_OPERATIONS,
  ...ACCESS_OPERATIONS,
  ...AUDIT_OPERATIONS
]

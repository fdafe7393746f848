/** How an administrative operation is declared (./operations.ts lists them). */
import type { CliForm } from './command-forms.js'
import type { DocumentedRoute } from './openapi.js'
import type { AdminOps } from './ops.js'

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** One operation: its method, path template and documentation (DocumentedRoute), and what it does. */
export interface AdminRoute extends DocumentedRoute {
  method: Method
  /** 201 for what creates a record, else 200 */
  status: 200 | 201
  tag: 'Users' | 'Organizations' | 'Access keys' | 'Private tokens' | 'Sessions' | 'Second factor' | 'Rate limits' | 'Access rules'
  run: (ops: AdminOps, p: Record<string, string>, body: Record<string, any>, query: URLSearchParams) => Promise<unknown>
  /** its command-line forms (none: the admin API only) */
  cli?: CliForm[]
}

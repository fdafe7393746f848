/** What a gateway process writes besides its log: one line on stderr for what stops it. */
import { GatewayError, messageOf, UsageError } from '../errors.js'
import { exitCodeOf } from '../cli/exit-codes.js'

export interface AppIo { err: (s: string) => void }

/**
 * An error as a process reports it: its text, its code and the exit code, the
 * code's (src/cli/exit-codes.ts: 2 for a config, key or store problem a
 * restart cannot cure, and for bad input). Anything else is 1, failed.
 */
export function failure (err: unknown): { detail: string, code: string, exit: number } {
  // the secret key check's KeyCheckError by its name: --help loads no store module (src/store/secret/check.ts)
  if (err instanceof UsageError || err instanceof GatewayError || (err instanceof Error && err.name === 'KeyCheckError')) {
    const code = (err as Error & { code: string }).code
    return { detail: err.message, code, exit: exitCodeOf(code) }
  }
  return { detail: messageOf(err), code: 'failed', exit: 1 }
}

/** Says why the process cannot start; returns its exit code. */
export function failed (io: AppIo, err: unknown): number {
  const f = failure(err)
  io.err(`sidegate: ${f.detail}\n`)
  return f.exit
}

/** What a gateway process writes besides its log: one line on stderr for what stops it. */
import { GatewayError, messageOf } from '../errors.js'

export interface AppIo { err: (s: string) => void }

interface Exiting extends Error { exitCode: number, code: string }

/**
 * An error as a process reports it: its text, its code and the exit code. An error that
 * carries an `exitCode` (a UsageError, the secret key check's KeyCheckError: 2, a config,
 * key or store problem a restart cannot cure) says its own; anything else is 1.
 */
export function failure (err: unknown): { detail: string, code: string, exit: number } {
  if (err instanceof Error && typeof (err as Partial<Exiting>).exitCode === 'number') {
    const e = err as Exiting
    return { detail: e.message, code: e.code, exit: e.exitCode }
  }
  if (err instanceof GatewayError) return { detail: err.detail, code: err.code, exit: 1 }
  return { detail: messageOf(err), code: 'failed', exit: 1 }
}

/** Says why the process cannot start; returns its exit code. */
export function failed (io: AppIo, err: unknown): number {
  const f = failure(err)
  io.err(`sidegate: ${f.detail}\n`)
  return f.exit
}

/** What a gateway process writes besides its log: one line on stderr for what stops it. */
import { GatewayError, UsageError } from '../errors.js'
import { KeyCheckError } from '../store/secret/check.js'

export interface AppIo { err: (s: string) => void }

/** Says why the process cannot start; returns its exit code (2: a config, key or store problem a restart cannot cure). */
export function failed (io: AppIo, err: unknown): number {
  const detail = err instanceof GatewayError ? err.detail : err instanceof Error ? err.message : String(err)
  io.err(`sidegate: ${detail}\n`)
  return err instanceof KeyCheckError ? 2 : err instanceof UsageError ? err.exitCode : 1
}

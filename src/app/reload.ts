/**
 * Live reload of gateway.yml: on SIGHUP, and when the file changes on disk,
 * it is read again through the same parse and validation as `sidegate start`
 * (src/config/index.ts, with the same environment overrides). Then exactly one of:
 *
 * - the file cannot be read or is not valid: one error line with the
 *   problems, the config in force stays;
 * - it changes a key the schema does not mark `live` (src/config/live.ts):
 *   refused with one error line naming those keys, the config in force stays
 *   entirely (nothing of the file is applied);
 * - otherwise it is applied (src/pipeline/server.ts Gateway.apply, the log level) and
 *   one line lists the changed keys; or it changed nothing.
 *
 * Each outcome counts in sidegate_config_reloads_total{result}.
 *
 * The file is watched through its directory, so that a Kubernetes ConfigMap
 * volume, which swaps a `..data` symlink instead of writing the file, is seen
 * too. Events are debounced, and the file is re-read only when its content
 * hash differs from the last one read (another file in the directory, or a
 * rewrite with the same bytes, changes nothing).
 */
import { createHash } from 'node:crypto'
import { readFileSync, watch, type FSWatcher } from 'node:fs'
import { dirname } from 'node:path'
import { ConfigError, configFromText, type Config } from '../config/index.js'
import { changedKeys } from '../config/live.js'
import { UsageError } from '../errors.js'
import type { Logger } from '../observability/log.js'

export interface ReloaderOptions {
  /** the config in force */
  current: () => Config
  /** puts a valid config whose changes are all live into force */
  apply: (next: Config) => void
  /** the environment the start's config was built with (its overrides still win) */
  env: Record<string, string | undefined>
  log: Logger
  /** counts each outcome (Prometheus metrics) */
  count?: (result: 'success' | 'failure') => void
  /** ms without a further event in the directory before the file is read (default 300) */
  debounceMs?: number
}

export type ReloadOutcome = 'applied' | 'unchanged' | 'invalid' | 'refused'

export class Reloader {
  readonly #o: ReloaderOptions
  #lastHash: string | null = null
  #watcher: FSWatcher | null = null
  #timer: NodeJS.Timeout | null = null

  constructor (o: ReloaderOptions) {
    this.#o = o
    const file = o.current().file
    if (file !== null) this.#lastHash = hashOf(file)
  }

  /** Reads the file again and applies, refuses or reports it (see above). */
  reload (trigger: 'SIGHUP' | 'file'): ReloadOutcome {
    const { log } = this.#o
    const before = this.#o.current()
    const file = before.file
    if (file === null) {
      log.warn({ trigger }, 'config reload: sidegate runs without a config file; there is nothing to re-read')
      return 'unchanged'
    }
    let next: Config
    try {
      const text = readFileSync(file, 'utf8')
      this.#lastHash = hash(text)
      next = configFromText(text, file, this.#o.env)
    } catch (err) {
      this.#o.count?.('failure')
      log.error({ trigger, file, problems: problemsOf(err) }, 'config reload failed: the file is not valid; the config in force stays')
      return 'invalid'
    }
    const { live, fixed } = changedKeys(before, next)
    if (fixed.length > 0) {
      this.#o.count?.('failure')
      log.error({ trigger, file, keys: fixed }, `config reload refused: ${fixed.join(', ')} cannot change while sidegate runs (restart it to apply them); the config in force stays, none of the file's changes apply`)
      return 'refused'
    }
    if (live.length === 0) {
      this.#o.count?.('success')
      log.info({ trigger, file }, 'config reload: nothing changed')
      return 'unchanged'
    }
    try {
      this.#o.apply(next)
    } catch (err) {
      // a bug, not the file: the config in force stays, the process keeps serving
      this.#o.count?.('failure')
      log.error({ trigger, file, err }, 'config reload failed while applying it; the config in force stays')
      return 'invalid'
    }
    this.#o.count?.('success')
    log.info({ trigger, file, changed: live }, `config reloaded: ${live.join(', ')}`)
    return 'applied'
  }

  /**
   * Watches the config file's directory: a change of the file's content
   * (written in place, replaced by a rename, or a ConfigMap's `..data` swap)
   * reloads, once events have stopped for debounceMs.
   */
  watch (): void {
    const file = this.#o.current().file
    if (file === null || this.#watcher !== null) return
    try {
      this.#watcher = watch(dirname(file), { persistent: false }, () => this.#schedule())
    } catch (err) {
      this.#o.log.warn({ file, err: (err as Error).message }, 'config reload: cannot watch the config file\'s directory; SIGHUP still reloads')
      return
    }
    this.#watcher.on('error', (err) => {
      this.#o.log.warn({ file, err: err.message }, 'config reload: watching the config file\'s directory stopped; SIGHUP still reloads')
      this.close()
    })
  }

  close (): void {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    this.#watcher?.close()
    this.#watcher = null
  }

  #schedule (): void {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = setTimeout(() => {
      this.#timer = null
      const file = this.#o.current().file
      if (file === null) return
      const h = hashOf(file)
      // gone for now (mid-swap, or deleted): the next event tells
      // eslint-disable-next-line no-restricted-syntax -- not a secret: the config file's content hash
      if (h === null || h === this.#lastHash) return
      this.reload('file')
    }, this.#o.debounceMs ?? 300)
    this.#timer.unref()
  }
}

function hash (text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

function hashOf (file: string): string | null {
  try { return hash(readFileSync(file, 'utf8')) } catch { return null }
}

/**
 * What is wrong, one entry per problem. A YAML error's code frame (lines of
 * the file, which may hold a secret) is left out: its first line names the
 * line and column.
 */
function problemsOf (err: unknown): string[] {
  if (err instanceof ConfigError) return err.message.split('\n')
  if (err instanceof UsageError) return err.message.split('\n').filter((l) => !l.startsWith('    '))
  const e = err as NodeJS.ErrnoException
  if (e.code === 'ENOENT') return ['the config file does not exist']
  return [`cannot read the config file: ${e.code ?? e.message}`]
}

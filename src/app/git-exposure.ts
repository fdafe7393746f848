/**
 * The files sidegate writes beside its config (the embedded store and its
 * journal, the secret key file) hold password hashes, sealed secrets,
 * sessions and the key that opens them. Kept in a directory that is a git
 * work tree, one `git add -A` commits them: start-up warns, naming each such
 * file git does not ignore.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import type { Config } from '../config/index.js'

/** The work tree's top holding `file` (a `.git` directory or file above it), or null. */
function workTreeOf (file: string): string | null {
  let dir = dirname(resolve(file))
  for (;;) {
    if (existsSync(join(dir, '.git'))) return dir
    const up = dirname(dir)
    if (up === dir) return null
    dir = up
  }
}

/**
 * `ignored`: git ignores it; `exposed`: in a work tree, not ignored;
 * `unknown`: in a work tree, and git could not be asked; `outside`: no work tree.
 */
export function gitExposure (file: string): 'ignored' | 'exposed' | 'unknown' | 'outside' {
  if (workTreeOf(file) === null) return 'outside'
  const r = spawnSync('git', ['-C', dirname(resolve(file)), 'check-ignore', '-q', '--', basename(file)], { stdio: 'ignore', timeout: 5000 })
  return r.status === 0 ? 'ignored' : r.status === 1 ? 'exposed' : 'unknown'
}

/**
 * The files of this config that sidegate wrote and that exist:
 * the embedded store (and its -wal, -shm) and the key file.
 */
export function writtenFiles (config: Config): string[] {
  const files = [config.secret_key_file]
  if (config.store.backend === 'sqlite') files.push(config.store.path, `${config.store.path}-wal`, `${config.store.path}-shm`)
  return files.filter((f) => existsSync(f))
}

/** One warning per written file a `git add -A` would take. */
export function warnGitExposure (config: Config, log: { warn: (o: object, msg: string) => void }): void {
  for (const file of writtenFiles(config)) {
    const e = gitExposure(file)
    if (e === 'exposed') log.warn({ file }, `${file} is in a git work tree and not ignored: \`git add -A\` would commit it (password hashes, sealed secrets, sessions, or the secret key); add it to .gitignore`)
    else if (e === 'unknown') log.warn({ file }, `${file} is in a git work tree and git could not say whether it is ignored: make sure .gitignore lists it`)
  }
}

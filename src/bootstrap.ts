/** First-start work: the secret key file, the Default org and the first superuser. */
import { randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import type { Config } from './config.js'
import { UsageError, GatewayError } from './errors.js'
import type { Logger } from './log.js'
import { DEFAULT_ORG_ID } from './org.js'
import type { Store } from './store/types.js'

/**
 * The configured key, else the key file beside the config, else a new key
 * written there with mode 0600. Never stored in Redis, beside the data it protects.
 */
export function ensureSecretKey (config: Config, log: Pick<Logger, 'warn'>): string {
  if (config.secret_key !== null) return config.secret_key
  const path = config.secret_key_file
  try {
    const key = readFileSync(path, 'utf8').trim()
    if (key.length < 32) throw new UsageError(`secret key file ${path} holds fewer than 32 characters`)
    return key
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  const key = randomBytes(48).toString('base64')
  try {
    writeFileSync(path, key + '\n', { mode: 0o600, flag: 'wx' })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return ensureSecretKey(config, log)
    throw new UsageError(`cannot write a new secret key to ${path}: ${(err as Error).message}; set SIDEGATE_SECRET_KEY instead`, 1)
  }
  log.warn({ path }, 'generated a new secret key; back it up: encrypted access-key secrets and private tokens cannot be read without it')
  return key
}

/** Creates the Default org and, on an empty store, the superuser `admin`. Safe to run on many replicas at once. */
export async function ensureDefaults (store: Store, config: Config, log: Pick<Logger, 'info'>, say: (line: string) => void): Promise<void> {
  if ((await store.getOrg(DEFAULT_ORG_ID)) === null) {
    await ignoreConflict(store.createOrg('Default', DEFAULT_ORG_ID))
  }
  if ((await store.countUsers()) > 0) return
  const generated = config.admin_password === null
  const password = config.admin_password ?? randomBytes(18).toString('base64url')
  const created = await ignoreConflict(store.createUser({ username: 'admin', password, name: 'Administrator', superuser: true, orgs: { [DEFAULT_ORG_ID]: 'admin' } }))
  if (created === null) return
  log.info({ username: 'admin' }, 'created the first superuser')
  if (generated) say(`sidegate: created superuser "admin" with password: ${password}\nsidegate: this is shown once; change it with \`sidegate user passwd admin --password-stdin\`.\n`)
}

async function ignoreConflict<T> (p: Promise<T>): Promise<T | null> {
  try { return await p } catch (err) {
    if (err instanceof GatewayError && err.status === 409) return null
    throw err
  }
}

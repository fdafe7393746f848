/** First-start work: the secret key file, the Default org and the first superuser. */
import { randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import type { Auditor } from '../observability/audit.js'
import type { Config } from '../config/index.js'
import { UsageError, GatewayError } from '../errors.js'
import type { Logger } from '../observability/log.js'
import { DEFAULT_ORG_ID } from '../auth/org.js'
import type { Store } from '../store/types.js'

/** A secret key and where it came from (for messages; never the key itself). */
export interface SecretKey { key: string, source: string }

/**
 * The configured key (SIDEGATE_SECRET_KEY or `secret_key`), else the key
 * file (`secret_key_file`, beside the config), else null. Never creates one:
 * only `sidegate start` does, on an empty store (keyForStart).
 */
export function readSecretKey (config: Config, env: Record<string, string | undefined> = {}): SecretKey | null {
  if (config.secret_key !== null) {
    return { key: config.secret_key, source: env.SIDEGATE_SECRET_KEY ? 'SIDEGATE_SECRET_KEY' : `secret_key in ${config.file ?? 'the config'}` }
  }
  const path = config.secret_key_file
  try {
    const key = readFileSync(path, 'utf8').trim()
    if (key.length < 32) throw new UsageError(`secret key file ${path} holds fewer than 32 characters`)
    return { key, source: path }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    if (err instanceof UsageError) throw err
    throw new UsageError(`cannot read the secret key file ${path}: ${(err as Error).message}`)
  }
}

/** The one line saying where a key was looked for. */
export function missingKeyMessage (config: Config): string {
  return `no secret key: SIDEGATE_SECRET_KEY is not set, ${config.file === null ? 'there is no config file' : `${config.file} has no secret_key`}, and ${config.secret_key_file} does not exist. ` +
    'Run this where the gateway runs (the same directory or --config), or set SIDEGATE_SECRET_KEY to the gateway\'s key; only `sidegate start` creates a key, on an empty store'
}

/** Writes a new key file (mode 0600) unless one appeared meanwhile; returns the key in the file. */
export function writeSecretKeyFile (config: Config, key: string, log: Pick<Logger, 'warn'>): SecretKey {
  const path = config.secret_key_file
  try {
    writeFileSync(path, key + '\n', { mode: 0o600, flag: 'wx' })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return readSecretKey(config)!
    throw new UsageError(`cannot write a new secret key to ${path}: ${(err as Error).message}; set SIDEGATE_SECRET_KEY instead`, 1)
  }
  log.warn({ path }, 'generated a new secret key; back it up: encrypted access-key secrets and private tokens cannot be read without it')
  return { key, source: path }
}

/** A new random secret key (64 base64 characters). */
export function newSecretKey (): string { return randomBytes(48).toString('base64') }

/** Creates the Default org and, on an empty store, the superuser `admin`. Safe to run on many replicas at once. */
export async function ensureDefaults (store: Store, config: Config, log: Pick<Logger, 'info'>, say: (line: string) => void, audit?: Pick<Auditor, 'record'>): Promise<void> {
  if ((await store.getOrg(DEFAULT_ORG_ID)) === null) {
    await ignoreConflict(store.createOrg('Default', DEFAULT_ORG_ID))
  }
  if ((await store.countUsers()) > 0) return
  const generated = config.admin_password === null
  const password = config.admin_password ?? randomBytes(18).toString('base64url')
  const created = await ignoreConflict(store.createUser({ username: 'admin', password, name: 'Administrator', superuser: true, orgs: { [DEFAULT_ORG_ID]: 'admin' } }))
  if (created === null) return
  log.info({ username: 'admin' }, 'created the first superuser')
  audit?.record({ event: 'user.created', user: created, superuser: true, system: true, authMethod: 'bootstrap' })
  if (generated) say(`sidegate: created superuser "admin" with password: ${password}\nsidegate: this is shown once; change it with \`sidegate user passwd admin --password-stdin\`.\n`)
}

async function ignoreConflict<T> (p: Promise<T>): Promise<T | null> {
  try { return await p } catch (err) {
    if (err instanceof GatewayError && err.status === 409) return null
    throw err
  }
}

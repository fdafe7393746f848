/**
 * `sidegate store export|import|backup`: every record of the store to a file
 * and back into any store (the format: ../store/transfer.ts), and an online
 * copy of the embedded store's file. Export and backup run after the usual
 * key check (src/cli/commands.ts); import makes its own, since an empty
 * store (no key check value yet) is what it is for.
 */
import { closeSync, existsSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs'
import { resolve } from 'node:path'
import type { Config } from '../config/index.js'
import type { Keyring } from '../crypto.js'
import { UsageError } from '../errors.js'
import { storeName, storeWhere } from '../app/open-store.js'
import { RedisStore } from '../store/redis/index.js'
import { selectDb } from '../store/redis/key-records.js'
import { RedisTransfer } from '../store/redis/transfer.js'
import { KEY_CHECK, KEY_ROTATION } from '../store/secret/records.js'
import { SqliteStore } from '../store/sqlite/index.js'
import { SqliteTransfer } from '../store/sqlite/transfer.js'
import {
  describeCounts, FORMAT, FORMAT_VERSION, parseTransfer, planImport, serialize, TransferProblem,
  type Kind, type Parsed, type StoreTransfer, type TransferRecord
} from '../store/transfer.js'
import type { ManagedStore } from '../store/types.js'
import type { Values } from './args.js'
import type { Io } from './io.js'

/** The backend's transfer, over the store the config selects. */
function transferOf (store: ManagedStore, config: Config): StoreTransfer {
  const where = storeWhere(config)
  if (store instanceof SqliteStore) return new SqliteTransfer(store.sqlite, where)
  if (store instanceof RedisStore) return new RedisTransfer(store.redis, config.redis.prefix, where)
  throw new UsageError(`${storeName(config)} cannot be exported or imported`)
}

const NOT_WRITTEN = 'nothing was written'

/** What can be refused before a key or a store is needed: a backup of Redis, a bad argument count. */
export function checkStoreCommand (sub: string, args: string[], config: Config): void {
  if (sub === 'backup') {
    if (config.store.backend !== 'sqlite') {
      throw new UsageError(`store backup copies the embedded store's file; ${storeName(config)} keeps its data itself: back it up with Redis persistence (BGSAVE, or AOF), or use \`sidegate store export\` for a file any store can import`)
    }
    if (args.length !== 1) throw new UsageError('store backup needs the file to write: sidegate store backup FILE')
  }
  if (sub === 'import' && args.length !== 1) throw new UsageError('store import needs the file to read (- for standard input): sidegate store import FILE [--merge]')
  if (sub === 'export' && args.length > 0) throw new UsageError('store export takes no arguments but --out FILE (default: standard output)')
}

/** `sidegate store export|backup`, after the key check. */
export async function storeCommand (store: ManagedStore, config: Config, sub: string, args: string[], v: Values, io: Io): Promise<number> {
  const transfer = transferOf(store, config)
  if (sub === 'backup') return await backup(transfer as SqliteTransfer, config, resolve(args[0]), v, io)
  if ((await transfer.keys.get(KEY_ROTATION)) !== null) {
    throw new UsageError(`a secret key rotation is under way in ${storeName(config)}: finish it (sidegate secret rotate) before exporting`, 2, 'key_rotation_in_progress')
  }
  const keyCheck = await transfer.keys.get(KEY_CHECK)
  const records = await transfer.read(Date.now())
  const text = serialize({ format: FORMAT, version: FORMAT_VERSION, key_check: keyCheck!, exported: new Date().toISOString() }, records)
  if (v.out === undefined || v.out === '-') { io.out(text); return 0 }
  const file = resolve(v.out)
  writeFileAtomic(file, text)
  const counts = countKinds(records)
  io.out(v.json === true
    ? JSON.stringify({ file, store: transfer.where, records: records.length, counts }, null, 2) + '\n'
    : `exported ${records.length} records from ${storeName(config)} to ${file}: ${describeCounts(counts)}\n`)
  return 0
}

/** `sidegate store import FILE [--merge]`: its own key check, then every line checked before anything is written. */
export async function importCommand (store: ManagedStore, config: Config, keyring: Keyring, source: string, file: string, v: Values, io: Io): Promise<number> {
  const merge = v.merge === true
  const name = file === '-' ? 'standard input' : file
  let text: string
  try {
    text = file === '-' ? await io.stdin() : readFileSync(resolve(file), 'utf8')
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 1, 'not_found')
  }
  const invalid = (err: unknown): never => {
    if (err instanceof TransferProblem) throw new UsageError(`${name}: ${err.message}; ${NOT_WRITTEN}`, 2, 'invalid_store_file')
    throw err
  }
  let parsed: Parsed
  try { parsed = parseTransfer(text) } catch (err) { return invalid(err) }
  const mine = keyring.checkValue()
  if (parsed.header.key_check !== mine) {
    throw new UsageError(`${name} was exported from a store with another secret key (its key_check differs from that of this secret key, ${source}): ` +
      `its secrets could not be read here. Import it with the key of the store it came from; ${NOT_WRITTEN}`, 2, 'secret_key_mismatch')
  }
  if (store instanceof RedisStore) await selectDb(store.redis, config.redis.db, storeWhere(config))
  const transfer = transferOf(store, config)
  const target = storeName(config)
  const [check, marker] = await Promise.all([transfer.keys.get(KEY_CHECK), transfer.keys.get(KEY_ROTATION)])
  if (marker !== null) throw new UsageError(`a secret key rotation is under way in ${target}: finish it first; ${NOT_WRITTEN}`, 2, 'key_rotation_in_progress')
  if (check !== null && check !== mine) {
    throw new UsageError(`the secret key (${source}) is not the key of ${target} (its key check value differs); ${NOT_WRITTEN}`, 2, 'secret_key_mismatch')
  }
  const { users, orgs } = await transfer.counts()
  if (check === null && (users > 0 || orgs > 0)) {
    throw new UsageError(`${target} holds data but no key check value: run \`sidegate start\` on it once, then import with --merge; ${NOT_WRITTEN}`, 2, 'store_not_initialized')
  }
  if (!merge && (users > 0 || orgs > 0)) {
    throw new UsageError(`${target} already holds ${users} user${users === 1 ? '' : 's'} and ${orgs} org${orgs === 1 ? '' : 's'}: import into an empty store ` +
      `(before its first \`sidegate start\`), or add --merge to add only the records it lacks; ${NOT_WRITTEN}`, 2, 'store_not_empty')
  }
  const now = Date.now()
  const plan = await planImport(parsed, transfer, now).catch(invalid)
  await transfer.write(plan.write, mine, { now, sessionLifetimeMs: config.session.absolute_timeout * 1000 })
  const skipped = Object.values(plan.skipped).reduce((a, b) => a + b, 0)
  if (v.json === true) {
    io.out(JSON.stringify({ file: name, store: transfer.where, merge, written: plan.written, skipped: plan.skipped, expired: plan.expired }, null, 2) + '\n')
    return 0
  }
  const notes = [
    ...(merge ? [`${skipped} skipped (already there${skipped > 0 ? `: ${describeCounts(plan.skipped)}` : ''})`] : []),
    ...(plan.expired > 0 ? [`${plan.expired} expired since the export, left out`] : [])
  ]
  io.out(`imported ${name} into ${target}: ${describeCounts(plan.written)}${notes.length > 0 ? `; ${notes.join('; ')}` : ''}\n`)
  return 0
}

async function backup (transfer: SqliteTransfer, config: Config, file: string, v: Values, io: Io): Promise<number> {
  if (file === resolve(config.store.path)) throw new UsageError(`${file} is the store file itself: name another file`)
  if (existsSync(file)) throw new UsageError(`${file} exists: name a new file (a backup never overwrites one)`)
  const { pages } = await transfer.backup(file)
  io.out(v.json === true
    ? JSON.stringify({ file, store: config.store.path, pages }, null, 2) + '\n'
    : `copied ${storeName(config)} to ${file} (${pages} pages, one consistent moment): it opens as a store with the same data and the same secret key\n`)
  return 0
}

function countKinds (records: TransferRecord[]): Partial<Record<Kind, number>> {
  const out: Partial<Record<Kind, number>> = {}
  for (const r of records) out[r.kind] = (out[r.kind] ?? 0) + 1
  return out
}

/** Written beside `file` (its owner only: it holds sealed secrets and hashes), then renamed into place. */
function writeFileAtomic (file: string, text: string): void {
  const tmp = `${file}.partial-${process.pid}`
  try {
    const fd = openSync(tmp, 'wx', 0o600)
    try { writeSync(fd, text) } finally { closeSync(fd) }
    renameSync(tmp, file)
  } catch (err) {
    rmSync(tmp, { force: true })
    throw new UsageError(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 1, 'failed')
  }
}

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
  describeCounts, FORMAT, FORMAT_VERSION, parseTransfer, serialize, splitMac, TransferProblem, UNSIGNED_VERSION,
  type Kind, type Parsed, type StoreTransfer, type TransferRecord
} from '../store/transfer.js'
import { planImport, TRANSFER_PRIVILEGE_FLAGS, type TransferPrivilege } from '../store/transfer-plan.js'
import type { ManagedStore } from '../store/types.js'
import type { AuditRecord, Auditor } from '../observability/audit.js'
import { escapeControls } from '../text.js'
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
export async function storeCommand (
  store: ManagedStore, config: Config, keyring: Keyring, sub: string, args: string[], v: Values, io: Io
): Promise<number> {
  const transfer = transferOf(store, config)
  if (sub === 'backup') return await backup(transfer as SqliteTransfer, config, resolve(args[0]), v, io)
  if ((await transfer.keys.get(KEY_ROTATION)) !== null) {
    throw new UsageError(`a secret key rotation is under way in ${storeName(config)}: finish it (sidegate secret rotate) before exporting`, 'key_rotation_in_progress')
  }
  const keyCheck = await transfer.keys.get(KEY_CHECK)
  const records = await transfer.read(Date.now())
  const text = serialize(
    { format: FORMAT, version: FORMAT_VERSION, key_check: keyCheck!, exported: new Date().toISOString() },
    records,
    (data) => keyring.storeFileMac(data)
  )
  if (v.out === undefined || v.out === '-') { io.out(text); return 0 }
  const file = resolve(v.out)
  writeFileAtomic(file, text)
  const counts = countKinds(records)
  io.out(v.json === true
    ? JSON.stringify({ file, store: transfer.where, records: records.length, counts }, null, 2) + '\n'
    : `exported ${records.length} records from ${storeName(config)} to ${file}: ${describeCounts(counts)}\n`)
  return 0
}

/**
 * `sidegate store import FILE [--merge] [--allow-superuser] [--allow-takeover] [--allow-unsigned]`:
 * its own key check, the file's MAC, then every line checked and, into a
 * store that holds data, the privileged records listed, before anything is
 * written. Audited either way (store.imported, store.import_privileged,
 * store.import_refused).
 */
export async function importCommand (
  store: ManagedStore,
  config: Config,
  keyring: Keyring,
  source: string,
  file: string,
  v: Values,
  io: Io,
  audit?: Auditor
): Promise<number> {
  const name = file === '-' ? 'standard input' : file
  const state: ImportState = { verified: false, listed: 0 }
  // audited only into a store known to have this secret key (its key check value, or the one the import wrote):
  // an entry in an empty store would make its later import skip the file's older audit entries
  const record = (r: AuditRecord): void => {
    if (audit === undefined || !state.verified) return
    store.setGate(null)
    audit.record(r)
  }
  try {
    return await importFile(store, config, keyring, source, file, name, v, io, record, state)
  } catch (err) {
    if (err instanceof UsageError) record({ event: 'store.import_refused', via: v.merge === true ? 'merge' : 'empty', reason: err.code, ...(state.listed > 0 ? { records: state.listed } : {}) })
    throw err
  }
}

interface ImportState { verified: boolean, listed: number }

async function importFile (
  store: ManagedStore,
  config: Config,
  keyring: Keyring,
  source: string,
  file: string,
  name: string,
  v: Values,
  io: Io,
  record: (r: AuditRecord) => void,
  state: ImportState
): Promise<number> {
  const merge = v.merge === true
  const mine = keyring.checkValue()
  if (store instanceof RedisStore) await selectDb(store.redis, config.redis.db, storeWhere(config))
  const transfer = transferOf(store, config)
  const target = storeName(config)
  const [check, marker] = await Promise.all([transfer.keys.get(KEY_CHECK), transfer.keys.get(KEY_ROTATION)])
  state.verified = check === mine
  let text: string
  try {
    text = file === '-' ? await io.stdin() : readFileSync(resolve(file), 'utf8')
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'not_found')
  }
  const invalid = (err: unknown): never => {
    if (err instanceof TransferProblem) throw new UsageError(`${name}: ${err.message}; ${NOT_WRITTEN}`, 'invalid_store_file')
    throw err
  }
  // the MAC before anything else is believed: the header's key_check only names the key, and anyone can copy it
  const { body, mac } = splitMac(text)
  let parsed: Parsed
  try { parsed = parseTransfer(body) } catch (err) {
    if (mac !== null && !keyring.storeFileMacMatches(body, mac)) invalid(new TransferProblem(1, 'its MAC does not verify'))
    return invalid(err)
  }
  if (parsed.header.key_check !== mine) {
    throw new UsageError(`${name} was exported from a store with another secret key (its key_check differs from that of this secret key, ${source}): ` +
      `its secrets could not be read here. Import it with the key of the store it came from; ${NOT_WRITTEN}`, 'secret_key_mismatch')
  }
  const unsigned = parsed.header.version === UNSIGNED_VERSION
  if (unsigned) {
    if (mac !== null) invalid(new TransferProblem(1, `a version ${UNSIGNED_VERSION} file has no MAC line`))
    if (v['allow-unsigned'] !== true) {
      throw new UsageError(`${name} is version ${UNSIGNED_VERSION} of the format: it has no MAC, so nothing shows it came from \`sidegate store export\` unchanged. ` +
        `Export it again with this sidegate, or, if you trust the file, add --allow-unsigned; ${NOT_WRITTEN}`, 'invalid_store_file')
    }
  } else if (mac === null) {
    invalid(new TransferProblem(parsed.records.length + 2, 'no MAC line: the file ends with {"mac":"…"} (cut short, or not written by `sidegate store export`)'))
  } else if (!keyring.storeFileMacMatches(body, mac)) {
    invalid(new TransferProblem(parsed.records.length + 2, 'its MAC does not verify: the file was changed after its export, or not exported with this secret key'))
  }
  if (marker !== null) throw new UsageError(`a secret key rotation is under way in ${target}: finish it first; ${NOT_WRITTEN}`, 'key_rotation_in_progress')
  if (check !== null && check !== mine) {
    throw new UsageError(`the secret key (${source}) is not the key of ${target} (its key check value differs); ${NOT_WRITTEN}`, 'secret_key_mismatch')
  }
  const { users, orgs } = await transfer.counts()
  if (check === null && (users > 0 || orgs > 0)) {
    throw new UsageError(`${target} holds data but no key check value: run \`sidegate start\` on it once, then import with --merge; ${NOT_WRITTEN}`, 'store_not_initialized')
  }
  if (!merge && (users > 0 || orgs > 0)) {
    throw new UsageError(`${target} already holds ${users} user${users === 1 ? '' : 's'} and ${orgs} org${orgs === 1 ? '' : 's'}: import into an empty store ` +
      `(before its first \`sidegate start\`), or add --merge to add only the records it lacks; ${NOT_WRITTEN}`, 'store_not_empty')
  }
  const now = Date.now()
  const plan = await planImport(parsed, transfer, now, users > 0 || orgs > 0).catch(invalid)
  const allow = new Set<TransferPrivilege>()
  if (v['allow-superuser'] === true) allow.add('superuser')
  if (v['allow-takeover'] === true) allow.add('takeover')
  const refused = plan.privileged.filter((p) => !allow.has(p.kind))
  if (refused.length > 0) {
    state.listed = refused.length
    const shown = refused.slice(0, 100).map((p) => `  line ${p.line}: ${escapeControls(p.message)} (${TRANSFER_PRIVILEGE_FLAGS[p.kind]})`)
    const flags = [...new Set(refused.map((p) => TRANSFER_PRIVILEGE_FLAGS[p.kind]))].join(' ')
    throw new UsageError(`${name}: ${refused.length} privileged record${refused.length === 1 ? '' : 's'} not allowed, ${NOT_WRITTEN}:\n${shown.join('\n')}` +
      `${refused.length > 100 ? `\n  … and ${refused.length - 100} more` : ''}\nCheck them, then run again with ${flags}`, 'invalid_import')
  }
  await transfer.write(plan.write, mine, { now, sessionLifetimeMs: config.session.absolute_timeout * 1000 })
  state.verified = true
  for (const p of plan.privileged) record({ event: 'store.import_privileged', reason: p.kind, via: p.record, ...(p.userId === null ? {} : { userId: p.userId }) })
  record({ event: 'store.imported', via: merge ? 'merge' : 'empty', reason: name, records: plan.write.length, privileged: plan.privileged.length, ...(unsigned ? { unsigned: true as const } : {}) })
  const skipped = Object.values(plan.skipped).reduce((a, b) => a + b, 0)
  const privileged = plan.privileged.map(
    (p) => ({ line: p.line, kind: p.kind, flag: TRANSFER_PRIVILEGE_FLAGS[p.kind], message: p.message })
  )
  if (v.json === true) {
    io.out(JSON.stringify({ file: name, store: transfer.where, merge, written: plan.written, skipped: plan.skipped, expired: plan.expired, privileged }, null, 2) + '\n')
    return 0
  }
  const notes = [
    ...(merge ? [`${skipped} skipped (already there${skipped > 0 ? `: ${describeCounts(plan.skipped)}` : ''})`] : []),
    ...(plan.expired > 0 ? [`${plan.expired} expired since the export, left out`] : [])
  ]
  const allowed = privileged.map((p) => `privileged: line ${p.line}: ${escapeControls(p.message)} (${p.flag}, allowed)\n`).join('')
  io.out(`imported ${name} into ${target}: ${describeCounts(plan.written)}${notes.length > 0 ? `; ${notes.join('; ')}` : ''}\n${allowed}`)
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
    throw new UsageError(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'failed')
  }
}

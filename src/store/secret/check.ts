/**
 * One store, one secret key. The store records a key check value (an HMAC of a
 * fixed label under the secret key, never the key: Keyring.checkValue) at the
 * first start; every process, gateway replica or CLI, compares its own at
 * connect time and refuses to run with another key, so nothing is ever read
 * or written under the wrong one. Written once over every backend's
 * KeyRecords (./records.ts).
 */
import type { Keyring, KeyGeneration } from '../../crypto.js'
import { KEY_CHECK, KEY_ROTATION, keyLegacy, openPrivateToken, type KeyRecords } from './records.js'

export { KEY_CHECK, KEY_ROTATION, keyLegacy }
export interface RotationMarker {
  /** check value of the key being rotated away from */
  from: string
  /** check value of the new key */
  to: string
  /** ISO date */
  started: string
  /** records converted so far (for the operator; a rerun checks every record anyway) */
  converted?: number
}

export type KeyProblem =
  /** the store was set up with another key */
  | 'secret_key_mismatch'
  /** no check value yet and the command may not record it (only `sidegate start` does) */
  | 'store_not_initialized'
  /** this is the old key of a rotation under way */
  | 'key_rotation_in_progress'
  /** the configured database cannot be selected */
  | 'redis_db_unavailable'
  /** the store is empty although this key was used before, and store.require_existing refuses that */
  | 'store_data_missing'

/** Why a process may not use this store with its key. Never carries the key or a record's content. */
export class KeyCheckError extends Error {
  constructor (readonly code: KeyProblem, message: string) {
    super(message)
    this.name = 'KeyCheckError'
  }
}

export interface VerifyOptions {
  /** `start` records the check value on a store that has none; other commands refuse such a store */
  mode: 'start' | 'cli'
  /** what to name in messages: the store's place (the Redis target and prefix, the database file) */
  where: string
  /** where the key came from (SIDEGATE_SECRET_KEY, a file), for messages */
  source: string
  /**
   * `start` only: the key was used before (a key file, a store that had its
   * check value), so an empty store means lost or misplaced data: refuse it
   * (store.require_existing) rather than record the key in it
   */
  refuseEmpty?: boolean
  /** Redis: the database the configuration names (0 means none is selected; ../redis/key-records.ts selects it) */
  db: number
}

export interface Verified {
  /** notes worth a log line: a rotation under way (warn), a check value just recorded (info) */
  notes: Array<{ level: 'info' | 'warn', msg: string }>
  /** the store held nothing (no check value, no user, no org) and this key's check value was recorded in it now */
  empty: boolean
}

const parseMarker = (v: string | null): RotationMarker | null => {
  if (v === null) return null
  try {
    const m = JSON.parse(v) as RotationMarker
    return typeof m.from === 'string' && typeof m.to === 'string' ? m : null
  } catch { return null }
}

export async function readMarker (r: KeyRecords): Promise<RotationMarker | null> {
  return parseMarker(await r.get(KEY_ROTATION))
}

/**
 * Compares this process's key with the store's and, when it matches, gives
 * the keyring the generations of the keys the store was rotated away from.
 * Throws KeyCheckError when the process must not use the store; any other
 * error is a store failure (retry). Rules:
 * - the store's check value equals this key's: ok;
 * - a rotation is under way to this key: ok (records not converted yet are unreadable until it ends);
 * - a rotation is under way away from this key: refused;
 * - no check value: `start` records it when the store is empty, or when it can
 *   decrypt a sample record (a store from before check values), else refuses;
 *   other commands refuse until a start has recorded it;
 * - any other check value: refused.
 */
export async function verifyStoreKey (r: KeyRecords, keyring: Keyring, o: VerifyOptions): Promise<Verified> {
  const notes: Verified['notes'] = []
  const warnings: string[] = []
  let empty = false
  const mine = keyring.checkValue()
  const [check, markerRaw] = await Promise.all([r.get(KEY_CHECK), r.get(KEY_ROTATION)])
  const marker = parseMarker(markerRaw)
  const mismatch = (): KeyCheckError => new KeyCheckError('secret_key_mismatch',
    `the secret key (${o.source}) is not the key of the store at ${o.where}: its key check value differs, so it holds data encrypted under another key. ` +
    'Use the key the gateway uses (run this where the gateway runs, or set SIDEGATE_SECRET_KEY); nothing was read or written')
  if (marker !== null && marker.to === mine) {
    if (check !== mine) notes.push({ level: 'warn', msg: `a rotation to this secret key is under way (started ${marker.started}): records not converted yet cannot be read until it ends` })
  } else if (marker !== null && marker.from === mine) {
    throw new KeyCheckError('key_rotation_in_progress',
      `the store at ${o.where} is being rotated from this secret key (${o.source}) to a new one (started ${marker.started}): ` +
      'finish it with `sidegate secret rotate` and run with the new key')
  } else if (check === null) {
    if (o.mode !== 'start') {
      throw new KeyCheckError('store_not_initialized',
        `the store at ${o.where} has no key check value yet: run \`sidegate start\` once (it records the key's check value), then run this again`)
    }
    empty = await r.isEmpty()
    if (empty && o.refuseEmpty === true) {
      throw new KeyCheckError('store_data_missing',
        `the store at ${o.where} is empty, but the secret key (${o.source}) was used before: its data is lost or this is not its store. ` +
        'Nothing was written (store.require_existing is true); point store.path or redis.url at the store that holds the data, or restore a backup')
    }
    const sample = await findSample(r)
    if (sample !== null && keyring.tryDecrypt(sample.sealed, sample.aad) === null) {
      throw new KeyCheckError('secret_key_mismatch',
        `the secret key (${o.source}) cannot decrypt ${sample.record} in the store at ${o.where}, which has no key check value yet: ` +
        'it was set up with another key. Start with that key (it records the check value), or use another store')
    }
    const set = await r.setIfAbsent(KEY_CHECK, mine)
    if (!set && (await r.get(KEY_CHECK)) !== mine) throw mismatch()
    if (set) notes.push({ level: 'info', msg: sample === null ? 'recorded the secret key\'s check value in the store' : `recorded the secret key's check value in the store (it decrypts ${sample.record})` })
  } else if (check !== mine) {
    throw mismatch()
  }
  keyring.setLegacy(await readLegacy(r, keyring, warnings))
  for (const msg of warnings) notes.push({ level: 'warn', msg })
  return { notes, empty }
}

/** The generations this key's store was rotated away from (encrypted under this key), or none. */
export async function readLegacy (r: KeyRecords, keyring: Keyring, notes: string[] = []): Promise<KeyGeneration[]> {
  const name = keyLegacy(keyring.checkValue())
  const sealed = await r.get(name)
  if (sealed === null) return []
  const plain = keyring.tryDecrypt(sealed, name)
  if (plain === null) {
    notes.push(`${name} cannot be decrypted: credentials issued before the last key rotation are refused`)
    return []
  }
  return JSON.parse(plain) as KeyGeneration[]
}

/** Looks at up to this many users for an encrypted record. */
const SAMPLE_USERS = 1000

/** An encrypted record of the store (a private token or an access-key secret), or null when there is none. */
export async function findSample (r: KeyRecords): Promise<{ record: string, sealed: string, aad: string } | null> {
  const users = (await r.userIds()).slice(0, SAMPLE_USERS)
  for (const uid of users) {
    const pt = await r.read(`user-pt:${uid}`)
    if (pt !== null) return { record: `user-pt:${uid}`, sealed: openPrivateToken(pt).sealed, aad: `pt:${uid}` }
    for (const id of await r.keyIds(uid)) {
      const raw = await r.read(`ak:${id}`)
      if (raw === null) continue
      const secret = (JSON.parse(raw) as { secret?: unknown }).secret
      if (typeof secret === 'string') return { record: `ak:${id}`, sealed: secret, aad: `ak:${id}` }
    }
  }
  return null
}

/**
 * `sidegate secret rotate`: re-encrypts every encrypted record (access-key
 * secrets, private tokens, TOTP secrets, the identity JWT's private signing
 * keys) under a new secret key in one pass, then moves the
 * store's key check value to the new key, last. Resumable: the pass starts by
 * recording a marker (`key-rotation`: both check values) and converts each
 * record only if it is still under the old key, so running the same command
 * again after an interruption continues where it stopped.
 *
 * Credentials issued under the old key (private tokens, sessions, bearer
 * tokens) carry a check tag under it and have lookup entries hashed under it,
 * which no rotation can re-key (they are known only by their hash). So the
 * old key's lookup and tag keys (not its encryption key) are kept for the new
 * key, encrypted under it (`key-legacy:<new check value>`): with the new key a
 * process still accepts what the old one issued. See crypto.ts KeyGeneration.
 */
import type { Keyring, KeyGeneration } from '../../crypto.js'
import { KEY_CHECK, KEY_ROTATION, KeyCheckError, keyLegacy, readLegacy, readMarker, type RotationMarker } from './check.js'
import { openPrivateToken, sealPrivateToken, type KeyRecords } from './records.js'
import { JWKS_KEY, parseKeySet, signingKeyAad } from '../keyset.js'

export interface RotateOptions {
  /** count what would be converted; write nothing */
  dryRun: boolean
  /** stop after this many records (run again to continue); null: all */
  limit: number | null
  /** a progress line (every PROGRESS_EVERY records and at the end) */
  progress: (line: string) => void
}

export interface RotateResult {
  dry_run: boolean
  /** records looked at */
  checked: number
  /** re-encrypted under the new key (dry run: would be) */
  converted: number
  /** already under the new key (an earlier, interrupted run) */
  already: number
  /** records neither key can decrypt: left as they are */
  unreadable: string[]
  /** true once every record is under the new key and the check value moved */
  done: boolean
}

const PROGRESS_EVERY = 100
const MAX_CAS_TRIES = 5

type Outcome = 'converted' | 'already' | 'unreadable' | 'gone'

export async function rotateSecretKey (
  r: KeyRecords, oldKeys: Keyring, newKeys: Keyring, o: RotateOptions
): Promise<RotateResult> {
  const from = oldKeys.checkValue()
  const to = newKeys.checkValue()
  const where = r.where
  const [check, marker] = await Promise.all([r.get(KEY_CHECK), readMarker(r)])
  // a rerun after the check value moved converts what replicas still on the old key wrote meanwhile
  let sweep = false
  if (marker !== null) {
    if (marker.from !== from || marker.to !== to) {
      throw new KeyCheckError('key_rotation_in_progress', marker.from === from
        ? `another rotation from this key to a different new key is under way at ${where} (started ${marker.started}): finish it with that key`
        : `a rotation to another key is under way at ${where} (started ${marker.started}), and this is not its old key`)
    }
  } else if (check === to) {
    sweep = true
  } else if (check === null) {
    throw new KeyCheckError('store_not_initialized', `the store at ${where} has no key check value yet: run \`sidegate start\` once first`)
  } else if (check !== from) {
    throw new KeyCheckError('secret_key_mismatch', `the current secret key is not the key of the store at ${where} (its key check value differs): rotate from the key the gateway uses`)
  }
  // the old key's own earlier generations: its lookup hashes of what they issued, carried over to the new key
  const legacy = await readLegacy(r, oldKeys)
  oldKeys.setLegacy(legacy)

  const result: RotateResult = { dry_run: o.dryRun, checked: 0, converted: 0, already: 0, unreadable: [], done: false }
  const started = marker?.started ?? new Date().toISOString()
  if (!o.dryRun && !sweep) {
    if (marker === null) {
      const m: RotationMarker = { from, to, started, converted: 0 }
      if (!(await r.setIfAbsent(KEY_ROTATION, JSON.stringify(m)))) {
        throw new KeyCheckError('key_rotation_in_progress', `another rotation started at ${where} just now`)
      }
    }
    const gens: KeyGeneration[] = [...legacy.filter((g) => g.check !== to), oldKeys.exportGeneration()]
    const name = keyLegacy(to)
    await r.set(name, newKeys.encrypt(JSON.stringify(gens), name))
  }

  const count = (what: Outcome, record: string): void => {
    if (what === 'gone') return
    result.checked++
    if (what === 'converted') result.converted++
    else if (what === 'already') result.already++
    else result.unreadable.push(record)
    if (result.checked % PROGRESS_EVERY === 0) report()
  }
  const report = (): void => {
    o.progress(`${result.checked} records checked: ${result.converted} ${o.dryRun ? 'to re-encrypt' : 're-encrypted'}, ${result.already} already under the new key, ${result.unreadable.length} unreadable`)
    if (!o.dryRun && !sweep) {
      r.set(
        KEY_ROTATION, JSON.stringify({ from, to, started, converted: result.converted } satisfies RotationMarker)
      ).catch(() => {})
    }
  }
  const full = (): boolean => o.limit !== null && result.converted >= o.limit

  /** Re-encrypts one record in place: `seal(plain)` gives the new stored value. */
  const convert = async (
    key: string,
    open: (stored: string) => { sealed: string, aad: string },
    seal: (stored: string, plain: string) => string
  ): Promise<Outcome> => {
    for (let i = 0; i < MAX_CAS_TRIES; i++) {
      const stored = await r.read(key)
      if (stored === null) return 'gone'
      const { sealed, aad } = open(stored)
      if (newKeys.tryDecrypt(sealed, aad) !== null) return 'already'
      const plain = oldKeys.tryDecrypt(sealed, aad)
      if (plain === null) return 'unreadable'
      if (o.dryRun) return 'converted'
      if (await r.compareAndSet(key, stored, seal(stored, plain))) return 'converted'
    }
    throw new Error(`${key} kept changing while being re-encrypted; run the command again`)
  }

  const users = await r.userIds()
  outer: for (const uid of users) {
    for (const id of await r.keyIds(uid)) {
      if (full()) break outer
      const aad = `ak:${id}`
      count(await convert(aad, (stored) => ({
        sealed: (JSON.parse(stored) as { secret: string }).secret,
        aad
      }), (stored, plain) => {
        const rec = JSON.parse(stored) as Record<string, unknown>
        return JSON.stringify({ ...rec, secret: newKeys.encrypt(plain, aad) })
      }), aad)
    }
    if (full()) break
    const aad = `pt:${uid}`
    count(await convert(`user-pt:${uid}`, (stored) => ({ sealed: openPrivateToken(stored).sealed, aad }), (stored, plain) => {
      // the lookup entry stays where it is (hashed under the key that issued the token)
      const hash = openPrivateToken(stored).hash ?? oldKeys.lookup(plain)
      return sealPrivateToken(hash, newKeys.encrypt(plain, aad))
    }), `user-pt:${uid}`)
    // the TOTP record (a record that only requires enrolment holds no secret)
    if (full()) break
    const totp = `user-totp:${uid}`
    const held = await r.read(totp)
    if (held !== null && typeof (JSON.parse(held) as { secret?: unknown }).secret === 'string') {
      count(await convert(totp, (stored) => ({
        sealed: (JSON.parse(stored) as { secret: string }).secret,
        aad: totp
      }), (stored, plain) => {
        const rec = JSON.parse(stored) as Record<string, unknown>
        return JSON.stringify({ ...rec, secret: newKeys.encrypt(plain, totp) })
      }), totp)
    }
  }
  /** The key set is one record holding several sealed private keys: each is counted, the record written once. */
  const convertKeySet = async (): Promise<Array<{ what: Outcome, record: string }>> => {
    const key = JWKS_KEY
    for (let i = 0; i < MAX_CAS_TRIES; i++) {
      const stored = await r.read(key)
      if (stored === null) return []
      const set = parseKeySet(stored)
      const out: Array<{ what: Outcome, record: string }> = []
      const keys = set.keys.map((k) => {
        const aad = signingKeyAad(k.kid)
        const record = `${JWKS_KEY}:${k.kid}`
        if (newKeys.tryDecrypt(k.private, aad) !== null) { out.push({ what: 'already', record }); return k }
        const plain = oldKeys.tryDecrypt(k.private, aad)
        if (plain === null) { out.push({ what: 'unreadable', record }); return k }
        out.push({ what: 'converted', record })
        return { ...k, private: newKeys.encrypt(plain, aad) }
      })
      if (o.dryRun || !out.some((x) => x.what === 'converted')) return out
      if (await r.compareAndSet(key, stored, JSON.stringify({ ...set, keys }))) return out
    }
    throw new Error(`${key} kept changing while being re-encrypted; run the command again`)
  }
  if (!full()) for (const { what, record } of await convertKeySet()) count(what, record)
  const stopped = full()
  report()
  if (o.dryRun || stopped) return result
  if (!sweep) {
    // last: from here every process must have the new key
    await r.set(KEY_CHECK, to)
    await r.delete(keyLegacy(from))
    await r.delete(KEY_ROTATION)
  }
  result.done = true
  return result
}

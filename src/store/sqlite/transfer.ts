/**
 * `sidegate store export|import|backup` on the embedded store (../transfer.ts):
 * the tables read in one read transaction (a consistent snapshot, which
 * blocks no writer in WAL mode), written in one IMMEDIATE transaction (all
 * or nothing), and the file copied online with SQLite's backup API.
 */
import { closeSync, openSync, renameSync, rmSync } from 'node:fs'
import { JWKS_KEY, parseKeySet } from '../keyset.js'
import { groupNameKey, type SsoMark, type StoredKey, type StoredUser } from '../ports.js'
import { KEY_CHECK } from '../secret/records.js'
import { auditAfter, auditId, recordId, withFactors, withSso, type StoreTransfer, type TransferRecord, type WriteOptions } from '../transfer.js'
import type { Group, Link, Org, StoredPasskey } from '../model.js'
import { factorsColumn, factorsOf } from './context.js'
import { SqliteKeyRecords } from './key-records.js'
import { openDatabase } from './schema.js'
import type { SqliteStorage } from './storage.js'

/** The pages a backup step copies after the first: all of them, in one read transaction. */
const ALL_PAGES = 0x7fffffff

const parse = <T>(json: string): T => JSON.parse(json) as T

export class SqliteTransfer implements StoreTransfer {
  readonly keys: SqliteKeyRecords

  constructor (private readonly s: SqliteStorage, readonly where: string) {
    this.keys = new SqliteKeyRecords(s, where)
  }

  async read (now: number): Promise<TransferRecord[]> {
    const { s } = this
    const all = <T>(sql: string, ...args: unknown[]): T[] => s.st(sql).all(...args) as T[]
    return s.run(() => s.db.transaction(() => {
      const out: TransferRecord[] = []
      for (const r of all<{ json: string }>('SELECT json FROM orgs ORDER BY id')) out.push({ kind: 'org', org: parse<Org>(r.json) })
      for (const r of all<{ json: string }>('SELECT json FROM groups ORDER BY id')) out.push({ kind: 'group', group: parse<Group>(r.json) })
      for (const r of all<{ json: string }>('SELECT json FROM users ORDER BY id')) out.push({ kind: 'user', user: parse<StoredUser>(r.json) })
      for (const r of all<{ json: string }>('SELECT json FROM links ORDER BY source, subject')) out.push({ kind: 'link', link: parse<Link>(r.json) })
      for (const r of all<{ json: string, last_used: string | null }>('SELECT json, last_used FROM access_keys ORDER BY id')) {
        out.push({ kind: 'access_key', key: parse<StoredKey>(r.json), last_used: r.last_used })
      }
      for (const r of all<{ user_id: string, stored: string }>('SELECT user_id, stored FROM pt_user ORDER BY user_id')) {
        const i = r.stored.indexOf(':')
        out.push({ kind: 'private_token', user_id: r.user_id, hash: i === -1 ? null : r.stored.slice(0, i), sealed: i === -1 ? r.stored : r.stored.slice(i + 1) })
      }
      for (const r of all<{ hash: string, user_id: string }>('SELECT hash, user_id FROM pt_lookup ORDER BY hash')) out.push({ kind: 'private_token_lookup', hash: r.hash, user_id: r.user_id })
      for (const r of all<{ hash: string }>('SELECT hash FROM pt_imported ORDER BY hash')) out.push({ kind: 'private_token_imported', hash: r.hash })
      for (const r of all<{ hash: string, user_id: string, exp: number, factors: string | null }>('SELECT hash, user_id, exp, factors FROM bearer WHERE exp > ? ORDER BY hash', now)) {
        out.push(withFactors({ kind: 'bearer_token', hash: r.hash, user_id: r.user_id, expires: r.exp }, factorsOf(r.factors)))
      }
      for (const r of all<{ hash: string, user_id: string, created: number, exp: number, factors: string | null, sso: string | null }>('SELECT hash, user_id, created, exp, factors, sso FROM sessions WHERE exp > ? ORDER BY hash', now)) {
        const sso = r.sso === null ? null : parse<SsoMark>(r.sso)
        out.push(withSso(withFactors({ kind: 'session', hash: r.hash, user_id: r.user_id, created: r.created, expires: r.exp }, factorsOf(r.factors)), sso))
      }
      for (const r of all<{ user_id: string, stored: string }>('SELECT user_id, stored FROM mfa_totp ORDER BY user_id')) out.push({ kind: 'totp', user_id: r.user_id, stored: r.stored })
      for (const r of all<{ user_id: string, hash: string }>('SELECT user_id, hash FROM mfa_recovery ORDER BY user_id, hash')) out.push({ kind: 'recovery_code', user_id: r.user_id, hash: r.hash })
      for (const r of all<{ json: string, counter: number, last_used: string | null }>('SELECT json, counter, last_used FROM passkeys ORDER BY id')) {
        out.push({ kind: 'passkey', passkey: { ...parse<StoredPasskey>(r.json), counter: r.counter, last_used: r.last_used } })
      }
      const jwks = s.st('SELECT value FROM meta WHERE name = ?').pluck().get(JWKS_KEY) as string | undefined
      if (jwks !== undefined) { const set = parseKeySet(jwks); if (set.rev > 0) out.push({ kind: 'signing_keys', set }) }
      for (const r of all<{ name: string, value: string }>("SELECT name, value FROM meta WHERE name LIKE 'key-legacy:%' ORDER BY name")) {
        out.push({ kind: 'key_legacy', check: r.name.slice('key-legacy:'.length), sealed: r.value })
      }
      for (const r of all<{ ms: number, seq: number, json: string }>('SELECT ms, seq, json FROM audit ORDER BY n')) out.push({ kind: 'audit', id: `${r.ms}-${r.seq}`, event: r.json })
      return out
    })())
  }

  async counts (): Promise<{ users: number, orgs: number }> {
    const { s } = this
    return s.ungated(() => ({ users: s.st('SELECT count(*) FROM users').pluck().get() as number, orgs: s.st('SELECT count(*) FROM orgs').pluck().get() as number }))
  }

  async exists (records: TransferRecord[]): Promise<boolean[]> {
    const { s } = this
    return s.ungated(() => {
      const last = s.st('SELECT ms, seq FROM audit ORDER BY n DESC LIMIT 1').get() as { ms: number, seq: number } | undefined
      const has = (sql: string, id: string): boolean => s.st(`SELECT 1 FROM ${sql}`).get(id) !== undefined
      return records.map((r) => {
        switch (r.kind) {
          case 'org': return has('orgs WHERE id = ?', r.org.id)
          case 'group': return has('groups WHERE id = ?', r.group.id)
          case 'user': return has('users WHERE id = ?', r.user.id)
          case 'link': return s.st('SELECT 1 FROM links WHERE source = ? AND subject = ?').get(r.link.source, r.link.subject) !== undefined
          case 'access_key': return has('access_keys WHERE id = ?', r.key.id)
          case 'private_token': return has('pt_user WHERE user_id = ?', r.user_id)
          case 'private_token_lookup': return has('pt_lookup WHERE hash = ?', r.hash)
          case 'private_token_imported': return has('pt_imported WHERE hash = ?', r.hash)
          case 'bearer_token': return has('bearer WHERE hash = ?', r.hash)
          case 'session': return has('sessions WHERE hash = ?', r.hash)
          case 'totp': return has('mfa_totp WHERE user_id = ?', r.user_id)
          case 'recovery_code': return s.st('SELECT 1 FROM mfa_recovery WHERE user_id = ? AND hash = ?').get(r.user_id, r.hash) !== undefined
          case 'passkey': return has('passkeys WHERE id = ?', r.passkey.id)
          case 'signing_keys': return has('meta WHERE name = ?', JWKS_KEY)
          case 'key_legacy': return has('meta WHERE name = ?', `key-legacy:${r.check}`)
          default: return last !== undefined && !auditAfter(auditId(recordId(r))!, [last.ms, last.seq])
        }
      })
    })
  }

  async groupNameOwner (nameKey: string): Promise<string | null> {
    return this.s.ungated(() => (this.s.st('SELECT id FROM groups WHERE name_key = ?').pluck().get(nameKey) as string | undefined) ?? null)
  }

  async linkOf (userId: string, source: string): Promise<string | null> {
    return this.s.ungated(() => (this.s.st('SELECT subject FROM links WHERE user_id = ? AND source = ?').pluck().get(userId, source) as string | undefined) ?? null)
  }

  async usernameOwner (usernameLower: string): Promise<string | null> {
    return this.s.ungated(() => (this.s.st('SELECT id FROM users WHERE username_lower = ?').pluck().get(usernameLower) as string | undefined) ?? null)
  }

  /** One IMMEDIATE transaction: every record and the key check value, or nothing. */
  async write (records: TransferRecord[], keyCheck: string, o: WriteOptions): Promise<void> {
    const { s } = this
    s.ungated(() => s.db.transaction(() => {
      const run = (sql: string, ...args: unknown[]): void => { s.st(sql).run(...args) }
      let n = (s.st('SELECT max(n) FROM audit').pluck().get() as number | null) ?? 0
      for (const r of records) {
        switch (r.kind) {
          case 'org': run('INSERT INTO orgs (id, json) VALUES (?, ?)', r.org.id, JSON.stringify(r.org)); break
          case 'group': run('INSERT INTO groups (id, name_key, json) VALUES (?, ?, ?)', r.group.id, groupNameKey(r.group.org, r.group.name.toLowerCase()), JSON.stringify(r.group)); break
          case 'user': run('INSERT INTO users (id, username_lower, json) VALUES (?, ?, ?)', r.user.id, r.user.username.toLowerCase(), JSON.stringify(r.user)); break
          case 'link': run('INSERT INTO links (source, subject, user_id, json) VALUES (?, ?, ?, ?)', r.link.source, r.link.subject, r.link.user_id, JSON.stringify(r.link)); break
          case 'access_key': run('INSERT INTO access_keys (id, user_id, json, last_used) VALUES (?, ?, ?, ?)', r.key.id, r.key.user_id, JSON.stringify(r.key), r.last_used); break
          case 'private_token': run('INSERT INTO pt_user (user_id, stored) VALUES (?, ?)', r.user_id, r.hash === null ? r.sealed : `${r.hash}:${r.sealed}`); break
          case 'private_token_lookup': run('INSERT INTO pt_lookup (hash, user_id) VALUES (?, ?)', r.hash, r.user_id); break
          case 'private_token_imported': run('INSERT INTO pt_imported (hash) VALUES (?)', r.hash); break
          case 'bearer_token': if (r.expires > o.now) run('INSERT INTO bearer (hash, user_id, exp, factors) VALUES (?, ?, ?, ?)', r.hash, r.user_id, r.expires, factorsColumn(r.factors)); break
          case 'session': {
            if (r.expires <= o.now) break
            run('INSERT INTO sessions (hash, user_id, created, exp, factors, sso) VALUES (?, ?, ?, ?, ?, ?)', r.hash, r.user_id, r.created, r.expires, factorsColumn(r.factors), r.sso === undefined ? null : JSON.stringify(r.sso))
            for (const tag of r.sso?.tags ?? []) run('INSERT OR REPLACE INTO session_tags (tag, hash, exp) VALUES (?, ?, ?)', tag, r.hash, Math.max(r.expires, r.created + o.sessionLifetimeMs))
            break
          }
          case 'totp': run('INSERT INTO mfa_totp (user_id, stored) VALUES (?, ?)', r.user_id, r.stored); break
          case 'recovery_code': run('INSERT INTO mfa_recovery (user_id, hash) VALUES (?, ?)', r.user_id, r.hash); break
          case 'passkey': {
            const { counter, last_used: lastUsed, ...rest } = r.passkey
            run('INSERT INTO passkeys (id, user_id, json, counter, last_used) VALUES (?, ?, ?, ?, ?)', rest.id, rest.user_id, JSON.stringify(rest), counter, lastUsed)
            break
          }
          case 'signing_keys': run('INSERT INTO meta (name, value) VALUES (?, ?)', JWKS_KEY, JSON.stringify(r.set)); break
          case 'key_legacy': run('INSERT INTO meta (name, value) VALUES (?, ?)', `key-legacy:${r.check}`, r.sealed); break
          case 'audit': {
            const [ms, seq] = auditId(r.id)!
            run('INSERT INTO audit (n, ms, seq, json) VALUES (?, ?, ?, ?)', ++n, ms, seq, r.event)
            break
          }
        }
      }
      run('INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)', KEY_CHECK, keyCheck)
    }).immediate())
  }

  /**
   * A consistent copy of the open file at `dest` while others write to it:
   * SQLite's online backup, every page in one step (one read transaction, so
   * no concurrent write makes it start over), into a file beside `dest`
   * renamed into place once complete and checked.
   */
  async backup (dest: string): Promise<{ pages: number }> {
    const { s } = this
    const tmp = `${dest}.partial-${process.pid}`
    try {
      // readable by its owner only, as the store file is
      closeSync(openSync(tmp, 'wx', 0o600))
      const r = await s.ungated(() => s.db.backup(tmp, { progress: () => ALL_PAGES }))
      // the copy opens as a store (same application id and schema) before it takes the name
      openDatabase(tmp, { busyTimeout: 1000, mustExist: true }).close()
      renameSync(tmp, dest)
      return { pages: r.totalPages }
    } finally {
      for (const x of ['', '-wal', '-shm']) rmSync(tmp + x, { force: true })
    }
  }
}

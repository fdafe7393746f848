/**
 * `sidegate store export|import` on Redis (../transfer.ts), over the key
 * layout of ./layout.ts: records are found through the `orgs` and `users`
 * sets and each user's indexes, the private-token lookup entries and the
 * legacy key generations by SCAN. Redis has no snapshot across keys: an
 * export while gateways write may miss what changes meanwhile. An import
 * writes each key on its own (the layout keeps every command on one key),
 * with NX, so it never overwrites; the key check value first, so a run cut
 * short can be finished by running it again with --merge.
 */
import { JWKS_KEY, parseKeySet } from '../keyset.js'
import { groupNameKey, type StoredKey, type StoredSession, type StoredUser } from '../ports.js'
import { KEY_CHECK, openPrivateToken, sealPrivateToken } from '../secret/records.js'
import { KeyCheckError } from '../secret/check.js'
import { auditAfter, auditId, withFactors, withSso, type StoreTransfer, type TransferRecord, type WriteOptions } from '../transfer.js'
import type { Group, Link, Org } from '../model.js'
import type { RedisClient } from './connect.js'
import { scanKeys } from './context.js'
import { RedisKeyRecords } from './key-records.js'
import { decodeGrant, encodeGrant } from './bearer-tokens.js'
import { SCRIPTS } from './scripts.js'
import { passkeyFields, passkeyOf } from './passkeys.js'
import { normalizeGroups } from './users.js'

/** Audit entries read per XRANGE. */
const AUDIT_BATCH = 1000

export class RedisTransfer implements StoreTransfer {
  readonly keys: RedisKeyRecords

  constructor (private readonly redis: RedisClient, private readonly prefix: string, readonly where: string) {
    this.keys = new RedisKeyRecords(redis, prefix, where)
  }

  #k (...parts: string[]): string { return this.prefix + parts.join(':') }
  async #json<T> (key: string): Promise<T | null> {
    const v = await this.redis.get(key); return v === null ? null : JSON.parse(v) as T
  }

  async read (now: number): Promise<TransferRecord[]> {
    const r = this.redis
    const orgs: TransferRecord[] = []
    for (const id of (await r.smembers(this.#k('orgs'))).sort()) {
      const org = await this.#json<Org>(this.#k('org', id))
      if (org !== null) orgs.push({ kind: 'org', org })
    }
    const groups: TransferRecord[] = []
    for (const id of (await r.smembers(this.#k('groups'))).sort()) {
      const group = await this.#json<Group>(this.#k('group', id))
      if (group !== null) groups.push({ kind: 'group', group })
    }
    const users: TransferRecord[] = []
    const links: TransferRecord[] = []
    const keys: TransferRecord[] = []
    const tokens: TransferRecord[] = []
    const bearer: TransferRecord[] = []
    const sessions: TransferRecord[] = []
    const factors: TransferRecord[] = []
    const passkeys: TransferRecord[] = []
    for (const uid of (await r.smembers(this.#k('users'))).sort()) {
      const user = await this.#json<StoredUser>(this.#k('user', uid))
      if (user === null) continue
      // cjson may write an empty object as [] (./users.ts)
      if (Array.isArray(user.orgs)) user.orgs = {}
      normalizeGroups(user)
      users.push({ kind: 'user', user })
      const held = await r.hgetall(this.#k('user-links', uid))
      for (const [source, subject] of Object.entries(held).sort()) {
        const link = await this.#json<Link>(this.#k('link', `${source} ${subject}`))
        if (link !== null && link.user_id === uid) links.push({ kind: 'link', link })
      }
      for (const id of (await r.smembers(this.#k('user-aks', uid))).sort()) {
        const [raw, used] = await Promise.all([r.get(this.#k('ak', id)), r.get(this.#k('ak-used', id))])
        if (raw !== null) keys.push({ kind: 'access_key', key: JSON.parse(raw) as StoredKey, last_used: used })
      }
      const pt = await r.get(this.#k('user-pt', uid))
      if (pt !== null) tokens.push({ kind: 'private_token', user_id: uid, ...openPrivateToken(pt) })
      const bt = await r.zrange(this.#k('user-bt', uid), '0', '-1', 'WITHSCORES')
      for (let i = 0; i < bt.length; i += 2) {
        const expires = Number(bt[i + 1])
        const g = decodeGrant(await r.get(this.#k('bt', bt[i])))
        if (expires > now && g?.user_id === uid) {
          bearer.push(
            withFactors({ kind: 'bearer_token', hash: bt[i], user_id: uid, expires }, g.factors)
          )
        }
      }
      for (const h of (await r.smembers(this.#k('user-sess', uid))).sort()) {
        const [s, ttl] = await Promise.all([this.#json<StoredSession>(this.#k('sess', h)), r.pttl(this.#k('sess', h))])
        if (s !== null && s.user_id === uid && ttl > 0) {
          sessions.push(
            withSso(withFactors({ kind: 'session', hash: h, user_id: uid, created: s.created, expires: now + ttl }, s.factors), s.sso)
          )
        }
      }
      const totp = await r.get(this.#k('user-totp', uid))
      if (totp !== null) factors.push({ kind: 'totp', user_id: uid, stored: totp })
      for (const hash of (await r.smembers(this.#k('user-rc', uid))).sort()) factors.push({ kind: 'recovery_code', user_id: uid, hash })
      for (const id of (await r.smembers(this.#k('user-pk', uid))).sort()) {
        const passkey = passkeyOf(await r.hgetall(this.#k('pk', id)))
        if (passkey !== null && passkey.user_id === uid) passkeys.push({ kind: 'passkey', passkey })
      }
    }
    const lookups: TransferRecord[] = []
    const ptPrefix = this.#k('pt', '')
    for (const key of (await scanKeys(r, `${ptPrefix}*`)).sort()) {
      const uid = await r.get(key)
      if (uid !== null) lookups.push({ kind: 'private_token_lookup', hash: key.slice(ptPrefix.length), user_id: uid })
    }
    const imported: TransferRecord[] = (await r.smembers(this.#k('pt-imported'))).sort().map((hash) => ({ kind: 'private_token_imported', hash }))
    const jwks = parseKeySet(await r.get(this.#k(JWKS_KEY)))
    const legacy: TransferRecord[] = []
    const legacyPrefix = this.#k('key-legacy:')
    for (const key of (await scanKeys(r, `${legacyPrefix}*`)).sort()) {
      const sealed = await r.get(key)
      if (sealed !== null) legacy.push({ kind: 'key_legacy', check: key.slice(legacyPrefix.length), sealed })
    }
    const audit: TransferRecord[] = []
    for (let from = '-'; ;) {
      const batch = await r.xrange(this.#k('audit'), from, '+', 'COUNT', AUDIT_BATCH)
      for (const [id, fields] of batch) audit.push({ kind: 'audit', id, event: fields[fields.indexOf('e') + 1] ?? '{}' })
      if (batch.length < AUDIT_BATCH) break
      from = `(${batch[batch.length - 1][0]}`
    }
    return [
      ...orgs, ...groups, ...users, ...links, ...keys, ...tokens, ...lookups, ...imported, ...bearer, ...sessions,
      ...factors,
      ...passkeys,
      ...(jwks.rev > 0 ? [{ kind: 'signing_keys', set: jwks } as const] : []), ...legacy, ...audit
    ]
  }

  async counts (): Promise<{ users: number, orgs: number }> {
    const [users, orgs] = await Promise.all([this.redis.scard(this.#k('users')), this.redis.scard(this.#k('orgs'))])
    return { users, orgs }
  }

  /** The key a record is written at. */
  #keyOf (r: Exclude<TransferRecord, { kind: 'audit' }>): string {
    switch (r.kind) {
      case 'org': return this.#k('org', r.org.id)
      case 'group': return this.#k('group', r.group.id)
      case 'user': return this.#k('user', r.user.id)
      case 'link': return this.#k('link', `${r.link.source} ${r.link.subject}`)
      case 'access_key': return this.#k('ak', r.key.id)
      case 'private_token': return this.#k('user-pt', r.user_id)
      case 'private_token_lookup': return this.#k('pt', r.hash)
      case 'private_token_imported': return this.#k('pt-imported')
      case 'bearer_token': return this.#k('bt', r.hash)
      case 'session': return this.#k('sess', r.hash)
      case 'totp': return this.#k('user-totp', r.user_id)
      case 'recovery_code': return this.#k('user-rc', r.user_id)
      case 'passkey': return this.#k('pk', r.passkey.id)
      case 'signing_keys': return this.#k(JWKS_KEY)
      case 'key_legacy': return this.#k(`key-legacy:${r.check}`)
    }
  }

  async exists (records: TransferRecord[]): Promise<boolean[]> {
    const r = this.redis
    const last = (await r.xrevrange(this.#k('audit'), '+', '-', 'COUNT', 1))[0]?.[0]
    const top = last === undefined ? null : auditId(last)
    const out: boolean[] = []
    for (const x of records) {
      if (x.kind === 'audit') out.push(top !== null && !auditAfter(auditId(x.id)!, top))
      else if (x.kind === 'private_token_imported') out.push((await r.sismember(this.#keyOf(x), x.hash)) === 1)
      else if (x.kind === 'recovery_code') out.push((await r.sismember(this.#keyOf(x), x.hash)) === 1)
      else out.push((await r.exists(this.#keyOf(x))) === 1)
    }
    return out
  }

  async groupNameOwner (nameKey: string): Promise<string | null> {
    return await this.redis.get(this.#k('group-name', nameKey))
  }

  async linkOf (userId: string, source: string): Promise<string | null> {
    return await this.redis.hget(this.#k('user-links', userId), source)
  }

  async usernameOwner (usernameLower: string): Promise<string | null> {
    return await this.redis.get(this.#k('uname', usernameLower))
  }

  async write (records: TransferRecord[], keyCheck: string, o: WriteOptions): Promise<void> {
    const r = this.redis
    if ((await r.set(this.#k(KEY_CHECK), keyCheck, 'NX')) === null && (await r.get(this.#k(KEY_CHECK))) !== keyCheck) {
      throw new KeyCheckError('secret_key_mismatch', `the store at ${this.where} was given another secret key meanwhile: nothing was written`)
    }
    /** Each user's sessions' index lives until the last of them may end (the absolute timeout from its creation). */
    const sessionIndex = new Map<string, number>()
    for (const x of records) {
      switch (x.kind) {
        case 'org':
          await r.set(this.#keyOf(x), JSON.stringify(x.org), 'NX')
          await r.sadd(this.#k('orgs'), x.org.id)
          break
        case 'group':
          await r.set(this.#k('group-name', groupNameKey(x.group.org, x.group.name.toLowerCase())), x.group.id, 'NX')
          await r.set(this.#keyOf(x), JSON.stringify(x.group), 'NX')
          await r.sadd(this.#k('groups'), x.group.id)
          break
        case 'user':
          await r.set(this.#k('uname', x.user.username.toLowerCase()), x.user.id, 'NX')
          await r.set(this.#keyOf(x), JSON.stringify(x.user), 'NX')
          await r.sadd(this.#k('users'), x.user.id)
          break
        case 'link':
          await r.set(this.#keyOf(x), JSON.stringify(x.link), 'NX')
          await r.hsetnx(this.#k('user-links', x.link.user_id), x.link.source, x.link.subject)
          break
        case 'access_key':
          await r.set(this.#keyOf(x), JSON.stringify(x.key), 'NX')
          if (x.last_used !== null) await r.set(this.#k('ak-used', x.key.id), x.last_used, 'NX')
          await r.sadd(this.#k('user-aks', x.key.user_id), x.key.id)
          break
        case 'private_token': await r.set(this.#keyOf(x), x.hash === null ? x.sealed : sealPrivateToken(x.hash, x.sealed), 'NX'); break
        case 'private_token_lookup': await r.set(this.#keyOf(x), x.user_id, 'NX'); break
        case 'private_token_imported': await r.sadd(this.#keyOf(x), x.hash); break
        case 'bearer_token': {
          const ttl = x.expires - o.now
          if (ttl <= 0) break
          await r.set(this.#keyOf(x), encodeGrant({ user_id: x.user_id, factors: x.factors }), 'PX', ttl, 'NX')
          await r.eval(SCRIPTS.indexBearer.lua, 1, this.#k('user-bt', x.user_id), o.now, x.hash, x.expires, ttl)
          break
        }
        case 'session': {
          const ttl = x.expires - o.now
          if (ttl <= 0) break
          const stored: StoredSession = { user_id: x.user_id, created: x.created, factors: x.factors, sso: x.sso }
          await r.set(this.#keyOf(x), JSON.stringify(stored), 'PX', ttl, 'NX')
          await r.sadd(this.#k('user-sess', x.user_id), x.hash)
          for (const tag of x.sso?.tags ?? []) {
            const key = this.#k('sess-tag', tag)
            const until = Math.max(x.expires, x.created + o.sessionLifetimeMs)
            await r.sadd(key, x.hash)
            // only ever pushed later (-1: made just now)
            const left = await r.pttl(key)
            if (left < 0 || o.now + left < until) await r.pexpireat(key, until)
          }
          sessionIndex.set(
            x.user_id, Math.max(sessionIndex.get(x.user_id) ?? 0, x.expires, x.created + o.sessionLifetimeMs)
          )
          break
        }
        case 'totp': await r.set(this.#keyOf(x), x.stored, 'NX'); break
        case 'recovery_code': await r.sadd(this.#keyOf(x), x.hash); break
        case 'passkey':
          if ((await r.exists(this.#keyOf(x))) === 0) await r.hset(this.#keyOf(x), ...passkeyFields(x.passkey))
          await r.sadd(this.#k('user-pk', x.passkey.user_id), x.passkey.id)
          break
        case 'signing_keys': await r.set(this.#keyOf(x), JSON.stringify(x.set), 'NX'); break
        case 'key_legacy': await r.set(this.#keyOf(x), x.sealed, 'NX'); break
        case 'audit': await r.xadd(this.#k('audit'), x.id, 'e', x.event); break
      }
    }
    for (const [uid, until] of sessionIndex) {
      const key = this.#k('user-sess', uid)
      const ttl = await r.pttl(key)
      // -1: no expiry (kept so); else only ever pushed later
      if (ttl !== -1 && o.now + ttl < until) await r.pexpireat(key, until)
    }
    // every gateway reads the imported tokens' hashes again (./private-tokens.ts), and its group table
    await r.publish(`${this.prefix}invalidate`, 'pt-imported:')
    if (records.some((x) => x.kind === 'group')) await r.publish(`${this.prefix}invalidate`, 'group:')
  }
}

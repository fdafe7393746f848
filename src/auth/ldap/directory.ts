/**
 * One directory's answer to a password: search the entry as the service
 * account (bind_dn, or anonymously), bind as the entry with the password,
 * then read its groups as the service account again. An empty password never
 * reaches a bind (an unauthenticated simple bind "succeeds" on many servers);
 * a name that matches no entry or several is no sign-in.
 */
import { readFileSync } from 'node:fs'
import type { Client, Entry } from 'ldapts'
import type { Logger } from 'pino'
import type { LdapDirectoryConfig } from '../../config/sign-in.js'
import { escapeFilterValue, fillFilter } from './filter.js'
import { ldapts, Servers } from './servers.js'

export interface DirectoryEntry {
  dn: string
  /** attributes.id: what a link keys on */
  id: string
  username: string
  email: string
  name: string
  groups: string[]
}

export type DirectoryAnswer =
  | { ok: true, entry: DirectoryEntry }
  | { ok: false, why: 'no_entry' | 'ambiguous' | 'no_id' | 'bad_password' }

/** Groups followed at most, and how deep through groups of groups. */
const MAX_GROUPS = 256
const MAX_DEPTH = 10
/** Active Directory's binary GUID: read as bytes. */
const BINARY_IDS = new Set(['objectguid', 'objectsid'])

const first = (v: Entry[string] | undefined): string | Buffer | undefined => Array.isArray(v) ? v[0] : v
const text = (v: Entry[string] | undefined): string => {
  const x = first(v)
  return x === undefined ? '' : Buffer.isBuffer(x) ? x.toString('utf8') : x
}

/** An objectGUID in its usual form (mixed-endian, as AD tools print it); other bytes as hex. */
function idOf (v: Entry[string] | undefined): string {
  const x = first(v)
  if (x === undefined) return ''
  if (!Buffer.isBuffer(x)) return x
  if (x.length !== 16) return x.toString('hex')
  const h = (a: number, b: number, le: boolean): string => {
    const part = Buffer.from(x.subarray(a, b))
    return (le ? part.reverse() : part).toString('hex')
  }
  return `${h(0, 4, true)}-${h(4, 6, true)}-${h(6, 8, true)}-${h(8, 10, false)}-${h(10, 16, false)}`
}

/** An equality clause on the id attribute; a binary GUID as its bytes, each escaped (as idOf wrote them, back). */
function idClause (attr: string, id: string): string {
  const guid = /^([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})$/i.exec(id)
  if (!BINARY_IDS.has(attr.toLowerCase())) return `(${attr}=${escapeFilterValue(id)})`
  const bytes = guid === null
    ? Buffer.from(id, 'hex')
    : Buffer.concat([1, 2, 3].map((i) => Buffer.from(guid[i], 'hex').reverse()).concat([Buffer.from(guid[4] + guid[5], 'hex')]))
  return `(${attr}=${[...bytes].map((b) => `\\${b.toString(16).padStart(2, '0')}`).join('')})`
}

export class Directory {
  readonly id: string
  readonly config: LdapDirectoryConfig
  readonly servers: Servers

  constructor (config: LdapDirectoryConfig, log: Logger) {
    this.id = config.id
    this.config = config
    this.servers = new Servers(config.id, {
      urls: config.urls,
      startTls: config.start_tls,
      caFile: config.ca_file,
      timeout: config.timeout,
      retryAfter: config.retry_after,
      pool: config.pool
    }, log)
  }

  /** Throws DirectoryUnavailable when no server answered. */
  async authenticate (username: string, password: string): Promise<DirectoryAnswer> {
    if (password === '' || username === '') return { ok: false, why: username === '' ? 'no_entry' : 'bad_password' }
    return await this.servers.run(async (client) => {
      await this.#serviceBind(client)
      const found = await this.#find(client, username)
      if (!found.ok) return found
      try {
        await client.bind(found.entry.dn, password)
      } catch (err) {
        // a refused bind is the directory's answer: wrong password, a locked or expired account
        if (err instanceof (await ldapts()).ResultCodeError) return { ok: false, why: 'bad_password' }
        throw err
      }
      if (this.config.groups.base !== '') {
        await this.#serviceBind(client)
        found.entry.groups = await this.#groups(client, found.entry)
      }
      return found
    })
  }

  /** The entry of a name, without a password (`sidegate ldap test`, `user link --ldap`). */
  async lookup (username: string): Promise<DirectoryAnswer> {
    return await this.servers.run(async (client) => {
      await this.#serviceBind(client)
      const found = await this.#find(client, username)
      if (found.ok && this.config.groups.base !== '') found.entry.groups = await this.#groups(client, found.entry)
      return found
    })
  }

  /**
   * The entry a link names, by its id attribute, among those users.filter
   * admits (`{username}` as a presence match): an entry deleted or filtered
   * out since (a disabled account) is no_entry.
   */
  async lookupById (id: string): Promise<DirectoryAnswer> {
    return await this.servers.run(async (client) => {
      await this.#serviceBind(client)
      const found = await this.#find(client, '', `(&${this.config.users.filter.replace(/\{username\}/g, '*')}${idClause(this.config.attributes.id, id)})`)
      if (found.ok && this.config.groups.base !== '') found.entry.groups = await this.#groups(client, found.entry)
      return found
    })
  }

  /** bind_dn with its password, or nothing (an anonymous search). */
  async #serviceBind (client: Client): Promise<void> {
    const { bind_dn: dn, bind_password: inline, bind_password_file: file } = this.config
    if (dn === null) return
    const password = inline ?? (file === null ? '' : readFileSync(file, 'utf8').trim())
    // never an unauthenticated bind, for the service account either
    if (password === '') throw new Error('bind_dn has no password (bind_password_file is empty)')
    try {
      await client.bind(dn, password)
    } catch (err) {
      // a fault of this server's set-up, not the user's: the server is skipped and logged
      if (err instanceof (await ldapts()).InvalidCredentialsError) throw new Error(`the directory refused bind_dn ${dn}: check its password`)
      throw err
    }
  }

  async #find (client: Client, username: string, filter?: string): Promise<DirectoryAnswer> {
    const a = this.config.attributes
    let entries: Entry[]
    try {
      const r = await client.search(this.config.users.base, {
        scope: 'sub',
        filter: filter ?? fillFilter(this.config.users.filter, { username }),
        attributes: [a.id, a.username, a.email, a.name],
        explicitBufferAttributes: BINARY_IDS.has(a.id.toLowerCase()) ? [a.id] : [],
        sizeLimit: 2,
        timeLimit: this.config.timeout
      })
      entries = r.searchEntries
    } catch (err) {
      if (err instanceof (await ldapts()).SizeLimitExceededError) return { ok: false, why: 'ambiguous' }
      throw err
    }
    if (entries.length === 0) return { ok: false, why: 'no_entry' }
    if (entries.length > 1) return { ok: false, why: 'ambiguous' }
    const e = entries[0]
    const id = idOf(e[a.id])
    if (id === '') return { ok: false, why: 'no_id' }
    const entry = { dn: e.dn, id, username: text(e[a.username]) || username, email: text(e[a.email]) }
    return { ok: true, entry: { ...entry, name: text(e[a.name]), groups: [] } }
  }

  /** The entry's groups, and with groups.nested their groups in turn (each once, MAX_DEPTH levels). */
  async #groups (client: Client, entry: DirectoryEntry): Promise<string[]> {
    const g = this.config.groups
    const names = new Set<string>()
    const seen = new Set<string>([entry.dn.toLowerCase()])
    let level = [entry.dn]
    const { SizeLimitExceededError } = await ldapts()
    for (let depth = 0; depth < (g.nested ? MAX_DEPTH : 1) && level.length > 0 && names.size < MAX_GROUPS; depth++) {
      const next: string[] = []
      for (const dn of level) {
        const r = await client.search(g.base, {
          scope: 'sub',
          filter: fillFilter(g.filter, { dn, username: entry.username }),
          attributes: [g.name],
          sizeLimit: MAX_GROUPS,
          timeLimit: this.config.timeout
        }).catch((err: unknown) => {
          if (err instanceof SizeLimitExceededError) return { searchEntries: [] as Entry[] }
          throw err
        })
        for (const e of r.searchEntries) {
          if (seen.has(e.dn.toLowerCase())) continue
          seen.add(e.dn.toLowerCase())
          const name = text(e[g.name])
          if (name !== '') names.add(name)
          next.push(e.dn)
        }
      }
      level = next
    }
    return [...names].slice(0, MAX_GROUPS)
  }
}

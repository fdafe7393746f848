/**
 * Links in Redis: the record at `link:<source> <subject>` (SET NX claims the
 * subject) and the user's hash `user-links:<user id>` (HSETNX claims the
 * source), each command on one key. The user's field is claimed first and
 * given back when the subject was taken; a field whose record is gone (a
 * failure between the two) is stale and taken over.
 */
import type { LinkStorage } from '../ports.js'
import type { Link, OrgRole } from '../model.js'
import { getJson, type RedisContext } from './context.js'

/** How many times (20 ms apart) a held claim's missing record is looked for before the claim counts as stale. */
const CLAIM_WAITS = 10

export class RedisLinks implements LinkStorage {
  constructor (private readonly c: RedisContext) {}

  #at (source: string, subject: string): string { return this.c.k('link', `${source} ${subject}`) }

  async insert (link: Link): Promise<'ok' | 'subject_taken' | 'source_taken'> {
    const { c } = this
    const mine = c.k('user-links', link.user_id)
    if ((await c.run(() => c.redis.hsetnx(mine, link.source, link.subject))) === 0) {
      const held = await c.run(() => c.redis.hget(mine, link.source))
      if (held !== null && (await this.#claimed(link.source, held))?.user_id === link.user_id) return 'source_taken'
      await c.run(() => c.redis.hset(mine, link.source, link.subject))
    }
    try {
      if ((await c.run(() => c.redis.set(this.#at(link.source, link.subject), JSON.stringify(link), 'NX'))) !== null) return 'ok'
    } catch (err) {
      await c.scripts.hdelIfEqual(mine, link.source, link.subject).catch(() => false)
      throw err
    }
    await c.run(() => c.scripts.hdelIfEqual(mine, link.source, link.subject))
    return 'subject_taken'
  }

  /**
   * The record of a claim found held: another insert may be between its claim and its record (one round
   * trip, longer on a cluster), so a missing record is waited for briefly before the claim counts as stale
   * (one a crash left between the two).
   */
  async #claimed (source: string, subject: string): Promise<Link | null> {
    for (let i = 0; ; i++) {
      const r = await this.get(source, subject)
      if (r !== null || i === CLAIM_WAITS) return r
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  async get (source: string, subject: string): Promise<Link | null> {
    return await getJson<Link>(this.c, this.#at(source, subject))
  }

  async list (userId: string): Promise<Link[]> {
    const fields = await this.c.run(() => this.c.redis.hgetall(this.c.k('user-links', userId)))
    const links = await Promise.all(Object.entries(fields).map(async ([src, subject]) => await this.get(src, subject)))
    return links.filter((l): l is Link => l !== null && l.user_id === userId)
  }

  async all (): Promise<Link[]> {
    const ids = await this.c.run(() => this.c.redis.smembers(this.c.k('users')))
    return (await Promise.all(ids.map(async (id) => await this.list(id)))).flat()
  }

  async setOrgs (source: string, subject: string, orgs: Record<string, OrgRole>): Promise<boolean> {
    const link = await this.get(source, subject)
    if (link === null) return false
    if (Object.keys(orgs).length === 0) delete link.orgs
    else link.orgs = orgs
    // XX: never brings back a link removed meanwhile
    return (await this.c.run(() => this.c.redis.set(this.#at(source, subject), JSON.stringify(link), 'XX'))) !== null
  }

  async remove (source: string, subject: string): Promise<boolean> {
    const { c } = this
    const link = await this.get(source, subject)
    if (link === null) return false
    // the record first: from then on the link is gone whatever else a failure leaves
    if ((await c.run(() => c.redis.del(this.#at(source, subject)))) === 0) return false
    await c.run(() => c.scripts.hdelIfEqual(c.k('user-links', link.user_id), source, subject))
    return true
  }
}

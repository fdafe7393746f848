/**
 * Groups in Redis: one JSON record per key (`group:<id>`), the set `groups`
 * of their ids, and the name key claimed with SET NX (`group-name:<org or
 * global>/<lowercase name>` → id), each command on one key: the record is
 * written before its name is claimed, and removed before its name is freed.
 */
import { groupNameKey, type GroupStorage } from '../ports.js'
import type { Group } from '../model.js'
import { getJson, type RedisContext } from './context.js'

export class RedisGroups implements GroupStorage {
  constructor (private readonly c: RedisContext) {}

  async insert (group: Group, nameKey: string): Promise<'ok' | 'name_taken' | 'id_taken'> {
    const { c } = this
    const at = c.k('group', group.id)
    const nameAt = c.k('group-name', nameKey)
    // the record before the name: whoever finds the name claimed finds the record too (store.groups.ensure)
    if ((await c.run(() => c.redis.set(at, JSON.stringify(group), 'NX'))) === null) return 'id_taken'
    try {
      if ((await c.run(() => c.redis.set(nameAt, group.id, 'NX'))) === null) {
        await c.redis.del(at).catch(() => 0)
        return 'name_taken'
      }
      await c.run(() => c.redis.sadd(c.k('groups'), group.id))
    } catch (err) {
      await c.redis.del(at).catch(() => 0)
      await c.scripts.deleteIfEqual(nameAt, group.id).catch(() => false)
      throw err
    }
    return 'ok'
  }

  async get (id: string): Promise<Group | null> { return await getJson<Group>(this.c, this.c.k('group', id)) }

  async idByName (org: string | null, nameLower: string): Promise<string | null> {
    return await this.c.run(() => this.c.redis.get(this.c.k('group-name', groupNameKey(org, nameLower))))
  }

  async list (): Promise<Group[]> {
    const ids = await this.c.run(() => this.c.redis.smembers(this.c.k('groups')))
    const groups = await Promise.all(ids.map(async (id) => await this.get(id)))
    return groups.filter((g): g is Group => g !== null)
  }

  async remove (id: string): Promise<boolean> {
    const { c } = this
    const g = await this.get(id)
    if (g === null) return false
    // the record first: from then on the group is gone whatever else a failure leaves
    if ((await c.run(() => c.redis.del(c.k('group', id)))) === 0) return false
    await c.run(() => c.redis.srem(c.k('groups'), id))
    // the name only while it is still this group's
    await c.run(() => c.scripts.deleteIfEqual(c.k('group-name', groupNameKey(g.org, g.name.toLowerCase())), id))
    return true
  }
}

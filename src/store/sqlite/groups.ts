/**
 * Groups in SQLite: one JSON record per row; the name key (org and
 * lowercase name) is a UNIQUE column, claimed with the insert.
 */
import { groupNameKey, type GroupStorage } from '../ports.js'
import type { Group } from '../model.js'
import type { SqlContext } from './context.js'

export class SqliteGroups implements GroupStorage {
  constructor (private readonly c: SqlContext) {}

  async insert (group: Group, nameKey: string): Promise<'ok' | 'name_taken' | 'id_taken'> {
    const { c } = this
    return c.tx(() => {
      if (c.st('SELECT 1 FROM groups WHERE name_key = ?').get(nameKey) !== undefined) return 'name_taken'
      if (c.st('SELECT 1 FROM groups WHERE id = ?').get(group.id) !== undefined) return 'id_taken'
      c.st('INSERT INTO groups (id, name_key, json) VALUES (?, ?, ?)').run(group.id, nameKey, JSON.stringify(group))
      return 'ok'
    })
  }

  async get (id: string): Promise<Group | null> {
    const r = this.c.run(() => this.c.st('SELECT json FROM groups WHERE id = ?').pluck().get(id) as string | undefined)
    return r === undefined ? null : JSON.parse(r) as Group
  }

  async idByName (org: string | null, nameLower: string): Promise<string | null> {
    const key = groupNameKey(org, nameLower)
    return this.c.run(() => (this.c.st('SELECT id FROM groups WHERE name_key = ?').pluck().get(key) as string | undefined) ?? null)
  }

  async list (): Promise<Group[]> {
    return this.c.run(() => (this.c.st('SELECT json FROM groups').pluck().all() as string[]).map((j) => JSON.parse(j) as Group))
  }

  async remove (id: string): Promise<boolean> {
    return this.c.run(() => this.c.st('DELETE FROM groups WHERE id = ?').run(id).changes === 1)
  }
}

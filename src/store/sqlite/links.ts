/**
 * Links in SQLite: one JSON record per row, keyed by (source, subject); the
 * UNIQUE index on (user_id, source) keeps one link per source per user.
 */
import type { LinkStorage } from '../ports.js'
import type { Link, OrgRole } from '../model.js'
import type { SqlContext } from './context.js'

export class SqliteLinks implements LinkStorage {
  constructor (private readonly c: SqlContext) {}

  async insert (link: Link): Promise<'ok' | 'subject_taken' | 'source_taken'> {
    const { c } = this
    return c.tx(() => {
      if (c.st('SELECT 1 FROM links WHERE source = ? AND subject = ?').get(link.source, link.subject) !== undefined) return 'subject_taken'
      if (c.st('SELECT 1 FROM links WHERE user_id = ? AND source = ?').get(link.user_id, link.source) !== undefined) return 'source_taken'
      c.st('INSERT INTO links (source, subject, user_id, json) VALUES (?, ?, ?, ?)')
        .run(link.source, link.subject, link.user_id, JSON.stringify(link))
      return 'ok'
    })
  }

  async get (source: string, subject: string): Promise<Link | null> {
    const { c } = this
    const r = c.run(() => c.st('SELECT json FROM links WHERE source = ? AND subject = ?').pluck().get(source, subject) as string | undefined)
    return r === undefined ? null : JSON.parse(r) as Link
  }

  async list (userId: string): Promise<Link[]> {
    const { c } = this
    return c.run(() => (c.st('SELECT json FROM links WHERE user_id = ?').pluck().all(userId) as string[]).map((j) => JSON.parse(j) as Link))
  }

  async all (): Promise<Link[]> {
    const { c } = this
    return c.run(() => (c.st('SELECT json FROM links').pluck().all() as string[]).map((j) => JSON.parse(j) as Link))
  }

  async setOrgs (source: string, subject: string, orgs: Record<string, OrgRole>): Promise<boolean> {
    const { c } = this
    return c.tx(() => {
      const r = c.st('SELECT json FROM links WHERE source = ? AND subject = ?').pluck().get(source, subject) as string | undefined
      if (r === undefined) return false
      const link = JSON.parse(r) as Link
      if (Object.keys(orgs).length === 0) delete link.orgs
      else link.orgs = orgs
      c.st('UPDATE links SET json = ? WHERE source = ? AND subject = ?').run(JSON.stringify(link), source, subject)
      return true
    })
  }

  async remove (source: string, subject: string): Promise<boolean> {
    const { c } = this
    return c.run(() => c.st('DELETE FROM links WHERE source = ? AND subject = ?').run(source, subject).changes === 1)
  }
}

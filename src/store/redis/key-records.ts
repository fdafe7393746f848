/**
 * The secret key's records (../secret/records.ts) in Redis: each name and
 * record is the key of that name under the prefix (`<prefix>key-check`,
 * `<prefix>ak:<id>`, …); users and their keys come from the `users` and
 * `user-aks:<id>` sets.
 */
import type { KeyRecords } from '../secret/records.js'
import { KeyCheckError } from '../secret/check.js'
import type { RedisClient } from './connect.js'

// Replaces KEYS[1] only if it still holds ARGV[1].
const COMPARE_AND_SET = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end
return 0`
const DELETE_IF_EQUAL = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"

export class RedisKeyRecords implements KeyRecords {
  constructor (private readonly redis: RedisClient, private readonly prefix: string, readonly where: string) {}

  async get (name: string): Promise<string | null> { return await this.redis.get(this.prefix + name) }
  async set (name: string, value: string): Promise<void> { await this.redis.set(this.prefix + name, value) }
  async setIfAbsent (name: string, value: string): Promise<boolean> {
    return (await this.redis.set(this.prefix + name, value, 'NX')) !== null
  }

  async delete (name: string): Promise<void> { await this.redis.del(this.prefix + name) }
  async deleteIfEqual (name: string, value: string): Promise<void> {
    await this.redis.eval(DELETE_IF_EQUAL, 1, this.prefix + name, value)
  }

  async userIds (): Promise<string[]> { return await this.redis.smembers(this.prefix + 'users') }
  async keyIds (userId: string): Promise<string[]> { return await this.redis.smembers(`${this.prefix}user-aks:${userId}`) }
  async read (record: string): Promise<string | null> { return await this.redis.get(this.prefix + record) }

  async compareAndSet (record: string, expected: string, value: string): Promise<boolean> {
    return (await this.redis.eval(COMPARE_AND_SET, 1, this.prefix + record, expected, value)) === 1
  }

  async isEmpty (): Promise<boolean> {
    const p = this.prefix
    const [check, users, orgs] = await Promise.all([
      this.redis.exists(p + 'key-check'), this.redis.scard(p + 'users'), this.redis.scard(p + 'orgs')
    ])
    return check === 0 && users === 0 && orgs === 0
  }
}

/**
 * Selects the configured database (0: nothing to do). ioredis reports a
 * failed SELECT as an error and carries on with database 0: here it is a
 * KeyCheckError, so nothing is read or written in the wrong database.
 */
export async function selectDb (redis: RedisClient, db: number, where: string): Promise<void> {
  if (db === 0) return
  try {
    await redis.select(db)
  } catch (err) {
    throw new KeyCheckError('redis_db_unavailable', `cannot select database ${db} at ${where}: ${(err as Error).message}`)
  }
}

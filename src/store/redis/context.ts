/**
 * What every aggregate of the Redis backend shares: the command
 * client, its scripts, the key prefix, and one way to run a command.
 */
import type { RedisClient } from './connect.js'
import type { Scripts } from './scripts.js'

export interface RedisContext {
  readonly redis: RedisClient
  readonly scripts: Scripts
  readonly commandTimeout: number
  /** A Redis Cluster: a script may touch only the keys it is given (no record read through another). */
  readonly cluster: boolean
  /** The gate is open and both connections are up: what the backend caches may be used. */
  readonly trusted: boolean
  /** A key under the prefix: the parts joined with `:`. */
  k(...parts: string[]): string
  /** Runs one Redis call; a closed gate refuses it, any failure becomes a 503 store_unavailable. */
  run<T>(fn: () => Promise<T>): Promise<T>
}

export async function getJson<T> (c: RedisContext, key: string): Promise<T | null> {
  const v = await c.run(() => c.redis.get(key))
  return v === null ? null : JSON.parse(v) as T
}

/** Every key matching the pattern: SCAN on a standalone server, on each primary of a cluster. */
export async function scanKeys (redis: RedisClient, pattern: string): Promise<string[]> {
  const cluster = redis as unknown as { nodes?: (role: string) => RedisClient[] }
  const nodes = typeof cluster.nodes === 'function' ? cluster.nodes('master') : [redis]
  const keys: string[] = []
  for (const node of nodes) {
    let cursor = '0'
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
      cursor = next
      keys.push(...batch)
    } while (cursor !== '0')
  }
  return keys
}

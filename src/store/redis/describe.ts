/**
 * A Redis target as messages and logs name it: the URL with its password masked, or the sentinel
 * or cluster topology. Apart from ./connect.ts so that naming a target loads no Redis client.
 */
import type { RedisTopology } from '../../config/index.js'
import { maskUrl } from '../../http/mask.js'

export function describeRedis (o: { url: string, topology?: RedisTopology }): string {
  const t = o.topology
  if (t?.mode === 'sentinel') return `sentinel ${t.name} via ${t.sentinels.map((s) => `${s.host}:${s.port}`).join(',')}`
  if (t?.mode === 'cluster') return `cluster ${t.nodes.map((s) => `${s.host}:${s.port}`).join(',')}`
  return maskUrl(o.url)
}

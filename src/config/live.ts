/**
 * Which gateway.yml keys a live reload may change, from the one schema
 * (./schema.ts marks them `live: true`, a section for all its keys), and
 * which keys two configs differ in. docs/configuration.md's list of live keys and the
 * Helm chart's restart checksum come from liveKeys too.
 */
import type { TSchema } from '@sinclair/typebox'
import { Schema } from './schema.js'

/** Every leaf key of gateway.yml, dotted (`upstream.public_paths`), in schema order, with whether it is live. */
export function leafKeys (): Array<{ key: string, live: boolean, node: TSchema }> {
  const out: Array<{ key: string, live: boolean, node: TSchema }> = []
  const walk = (node: TSchema, prefix: string, live: boolean): void => {
    for (const [name, child] of Object.entries(node.properties as Record<string, TSchema>)) {
      const key = prefix + name
      const isLive = live || child.live === true
      if (child.type === 'object' && child.properties !== undefined) walk(child, key + '.', isLive)
      else out.push({ key, live: isLive, node: child })
    }
  }
  walk(Schema, '', false)
  return out
}

/** The keys a reload may change, dotted. */
export function liveKeys (): string[] {
  return leafKeys().filter((k) => k.live).map((k) => k.key)
}

/** The keys a reload may change, as the shortest keys that cover them (`rate_limit` for all of rate_limit.*). */
export function liveSections (): string[] {
  const out: string[] = []
  const walk = (node: TSchema, prefix: string): void => {
    for (const [name, child] of Object.entries(node.properties as Record<string, TSchema>)) {
      if (child.live === true) out.push(prefix + name)
      else if (child.type === 'object' && child.properties !== undefined) walk(child, prefix + name + '.')
    }
  }
  walk(Schema, '')
  return out
}

function valueAt (doc: unknown, key: string): unknown {
  let cur = doc
  for (const part of key.split('.')) cur = (cur as Record<string, unknown> | null | undefined)?.[part]
  return cur
}

/**
 * The leaf keys whose values differ between two configs (built by
 * ../config.ts buildConfig: what is compared is what the gateway uses, after
 * environment overrides and relative paths), split into the ones a reload
 * may change and the others.
 */
export function changedKeys (before: object, after: object): { live: string[], fixed: string[] } {
  const live: string[] = []
  const fixed: string[] = []
  for (const k of leafKeys()) {
    if (JSON.stringify(valueAt(before, k.key)) === JSON.stringify(valueAt(after, k.key))) continue
    ;(k.live ? live : fixed).push(k.key)
  }
  return { live, fixed }
}

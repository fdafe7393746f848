/**
 * The configuration reference of docs/configuration.md (`npm run docs:tables`):
 * one row per key of the one schema, with its default, whether a live reload
 * may change it, and its description.
 */
import type { TSchema } from '@sinclair/typebox'
import { Schema } from './schema.js'

type Node = Record<string, unknown>

/** Every leaf key of the schema as a dotted path, in schema order (live: inside a section marked live). */
export function configKeys (): Array<{ key: string, node: Node, live: boolean }> {
  const out: Array<{ key: string, node: Node, live: boolean }> = []
  const walk = (node: Node, path: string, live: boolean): void => {
    const here = live || node.live === true
    if (node.type === 'object' && node.properties !== undefined) {
      for (const [k, v] of Object.entries(node.properties as Record<string, Node>)) walk(v, path === '' ? k : `${path}.${k}`, here)
    } else out.push({ key: path, node, live: here })
  }
  walk(JSON.parse(JSON.stringify(Schema as TSchema)) as Node, '', false)
  return out
}

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ')

function shown (node: Node): string {
  if (node.secret === true) return '(secret)'
  const d = node.default
  if (d === undefined || d === null || d === '') return '—'
  return `\`${typeof d === 'string' ? d : JSON.stringify(d)}\``
}

export function configTable (): string {
  const rows = configKeys().map(({ key, node, live }) =>
    `| \`${key}\` | ${shown(node)} | ${live ? 'yes' : ''} | ${cell(String(node.description ?? ''))} |`)
  return ['| key | default | live | meaning |', '|---|---|---|---|', ...rows].join('\n')
}

/**
 * The configuration reference of docs/configuration.md (`npm run docs:tables`):
 * one row per key of the one schema, with its default, whether a live reload
 * may change it, and its description.
 */
import { leafKeys } from './live.js'

type Node = Record<string, unknown>

/** Every leaf key of the schema as a dotted path, in schema order (live: a live reload may change it). */
export function configKeys (): Array<{ key: string, node: Node, live: boolean }> {
  return leafKeys().map(({ key, live, node }) => ({ key, live, node: node as Node }))
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

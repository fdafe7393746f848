/**
 * What access rules are written in (gateway.yml `access`), checked when the
 * config is read (src/config/validate.ts): the policies, path globs and
 * subjects (./glob.ts matches the globs).
 */
import { isIP } from 'node:net'
import { normalizePath } from './path.js'
import { parseGroupRef } from './groups.js'
import { KINDS } from '../auth/credentials.js'

export const POLICIES = ['bypass', 'one_factor', 'two_factor', 'deny'] as const
export type Policy = typeof POLICIES[number]

/** Why a glob cannot be used, or null (config validation). */
export function globProblem (glob: string): string | null {
  if (!glob.startsWith('/')) return 'each path must start with "/"'
  const segs = glob.split('/').slice(1)
  for (let i = 0; i < segs.length; i++) {
    const s = segs[i]
    if (s.includes('**') && s !== '**') return `"**" must be a whole segment (/a/**/b), got ${JSON.stringify(glob)}`
    if (s === '.' || s === '..') return `no . or .. segments, got ${JSON.stringify(glob)}`
    if (s === '' && i < segs.length - 1) return `no empty segments (//), got ${JSON.stringify(glob)}`
  }
  const plain = glob.replace(/\*/g, 'x')
  const n = normalizePath(plain)
  if (n.ambiguous) return `must be a plain path (no encoded / or \\, no backslash), got ${JSON.stringify(glob)}`
  // rules match normalised paths: a glob must be written the same way (%7E as ~, escapes upper-case)
  if (n.path !== plain) return `must be written normalised, as paths are matched (${JSON.stringify(n.path.replace(/x/g, (x, i: number) => glob[i] === '*' ? '*' : x))}), got ${JSON.stringify(glob)}`
  return null
}

/** `method:<subject>`, by subject: each credential kind's method (the registry, src/auth/credentials.ts) */
export const METHOD_SUBJECTS: ReadonlyMap<string, string> = new Map(KINDS.map((k) => [k.subject, k.method]))
/** The subjects, as texts list them: session|bearer|… */
export const SUBJECT_LIST = [...METHOD_SUBJECTS.keys()].join('|')
/** The machine credentials' methods (CredentialKind.machine) */
export const MACHINE: ReadonlySet<string> = new Set(KINDS.filter((k) => k.machine).map((k) => k.method))

/** Why a subject cannot be used, or null (config validation). */
export function subjectProblem (s: string): string | null {
  const i = s.indexOf(':')
  const kind = i === -1 ? '' : s.slice(0, i)
  const value = s.slice(i + 1)
  if ((kind === 'user' || kind === 'service') && value !== '') return null
  if (kind === 'org' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)) return null
  if (kind === 'role' && (value === 'superuser' || value === 'org_admin')) return null
  if (kind === 'method' && METHOD_SUBJECTS.has(value)) return null
  if (kind === 'cert' && certSubject(value) !== null) return null
  if (kind === 'group') {
    const g = parseGroupRef(value)
    return typeof g === 'string' ? `group: ${g}` : null
  }
  return `each subject must be user:NAME, service:NAME, org:UUID, role:superuser, role:org_admin, group:NAME, group:ORG/NAME, method:${SUBJECT_LIST} or cert:CN=NAME (ATTR=VALUE, comma-separated), got ${JSON.stringify(s)}`
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/

/**
 * Why a rule's host cannot be used, or null (config validation): a host name
 * (`app.example.com`), `*.example.com` (its subdomains, at any depth, not
 * itself), or an IP address (`127.0.0.1`, `[::1]`); lowercase, no port.
 */
export function hostProblem (h: string): string | null {
  const wild = h.startsWith('*.')
  const name = wild ? h.slice(2) : h
  const bare = name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name
  if (isIP(bare) !== 0) {
    if (wild) return `a wildcard over an IP address matches nothing, got ${JSON.stringify(h)}`
    return (isIP(bare) === 6) === (bare !== name) ? null : `an IPv6 address is written in brackets ([::1]), got ${JSON.stringify(h)}`
  }
  if (name !== name.toLowerCase()) return `must be written in lowercase, as hosts are matched, got ${JSON.stringify(h)}`
  const labels = name.split('.')
  if (name.length > 253 || !labels.every((l) => LABEL.test(l))) {
    return `must be a host name (app.example.com), *.example.com or an IP address, without a port, got ${JSON.stringify(h)}`
  }
  if (wild && labels.length < 2) return `a wildcard needs a domain of two labels at least (*.example.com), got ${JSON.stringify(h)}`
  return null
}

const CERT_PAIR = /^([A-Za-z][A-Za-z0-9.]*)=([^,=]+)$/

/**
 * `cert:CN=ci-runner,O=Acme` → the attributes the verified client
 * certificate's subject must all have (names as Node gives them: CN, O, OU,
 * C, L, ST…; values compared exactly), or null when it is not that form.
 */
export function certSubject (value: string): Array<[string, string]> | null {
  const out: Array<[string, string]> = []
  for (const part of value.split(',')) {
    const m = CERT_PAIR.exec(part.trim())
    if (m === null) return null
    out.push([m[1], m[2].trim()])
  }
  return out
}

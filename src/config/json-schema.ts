/**
 * gateway.yml as a JSON Schema (draft 2020-12), for editors, Helm values
 * checks and CI: `sidegate config schema` prints it. Made from the one
 * schema (./schema.ts): sidegate's own keywords become standard ones (each
 * value check its `pattern` or `minLength`; `optional` an empty string or
 * null; an enumeration `enum`) and are then dropped, so any validator reads
 * it in strict mode. Every key is optional (sidegate fills in defaults).
 *
 * What it cannot say, and `sidegate config check` does: rules across keys
 * (session.absolute_timeout >= idle_timeout, the keys of a redis.mode, the
 * database in redis.url), exact address and CIDR checks, and that sidegate
 * also takes numbers and booleans as strings (as environment variables give
 * them).
 */
import type { TSchema } from '@sinclair/typebox'
import { ISSUER_ALGORITHMS } from './issuers.js'
import { Schema } from './schema.js'
import { SUBJECT_LIST } from '../access/syntax.js'

type Json = Record<string, unknown>

/** Each value check of ./validate.ts CHECKS as JSON Schema keywords (as close as a pattern gets). */
export const CHECK_KEYWORDS: Record<string, Json> = {
  httpUrl: { pattern: '^[hH][tT][tT][pP][sS]?:/*[^/?#\\s]' },
  redisUrl: { pattern: '^[rR][eE][dD][iI][sS][sS]?:' },
  abbrev: { pattern: '^[A-Za-z][A-Za-z0-9]{0,15}$' },
  absolutePath: { pattern: '^/' },
  hostPort: { pattern: '^\\s*(?:\\[[0-9a-fA-F:.]+\\]|[^:\\s\\[\\]]+)(?::0*(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?\\s*$' },
  groupName: { pattern: '^[\\w.-]{1,64}$' },
  prefix: { pattern: '^[\\w:.{}-]{1,64}$' },
  secretKey: { minLength: 32 },
  signatureAlgorithm: { enum: ['hmac-sha1', 'hmac-sha256', 'hmac-sha512'] },
  ipOrCidr: { pattern: '^\\s*[0-9a-fA-F:.]+(?:/[0-9]{1,3})?\\s*$' },
  ratePolicy: { pattern: '^\\s*[0-9]{1,7}\\s*/\\s*[0-9]{0,6}\\s*[smhd]?\\s*$' },
  accessGlob: { pattern: '^/' },
  accessSubject: { pattern: '^(?:user:.+|service:.+|org:[0-9a-fA-F-]{36}|role:(?:superuser|org_admin)|group:.+|cert:.+|method:(?:' + SUBJECT_LIST.replace(/[.*+?^${}()[\]\\]/g, '\\$&') + '))$' },
  accessHost: { pattern: '^(?:\\*\\.)?[a-z0-9.-]{1,253}$|^\\[[0-9a-fA-F:.]+\\]$' },
  httpMethod: { pattern: '^[A-Za-z]{1,20}$' },
  // the public-suffix list is sidegate's to apply: the schema says the shape
  cookieDomain: { pattern: '^\\s*[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*\\s*$' },
  portalUrl: { pattern: '^\\s*[hH][tT][tT][pP][sS]?://[^/?#\\s]+/?\\s*$' },
  providerId: { pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' },
  orgId: { pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' },
  ldapUrl: { pattern: '^[lL][dD][aA][pP][sS]?://[^/?#\\s]+/?$' },
  issuerUrl: { pattern: '^[hH][tT][tT][pP][sS]?://[^/?#\\s]' },
  issuerAlgorithm: { enum: [...ISSUER_ALGORITHMS] }
}

/** The keywords ./schema.ts adds to JSON Schema, read by ./validate.ts only. */
const OWN = new Set(['check', 'optional', 'secret', 'url', 'live'])

/** Keys first in this order (a person reads the printed schema too); the rest after. */
const ORDER = ['type', 'description', 'default', 'enum', 'minimum', 'maximum', 'additionalProperties']

function convert (node: Json, root = false): Json {
  const out: Json = {}
  for (const k of [...ORDER, ...Object.keys(node)]) {
    if (OWN.has(k) || k === 'required' || !(k in node) || k in out) continue
    out[k] = node[k]
  }
  // a section whose keys are all comments (as the shipped file's) is null in YAML: unset, as an empty one
  if (node.type === 'object' && !root) out.type = ['object', 'null']
  const check = typeof node.check === 'string' ? CHECK_KEYWORDS[node.check] : undefined
  if (typeof node.check === 'string' && check === undefined) throw new Error(`config schema: no JSON Schema for the check ${node.check}`)
  if (node.type === 'object') {
    out.properties = Object.fromEntries(
      Object.entries(node.properties as Record<string, Json>).map(([k, v]) => [k, convert(v)])
    )
  } else if (node.type === 'array') {
    // an entry of a list (an access rule) is a mapping, never null
    out.items = convert(node.items as Json, true)
  } else if (node.optional === true) {
    // unset: null or an empty string; set: a string that passes the check
    out.anyOf = check === undefined
      ? [{ type: 'string' }, { type: 'null' }]
      : [{ type: 'string', ...check }, { type: 'string', maxLength: 0 }, { type: 'null' }]
  } else if (Array.isArray(node.anyOf) && (node.anyOf as Json[]).every((x) => typeof x.const === 'string')) {
    const { anyOf: _, ...rest } = out
    return { type: 'string', enum: (node.anyOf as Json[]).map((x) => x.const), ...rest }
  } else if (check !== undefined) {
    Object.assign(out, check)
  }
  return out
}

export function jsonSchema (): Json {
  // a plain copy: TypeBox's symbol-keyed markers are not JSON
  const plain = JSON.parse(JSON.stringify(Schema as TSchema)) as Json
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'sidegate gateway.yml',
    description: 'Generated by `sidegate config schema`. Every key is optional; defaults as shown. `sidegate config check` also checks the rules across keys.',
    ...convert(plain, true)
  }
}

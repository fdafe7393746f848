#!/usr/bin/env node
/**
 * Rewrites calls of the old Store facade (`store.createUser(…)`) to its
 * aggregates (`store.users.create(…)`), by a table applied as regexes over
 * `.name(` and `.name?.(` in every .ts/.mjs/.js file under the paths given
 * (default src test bench scripts). Idempotent: a rewritten call never
 * matches again, so it may run on any checkout, before or after a rebase.
 * Skipped: the store's own internals, whose port methods share some names.
 *
 *   node scripts/codemods/store-aggregates.mjs [--check] [path…]
 *
 * --check changes nothing: it lists the files it would change, exit 1 if any.
 * Left to do by hand: a method read without a call (destructured, bound,
 * named in a string) and a hand-written Store (a fake or a recording one);
 * and a `cached…` call's miss: `lookup`, its heir, answers a miss with the
 * store's promise where `cached…` answered undefined (and a call of the
 * aggregates' own `cached`/`cachedUserIdFor`, gone the same way).
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'

/** old method → [aggregate, its method] */
export const TABLE = {
  createOrg: ['orgs', 'create'],
  getOrg: ['orgs', 'get'],
  listOrgs: ['orgs', 'list'],
  createUser: ['users', 'create'],
  getUser: ['users', 'get'],
  getUserForSignIn: ['users', 'forSignIn'],
  cachedUser: ['users', 'lookup'],
  getUserByUsername: ['users', 'byUsername'],
  listUsers: ['users', 'list'],
  countUsers: ['users', 'count'],
  setUserActive: ['users', 'setActive'],
  setMembership: ['users', 'setMembership'],
  setUserFields: ['users', 'setFields'],
  recordLogin: ['users', 'recordLogin'],
  getPasswordHash: ['passwords', 'hash'],
  setPassword: ['passwords', 'set'],
  setLegacyPasswordHash: ['passwords', 'setLegacy'],
  isImportedPasswordHash: ['passwords', 'isImported'],
  upgradePasswordHash: ['passwords', 'upgrade'],
  createAccessKey: ['accessKeys', 'create'],
  importAccessKey: ['accessKeys', 'import'],
  getAccessKey: ['accessKeys', 'get'],
  cachedAccessKey: ['accessKeys', 'lookup'],
  listAccessKeys: ['accessKeys', 'list'],
  setAccessKeyActive: ['accessKeys', 'setActive'],
  deleteAccessKey: ['accessKeys', 'delete'],
  touchAccessKey: ['accessKeys', 'touch'],
  createPrivateToken: ['privateTokens', 'create'],
  importPrivateToken: ['privateTokens', 'import'],
  getPrivateToken: ['privateTokens', 'get'],
  readPrivateToken: ['privateTokens', 'read'],
  revokePrivateToken: ['privateTokens', 'revoke'],
  userIdForPrivateToken: ['privateTokens', 'userIdFor'],
  cachedUserIdForPrivateToken: ['privateTokens', 'lookup'],
  issueBearerToken: ['bearerTokens', 'issue'],
  consumeBearerToken: ['bearerTokens', 'consume'],
  readBearerToken: ['bearerTokens', 'read'],
  createSession: ['sessions', 'create'],
  getSession: ['sessions', 'get'],
  cachedSession: ['sessions', 'lookup'],
  touchSession: ['sessions', 'touch'],
  deleteSession: ['sessions', 'delete'],
  listSessions: ['sessions', 'list'],
  endSession: ['sessions', 'end'],
  endSessions: ['sessions', 'endAll'],
  countLoginAttempt: ['limits', 'countLoginAttempt'],
  resetLoginFailures: ['limits', 'resetLoginFailures'],
  forgiveLoginAttempt: ['limits', 'forgiveLoginAttempt'],
  markOnce: ['limits', 'markOnce'],
  markSeen: ['limits', 'markSeen'],
  hitRateLimit: ['limits', 'hitRateLimit'],
  acquireLock: ['locks', 'acquire'],
  releaseLock: ['locks', 'release'],
  getSigningKeys: ['signingKeys', 'get'],
  putSigningKeys: ['signingKeys', 'put'],
  mfaFactors: ['mfa', 'factors'],
  hasSecondFactor: ['mfa', 'has'],
  secondFactorState: ['mfa', 'state'],
  beginTotp: ['mfa', 'begin'],
  confirmTotp: ['mfa', 'confirm'],
  verifySecondFactor: ['mfa', 'verify'],
  regenerateRecoveryCodes: ['mfa', 'regenerate'],
  resetMfa: ['mfa', 'reset'],
  requireMfa: ['mfa', 'require'],
  listPasskeys: ['passkeys', 'list'],
  getPasskey: ['passkeys', 'get'],
  passkeyUserHandle: ['passkeys', 'handle'],
  addPasskey: ['passkeys', 'add'],
  renamePasskey: ['passkeys', 'rename'],
  removePasskey: ['passkeys', 'remove'],
  usePasskey: ['passkeys', 'use'],
  sealState: ['state', 'seal'],
  openState: ['state', 'open'],
  auditRef: ['audit', 'ref'],
  appendAudit: ['audit', 'append'],
  readAudit: ['audit', 'read']
}

const RULES = [
  // setRateLimit({ user: id }, p) / ({ key: id }, p): one method per aggregate
  [/\.setRateLimit\(\{\s*user:\s*([^{}]+?)\s*\},/g, '.users.setRateLimit($1,'],
  [/\.setRateLimit\(\{\s*key:\s*([^{}]+?)\s*\},/g, '.accessKeys.setRateLimit($1,'],
  // Pick<Store, 'getUser'>: the aggregate instead
  ...Object.entries(TABLE).map(([old, [agg]]) =>
    [new RegExp(`(Pick<(?:Running|Managed)?Store, )'${old}'>`, 'g'), `$1'${agg}'>`]),
  // typeof g.store.addPasskey: a method's type, read without a call
  ...Object.entries(TABLE).map(([old, [agg, name]]) =>
    [new RegExp(`(typeof [\\w$.]+?)(?<!\\.${agg})\\.${old}\\b`, 'g'), `$1.${agg}.${name}`]),
  // a comment's `Store.getUser`
  ...Object.entries(TABLE).map(([old, [agg, name]]) => [new RegExp(`\\bStore\\.${old}\\b`, 'g'), `store.${agg}.${name}`]),
  // `.limits.markOnce(` is already new: the lookbehind keeps a second run from nesting it
  ...Object.entries(TABLE).map(([old, [agg, name]]) =>
    [new RegExp(`(?<!\\.${agg})\\.${old}(?:\\?\\.)?\\(`, 'g'), `.${agg}.${name}(`])
]

const SKIP = [
  'node_modules', 'dist', '.git', 'scripts/codemods', 'src/store/policy', 'src/store/sqlite', 'src/store/redis',
  'src/store/memory', 'src/store/ports.ts', 'src/store/types.ts', 'src/store/model.ts'
]
const root = process.cwd()
const skipped = (p) => SKIP.some((s) => relative(root, p) === s || relative(root, p).startsWith(`${s}/`))

function * files (p) {
  if (skipped(p)) return
  if (statSync(p).isDirectory()) for (const e of readdirSync(p).sort()) yield * files(join(p, e))
  else if (/\.(ts|mts|cts|mjs|cjs|js)$/.test(p)) yield p
}

/**
 * Receivers that are not a store, though they have methods of those names: AdminOps (`ops.createUser`, its own
 * `this.listUsers`) and a Keyring (`keys.auditRef`, `new Keyring(…).auditRef`).
 */
const NOT_A_STORE = /(?:^|[^\w$#])(?:ops|this|keys|keyring)\s*$|Keyring\([^()]*\)\s*$/

/** The text rewritten, and how many calls changed. */
export function rewrite (text) {
  let n = 0
  for (const [re, to] of RULES) {
    text = text.replace(re, (...m) => {
      const [match, offset, whole] = [m[0], m[m.length - 2], m[m.length - 1]]
      if (NOT_A_STORE.test(whole.slice(Math.max(0, offset - 200), offset))) return match
      n++
      return to.replace(/\$(\d)/g, (_, i) => m[Number(i)])
    })
  }
  return { text, n }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main(process.argv.slice(2))

function main (args) {
  const check = args.includes('--check')
  const paths = args.filter((a) => a !== '--check')
  let changed = 0
  let calls = 0
  for (const top of paths.length > 0 ? paths : ['src', 'test', 'bench', 'scripts']) {
    try { statSync(top) } catch { continue }
    for (const f of files(join(root, top))) {
      const before = readFileSync(f, 'utf8')
      const { text, n } = rewrite(before)
      if (text === before) continue
      changed++; calls += n
      console.log(`${relative(root, f)}: ${n}`)
      if (!check) writeFileSync(f, text)
    }
  }
  console.log(`${check ? 'would change' : 'changed'} ${calls} call(s) in ${changed} file(s)`)
  if (check && changed > 0) process.exitCode = 1
}

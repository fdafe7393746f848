/**
 * The help texts of `sidegate …` and the commands they describe: plain text,
 * nothing loaded beside it, so `sidegate --help` answers at once.
 */
import { ADMIN_COMMANDS } from './admin-commands.js'
import type { CommandHelp } from '../admin/cli-commands.js'

/** The description column of a group's usage lines, and of the overview. */
const COLUMN = 39
const OVERVIEW_COLUMN = 37

/**
 * The groups of the admin operations' command forms (declared in src/admin/,
 * as src/cli/admin-commands.ts lists them): what the overview says of each, the
 * text after its usage lines, and the commands of src/cli/admin.ts among them
 * (`before`: the command they are listed before; default last).
 */
interface AdminGroup { about?: string, footer?: string, own?: Array<CommandHelp & { before?: string }> }
const ADMIN_GROUPS: Record<string, AdminGroup> = {
  user: {
    footer: `The password is read from standard input (one line), never from the command line.
Usernames: 1 to 150 letters (any script), digits and @ . + - _.`,
    own: [{ sub: 'grant', synopsis: ['<username> --org ID[:admin|:none]'], help: [] }]
  },
  org: {},
  group: {
    about: 'groups of users, global or an org\'s, and their members',
    footer: `<group>: a group's id, or its name: a global group's, or with --org an org's (ORG: an
org's id, or a name no other org has). Names: 1 to 128 characters, unique per org in any case.
An operator's memberships are the "local" source; those an identity provider gives
(idp:…) are refreshed at each sign-in there and are not changed here.`
  },
  key: { about: 'access keys (HMAC signatures)' },
  token: {
    about: 'private tokens',
    own: [{ sub: 'show', synopsis: ['<username>'], help: ['prints the current private token'], before: 'revoke' }]
  },
  limit: { about: 'rate limits of a user or an access key' },
  session: {
    about: 'a user\'s browser sessions',
    footer: `A session's id here is its keyed hash in the store, not the cookie value: it names the
session and cannot be used as one.`
  },
  mfa: {
    about: 'a user\'s second factor (TOTP)',
    footer: 'auth.mfa.required (none, superusers, all) requires it of many users at once (docs/mfa.md).'
  },
  access: { about: 'which access rule decides a request, and why' }
}

/** A group's commands as its help lists them: the declared forms, with src/cli/admin.ts's own among them. */
function adminGroup (group: string): CommandHelp[] {
  const out = [...ADMIN_COMMANDS[group] ?? []]
  for (const c of ADMIN_GROUPS[group].own ?? []) {
    const at = c.before === undefined ? -1 : out.findIndex((x) => x.sub === c.before)
    out.splice(at === -1 ? out.length : at, 0, c)
  }
  return out
}

/** `  sidegate user add <username> …` and what it does, from the description column on (or the next line). */
function usageLines (group: string, c: CommandHelp): string[] {
  const head = `  sidegate ${group} ${c.sub}`
  const lines = [[head, ...c.synopsis.slice(0, 1)].join(' '), ...c.synopsis.slice(1).map((l) => `${' '.repeat(head.length + 1)}${l}`)]
  const help = [...c.help]
  const last = lines.length - 1
  if (help.length > 0 && lines[last].length < COLUMN - 1) lines[last] = lines[last].padEnd(COLUMN) + help.shift()!
  return [...lines, ...help.map((h) => ' '.repeat(COLUMN) + h)]
}

/** `sidegate --help`'s list of commands. */
function overview (): string {
  const line = (name: string, about?: string): string => about === undefined
    ? `  ${name}`
    : name.length + 2 < OVERVIEW_COLUMN - 1 ? `  ${name}`.padEnd(OVERVIEW_COLUMN) + about : `  ${name}\n${' '.repeat(OVERVIEW_COLUMN)}${about}`
  return [
    line('start', 'run the gateway'),
    ...Object.entries(ADMIN_GROUPS).map(([g, { about }]) => line(`${g} ${adminGroup(g).map((c) => c.sub).filter((x, i, a) => a.indexOf(x) === i).join('|')}`, about)),
    line('secret rotate', 're-encrypt the store under a new secret key'),
    line('import --from FILE', 'users, password hashes, orgs, groups, access keys and tokens from JumpServer'),
    line('store export|import|backup', 'move every record between stores (embedded file, Redis); copy the file'),
    line('jwk rotate|list', 'the signing keys of the identity JWT (identity.jwt)'),
    line('audit tail', 'print (or follow) the audit stream (audit.stream)'),
    line('config check|defaults|schema', 'check gateway.yml, print the default file or its JSON Schema'),
    line('ldap test|sync', 'ask a directory of sign_in.ldap for a user; refresh its users\' groups'),
    line('oidc test', 'fetch a provider of sign_in.oidc\'s discovery and say what it supports')
  ].join('\n')
}

export const GLOBAL = `Global options:
  --config FILE   gateway.yml to use (default: $SIDEGATE_CONFIG or ./gateway.yml)
  --json          machine-readable output (errors too: {"detail", "code"} on stderr)
  -h, --help      help for the command
  -v, --version   print the version`

export const HELP: Record<string, string> = {
  '': `Usage: sidegate <command> [options]

Commands:
${overview()}

Run \`sidegate <command> --help\` for details. Every command but start, config, ldap and oidc needs the
gateway's secret key (SIDEGATE_SECRET_KEY, secret_key, or the key file beside the
config): run them where the gateway runs.

${GLOBAL}`,
  start: `Usage: sidegate start [--config FILE] [--workers N|auto]

Runs the gateway. With no --config or SIDEGATE_CONFIG and no ./gateway.yml, it first
writes the default one there (\`sidegate config defaults\`) and says so on stderr.
Listens on listen.host:listen.port (SIDEGATE_HOST, SIDEGATE_PORT),
forwards authenticated requests to upstream.url (SIDEGATE_UPSTREAM), stores state
in store.path (sidegate.db beside the config), or in Redis at redis.url when
SIDEGATE_REDIS_URL or the config names one (store.backend). On an empty store it creates the Default
org and the superuser "admin" (password from SIDEGATE_ADMIN_PASSWORD, or generated and
printed once to stderr), and, with no secret key configured, a new key file
(secret_key_file); a store that holds data is never given a new key. The store's key
check value must match the key: otherwise /readyz answers 503 and nothing is served.
Prometheus metrics are served on metrics.host:metrics.port
(/metrics, default 0.0.0.0:7080; SIDEGATE_METRICS_PORT), and with admin.enabled the admin
API on its own listener, admin.host:admin.port (/admin/v1/, default 127.0.0.1:7081;
SIDEGATE_ADMIN_PORT; for a superuser's private token or access key; docs/admin-api.md).
Every listener is bound before any "listening" line; a port in use ends the start (exit 1)
with one line naming the setting to change. Without upstream.url it serves its built-in
demo API (the demo mode, warned at start). OpenTelemetry traces go to tracing.endpoint or OTEL_EXPORTER_OTLP_ENDPOINT
when one is set (the OTEL_* variables apply; docs/observability.md), else tracing is
off. On SIGTERM /readyz answers 503 for server.drain_delay seconds while requests
are still served (SIGINT skips this delay); then the listener closes, in-flight
requests get server.shutdown_grace seconds, and sidegate exits 0.

On SIGHUP, and when the config file changes (its directory is watched, so a
Kubernetes ConfigMap update is seen), gateway.yml is read again: a valid file
that changes only keys that can change live (docs/configuration.md) applies to
new requests at once; one that changes any other key is refused, and one that is
not valid is reported; either way the config in force stays. One log line tells
which.

  --workers N|auto   processes serving listen.port (server.workers, default 1; auto:
                     the CPUs available). Above 1, a primary process forks N workers
                     (node:cluster), each like a replica with its own Redis connections
                     and caches; the primary serves no request: it holds the port and
                     passes connections round robin, serves /metrics (summed over the
                     workers) and the admin API (its calls relayed to a worker), decides
                     reloads and sends them to the workers, passes SIGTERM/SIGINT to every
                     worker and exits when all have (non-zero if any did), and restarts a
                     worker that dies (docs/deploy.md).

${GLOBAL}`,
  secret: `Usage:
  sidegate secret rotate (--new-key-file FILE | --new-key-stdin) [--dry-run] [--limit N]

Re-encrypts every access-key secret, private token and identity signing key under a
new secret key, in one pass, then moves the store's key check value to the new key (last). The current
key comes from the usual place (SIDEGATE_SECRET_KEY, secret_key, the key file); the
new one from FILE or standard input (at least 32 characters, e.g.
\`openssl rand -base64 48\`). Then give every replica the new key and restart it.
Private tokens, sessions and bearer tokens issued under the old key keep working.
  --dry-run    count what would be re-encrypted; write nothing
  --limit N    stop after re-encrypting N records; run the command again to go on
Interrupted (or stopped by --limit), the same command continues where it stopped.

${GLOBAL}`,
  import: `Usage:
  sidegate import --from FILE [--format jsonl|csv] [--dry-run] [--allow-superuser] [--allow-takeover]

Moves users and their credentials over from JumpServer (docs/jumpserver.md),
one record per JSON line or CSV row, each with a "type":
  org            id, name
  user           username, id, name, email, password (Django pbkdf2_sha256$… or pbkdf2_sha1$…;
                 empty or "!…": none), is_active, is_superuser
  membership     username or user_id, org (id), role (admin, user, OrgAdmin, OrgUser), org_name
                 (creates the org when it is missing)
  group          id, name, org (id; absent: a global group): JumpServer's users_usergroup
  group_member   username or user_id, group (id): users_user_groups (user_id, usergroup_id);
                 a membership of source local
  access_key     username or user_id, id, secret, is_active
  private_token  username or user_id, key
Every line is checked, and then every record against the store, before anything is written:
any problem is reported with its line number (the first 100) and nothing is imported (exit 1).
Passwords keep their Django hash until the user's next login re-hashes it with scrypt.
Running the same file again changes nothing (reported as unchanged); a run cut short by a
Redis failure is finished by running it again.
  --format     jsonl or csv (default: from the file name's extension, else jsonl)
  --dry-run    check everything and print what would be created, updated or left unchanged,
               and every privileged change; write nothing
  --allow-superuser  apply records that make a user a superuser (new or existing)
  --allow-takeover   apply records that replace an existing user's password or private token,
               or name an existing user by another case of its username
Without the flag such a record refuses the whole run (exit 1, its lines named, nothing
written). Every change is audited (via "import").

${GLOBAL}`,
  jwk: `Usage:
  sidegate jwk list                    every signing key of the identity JWT: its kid, algorithm
                                       and state (signing, next, replaced, retired) and when that
                                       changes
  sidegate jwk rotate                  adds a key of identity.jwt.algorithm: published in the JWKS
                                       at once, signing from identity.jwt.publish_ahead seconds on
                                       (at once when there is no key yet). The key it replaces stays
                                       published until its tokens have expired (identity.jwt.ttl +
                                       60 s after the switch); keys retired by then are removed.

Every replica reads the key set at least every 10 s (a quarter of publish_ahead when
that is shorter) and switches keys at the same moment, by the clock. Run the commands
with the gateway's gateway.yml: publish_ahead, ttl and algorithm are read from it.

${GLOBAL}`,
  audit: `Usage:
  sidegate audit tail [--follow] [--since 15m|2h|7d|2026-11-25T10:00:00Z] [--limit N] [--json]
                       prints the audit stream (audit.stream: true), one line per event, oldest
                       first: the last N events (default 10), or with --since every event from
                       then on. --follow: then waits for new events and prints each as it comes,
                       until Ctrl-C (exit 0). --json: each event as one JSON object with its
                       stream id. The stream holds about audit.max_len events; the log has them all.

${GLOBAL}`,
  store: `Usage:
  sidegate store export [--out FILE]   every record of the store as NDJSON (default: to standard output):
                                       a header line with the store's key check value, then orgs, users
                                       (password hashes), access keys (secrets still encrypted, last use),
                                       private tokens, unexpired bearer tokens and sessions (with their
                                       expiry), the identity JWT's signing keys, the key generations of
                                       earlier rotations and the audit trail, and last a MAC line: an
                                       HMAC of everything before it under a key derived from the secret
                                       key. Nothing is decrypted: the file is of use only with the same
                                       secret key (keep it as secret as the key all the same). Not
                                       exported: login attempt counters, replay marks, rate-limit counts,
                                       locks, the caches' invalidation log.
  sidegate store import FILE|- [--merge] [--allow-superuser] [--allow-takeover] [--allow-unsigned]
                                       into the store this configuration selects (store.backend), with the
                                       same secret key: refused (exit 2, nothing written) when the file
                                       came from a store with another key, its MAC does not verify (it was
                                       changed, or not exported with this key), it has no header or another
                                       version, has an invalid line (its number is named), or when the
                                       store already holds users or orgs. --merge: add only the records
                                       the store lacks (those whose id is there are skipped, and counted).
                                       Every line is checked before anything is written; into the
                                       embedded store in one transaction. Prints the counts per kind.
                                       An empty store is initialised with the secret key's check value.
                                       Into a store that holds data, privileged records refuse the whole
                                       run (exit 1, each line named, nothing written) unless allowed:
  --allow-superuser                    new superusers
  --allow-takeover                     credentials and second factors (access keys, private tokens,
                                       sessions, bearer tokens, TOTP, recovery codes, passkeys) of users
                                       already in the store, signing keys, legacy key generations
  --allow-unsigned                     read a file of an earlier sidegate (format version 1, no MAC)
                                       Every import is audited (store.imported, store.import_refused).
  sidegate store backup FILE           a consistent copy of the embedded store's file while the gateway
                                       runs (SQLite's online backup); FILE must not exist. It opens as a
                                       store with the same data. With Redis (exit 2): use Redis
                                       persistence (BGSAVE, AOF), or store export.

Moving from the embedded store to Redis: docs/deploy.md.

${GLOBAL}`,
  config: `Usage:
  sidegate config check [--config FILE]
                       validates the file as \`sidegate start\` would (environment overrides
                       included): prints "ok: FILE" and any warning start would log, exit 0;
                       or every problem, one line each, exit 2. Needs no secret key and no Redis.
  sidegate config defaults
                       prints the default gateway.yml, every key with its default and its
                       comment: exactly the shipped file
  sidegate config schema
                       prints the JSON Schema (draft 2020-12) of gateway.yml, for editors and CI;
                       rules across keys are config check's alone

${GLOBAL}`,
  ldap: `Usage:
  sidegate ldap test <id> <username> [--password-stdin]
                       asks the directory sign_in.ldap <id> for <username>, step by step:
                       each server (connect, TLS), the service bind, the search, the entry's
                       id, name and email, its groups and the orgs they map to; with
                       --password-stdin also the user's bind. Says where it failed; never
                       prints a password. Exit 0 found (and bound), 1 not, 2 usage.
                       Needs no secret key and no store.
  sidegate ldap sync <id> [--dry-run]
                       refreshes the groups and org memberships of every user linked to the
                       directory, as a sign-in there would (for users who only use tokens);
                       an entry gone or filtered out loses what the directory gave (the user
                       stays enabled: the output names them). --dry-run lists the changes only.

${GLOBAL}`,
  oidc: `Usage:
  sidegate oidc test <id>
                       fetches the discovery of the provider sign_in.oidc <id> as the gateway
                       would (its timeout; http on loopback only) and says what sidegate uses:
                       the endpoints, PKCE S256, the client authentication, RFC 9207 iss,
                       back-channel and RP-initiated logout. Never prints a secret. Exit 0
                       usable, 1 not (unreachable, or a problem named), 2 usage.
                       Needs no secret key and no store.

${GLOBAL}`
}

/** Subcommands of each group: the admin operations' forms (and src/cli/admin.ts's own), then the rest. */
export const SUBCOMMANDS: Record<string, string[]> = {
  ...Object.fromEntries(Object.keys(ADMIN_GROUPS).map((g) => [g, adminGroup(g).map((c) => c.sub)])),
  secret: ['rotate'],
  jwk: ['rotate', 'list'],
  audit: ['tail'],
  store: ['export', 'import', 'backup'],
  config: ['check', 'defaults', 'schema'],
  ldap: ['test', 'sync'],
  oidc: ['test']
}

for (const [group, { footer }] of Object.entries(ADMIN_GROUPS)) {
  HELP[group] = `Usage:\n${adminGroup(group).flatMap((c) => usageLines(group, c)).join('\n')}\n${footer === undefined ? '' : `\n${footer}\n`}\n${GLOBAL}`
}

/**
 * The one description of gateway.yml: every key, its type, bounds, default and
 * the comment the shipped file shows for it. From it come the TypeScript type
 * of the document (`Doc`), validation with every error at once
 * (./validate.ts), the commented default file (`sidegate config defaults`,
 * ./defaults.ts) and a JSON Schema for editors and Helm (`sidegate config
 * schema`). What depends on more than one key (names from `names.abbrev`,
 * paths relative to the file, cross-key rules) is derived in ../config.ts.
 *
 * Extensions to JSON Schema, all read by ./validate.ts:
 * - `check`: the name of a value check in CHECKS (./validate.ts) with its own message
 * - `optional`: an empty string or null means "unset" and becomes null
 * - `secret`: an error never shows the value; `url`: a password in it is masked
 * - `live`: a change applies on a reload (SIGHUP, or the file changing) to the
 *   next request; on a section, to every key in it. A reload that changes any
 *   other key is refused (./live.ts, ../reload.ts).
 */
import { Type as T, type Static, type TSchema } from '@sinclair/typebox'
import { POLICIES, SUBJECT_LIST } from '../access/syntax.js'
import { CREDENTIALS } from '../auth/credentials.js'
import type { AuthMethod } from '../auth/types.js'
import { bool, int, ints, list, live, oneOf, optStr, section, str } from './kit.js'
import { signIn } from './sign-in.js'
import { trustedIssuers } from './issuers.js'

export const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export const REDIS_MODES = ['standalone', 'sentinel', 'cluster'] as const
export const STORE_BACKENDS = ['auto', 'sqlite', 'redis'] as const
export const JWT_ALGORITHMS = ['EdDSA', 'ES256'] as const
/** server.workers and `--workers`: at most this many. */
export const MAX_WORKERS = 256

/** One key per credential kind (src/auth/credentials.ts), in the registry's order. */
const perMethod = <S extends TSchema>(make: () => S) =>
  Object.fromEntries(Object.keys(CREDENTIALS).map((m) => [m, make()])) as Record<AuthMethod, S>
export const COMPAT_MODES = ['none', 'jumpserver'] as const

export const Schema = T.Object({
  compat: oneOf(COMPAT_MODES, 'none', 'jumpserver: JumpServer\'s names and behaviour wherever sidegate is stricter, for\nclients written for JumpServer (docs/jumpserver.md lists each key it sets and what\nit costs). It fills in only the keys this file and the environment leave unset:\na key set here wins. `sidegate config check` shows where each value came from.\nNever relaxes the admin API or the forward-auth trust rules. none: nothing changes'),
  listen: section({
    host: str('::', { description: 'the address to listen on. :: (the default): every interface, IPv6 and IPv4 alike\n(IPv4 clients are seen as a.b.c.d, never ::ffff:a.b.c.d); where the host has no\nIPv6, the default falls back to 0.0.0.0 with one log line. 0.0.0.0: IPv4 only;\n127.0.0.1 or ::1: this host only; an IPv6 literal is written without brackets' }),
    port: int(0, 65535, 8080),
    tls: section({
      cert_file: optStr({ description: 'PEM certificate (its chain after it) served on listen.port: HTTPS instead of HTTP;\nwith key_file, relative to this file. Empty: plain HTTP' }),
      key_file: optStr({ description: 'its PEM private key' }),
      client_ca_file: optStr({ description: 'PEM CA bundle: mutual TLS. Clients are asked for a certificate issued by one of\nthese; its subject can be named in access rules (cert:CN=NAME). Empty: none asked' }),
      client_auth: oneOf(['require', 'optional'] as const, 'require', 'with client_ca_file. require: a client without a valid certificate is refused in\nthe TLS handshake (logged as "TLS handshake refused"). optional: it connects, and\nits requests match no cert: subject (a rule can still deny them)')
    }, 'TLS 1.2 and 1.3 only, ECDHE with AES-GCM or ChaCha20 (Mozilla "intermediate"). The\nfiles are read at start (a bad one: exit 2) and again when their directory changes\n(cert-manager renewing a Secret), on SIGHUP and on a reload: a new pair is served\nfrom the next handshake, no restart; one that does not load is logged, the old stays.')
  }),
  upstream: section({
    url: optStr({ check: 'httpUrl', url: true, description: 'The service sidegate protects. Empty: sidegate serves its built-in demo API\n(/api/v1/users/users/ and /api/v1/users/profile/) from its own store.' }),
    timeout: live(int(1, 3600, 30, 'Seconds to wait for the upstream to answer before replying 504.')),
    public_paths: live(list([], { check: 'absolutePath', description: 'Paths forwarded without authentication, matched by whole segments: "/status"\ncovers /status and /status/… (not /status-admin; start-up warns once about entries\nwithout a trailing slash), "/static/" covers /static/…. Identity headers and\nsidegate\'s credentials are still stripped; a path with . or .. segments is never public.' }))
  }),
  names: section({
    abbrev: str('SVC', { check: 'abbrev', description: 'Product abbreviation used in header and cookie names: X-SVC-ORG, svc_sessionid,\nsvc_csrftoken, X-SVC-User-Id, X-SVC-Username, X-SVC-Auth-Method, X-SVC-Auth-Factors,\nX-SVC-Identity, X-SVC-Groups.\nJMS gives the names JumpServer clients use.' })
  }),
  store: section({
    backend: oneOf(STORE_BACKENDS, 'auto', 'sqlite: the embedded store, one file on this host (`path`), shared by every\n--workers process and the CLI; several hosts cannot share it (docs/deploy.md).\nredis: the `redis:` section below: for several replicas. auto: redis when\nSIDEGATE_REDIS_URL is set or a `redis:` key below differs from its default, else sqlite'),
    path: str('sidegate.db', { description: 'sqlite: the database file (relative to this file); -wal and -shm files sit beside it' }),
    busy_timeout: int(1, 10000, 250, 'sqlite: ms a write waits for another process\'s, then 503 store_unavailable'),
    require_existing: bool(false, 'true: refuse to start (exit 2) on a store that is empty although the secret key was\nused before (a key file sidegate wrote earlier, or a store that lost its key check\nvalue while running): the sign of lost or misplaced data. false: a loud warning,\nan audit event and a metric, then a new store. Set it in production once data exists')
  }, 'Where users, keys, tokens and sessions are kept.'),
  redis: section({
    mode: oneOf(REDIS_MODES, 'standalone', 'standalone: one Redis at `url`. sentinel: ask `sentinels` for the primary of\nthe group `name` and follow its failovers. cluster: Redis Cluster, seeded\nfrom `nodes` (any few; the rest are discovered).'),
    url: str('redis://127.0.0.1:6379', { check: 'redisUrl', url: true, description: 'standalone only; rediss:// for TLS; redis://:password@host:port/db (db 0-15, like `db`)' }),
    sentinels: list([], { check: 'hostPort', description: 'sentinel mode: ["10.0.0.1:26379", "sentinel-2:26379"] (default port 26379)' }),
    name: str('mymaster', { check: 'groupName', description: 'sentinel mode: the master group name' }),
    nodes: list([], { check: 'hostPort', description: 'cluster mode: ["redis-0:6379", "redis-1:6379"] (default port 6379)' }),
    username: optStr({ description: 'ACL user; empty: the default user' }),
    password: optStr({ secret: true, description: 'prefer SIDEGATE_REDIS_PASSWORD; wins over a password in `url`' }),
    sentinel_password: optStr({ secret: true, description: 'when the sentinels themselves require one' }),
    db: int(0, 15, 0, 'standalone and sentinel; a cluster has only 0; one the server refuses stops the start'),
    tls: section({
      enabled: bool(false, 'rediss:// in `url` turns it on too'),
      ca_file: optStr({ description: 'PEM CA bundle (relative to this file); empty: the system CAs' }),
      cert_file: optStr({ description: 'client certificate and key, for mutual TLS' }),
      key_file: optStr(),
      servername: optStr({ description: 'name to verify in the certificate; empty: the host connected to' }),
      reject_unauthorized: bool(true, 'false accepts any certificate: testing only')
    }),
    prefix: str('sidegate:', { check: 'prefix', description: 'every key sidegate writes starts with this (no {braces} needed in a cluster)' }),
    command_timeout: int(10, 60000, 2000, 'ms; a slower command fails the request with 503'),
    connect_timeout: int(100, 60000, 5000, 'ms')
  }),
  secret_key: optStr({
    check: 'secretKey',
    secret: true,
    description: 'Secret key for encryption at rest (access-key secrets, private tokens) and for\nkeyed token hashes; at least 32 characters. Prefer SIDEGATE_SECRET_KEY. When\nneither is set, `sidegate start` on an empty store generates one and writes it\nwith mode 0600 to secret_key_file (relative to this file); no other command, and\nno start on a store that holds data, ever creates one. The store records the key\'s\ncheck value: a process with another key is refused. Losing it makes stored secrets\nunreadable; change it with `sidegate secret rotate`.'
  }),
  secret_key_file: str('sidegate.key'),
  auth: section({
    bearer: live(section({
      ttl: int(1, 31 * 86400, 3600, 'seconds a bearer token stays valid (date_expired in the token reply)'),
      single_use: bool(true, 'true: each token is accepted once (the spec). false: reusable until it expires,\nas JumpServer\'s are (for migrating clients that cache one token); a password\nchange still revokes it at once')
    })),
    signature: live(section({
      clock_skew: int(0, 86400, 300, 'seconds the signed Date (or X-Date) may differ from now (any RFC 9110 or RFC 5322\ndate form, any zone). 0: no freshness check, as JumpServer (whose documentation signs\na fixed 2014 date; compat: jumpserver sets it): a captured request can be replayed\nforever, so sidegate warns at start and in /readyz. replay_cache with it refuses\nclients that repeat a signature (a frozen Date): docs/jumpserver.md'),
      algorithms: list(['hmac-sha256', 'hmac-sha512'], { check: 'signatureAlgorithm', description: 'accepted signature algorithms: hmac-sha256, hmac-sha512, and hmac-sha1 only if\nlisted here (JumpServer accepts all three; SHA-1 is weak)' }),
      required_headers: list(['(request-target)', 'date'], { description: 'Headers every signature must cover (lowercase).' }),
      replay_cache: bool(false, 'true: each signature is accepted once (remembered for twice clock_skew; with\nclock_skew 0, for 24 hours)'),
      replay_grace: int(0, 60, 0, 'with replay_cache: seconds after its first sighting in which a GET or HEAD with the\nsame signature is accepted again (clients that send one GET twice within the Date\'s\none-second resolution: docs/jumpserver.md). Other methods stay once. 0: every\nsignature once'),
      date_window: int(0, 86400, 0, 'seconds a signed Date (or X-Date) stays accepted after the first request that\ncarried it for that key, when it is older than clock_skew by then (clients that\nbuild their Date once, as cc-jumpserver does). The first sighting must be within\nclock_skew. 0: off. Ignored with clock_skew 0'),
      max_body: int(0, 1024 * 1024 * 1024, 1048576, 'bytes of body read to check a signed Digest or Content-Digest (413 above)'),
      require_digest: bool(false, 'true: a signed request with a body must sign Digest or Content-Digest')
    })),
    trusted_issuers: trustedIssuers,
    keys: section({
      disable_after: int(0, 36500, 0, 'days: an access key unused this long (counted from its last use, else from its\ncreation or from when it was last enabled again) is disabled, not deleted: a\ncorrectly signed request is then 401 key_disabled until `sidegate key enable <id>`\n(or its owner, on the API keys page) turns it back on. 0: never.'),
      check_interval: int(1, 86400, 3600, 'seconds between two passes of that check. Every replica schedules them at the\nsame times (multiples of the interval); a Redis lock and a mark per pass let one\nreplica run each. Only with disable_after above 0.')
    }, 'Access keys (`sidegate key create`, the API keys page).'),
    cache: section({
      memory_mb: int(1, 65536, 128, 'MiB (estimated) the in-process caches of users, access keys, private tokens and\nsessions hold together: 100,000 private tokens or access keys with their users fit\nin the default (docs/performance.md). Past it, an entry gets in only when used more\noften than the one it would evict, so a larger working set still mostly hits'),
      max: int(0, 10_000_000, 10000, 'entries of the identity.jwt token cache. 0 also turns the caches above off.\nDeprecated as their bound: memory_mb is'),
      ttl: int(1, 3600, 300, 'seconds an entry is trusted after it was read (sessions: 5 at most); changes reach\nevery replica at once (Redis pub/sub, the embedded store\'s log), so this only bounds a\nlost message; an entry hit in its last quarter is read again in the background, so\nhot entries never expire (each costs one store read per ttl)')
    }),
    lockout: live(section({
      max_failures: int(0, 1000, 7, '0 turns the lockout off'),
      window: int(1, 7 * 86400, 1800, 'seconds'),
      address_max_failures: int(0, 1_000_000, 100, 'failed passwords from one client address, whatever the usernames, within\n`window` before every password from it is 429 too_many_attempts for a full\nwindow. Counted before any hashing (a success gives its count back). The same\nbound, counted apart, holds passkey assertions refused before their signature\nverified (docs/mfa.md). 0: off'),
      ipv6_prefix: int(1, 128, 64, 'IPv6 clients are counted by this network prefix (one host usually holds a\nwhole /64); IPv4 clients by their address')
    }, 'After max_failures wrong passwords for one username from one client address\nwithin `window` seconds, /login and the token endpoint answer 429 too_many_attempts\n(with Retry-After) for that pair until a full window has passed, even for the\nright password. A success resets the count. Counted in the store, so across replicas.')),
    mfa: section({
      required: oneOf(['none', 'superusers', 'all'] as const, 'none', 'Who must give a second factor (TOTP) after the password. A user who enrolled\none always must. none: only they; superusers: also every superuser; all: every\nuser. One who must but has none is sent to enrol right after the password on the\nlogin page; the token endpoint answers 400 mfa_unset. Private tokens and access\nkeys are never asked for a code (machine credentials: docs/mfa.md)'),
      pending_ttl: int(60, 3600, 600, 'seconds the passed password step waits for its code (the MFA challenge\'s cookie,\nthe login page\'s second step), as JumpServer\'s 600')
    }, 'Second factor (docs/mfa.md). Wrong codes count toward a lockout per user:\nauth.lockout.max_failures within auth.lockout.window.'),
    webauthn: section({
      rp_id: str('', { description: 'the relying-party id passkeys are bound to: the site\'s domain (or a parent domain\nof it), never an IP address. Empty: the host of the request (its Host header, port\nleft out), which suits one host name; set it when the gateway is reached under\nseveral names. A passkey made for one RP id never works under another (docs/mfa.md)' }),
      origins: list([], { description: 'the origins (scheme://host[:port]) a passkey ceremony may come from, as the\nbrowser reports them. Empty: the request\'s own origin (http or https as received,\nits Host header), which suits direct access; behind a proxy that changes the host\nor scheme, list the public origins' }),
      rp_name: str('sidegate', { description: 'the site\'s name the browser and the authenticator show while making a passkey' })
    }, 'Passkeys (WebAuthn: docs/mfa.md). User verification is always required, so a\npasskey alone is two factors.'),
    password_checks: live(section({
      concurrency: int(1, 256, 4, 'password checks (scrypt) running at once; Node runs them on its 4 libuv threads'),
      queue: int(0, 100_000, 64, 'checks waiting for a place; beyond it 503 busy with Retry-After'),
      per_address: int(1, 1000, 2, 'checks one client address (IPv6: its ipv6_prefix network) may run at once; its\nothers wait. Below concurrency, so that one address never holds every place'),
      per_address_waiting: int(0, 100_000, 8, 'checks one client address may have waiting; beyond it 429 too_many_attempts'),
      ipv4_prefixes: ints([24], 1, 32, 'the networks an IPv4 client also counts in (prefix lengths), each bounded by\nper_prefix and per_prefix_waiting. []: none'),
      ipv6_prefixes: ints([56, 48], 1, 128, 'the networks an IPv6 client also counts in (prefix lengths, wider than\nauth.lockout.ipv6_prefix: one client often holds a /56 or a /48, so a whole\nnetwork of /64s is one client here). []: none'),
      per_prefix: int(1, 1000, 2, 'checks one such network may run at once; its others wait'),
      per_prefix_waiting: int(0, 100_000, 16, 'checks one such network may have waiting, a quarter of the queue; beyond it 429\ntoo_many_attempts. Free places go round robin over the widest networks with\nchecks waiting, so a flooding network waits behind its own checks'),
      reserved: int(0, 100_000, 16, 'places of the queue kept for client addresses (IPv6: their ipv6_prefix network)\nthat signed in successfully within known_ttl: only they may take them, their checks\nare started first, and their networks\' bounds do not apply to them'),
      known_ttl: int(0, 30 * 86400, 86400, 'seconds an address counts as having signed in successfully (remembered in\nprocess, at most 20,000 addresses). 0: none is')
    }, 'Bounds on the password checks of the token endpoint, /login and password\nconfirmations, so that a login flood cannot delay everyone else\'s sign-in. A\nwaiting check whose client has gone is dropped.'))
  }),
  org: live(section({
    unknown: oneOf(['reject', 'default'] as const, 'reject', 'An organization (?oid=, X-SVC-ORG header or cookie) that does not exist:\nreject answers 404 org_not_found; default acts in the user\'s default org\ninstead, as JumpServer does (for migrating clients).')
  }, 'Which organization a request acts in: ?oid=, then the X-<abbrev>-ORG header, then\na cookie of that name, then the user\'s default organization.')),
  access: live(section({
    default_policy: oneOf(POLICIES, 'one_factor', 'What a request for the upstream that no rule matches takes.'),
    rules: T.Array(T.Object({
      paths: T.Array(T.String({ check: 'accessGlob' })),
      hosts: list([], { check: 'accessHost' }),
      methods: list([], { check: 'httpMethod' }),
      networks: list([], { check: 'ipOrCidr' }),
      subjects: list([], { check: 'accessSubject' }),
      policy: T.Union(POLICIES.map((v) => T.Literal(v)))
    }, { additionalProperties: false, default: {} }), {
      default: [],
      description: `First match wins. Each rule: paths (globs over the normalised path: * one segment,\n** any number, /a/** matches /a too), and optionally hosts (app.example.com,\n*.example.com: its subdomains; the Host, or a trusted proxy's X-Forwarded-Host, without\nits port; with any, a request without a usable host is 400), methods (GET covers HEAD),\nnetworks (the client address as sidegate resolves it), subjects (user:NAME, service:NAME (a trusted issuer's service),
org:UUID,\nrole:superuser, role:org_admin, group:NAME, group:ORG/NAME (ORG: the org's name or\nid), method:${SUBJECT_LIST}: the\nrule matches only a caller who has one; cert:CN=NAME: the client certificate of\nmutual TLS, listen.tls.client_ca_file) and policy: bypass (no credential looked at),\none_factor (any valid credential), two_factor (a session or bearer token signed in\nwith a second factor; machine credentials only where subjects names their method)\nor deny. Refused: 403 access_denied (401 without a credential). docs/access-rules.md`
    }),
    case_insensitive_paths: bool(false, 'true: paths and globs compared in lower case, for an upstream that routes\ncase-insensitively (Express and ASP.NET by default): /OPS/restart then meets a rule\nfor /ops/**. Leave false for an upstream that tells /OPS from /ops')
  }, 'Who may reach which upstream paths, decided alike in proxy mode, for WebSocket\nupgrades and in forward-auth decisions. upstream.public_paths still come first.\n`sidegate access check` explains which rule decides a request.')),
  rate_limit: live(section({
    enabled: bool(false, 'count every authenticated request (upstream and sidegate\'s own API)'),
    limit: int(1, 100_000, 600, 'requests per window, per user (the default policy)'),
    window: int(1, 86_400, 60, 'seconds'),
    methods: section(perMethod(() => optStr({ check: 'ratePolicy' })), 'Per authentication method, instead of limit/window: "100/60s", "5/s", "1000/1h";\nempty: the default. Counted per user and method.'),
    on_store_error: oneOf(['allow', 'deny'] as const, 'allow', 'Redis unreachable: allow lets requests through uncounted, deny answers 503;\neither is logged once per outage and counted in sidegate_rate_limit_store_errors_total.')
  }, 'Rate limits per authenticated caller, exact across replicas: a sliding window in Redis\n(one script per request, Redis\'s clock). `sidegate limit set <username|key id> 100/60s`\nsets a user\'s or an access key\'s own limit (the key\'s wins, then the user\'s, then\nmethods, then limit/window). Answers carry RateLimit-Policy and RateLimit; over the\nlimit: 429 rate_limited with Retry-After. A Redis sorted set per active caller holds\nup to `limit` entries.')),
  session: live(section({
    accept_legacy_cookie: bool(true, 'also accept the pre-2.x cookie name "sessionid"'),
    idle_timeout: int(1, 31 * 86400, 7200, 'seconds without a request before a session ends'),
    absolute_timeout: int(1, 365 * 86400, 86400, 'seconds after login a session ends regardless (>= idle_timeout)'),
    login_redirect: bool(true, 'A browser that navigates (Sec-Fetch-Mode: navigate, or Accept: text/html without\nSec-Fetch-*) to a protected GET without a credential, or with an expired session,\nis sent to /login?next=<the page> (303) instead of a 401; behind nginx\n(forward-auth) the 401 carries X-<abbrev>-Login for the proxy to redirect with.\nAPI clients keep their 401.'),
    cookie_secure: bool(false, 'Mark the cookies Secure. They are also Secure whenever the request came over TLS\nor a trusted proxy (server.trusted_proxies) said X-Forwarded-Proto: https.\nOn, it also says browsers reach the gateway over https: its own origin, against\nwhich Origin and Referer of the login and token posts are checked, is https://.'),
    cookies: T.Array(T.Object({
      domain: str('', { check: 'cookieDomain' }),
      portal_url: str('', { check: 'portalUrl' }),
      csrf_domain: bool(false)
    }, { additionalProperties: false, default: {} }), {
      default: [],
      description: 'One sign-in for several apps (docs/sso.md): [{ domain: example.com, portal_url:\nhttps://auth.example.com }]. A request whose host (Host, or a trusted proxy\'s\nX-Forwarded-Host) is a domain or under one gets the session cookie with\nDomain=<domain>, so every app under it sees the session; a browser refused there\nis sent to <portal_url>/login?next=<the URL it asked for>, and back after signing\nin (only to https URLs under a listed domain; http only on localhost). Logout\nclears the cookie for the whole domain. The CSRF cookie stays on the host that\nsigned in (the portal) unless csrf_domain: true, which lets scripts of every host\nunder the domain read it (for X-CSRFToken). Refused: a public suffix (com, co.uk)\nor an IP address as domain, a portal_url that is not https or not under its domain.\nEmpty: host-only cookies, the login page on each host.'
    })
  }, 'Browser sessions: POST /login sets <abbrev>_sessionid (HttpOnly) and <abbrev>_csrftoken\n(echoed in X-CSRFToken on unsafe methods), both SameSite=Lax; POST /logout ends them.')),
  identity: section({
    jwt: section({
      enabled: bool(false, 'true: every forwarded request carries X-<abbrev>-Identity, a JWT naming the\ncaller, signed by sidegate; its public keys are served at /.well-known/jwks.json.'),
      issuer: optStr({ description: 'The iss claim. Empty: http://localhost:<listen.port>, or http://<listen.host>:<listen.port>\nwhen listen.host is a specific address: where a service in the same pod or host\nreaches the gateway. Set it to the URL your services use to reach sidegate; every\nreplica must have the same.' }),
      audience: optStr({ description: 'The aud claim; empty: no aud claim' }),
      ttl: int(1, 3600, 60, 'seconds from iat to exp'),
      per_request: bool(false, 'false: a token is reused for a quarter of its ttl (it proves the caller was\nauthenticated within ttl, for this audience, not which request). true: one token per\nrequest, its jti the request id (X-Request-Id), so a verifier can bind it to the request;\na signature per request (about 40 µs with EdDSA, 35 µs with ES256: bench/micro-identity.mjs).'),
      algorithm: oneOf(JWT_ALGORITHMS, 'EdDSA', 'EdDSA (Ed25519) or ES256 (P-256) for the key created at the first start and\nby `sidegate jwk rotate`; a change takes effect at the next rotation.'),
      publish_ahead: int(1, 86400, 300, 'seconds a new key (sidegate jwk rotate) is published in the JWKS before it signs;\nmore than your verifiers cache the JWKS (the JWKS says max-age=60 at most).')
    }, 'A signed identity for the upstream (docs/identity-jwt.md).'),
    groups_max_bytes: int(64, 8192, 1000, 'bytes X-<abbrev>-Groups (the caller\'s groups, comma-separated) and the identity\nJWT\'s groups claim may take. Past it, only the groups access rules name, as many as\nfit: with the JWT and the other identity headers, a decision\'s answer stays within\nnginx\'s default 4 KB proxy_buffer_size (docs/credentials.md)')
  }),
  server: section({
    trusted_proxies: live(list([], {
      check: 'ipOrCidr',
      description: 'Peers (addresses or CIDR ranges: ["10.0.0.0/8", "fd00::/8", "127.0.0.1"]) whose\nX-Forwarded-For/-Proto/-Host are believed. The client address is the rightmost\nX-Forwarded-For entry that is not itself a trusted proxy (used for the lockout\nand the logs). From any other peer these headers are replaced, and every other\nforwarding header (Forwarded, X-Real-IP, any X-Forwarded-*, X-Auth-Request-*,\nTrue-Client-IP, X-Original-URL, Remote-User, …: docs/security.md) is removed.\nForward auth: /_sidegate/auth answers only these peers (any other: 403\nuntrusted_proxy): list the proxy in front (nginx, Caddy, Traefik, Envoy) here.'
    })),
    drain_delay: live(int(0, 300, 5, 'SIGTERM: /readyz answers 503 at once while requests are still served for\ndrain_delay seconds (so Kubernetes or a load balancer stops sending traffic),\nthen the listener closes and in-flight requests get shutdown_grace seconds.\nStop timeouts (terminationGracePeriodSeconds, docker stop -t) must exceed the sum.\nSIGINT (Ctrl-C) skips the delay.')),
    shutdown_grace: live(int(0, 600, 10, 'seconds in-flight requests get after the listener closes')),
    body_limit: live(int(64, 10 * 1024 * 1024, 8192, 'bytes accepted on sidegate\'s own endpoints (413 above)')),
    headers_timeout: live(int(1, 600, 10, 'seconds a client has to send its headers (408 and close after)')),
    request_timeout: live(int(1, 3600, 60, 'seconds a client has to send its whole request (408 and close after)')),
    keep_alive_timeout: live(int(1, 3600, 65, 'seconds an idle keep-alive connection stays open. Keep it longer than the idle\ntimeout of the proxy or load balancer in front (nginx keepalive_timeout, 60 s on most\nload balancers): else the proxy reuses a connection sidegate is closing and a POST fails (502).')),
    max_header_size: int(1024, 1024 * 1024, 16384, 'bytes of request line and headers together (431 above)'),
    workers: T.Union([T.Integer({ minimum: 1, maximum: MAX_WORKERS }), T.Literal('auto')], {
      default: 1,
      description: 'Processes serving listen.port (node:cluster): 1 (one process, no cluster), a number, or\n"auto" (the CPUs available to the process). `sidegate start --workers N` wins over it.\nAbove 1 a primary process forks the workers, restarts one that dies, serves the metrics\nand admin listeners (metrics summed over the workers; admin API calls relayed to them) and passes\nsignals and live reloads on; each worker is like a replica (docs/deploy.md).'
    })
  }),
  metrics: section({
    enabled: bool(true),
    host: str('0.0.0.0', { description: 'all interfaces, so Prometheus can scrape the pod IP; 127.0.0.1 to keep it local' }),
    port: int(0, 65535, 7080, 'outside 9090-9999, the range Prometheus and its exporters take (9090 is Prometheus\nitself): a sidecar beside them starts with no port edits'),
    auth: section({
      bearer_token_file: optStr({ description: 'a file holding a token the scrape must send as Authorization: Bearer <token>\n(Prometheus: authorization: {credentials_file: …}); relative to this file, read at start' }),
      username: optStr({ description: 'with password_file: HTTP Basic (Prometheus: basic_auth: {username, password_file})' }),
      password_file: optStr({ description: 'a file holding the Basic password; relative to this file, read at start' })
    }, 'A credential GET /metrics requires (compared in constant time; 401 with WWW-Authenticate\notherwise). Neither set: no credential (the default). Both set: either is accepted.')
  }, 'Prometheus text at GET /metrics on a listener of its own, so it is not\nreachable through the port your Service or load balancer exposes.'),
  tracing: section({
    endpoint: optStr({ check: 'httpUrl', url: true, description: 'OTLP/HTTP base URL of the collector (http://otel-collector:4318); spans are POSTed\nas JSON to <endpoint>/v1/traces. OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as it is) and\nOTEL_EXPORTER_OTLP_ENDPOINT (like this key) win over it. Empty and neither set: tracing\nis off, and costs nothing.' }),
    service_name: str('sidegate', { description: 'service.name of every span; OTEL_SERVICE_NAME wins' })
  }, 'OpenTelemetry traces (docs/observability.md): one server span per request, with child spans\nfor its Redis commands and its upstream call; W3C traceparent/tracestate accepted only from\nserver.trusted_proxies. The standard OTEL_* variables apply (sampler, headers, resource\nattributes, batch delays).'),
  admin: section({
    enabled: bool(false, 'true: serve the admin API under /admin/v1/ on its own listener (admin.host:admin.port,\nnever listen.port nor metrics.port)'),
    host: str('127.0.0.1', { description: 'loopback by default: the admin API stays local while metrics.host may be 0.0.0.0\nfor Prometheus; another address is warned about at start (keep it off public networks)' }),
    port: int(0, 65535, 7081, 'beside metrics.port, and not 9091 (the Pushgateway\'s)')
  }, 'The admin API (docs/admin-api.md): users, orgs, memberships, access keys, private\ntokens, sessions and rate limits over JSON, the same operations as the CLI. Every call\nneeds a superuser\'s private token or access-key signature; a signed call with a body\nmust sign Digest or Content-Digest and each signature is accepted once, whatever\nauth.signature says. The OpenAPI document is at GET /admin/v1/openapi.json.'),
  sign_in: signIn,
  docs: live(section({
    enabled: bool(true)
  }, 'Serve the API documentation: Swagger UI at /api/docs/, the OpenAPI 3.1 document at\n/api/docs/openapi.json and .yaml, and /docs redirecting there. false: these paths\nare not sidegate\'s (404, or the upstream\'s, protected like any other path).')),
  log: live(section({
    level: oneOf(LEVELS, 'info', 'fatal, error, warn, info, debug, trace or silent'),
    refusals_per_second: int(0, 1_000_000, 100, 'access lines of refused requests (401, 403, 429) written per second at most; past it,\none "refusals not logged" line a second says how many were left out (a flood of bad\ncredentials costs little and does not flood the log; the metrics and the audit trail\ncount every one). 0: every one written')
  })),
  audit: section({
    log: bool(true, 'one JSON line per credential event ("log":"audit", a stable "event"), whatever\nlog.level says (silent included): only false here turns them off'),
    stream: bool(true, 'the gateway also keeps each event in the store\'s audit trail (the embedded store: its\naudit table; Redis: the Stream <redis.prefix>audit), which `sidegate audit tail` reads;\nsent without waiting: a failing store never fails or slows a request (counted in\nsidegate_audit_stream_errors_total, logged once per outage). false: the log lines only.\nCommands (sidegate user|key|token …) always append there, whatever this says'),
    max_len: int(100, 100_000_000, 100_000, 'entries the trail keeps (Redis: about, XADD MAXLEN ~): older ones are dropped;\nan entry is about 400 bytes, so the default keeps some 40 MB')
  }, 'The audit trail: logins, lockouts, bearer tokens issued, used and refused, access keys\ncreated, revoked and first used, private tokens, password changes, users disabled and\nenabled, logouts (docs/observability.md). Never a password, token, secret or session id.'),
  reload: live(section({
    watch: bool(true, 'true: a change of this file on disk reloads it too (its directory is watched, so a\nKubernetes ConfigMap update is seen); false: only SIGHUP reloads')
  }, 'SIGHUP reads this file again: keys that can change live (docs/configuration.md)\napply to new requests at once; a file that changes any other key is refused, one\nthat is not valid is reported, and the config in force stays. One log line tells which.'))
}, { additionalProperties: false })

/** gateway.yml as validated, defaults filled in, before anything is derived from it. */
export type Doc = Static<typeof Schema>

/** Environment variables and the keys they override (they win over the file). */
export const ENV: ReadonlyArray<readonly [string, string]> = [
  ['SIDEGATE_HOST', 'listen.host'],
  ['SIDEGATE_PORT', 'listen.port'],
  ['SIDEGATE_METRICS_PORT', 'metrics.port'],
  ['SIDEGATE_ADMIN_PORT', 'admin.port'],
  ['SIDEGATE_UPSTREAM', 'upstream.url'],
  ['SIDEGATE_STORE', 'store.backend'],
  ['SIDEGATE_STORE_PATH', 'store.path'],
  ['SIDEGATE_REDIS_URL', 'redis.url'],
  ['SIDEGATE_REDIS_PASSWORD', 'redis.password'],
  ['SIDEGATE_SECRET_KEY', 'secret_key'],
  ['SIDEGATE_SECRET_KEY_FILE', 'secret_key_file'],
  ['SIDEGATE_LOG_LEVEL', 'log.level']
]

/** The schema node at a dotted key, or undefined. */
export function nodeAt (key: string): TSchema | undefined {
  let cur: TSchema | undefined = Schema
  for (const part of key.split('.')) cur = (cur?.properties as Record<string, TSchema> | undefined)?.[part]
  return cur
}

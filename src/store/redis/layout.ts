/**
 * How the Redis backend lays out its keys, all under the configured prefix:
 *   org:<id>  user:<id>  uname:<lowercase username>  ak:<id>  ak-used:<id>
 *   pt:<hash(token)>  user-pt:<user id>  bt:<hash(token)>  sess:<hash(id)>
 *   user-aks:<user id>  user-sess:<user id>  user-bt:<user id>  once:<kind>:<hash>  fail:<hash(subject)>  orgs  users
 *   rl:<policy>:<user or key id>   (rate-limit buckets: a sorted set per bucket, one script per request)
 *   lock:<name>   (a periodic job's lock: a random token, SET NX PX; freed by its owner only: src/admin/unused-keys.ts)
 *   pt-imported   (lookup hashes of imported, untagged private tokens: the only untagged ones looked up)
 *   key-check  key-legacy:<check value>  key-rotation   (the secret key's check value and rotation: ../secret/)
 *   user-totp:<user id>   (the TOTP record, JSON, its secret encrypted)
 *   user-rc:<user id>     (a set: the lookup hashes of unused recovery codes)
 *   pk:<credential id>    (a passkey: a hash of rec, user, name, counter, last_used)
 *   user-pk:<user id>     (a set: the user's credential ids)
 *   group:<id>   (a group's JSON record; its members are listed on the user records, `groups`)
 *   group-name:<org id or global>/<lowercase name>   (the group's id: its name claimed with SET NX)
 *   groups   (the set of every group's id)
 *   sess-tag:<tag>   (a set: the hashes of the sessions a provider's back-channel logout ends by this keyed tag)
 *   link:<source> <subject>   (a link of an account elsewhere to a user: its JSON, claimed with SET NX)
 *   user-links:<user id>   (a hash: source → subject, one link per source, claimed with HSETNX)
 *   jwks   (the identity JWT's signing keys, private halves encrypted: ../keyset.ts)
 *   audit  (the audit stream, audit.stream: a Redis Stream, one field `e` holding the event's JSON, capped)
 *   invalidate   (the pub/sub channel of cache invalidations: ./invalidation.ts)
 * user-sess (a set of session hashes) and user-bt (a sorted set of bearer
 * token hashes by expiry) index what a password change or disabling ends;
 * both are pruned when added to and expire with their longest-lived member.
 * Tokens and session ids are stored only as keyed hashes; access-key secrets
 * and private tokens are encrypted (AES-256-GCM) so they can be read back.
 * Cluster safety: every command, script and transaction touches exactly one
 * key (no MGET/MSET, multi-key DEL, MULTI or script over several keys), so
 * no key needs a hash tag and the layout works unchanged on Redis Cluster.
 * Invalidation uses classic PUBLISH, which a cluster relays to every node.
 * Keep it so: a new multi-key operation must share one {hash tag} or be split.
 * A private token's record is `<lookup hash>:<sealed token>` (../secret/records.ts).
 */
export {}

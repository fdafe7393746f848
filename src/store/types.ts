/**
 * The application-facing storage interface. Everything persistent goes through `Store`: one aggregate per
 * concern (`store.users`, `store.sessions`, …), each the public methods of its account-policy module
 * (./policy/), over a backend that only stores (./ports.ts): SqliteStore (./sqlite/, the default) or
 * RedisStore (./redis/); test/fixtures/store-contract.ts runs against both. `ManagedStore` adds what a
 * process's composition root needs around it: connecting, the gate, the secret key's check and rotation,
 * the caches' counters for metrics. In src/, only src/app/open-store.ts constructs a store.
 */
import type { Keyring } from '../crypto.js'
import type { GatewayError } from '../errors.js'
import type { StoreCaches } from './model.js'
import type { AccessKeys } from './policy/access-keys.js'
import type { Audit } from './policy/audit.js'
import type { BearerTokens } from './policy/bearer-tokens.js'
import type { Groups } from './policy/groups.js'
import type { Limits } from './policy/limits.js'
import type { Links } from './policy/links.js'
import type { Locks } from './policy/locks.js'
import type { Mfa } from './policy/mfa.js'
import type { Passkeys } from './policy/passkeys.js'
import type { Passwords } from './policy/passwords.js'
import type { PrivateTokens } from './policy/private-tokens.js'
import type { Sessions } from './policy/sessions.js'
import type { SigningKeys } from './policy/signing-keys.js'
import type { State } from './policy/state.js'
import type { Orgs, Users } from './policy/users.js'
import type { VerifyOptions, Verified } from './secret/check.js'
import type { RotateOptions, RotateResult } from './secret/rotate.js'

export * from './model.js'

/** An aggregate as callers see it: its policy module's public methods, so a new one needs no line here. */
export type Aggregate<T> = { readonly [K in keyof T]: T[K] }

export interface Store {
  readonly orgs: Aggregate<Orgs>
  /** groups (an org's or global) and their members by source: an operator's (`local`) and identity providers' */
  readonly groups: Aggregate<Groups>
  /** records, lookups (cached in process, `lookup` at once on a hit), state; disabling ends the user's sessions */
  readonly users: Aggregate<Users>
  /** accounts elsewhere (OIDC, LDAP) linked to users, by (source, subject): one per source per user */
  readonly links: Aggregate<Links>
  /** scrypt hashes, imported Django hashes; a change ends the user's sessions and unused bearer tokens */
  readonly passwords: Aggregate<Passwords>
  readonly accessKeys: Aggregate<AccessKeys>
  readonly privateTokens: Aggregate<PrivateTokens>
  readonly bearerTokens: Aggregate<BearerTokens>
  readonly sessions: Aggregate<Sessions>
  /** login attempts, replay marks, rate-limit windows */
  readonly limits: Aggregate<Limits>
  /** locks shared by every replica (periodic jobs) */
  readonly locks: Aggregate<Locks>
  /** identity.jwt's key set */
  readonly signingKeys: Aggregate<SigningKeys>
  /** second factors: TOTP and recovery codes */
  readonly mfa: Aggregate<Mfa>
  readonly passkeys: Aggregate<Passkeys>
  readonly audit: Aggregate<Audit>
  /** states sealed for a client to hold */
  readonly state: Aggregate<State>

  /** Round trip to the backing store; throws a 503 GatewayError when unreachable. */
  ping(): Promise<void>
  close(): Promise<void>
}

/** A store as a process runs it: connected once, and gated until its secret key is checked. */
export interface RunningStore extends Store {
  /** Resolves when the store answers; rejects on the first failure (a Redis client keeps retrying). */
  connect(): Promise<void>
  /** The connection is up (metrics, /readyz). */
  readonly isReady: boolean
  /**
   * Closes (an error) or opens (null) the store for every call: a process whose secret key
   * has not been checked against the store's, or failed the check, neither reads nor writes
   * anything; while closed, every call fails with that error and nothing cached is used.
   */
  setGate(err: GatewayError | null): void
}

/** The secret key as the store records it (./secret/check.ts) and its rotation (./secret/rotate.ts). */
export interface KeyAdmin {
  /** Compares this process's key with the store's key check value; throws KeyCheckError if it may not use the store. */
  verifyKey(o: VerifyOptions): Promise<Verified>
  /** Re-encrypts every encrypted record under `newKeys`, resumably; `db` is selected first (refused: KeyCheckError). */
  rotateKey(newKeys: Keyring, o: RotateOptions & { db: number, where: string }): Promise<RotateResult>
}

/** What src/app/open-store.ts openStore gives `sidegate start` and the admin commands. */
export interface ManagedStore extends RunningStore, KeyAdmin {
  /** the in-process caches, whose counters the metrics read */
  readonly caches: StoreCaches
}

/**
 * Passkeys (WebAuthn): the ceremonies' server side, over @simplewebauthn/server
 * (it parses and checks the CBOR, COSE keys, signatures, origins and RP id
 * hashes; nothing of that is ours). Shared by the account page (register),
 * the login page's second step (a passkey after the password) and the
 * sign-in without a username (a discoverable passkey alone: possession and
 * the authenticator's user verification, two factors).
 *
 * A ceremony's challenge is random (the library's), and handed to the
 * browser with its options inside a state sealed with the secret key: the
 * ceremony (register, signin, second), the user (register), the pending
 * password step it belongs to (second), its expiry (CHALLENGE_TTL). The
 * answer must bring it back; it is used up before anything is checked (a
 * replay mark, on every replica), so each challenge is answered once.
 *
 * User verification is always required. The signature counter is checked by
 * the store in one atomic step (store.passkeys.use): the library is given 0 as
 * the stored counter so that the one rule is the store's, also between
 * replicas answering two uses of one cloned authenticator at once.
 */
import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'
import type {
  AuthenticationResponseJSON, AuthenticatorTransportFuture, PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON, RegistrationResponseJSON
} from '@simplewebauthn/server'
import type * as WebAuthn from '@simplewebauthn/server'
import { E, GatewayError, messageOf } from '../errors.js'
import type { AuditContext, Auditor } from '../observability/audit.js'
import type { PasskeyInfo, Store, StoredPasskey, User } from '../store/types.js'
import type { Amr } from './mfa.js'
import type { LockoutOptions } from './passwords.js'
import { addressBucket } from '../http/address.js'
import { PASSKEY_CREDENTIAL_FAILURES } from '../limits.js'

/**
 * @simplewebauthn/server and what it pulls in (about 8 MB of a process's memory) are loaded at
 * the first passkey ceremony, not at start: most gateways never run one (docs/performance.md).
 */
let webauthn: Promise<typeof WebAuthn> | undefined
const lib = async (): Promise<typeof WebAuthn> => await (webauthn ??= import('@simplewebauthn/server'))

/** seconds a ceremony's challenge may be answered in (the browser's own timeout is a little shorter) */
export const CHALLENGE_TTL = 300
const PURPOSE = 'webauthn challenge'
const MAX_NAME = 64

export interface WebAuthnOptions {
  /** '' : the request's host */
  rp_id: string
  /** []: the request's own origin */
  origins: string[]
  rp_name: string
}

export type Ceremony = 'register' | 'signin' | 'second'

/** The sealed state of one ceremony. */
interface State {
  k: Ceremony
  /** the challenge, base64url */
  c: string
  /** expiry, epoch ms */
  e: number
  /** register: the user, and the user handle the credential is made for */
  u?: string
  h?: string
  /** second: the id of the pending password step (src/auth/mfa.ts Pending.n) */
  p?: string
}

/** The relying party a request is answered for: the configured one, else derived from its Host. */
export interface RelyingParty { id: string, origins: string[] }

/** The passkey's factor (RFC 8176): a hardware-bound key, or a software (synced) one. */
export function passkeyFactor (p: Pick<StoredPasskey, 'device_type'>): 'hwk' | 'swk' {
  return p.device_type === 'singleDevice' ? 'hwk' : 'swk'
}

/**
 * The factors a sign-in with a passkey was made with, in one place: after the
 * password ['pwd', 'hwk' | 'swk'], alone ['hwk' | 'swk'] (user verification
 * is required, so the passkey alone is two factors).
 */
export function signInFactors (p: Pick<StoredPasskey, 'device_type'>, afterPassword: boolean): Amr[] {
  return afterPassword ? ['pwd', passkeyFactor(p)] : [passkeyFactor(p)]
}

/**
 * A passkey's name as its owner typed it: trimmed, control characters
 * dropped, at most 64 characters; '' when nothing is left.
 */
export function passkeyName (v: unknown): string {
  return typeof v !== 'string' ? '' : v.replace(/[\x00-\x1f\x7f]/g, ' ').trim().slice(0, MAX_NAME)
}

export interface Authenticated { user: User, passkey: StoredPasskey }

export class PasskeyCeremonies {
  constructor (
    private readonly store: Store,
    private readonly opts: WebAuthnOptions,
    private readonly lockout: LockoutOptions,
    private readonly audit: Auditor | null
  ) {}

  /** auth.webauthn's RP id and origins, or those of the request (its Host header, http or https as received). */
  relyingParty (req: IncomingMessage, https: boolean): RelyingParty {
    const host = typeof req.headers.host === 'string' ? req.headers.host.toLowerCase() : ''
    const hostname = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d+$/, '')
    const id = this.opts.rp_id !== '' ? this.opts.rp_id : hostname
    const origins = this.opts.origins.length > 0 ? this.opts.origins : (host === '' ? [] : [`${https ? 'https' : 'http'}://${host}`])
    return { id, origins }
  }

  #rp (req: IncomingMessage, https: boolean): RelyingParty {
    const rp = this.relyingParty(req, https)
    // an IP address (or nothing) cannot be an RP id: browsers refuse it, so no ceremony starts
    if (rp.id === '' || isIP(rp.id.replace(/^\[|\]$/g, '')) !== 0) throw E.badRequest('Passkeys need a host name, not an IP address: open this site by its name (e.g. localhost), or set auth.webauthn.rp_id.')
    return rp
  }

  #seal (s: State): string { return this.store.state.seal(PURPOSE, JSON.stringify(s)) }

  /**
   * The state as sealed for this ceremony (and binding), unexpired, and used up now; else passkey_challenge_invalid.
   */
  async #take (sealed: unknown, k: Ceremony, check: (s: State) => boolean): Promise<State> {
    const plain = typeof sealed === 'string' && sealed !== '' ? this.store.state.open(PURPOSE, sealed) : null
    const s = plain === null ? null : JSON.parse(plain) as State
    if (s === null || s.k !== k || s.e <= Date.now() || !check(s)) throw E.passkeyChallengeInvalid()
    if (!(await this.store.limits.markOnce('webauthn', s.c, CHALLENGE_TTL + 60))) throw E.passkeyChallengeInvalid()
    return s
  }

  /** The options for navigator.credentials.create(), and their sealed state. */
  async registrationOptions (user: User, req: IncomingMessage, https: boolean): Promise<{
    options: PublicKeyCredentialCreationOptionsJSON,
    state: string
  }> {
    const rp = this.#rp(req, https)
    const [handle, existing] = await Promise.all([
      this.store.passkeys.handle(user.id), this.store.passkeys.list(user.id)
    ])
    const stored = await Promise.all(existing.map(async (p) => await this.store.passkeys.get(p.id)))
    const options = await (await lib()).generateRegistrationOptions({
      rpName: this.opts.rp_name,
      rpID: rp.id,
      userName: user.username,
      userDisplayName: user.name === '' ? user.username : user.name,
      userID: Buffer.from(handle, 'base64url'),
      timeout: (CHALLENGE_TTL - 60) * 1000,
      attestationType: 'none',
      // the same authenticator is not registered twice
      excludeCredentials: stored.flatMap((p) => p === null
        ? []
        : [{ id: p.id, transports: p.transports as AuthenticatorTransportFuture[] }]),
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' }
    })
    return {
      options,
      state: this.#seal({
        k: 'register',
        c: options.challenge,
        e: Date.now() + CHALLENGE_TTL * 1000,
        u: user.id,
        h: handle
      })
    }
  }

  /**
   * Checks the browser's answer to registrationOptions and stores
   * the passkey under `name`; audited as passkey.registered.
   */
  async register (
    user: User,
    sealed: unknown,
    response: unknown,
    name: string,
    req: IncomingMessage,
    https: boolean,
    ctx: AuditContext
  ): Promise<PasskeyInfo> {
    const s = await this.#take(sealed, 'register', (x) => x.u === user.id)
    const rp = this.#rp(req, https)
    const { verifyRegistrationResponse } = await lib()
    let v
    try {
      v = await verifyRegistrationResponse({
        response: response as RegistrationResponseJSON,
        expectedChallenge: s.c,
        expectedOrigin: rp.origins,
        expectedRPID: rp.id,
        requireUserVerification: true
      })
    } catch (err) {
      throw E.passkeyFailed(`The passkey was not accepted: ${describe(err)}`)
    }
    if (!v.verified) throw E.passkeyFailed()
    const c = v.registrationInfo.credential
    const p = {
      id: c.id,
      user_id: user.id,
      user_handle: s.h!,
      public_key: Buffer.from(c.publicKey).toString('base64url'),
      counter: c.counter,
      transports: (c.transports ?? []).map(String),
      device_type: v.registrationInfo.credentialDeviceType,
      backed_up: v.registrationInfo.credentialBackedUp,
      name: name === '' ? 'Passkey' : name
    }
    if (!(await this.store.passkeys.add(p))) throw E.passkeyFailed('The passkey was not accepted: it is registered already.')
    this.audit?.record({ event: 'passkey.registered', ctx, user, keyId: p.id, via: 'account' })
    const info = (await this.store.passkeys.list(user.id)).find((x) => x.id === p.id)
    return info ?? {
      id: p.id,
      name: p.name,
      created: new Date().toISOString(),
      last_used: null,
      device_type: p.device_type,
      backed_up: p.backed_up
    }
  }

  /**
   * The options for navigator.credentials.get(): `signin` (no username: any
   * discoverable passkey of this site), or `second` (the user's passkeys,
   * bound to the pending password step `pending`).
   */
  async authenticationOptions (
    req: IncomingMessage, https: boolean, k: 'signin' | 'second', o: { user?: User, pending?: string } = {}
  ): Promise<{ options: PublicKeyCredentialRequestOptionsJSON, state: string }> {
    const rp = this.#rp(req, https)
    let allow: Array<{ id: string, transports?: AuthenticatorTransportFuture[] }> | undefined
    if (k === 'second' && o.user !== undefined) {
      const mine = await Promise.all(
        (await this.store.passkeys.list(o.user.id)).map(async (p) => await this.store.passkeys.get(p.id))
      )
      allow = mine.flatMap(
        (p) => p === null ? [] : [{ id: p.id, transports: p.transports as AuthenticatorTransportFuture[] }]
      )
    }
    const options = await (await lib()).generateAuthenticationOptions({
      rpID: rp.id,
      timeout: (CHALLENGE_TTL - 60) * 1000,
      userVerification: 'required',
      ...(allow === undefined ? {} : { allowCredentials: allow })
    })
    const s: State = { k, c: options.challenge, e: Date.now() + CHALLENGE_TTL * 1000 }
    if (k === 'second') s.p = o.pending
    return { options, state: this.#seal(s) }
  }

  /**
   * Checks the browser's answer to authenticationOptions: the challenge, the
   * passkey (known; the user's, for `second`; its user active), the
   * signature with user verification, the user handle, the origin and RP id,
   * then the counter (atomically). A refusal before the signature verified
   * counts per client address (auth.lockout.address_max_failures) and per
   * credential id (PASSKEY_CREDENTIAL_FAILURES: beyond it such refusals are
   * 429, a valid assertion still passes); one after it (no user
   * verification, another user handle, a cloned counter) counts toward the
   * per-user code lockout, which refuses even a valid assertion with 429
   * when over; audited: mfa.succeeded /
   * mfa.failed (second), login.succeeded / login.failed (signin), and
   * passkey.cloned.
   */
  async authenticate (
    k: 'signin' | 'second',
    sealed: unknown,
    response: unknown,
    req: IncomingMessage,
    https: boolean,
    ctx: AuditContext,
    o: { user?: User, pending?: string } = {}
  ): Promise<Authenticated> {
    const via = k === 'second' ? 'login' : 'passkey'
    const fail = (err: GatewayError, user?: User): GatewayError => {
      if (k === 'second') this.audit?.record({ event: 'mfa.failed', ctx, user: user ?? o.user, via, reason: err.code, authMethod: 'passkey' })
      else {
        this.audit?.record({
          event: 'login.failed',
          ctx,
          ...(user === undefined ? {} : { username: user.username }),
          authMethod: 'passkey',
          via,
          reason: err.code
        })
      }
      return err
    }
    let s: State
    try {
      s = await this.#take(sealed, k, (x) => k !== 'second' || (x.p !== undefined && x.p === o.pending))
    } catch (err) {
      throw err instanceof GatewayError ? fail(err) : err
    }
    const r = response as AuthenticationResponseJSON
    const id = typeof r?.id === 'string' ? r.id : ''
    const { max_failures: max, window } = this.lockout
    // before the signature nothing names a user for sure (a credential
    // id is no secret): what fails there counts per client address
    const addrMax = this.lockout.address_max_failures ?? 0
    const addressSubject = `\npasskey address\n${addressBucket(ctx.clientIp, this.lockout.ipv6_prefix ?? 64)}`
    if (addrMax > 0) {
      const a = await this.store.limits.countLoginAttempt(addressSubject, window, addrMax)
      if (a.count > addrMax) throw fail(E.tooManyAttempts(a.retryAfter))
    }
    const passkey = id === '' ? null : await this.store.passkeys.get(id)
    /**
     * A refusal before the signature verified: the address's count stays; the credential
     * id's own count decides 401 or 429 (never the owner's valid assertion, checked first).
     */
    const unsigned = async (err: GatewayError, user?: User): Promise<GatewayError> => {
      // only a passkey the store holds is counted: random ids leave no counters behind
      if (passkey === null) return fail(err, user)
      const c = await this.store.limits.countLoginAttempt(`\npasskey credential\n${id}`, window, PASSKEY_CREDENTIAL_FAILURES)
      return fail(c.count > PASSKEY_CREDENTIAL_FAILURES ? E.tooManyAttempts(c.retryAfter) : err, user)
    }
    // the user as stored now (not a cached copy): one disabled a moment ago cannot sign in
    const user = passkey === null
      ? null
      : (
          k === 'second'
            ? (passkey.user_id === o.user?.id ? o.user : null)
            : (await this.store.users.forSignIn(passkey.user_id))?.user ?? null
        )
    if (passkey === null || user === null || !user.is_active) throw await unsigned(E.passkeyFailed())
    const rp = this.#rp(req, https)
    const { verifyAuthenticationResponse } = await lib()
    let v
    try {
      v = await verifyAuthenticationResponse({
        response: r,
        expectedChallenge: s.c,
        expectedOrigin: rp.origins,
        expectedRPID: rp.id,
        // the counter is the store's to check, atomically (usePasskey below)
        credential: { id: passkey.id, publicKey: Buffer.from(passkey.public_key, 'base64url'), counter: 0, transports: passkey.transports as AuthenticatorTransportFuture[] },
        // user verification is required, and checked below: once the signature verified, its absence counts per user
        requireUserVerification: false
      })
    } catch (err) {
      // the library throws for what it checks before the signature (challenge, origin, RP id, user presence, the form)
      throw await unsigned(E.passkeyFailed(`The passkey was not accepted: ${describe(err)}`), user)
    }
    if (!v.verified) throw await unsigned(E.passkeyFailed(), user)
    // the signature verified: the passkey's holder answered, so from here on it counts per user (the code lockout)
    const subject = `\nmfa\n${user.id}`
    if (max > 0) {
      const a = await this.store.limits.countLoginAttempt(subject, window, max)
      if (a.count > max) throw fail(E.tooManyAttempts(a.retryAfter), user)
    }
    const handle = r.response?.userHandle
    if (!v.authenticationInfo.userVerified) throw fail(E.passkeyFailed('The passkey was not accepted: user verification required, but user could not be verified'), user)
    if (handle !== undefined && handle !== passkey.user_handle) throw fail(E.passkeyFailed(), user)
    if (!(await this.store.passkeys.use(passkey.id, v.authenticationInfo.newCounter))) {
      this.audit?.record({ event: 'passkey.cloned', ctx, user, keyId: passkey.id, via })
      throw fail(E.passkeyCloned(), user)
    }
    if (max > 0) await this.store.limits.resetLoginFailures(subject)
    if (addrMax > 0) await this.store.limits.forgiveLoginAttempt(addressSubject)
    if (k === 'second') this.audit?.record({ event: 'mfa.succeeded', ctx, user, authMethod: 'passkey', via })
    else this.audit?.record({ event: 'login.succeeded', ctx, user, authMethod: 'passkey', via })
    return { user, passkey }
  }
}

/** The library's reason, one line, for the refusal's detail (it names what did not match, never a secret). */
function describe (err: unknown): string {
  const m = messageOf(err)
  return m.split('\n')[0].slice(0, 200)
}

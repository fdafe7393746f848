/**
 * A user's second factors as the store gives them (re-exported by ./types.ts):
 * what a sign-in needs, the TOTP enrolment, administration's view, and
 * passkeys (WebAuthn credentials) with the Store's passkey methods (./types.ts
 * Store extends them).
 */

/**
 * What a user's second factor asks of a sign-in (Store.secondFactorState):
 * `passkey` when passkeys are their only factor.
 */
export type SecondFactorState = 'enrolled' | 'passkey' | 'required' | 'none'

/** A user's second factors as administration and the account page see them: never a secret. */
export interface MfaFactors {
  /** the TOTP factor: pending until confirmed with a first code (`operator`: a pending one an operator began) */
  totp: { confirmed: boolean, created: string, operator?: true } | null
  /** an operator required enrolment (`sidegate mfa require`, the admin API) */
  required: boolean
  /** unused recovery codes */
  recovery_codes: number
  /** the user's passkeys, oldest first */
  passkeys: PasskeyInfo[]
}

/** A TOTP enrolment begun (Store.beginTotp): the secret, shown once, and the parameters the otpauth:// URI carries. */
export interface TotpEnrolment {
  /** base32 */
  secret: string
  period: number
  digits: number
  algorithm: string
}

/** Which second factor a code was (Store.verifySecondFactor); null: none. */
export type SecondFactorResult = 'otp' | 'recovery' | null

/** A passkey's authenticator: bound to one device, or synced between devices (a passkey provider's). */
export type PasskeyDeviceType = 'singleDevice' | 'multiDevice'

/** A passkey (a WebAuthn credential) as stored: everything a ceremony checks, and what its owner named it. */
export interface StoredPasskey {
  /** the credential id, base64url */
  id: string
  user_id: string
  /** the WebAuthn user handle the credential was made for: random per user (never the username), base64url */
  user_handle: string
  /** the credential's public key (COSE), base64url */
  public_key: string
  /** the signature counter last accepted (0: the authenticator keeps none) */
  counter: number
  transports: string[]
  device_type: PasskeyDeviceType
  backed_up: boolean
  name: string
  /** ISO times */
  created: string
  last_used: string | null
}

/** A passkey as its owner and administration see it: never its key. */
export interface PasskeyInfo {
  id: string
  name: string
  created: string
  last_used: string | null
  device_type: PasskeyDeviceType
  backed_up: boolean
}

/** What a new passkey brings from its registration (Store.addPasskey). */
export type NewPasskey = Omit<StoredPasskey, 'created' | 'last_used'>

export interface PasskeyStore {  /** The user's passkeys, oldest first (never a key). */
  listPasskeys(userId: string): Promise<PasskeyInfo[]>
  /** A passkey by its credential id (for a sign-in without a username), or null. */
  getPasskey(credentialId: string): Promise<StoredPasskey | null>
  /**
   * The user's WebAuthn user handle: the one their passkeys were
   * made for, or a new random one (stored with their first passkey).
   */
  passkeyUserHandle(userId: string): Promise<string>
  /** Stores a new passkey; false when its credential id is taken. */
  addPasskey(p: NewPasskey): Promise<boolean>
  /** Renames one of the user's passkeys; false: no such passkey of theirs. */
  renamePasskey(userId: string, credentialId: string, name: string): Promise<boolean>
  /** Removes one of the user's passkeys; false: no such passkey of theirs. */
  removePasskey(userId: string, credentialId: string): Promise<boolean>
  /**
   * Records a use: the new signature counter and the time, atomically and
   * only when the counter increased (or both are 0: an authenticator that
   * keeps none). False: no such passkey, or a counter that did not increase
   * (a cloned authenticator): nothing written.
   */
  usePasskey(credentialId: string, counter: number): Promise<boolean>
}

/**
 * A user's second factors as the store gives them (re-exported by ./types.ts):
 * what a sign-in needs, the TOTP enrolment, administration's view, and
 * passkeys (WebAuthn credentials) with the Store's passkey methods (./types.ts
 * Store extends them).
 */

/**
 * What a user's second factor asks of a sign-in (store.mfa.state):
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

/** A TOTP enrolment begun (store.mfa.begin): the secret, shown once, and the parameters the otpauth:// URI carries. */
export interface TotpEnrolment {
  /** base32 */
  secret: string
  period: number
  digits: number
  algorithm: string
}

/** Which second factor a code was (store.mfa.verify); null: none. */
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

/** What a new passkey brings from its registration (store.passkeys.add). */
export type NewPasskey = Omit<StoredPasskey, 'created' | 'last_used'>

/**
 * A user's second factors as an operator manages them (`sidegate mfa …`,
 * /admin/v1/users/{username}/mfa…): each operation's declaration
 * (./operation.ts) with its code. Never a secret but the enrolment's, once.
 */
import { Type as T, type Static } from '@sinclair/typebox'
import { UsageError } from '../errors.js'
import { otpauthUri } from '../auth/mfa.js'
import { defineOperation, iso, named, nullOr, oneOf } from './operation.js'

const MfaFactors = named('MfaFactors', T.Object({
  username: T.String(),
  totp: nullOr(T.Object({
    confirmed: T.Boolean({ description: 'false: begun, counts once confirmed with a first code' }),
    created: iso
  })),
  required: T.Boolean({ description: 'An operator required enrolment (`sidegate mfa require`).' }),
  recovery_codes: T.Integer({ description: 'Unused recovery codes.' }),
  passkeys: T.Array(T.Object({
    id: T.String({ description: 'The credential id (base64url).' }),
    name: T.String({ description: 'As the user named it.' }),
    created: iso,
    last_used: nullOr(iso),
    device_type: oneOf(['singleDevice', 'multiDevice'], 'singleDevice: bound to one authenticator (amr hwk); multiDevice: synced by a passkey provider (amr swk).'),
    backed_up: T.Boolean({ description: 'A synced passkey that is backed up.' })
  }), { description: 'The user\'s passkeys, oldest first: never a key.' })
}))
/** A user's second factors as administration sees them (never a secret). */
export type MfaJson = Static<typeof MfaFactors>
const TotpEnrolment = named('TotpEnrolment', T.Object({
  username: T.String(),
  uri: T.String({ description: 'otpauth://totp/sidegate:<username>?secret=…&issuer=sidegate&algorithm=SHA1&digits=6&period=30; shown only in this answer.' }),
  secret: T.String({ description: 'The base32 secret the URI carries; shown only in this answer.' })
}))
const MfaReset = named('MfaReset', T.Object({
  username: T.String(),
  reset: T.Boolean({ description: 'false: there was nothing to remove (no TOTP factor, recovery code, passkey or requirement).' })
}))
const MfaRequired = named('MfaRequired', T.Object({ username: T.String(), required: T.Literal(true) }))

export const MFA_OPERATIONS = [
  defineOperation({
    method: 'GET',
    path: 'users/{username}/mfa',
    status: 200,
    tag: 'Second factor',
    operationId: 'showMfa',
    summary: 'A user\'s second factors, never a secret (`sidegate mfa show`)',
    answer: MfaFactors,
    errors: ['not_found'],
    cli: [{
      command: 'mfa show',
      args: ['username'],
      help: ['the user\'s second factor: TOTP on, pending or none, recovery codes', 'left; never a secret'],
      text: (m) => [
        `totp: ${m.totp === null ? 'none' : m.totp.confirmed ? `on since ${m.totp.created}` : `pending (begun ${m.totp.created}; confirmed by the first code)`}`,
        `recovery codes left: ${m.recovery_codes}`,
        `passkeys: ${m.passkeys.length === 0 ? 'none' : m.passkeys.length}`,
        ...m.passkeys.map((p) => `  ${p.name} (${p.device_type === 'multiDevice' ? 'synced' : 'single device'}; added ${p.created}; last used ${p.last_used ?? 'never'})`),
        ...(m.required ? ['enrolment required at the next sign-in'] : [])
      ].join('\n')
    }],
    run: async (ops, { params }) => {
      const u = await ops.user(params.username)
      return { username: u.username, ...(await ops.store.mfa.factors(u.id)) }
    }
  }),
  defineOperation({
    method: 'POST',
    path: 'users/{username}/mfa/totp',
    status: 201,
    tag: 'Second factor',
    operationId: 'enrollTotp',
    summary: 'Begin a TOTP enrolment for a user (`sidegate mfa enroll`)',
    description: 'Answers the otpauth:// URI (and its secret) once: give it to the user for their authenticator app. It counts once confirmed: the user\'s next sign-in on the login page asks for a first code. Refused (400) when the user already has a confirmed factor: reset it first.',
    answer: TotpEnrolment,
    errors: ['not_found', 'bad_request'],
    cli: [{
      command: 'mfa enroll',
      args: ['username'],
      help: [
        'begins a TOTP enrolment and prints its otpauth:// URI once (give it to',
        'the user for their authenticator app); it counts once the user',
        'confirms it with a first code at the next sign-in on the login page'
      ],
      text: (r) => `${r.uri}\n(shown once: ${r.username} scans it, then confirms with a first code at the next sign-in)`
    }],
    // the secret is never shown again; it counts once confirmed with a first code (the login page's enrolment step)
    run: async (ops, { params }) => {
      const u = await ops.user(params.username)
      const e = await ops.store.mfa.begin(u.id, 'operator')
      if (e === null) throw new UsageError(`${u.username} already has a second factor: reset it first`, 'failed')
      // the user must confirm it at their next sign-in
      await ops.store.mfa.require(u.id)
      ops.audit({ event: 'mfa.enrolled', user: u, via: 'admin' })
      return { username: u.username, uri: otpauthUri('sidegate', u.username, e), secret: e.secret }
    }
  }),
  defineOperation({
    method: 'DELETE',
    path: 'users/{username}/mfa',
    status: 200,
    tag: 'Second factor',
    operationId: 'resetMfa',
    summary: 'Remove a user\'s second factors: TOTP, recovery codes and passkeys (`sidegate mfa reset`)',
    description: 'For a user who lost their device: removes the TOTP factor, the recovery codes and every passkey. auth.mfa.required still applies: such a user enrols again at the next sign-in.',
    answer: MfaReset,
    errors: ['not_found'],
    cli: [{
      command: 'mfa reset',
      args: ['username'],
      help: ['removes the user\'s second factor and recovery codes (a lost device)'],
      text: (r) => r.reset ? `removed the second factor, recovery codes and passkeys of ${r.username}` : `${r.username} had no second factor`
    }],
    run: async (ops, { params }) => {
      const u = await ops.user(params.username)
      const reset = await ops.store.mfa.reset(u.id)
      if (reset) ops.audit({ event: 'mfa.reset', user: u, via: 'admin' })
      return { username: u.username, reset }
    }
  }),
  defineOperation({
    method: 'POST',
    path: 'users/{username}/mfa/required',
    status: 200,
    tag: 'Second factor',
    operationId: 'requireMfa',
    summary: 'Require a user to enrol a second factor at their next sign-in (`sidegate mfa require`)',
    answer: MfaRequired,
    errors: ['not_found'],
    cli: [{
      command: 'mfa require',
      args: ['username'],
      help: ['the user must enrol at the next sign-in on the login page; until', 'then the token endpoint answers mfa_unset'],
      text: (r) => `${r.username} must enrol a second factor at the next sign-in (the token endpoint answers mfa_unset until then)`
    }],
    run: async (ops, { params }) => {
      const u = await ops.user(params.username)
      if (await ops.store.mfa.require(u.id)) ops.audit({ event: 'mfa.reset', user: u, via: 'admin', reason: 'required' })
      return { username: u.username, required: true as const }
    }
  })
]

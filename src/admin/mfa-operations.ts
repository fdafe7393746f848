/**
 * The second-factor operations (`sidegate mfa …`, /admin/v1/users/{username}/mfa…),
 * declared as ./operations.ts declares every operation.
 */
import type { MfaJson } from './ops.js'
import type { AdminRoute } from './route.js'

export const MFA_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: 'users/{username}/mfa',
    status: 200,
    tag: 'Second factor',
    operationId: 'showMfa',
    summary: 'A user\'s second factors, never a secret (`sidegate mfa show`)',
    answer: 'MfaFactors',
    errors: ['not_found'],
    cli: [{
      command: 'mfa show',
      args: ['username'],
      text: (m: MfaJson) => [
        `totp: ${m.totp === null ? 'none' : m.totp.confirmed ? `on since ${m.totp.created}` : `pending (begun ${m.totp.created}; confirmed by the first code)`}`,
        `recovery codes left: ${m.recovery_codes}`,
        `passkeys: ${m.passkeys.length === 0 ? 'none' : m.passkeys.length}`,
        ...m.passkeys.map((p) => `  ${p.name} (${p.device_type === 'multiDevice' ? 'synced' : 'single device'}; added ${p.created}; last used ${p.last_used ?? 'never'})`),
        ...(m.required ? ['enrolment required at the next sign-in'] : [])
      ].join('\n')
    }],
    run: async (ops, p) => await ops.mfaFactors(p.username)
  },
  {
    method: 'POST',
    path: 'users/{username}/mfa/totp',
    status: 201,
    tag: 'Second factor',
    operationId: 'enrollTotp',
    summary: 'Begin a TOTP enrolment for a user (`sidegate mfa enroll`)',
    description: 'Answers the otpauth:// URI (and its secret) once: give it to the user for their authenticator app. It counts once confirmed: the user\'s next sign-in on the login page asks for a first code. Refused (400) when the user already has a confirmed factor: reset it first.',
    answer: 'TotpEnrolment',
    errors: ['not_found', 'bad_request'],
    cli: [{
      command: 'mfa enroll',
      args: ['username'],
      text: (r: { username: string, uri: string }) => `${r.uri}\n(shown once: ${r.username} scans it, then confirms with a first code at the next sign-in)`
    }],
    run: async (ops, p) => await ops.mfaEnroll(p.username)
  },
  {
    method: 'DELETE',
    path: 'users/{username}/mfa',
    status: 200,
    tag: 'Second factor',
    operationId: 'resetMfa',
    summary: 'Remove a user\'s second factors: TOTP, recovery codes and passkeys (`sidegate mfa reset`)',
    description: 'For a user who lost their device: removes the TOTP factor, the recovery codes and every passkey. auth.mfa.required still applies: such a user enrols again at the next sign-in.',
    answer: 'MfaReset',
    errors: ['not_found'],
    cli: [{
      command: 'mfa reset',
      args: ['username'],
      text: (r: { username: string, reset: boolean }) => r.reset ? `removed the second factor, recovery codes and passkeys of ${r.username}` : `${r.username} had no second factor`
    }],
    run: async (ops, p) => await ops.mfaReset(p.username)
  },
  {
    method: 'POST',
    path: 'users/{username}/mfa/required',
    status: 200,
    tag: 'Second factor',
    operationId: 'requireMfa',
    summary: 'Require a user to enrol a second factor at their next sign-in (`sidegate mfa require`)',
    answer: 'MfaRequired',
    errors: ['not_found'],
    cli: [{
      command: 'mfa require',
      args: ['username'],
      text: (r: { username: string }) => `${r.username} must enrol a second factor at the next sign-in (the token endpoint answers mfa_unset until then)`
    }],
    run: async (ops, p) => await ops.mfaRequire(p.username)
  }
]

/**
 * The login pages (static/login.html, mfa.html, mfa-recovery.html): the form, the
 * second step (a code, a passkey, or an enrolment) and the recovery codes shown once.
 */
import { otpauthUri, qrDataUri } from '../auth/mfa.js'
import { TOTP } from '../crypto.js'
import type { User } from '../store/types.js'
import { Html, Template } from './html.js'
import {
  LOGIN_MFA_PASSKEY_OPTIONS_PATH, LOGIN_MFA_PASSKEY_PATH, LOGIN_PASSKEY_OPTIONS_PATH, LOGIN_PASSKEY_PATH
} from './login-passkey.js'
import type { AssetSet } from './static.js'

/** The issuer an authenticator app shows beside the account */
const ISSUER = 'sidegate'

export interface LoginPages {
  loginPage: (o: { next: string, username?: string, error?: string }) => string
  mfaPage: (
    o: { next: string, user: User, error?: string, secret?: string, enrol: boolean, code?: boolean, passkey?: boolean }
  ) => string
  recoveryPage: (next: string, codes: string[]) => string
  /** Signed out here, on to the provider's end_session_endpoint `to` (RP-initiated logout). */
  signedOutPage: (label: string, to: string) => string
}

/** A provider's button on the login page (sign_in.oidc): where it goes, its name, whether it steers by email domain. */
export interface ProviderButton { action: string, label: string, steers: boolean }

export function loginPages (
  assets: AssetSet, docs: boolean, paths: { login: string, mfa: string }, providers: readonly ProviderButton[] = []
): LoginPages {
  const LOGIN_PATH = paths.login
  const LOGIN_MFA_PATH = paths.mfa
  const template = Template.load<{
    css: string,
    script: string,
    action: string,
    next: string,
    username: string,
    error: string,
    docs: boolean,
    passkeyOptions: string,
    passkeyAction: string,
    providers: Html,
    steers: boolean
  }>('login.html')
  const button = Template.load<{ action: string, next: string, label: string }>('login-provider.html')
  const loginPage = (o: { next: string, username?: string, error?: string }): string =>
    template.render({
      css: assets.url('sidegate.css'),
      script: assets.url('passkeys.js'),
      action: LOGIN_PATH,
      next: o.next,
      username: o.username ?? '',
      error: o.error ?? '',
      docs,
      passkeyOptions: LOGIN_PASSKEY_OPTIONS_PATH,
      passkeyAction: LOGIN_PASSKEY_PATH,
      providers: Html.join(providers.map((p) => button.fragment({ action: p.action, next: o.next, label: p.label }))),
      // a provider steered to by email domain: the password may be left empty (that provider asks for it)
      steers: providers.some((p) => p.steers)
    })

  const mfaTemplate = Template.load<{
    css: string,
    script: string,
    action: string,
    next: string,
    error: string,
    code: boolean,
    keyonly: boolean,
    enrol: boolean,
    shown: boolean,
    username: string,
    secret: string,
    uri: string,
    qr: string,
    passkey: boolean,
    passkeyClass: string,
    passkeyOptions: string,
    passkeyAction: string
  }>('mfa.html')
  const recoveryTemplate = Template.load<{ css: string, next: string, codes: string }>('mfa-recovery.html')
  /** The second step: the code (TOTP enrolled), a passkey (when the user has one), or an enrolment. */
  const mfaPage = (
    o: { next: string, user: User, error?: string, secret?: string, enrol: boolean, code?: boolean, passkey?: boolean }
  ): string => {
    const uri = o.secret === undefined
      ? ''
      : otpauthUri(ISSUER, o.user.username, {
        secret: o.secret, period: TOTP.period, digits: TOTP.digits, algorithm: TOTP.algorithm
      })
    const code = !o.enrol && o.code !== false
    const passkey = !o.enrol && o.passkey === true
    return mfaTemplate.render({
      css: assets.url('sidegate.css'),
      script: assets.url('passkeys.js'),
      action: LOGIN_MFA_PATH,
      next: o.next,
      error: o.error ?? '',
      code,
      keyonly: !o.enrol && !code,
      passkey,
      passkeyClass: code ? '' : 'primary',
      passkeyOptions: LOGIN_MFA_PASSKEY_OPTIONS_PATH,
      passkeyAction: LOGIN_MFA_PASSKEY_PATH,
      enrol: o.enrol,
      shown: o.secret !== undefined,
      username: o.user.username,
      secret: o.secret ?? '',
      uri,
      qr: uri === '' ? '' : qrDataUri(uri)
    })
  }
  const recoveryPage = (next: string, codes: string[]): string => recoveryTemplate.render({
    css: assets.url('sidegate.css'),
    next,
    codes: codes.join('\n')
  })
  const signedOutTemplate = Template.load<{ css: string, label: string, to: string }>('signed-out.html')
  const signedOutPage = (label: string, to: string): string => signedOutTemplate.render({ css: assets.url('sidegate.css'), label, to })
  return { loginPage, mfaPage, recoveryPage, signedOutPage }
}

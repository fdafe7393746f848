/**
 * openid-client, loaded at the first use of a provider: a gateway without
 * sign_in.oidc never loads it (memory, start-up; test/process/lazy-load.test.ts).
 */
export type OidcLib = typeof import('openid-client')

let loading: Promise<OidcLib> | undefined
let loaded: OidcLib | undefined

export async function openidClient (): Promise<OidcLib> {
  loading ??= import('openid-client').then((m) => { loaded = m; return m })
  return await loading
}

/** The library if it has been loaded (an error can only be one of its classes then). */
export const loadedOpenidClient = (): OidcLib | undefined => loaded

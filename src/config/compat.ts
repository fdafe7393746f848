/**
 * `compat:` presets: the keys a compatibility mode sets, each to the value the
 * other product's clients need. A preset fills in only what the file and the
 * environment leave unset (./index.ts buildConfig): a key set explicitly wins.
 * Every key here is documented with what it costs in docs/jumpserver.md.
 */
import type { Doc } from './schema.js'

export type CompatMode = Doc['compat']

/** Where a key's value came from, in the order a later one wins over an earlier one. */
export type Source = 'default' | 'compat' | 'file' | 'env'

/** dotted key → value, per mode. */
export const COMPAT: Record<CompatMode, Readonly<Record<string, unknown>>> = {
  none: {},
  jumpserver: {
    // X-JMS-ORG, jms_sessionid, jms_csrftoken, and JumpServer's wire shapes (Names.jumpserver)
    'names.abbrev': 'JMS',
    // JumpServer's AccessTokenAuthentication only looks a token up: clients cache one until it expires
    'auth.bearer.single_use': false,
    // JumpServer checks no Date freshness (HeaderVerifier): a client's Date may be frozen or fixed
    'auth.signature.clock_skew': 0,
    // without freshness, identical signed requests are legitimate (cc-jumpserver's frozen Date)
    'auth.signature.replay_cache': false,
    // an org that does not exist: JumpServer acts in the default org
    'org.unknown': 'default'
  }
}

/**
 * The admin operations' command forms as the help lists them (src/admin/cli-commands.ts):
 * generated from their declarations in src/admin/ by `npm run cli:commands`; do not edit.
 */
import type { CommandHelp } from '../admin/cli-commands.js'

export const ADMIN_COMMANDS: Record<string, CommandHelp[]> = {
  user: [
    {
      sub: 'add',
      synopsis: [
        '<username> --password-stdin [--email E] [--name N] [--org ID[:admin]]... [--superuser]'
      ],
      help: []
    },
    {
      sub: 'list',
      synopsis: [
        '[--org ID]'
      ],
      help: []
    },
    {
      sub: 'show',
      synopsis: [
        '<username>'
      ],
      help: [
        "the user's record, orgs, groups (with their sources) and links"
      ]
    },
    {
      sub: 'disable',
      synopsis: [
        '<username>'
      ],
      help: [
        'also ends their sessions and evicts cached keys on every replica'
      ]
    },
    {
      sub: 'enable',
      synopsis: [
        '<username>'
      ],
      help: []
    },
    {
      sub: 'passwd',
      synopsis: [
        '<username> --password-stdin'
      ],
      help: [
        'also ends their sessions and unused bearer tokens on every',
        'replica; private tokens and access keys stay'
      ]
    },
    {
      sub: 'reset-link',
      synopsis: [
        '<username> [--url https://app.example.com]'
      ],
      help: [
        'a link valid 60 minutes, once, to set a new password',
        '(there is no mail: give it to them yourself)'
      ]
    },
    {
      sub: 'link',
      synopsis: [
        '<username> --oidc ID --sub SUB | --ldap ID [--subject ID] [--directory-only]'
      ],
      help: [
        'a sign-in through that provider with this subject signs in as the user; --ldap without',
        "--subject: the directory's entry of that username; --directory-only: the local password goes"
      ]
    },
    {
      sub: 'unlink',
      synopsis: [
        '<username> --oidc ID | --ldap ID'
      ],
      help: []
    }
  ],
  org: [
    {
      sub: 'add',
      synopsis: [
        '<name> [--id UUID]'
      ],
      help: []
    },
    {
      sub: 'list',
      synopsis: [],
      help: []
    }
  ],
  group: [
    {
      sub: 'add',
      synopsis: [
        '<name> [--org ORG]'
      ],
      help: [
        "a global group, or with --org (an id or unique name) an org's"
      ]
    },
    {
      sub: 'list',
      synopsis: [
        '[--org ORG]'
      ],
      help: []
    },
    {
      sub: 'show',
      synopsis: [
        '<group> [--org ORG]'
      ],
      help: [
        'the group and its members, each with its sources (local, idp:…)'
      ]
    },
    {
      sub: 'remove',
      synopsis: [
        '<group> [--org ORG]'
      ],
      help: [
        'with every membership of it'
      ]
    },
    {
      sub: 'members',
      synopsis: [
        'add <group> <username> [--org ORG]'
      ],
      help: []
    },
    {
      sub: 'members',
      synopsis: [
        'remove <group> <username> [--org ORG]'
      ],
      help: []
    }
  ],
  key: [
    {
      sub: 'create',
      synopsis: [
        '<username> [--expires 90d|2027-01-31] [--allow-ip CIDR]... [--name TEXT]'
      ],
      help: [
        'prints the AccessKeyID and AccessKeySecret (shown once).',
        '--expires: N days from now, or through that day (UTC); after it the',
        'key is refused (401 key_expired). --allow-ip: addresses or CIDR ranges',
        'the key may be used from (the client address as server.trusted_proxies',
        'resolves it; 403 ip_not_allowed from others), repeatable. --name: a label.'
      ]
    },
    {
      sub: 'list',
      synopsis: [
        '<username>'
      ],
      help: [
        'with name, expiry, allow-list, when each key was last used, and',
        '"disabled" for a disabled one'
      ]
    },
    {
      sub: 'disable',
      synopsis: [
        '<id>'
      ],
      help: [
        'every replica refuses the key at once (401 key_disabled); kept'
      ]
    },
    {
      sub: 'enable',
      synopsis: [
        '<id>'
      ],
      help: [
        'turns a disabled key back on (disabled by its owner, by this',
        'command, or by auth.keys.disable_after for being unused: it then',
        'has disable_after days again from now)'
      ]
    },
    {
      sub: 'revoke',
      synopsis: [
        '<id>'
      ],
      help: [
        'deletes the key; every replica refuses it within a second'
      ]
    }
  ],
  token: [
    {
      sub: 'create',
      synopsis: [
        '<username>'
      ],
      help: [
        "creates or replaces the user's private token and prints it"
      ]
    },
    {
      sub: 'revoke',
      synopsis: [
        '<username>'
      ],
      help: []
    }
  ],
  session: [
    {
      sub: 'list',
      synopsis: [
        '<username>'
      ],
      help: [
        "the user's live browser sessions: id, when each began, when it",
        'ends unless used (session.idle_timeout) or at the latest',
        '(session.absolute_timeout)'
      ]
    },
    {
      sub: 'revoke',
      synopsis: [
        '<username> --all'
      ],
      help: [
        'ends every session of the user'
      ]
    },
    {
      sub: 'revoke',
      synopsis: [
        '<username> <id>'
      ],
      help: [
        'ends that session on every replica at once'
      ]
    }
  ],
  mfa: [
    {
      sub: 'show',
      synopsis: [
        '<username>'
      ],
      help: [
        "the user's second factor: TOTP on, pending or none, recovery codes",
        'left; never a secret'
      ]
    },
    {
      sub: 'enroll',
      synopsis: [
        '<username>'
      ],
      help: [
        'begins a TOTP enrolment and prints its otpauth:// URI once (give it to',
        'the user for their authenticator app); it counts once the user',
        'confirms it with a first code at the next sign-in on the login page'
      ]
    },
    {
      sub: 'reset',
      synopsis: [
        '<username>'
      ],
      help: [
        "removes the user's second factor and recovery codes (a lost device)"
      ]
    },
    {
      sub: 'require',
      synopsis: [
        '<username>'
      ],
      help: [
        'the user must enrol at the next sign-in on the login page; until',
        'then the token endpoint answers mfa_unset'
      ]
    }
  ],
  limit: [
    {
      sub: 'set',
      synopsis: [
        '<username|key id> <requests>/<window>'
      ],
      help: [
        'e.g. 100/60s, 5/s, 1000/1h (1 to 100000 requests, 1 s to 1 day):',
        "the user's or the access key's own limit, instead of gateway.yml's",
        "rate_limit (a key's wins over its user's); every replica applies it",
        'at once. Counted only while rate_limit.enabled is true.'
      ]
    },
    {
      sub: 'list',
      synopsis: [],
      help: [
        'the configured limits, then every user and key with its own'
      ]
    },
    {
      sub: 'clear',
      synopsis: [
        '<username|key id>'
      ],
      help: [
        "back to gateway.yml's rate_limit"
      ]
    }
  ],
  access: [
    {
      sub: 'check',
      synopsis: [
        '[--user NAME] [--key ID] [--credential session|bearer|private_token|trusted_token]',
        '[--factor otp|hwk|swk]... [--org ID] [--ip ADDRESS] [--host HOST]',
        '[--group NAME]... <METHOD> <PATH>'
      ],
      help: [
        "which rule of gateway.yml's access section (after",
        'upstream.public_paths) decides the request, and why, without',
        'sending it: allowed, 401 or 403. --user: the caller (no --user and',
        'no --key: no credential); --key: an access key, signing the',
        'request; --credential: the kind without a key (default session);',
        '--factor: a second factor the sign-in had (the password is',
        "implied); --org: the org asked for (default the user's); --ip: the",
        'client address as sidegate resolves it (default 127.0.0.1);',
        '--host: the host the request is for (needed when rules name hosts);',
        "--group: the caller's groups instead of the store's (NAME, or",
        "ORG/NAME for an org's).",
        'Rules are counted from 1. Exit 0: let through; 1: refused',
        '(401 or 403); 2: usage. docs/access-rules.md'
      ]
    }
  ]
}

/**
 * Values put into LDAP search filters, escaped per RFC 4515: `*`, `(`, `)`,
 * `\` and NUL become `\2a`, `\28`, `\29`, `\5c`, `\00`, so a username can
 * never add a clause (`admin)(|(uid=*`) or a wildcard. No DN is ever built
 * from input: the user's DN is the one the directory returned.
 */

export function escapeFilterValue (v: string): string {
  return v.replace(/[*()\\\u0000]/g, (c) => `\\${c.charCodeAt(0).toString(16).padStart(2, '0')}`)
}

/** The configured filter with each `{name}` replaced by its value, escaped. */
export function fillFilter (template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{(username|dn)\}/g, (_, name: string) => escapeFilterValue(values[name] ?? ''))
}

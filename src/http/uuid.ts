/** UUIDs as ids in paths, headers and query parameters. */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A UUID in its canonical 8-4-4-4-12 hex form, any letter case. */
export function isUuid (v: string): boolean { return UUID.test(v) }

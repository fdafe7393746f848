/**
 * The exit code of a command that fails, from its error's code (a catalogue
 * code of src/errors.ts, or one of the CLI's own): one table. 2 is a usage
 * problem, or one no retry with the same config, key and store cures (a bad
 * config or input, a missing or wrong secret key, a store file that cannot
 * be used); anything else that fails is 1 (not found, a conflict, a refusal,
 * the store unreachable). src/app/io.ts reports with it.
 */
export const EXIT_CODES: Readonly<Record<string, 1 | 2>> = {
  // usage and bad input (the command line, the config, a value given)
  bad_request: 2,
  // the secret key and the store (src/app/open-store.ts, src/store/secret/check.ts)
  secret_key_missing: 2,
  secret_key_mismatch: 2,
  store_not_initialized: 2,
  key_rotation_in_progress: 2,
  redis_db_unavailable: 2,
  store_data_missing: 2,
  // the embedded store's file (src/store/sqlite/schema.ts) and `sidegate store import`'s
  store_file_unusable: 2,
  store_file_newer: 2,
  store_file_foreign: 2,
  invalid_store_file: 2,
  store_not_empty: 2,
  // what failed: a record not there, a refusal, the store unreachable
  not_found: 1,
  org_not_found: 1,
  user_exists: 1,
  org_exists: 1,
  group_exists: 1,
  group_not_found: 1,
  too_many_keys: 1,
  unreadable_record: 1,
  invalid_import: 1,
  store_unavailable: 1,
  failed: 1
}

/** An error code's exit code (one not in the table: 1, failed). */
export const exitCodeOf = (code: string): 1 | 2 => Object.hasOwn(EXIT_CODES, code) ? EXIT_CODES[code] : 1

/**
 * Text from users (key names, usernames, org names, anything stored) meets an
 * operator's terminal in the CLI's output: C0 controls, DEL and C1 controls
 * there can forge or hide lines (ESC sequences, a bare CR, OSC 52 writing the
 * clipboard). They are refused where text comes in (hasControl) and escaped
 * where it goes out (escapeControls).
 */

/** C0 controls (U+0000–U+001F), DEL (U+007F) and C1 controls (U+0080–U+009F). */
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

export function hasControl (s: string): boolean { return CONTROL.test(s) }

/**
 * Each control character as `\u001b` (also a valid JSON escape, so JSON
 * output stays JSON), but those in `keep` (the CLI's own line breaks).
 */
export function escapeControls (s: string, keep = ''): string {
  return s.replace(CONTROLS, (c) => keep.includes(c) ? c : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** The message for text refused at input. */
export const NO_CONTROLS = 'control characters (ESC, CR, line breaks, DEL, C1) are not allowed'

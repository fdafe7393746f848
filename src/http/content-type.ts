/** The Content-Type request header. */

/**
 * The media type without parameters, lowercase: `Application/JSON; charset=utf-8` → `application/json`; '' when absent.
 */
export function mediaType (contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0].trim().toLowerCase()
}

/** `application/json` or any `+json` type. */
export function isJsonType (type: string): boolean {
  return type === 'application/json' || type.endsWith('+json')
}

export const FORM_TYPE = 'application/x-www-form-urlencoded'

export const MULTIPART_TYPE = 'multipart/form-data'

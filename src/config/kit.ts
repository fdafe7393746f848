/**
 * The constructors gateway.yml's schema is written with (./schema.ts and the
 * sections kept in files of their own): TypeBox nodes with a default, and the
 * extensions ./validate.ts reads (check, optional, secret, url, live).
 */
import { Type as T, type TSchema, type TProperties } from '@sinclair/typebox'

export const int = (min: number, max: number, def: number, description?: string) =>
  T.Integer({ minimum: min, maximum: max, default: def, ...(description === undefined ? {} : { description }) })
export const bool = (def: boolean, description?: string) => T.Boolean({
  default: def,
  ...(description === undefined ? {} : { description })
})
export const str = (
  def: string, o: { description?: string, check?: string, url?: boolean } = {}
) => T.String({ default: def, ...o })
/** A string that may be left empty: null in the Config. */
export const optStr = (o: { description?: string, check?: string, secret?: boolean, url?: boolean } = {}) =>
  T.Union([T.String(), T.Null()], { default: null, optional: true, ...o })
export const list = (def: string[], o: { description?: string, check?: string } = {}) =>
  T.Array(
    T.String(o.check === undefined ? {} : { check: o.check }),
    { default: def, ...(o.description === undefined ? {} : { description: o.description }) }
  )
export const ints = (def: number[], min: number, max: number, description: string) =>
  T.Array(T.Integer({ minimum: min, maximum: max }), { default: def, description })
export const oneOf = <V extends string>(values: readonly V[], def: V, description?: string) =>
  T.Union(values.map((v) => T.Literal(v)), { default: def, ...(description === undefined ? {} : { description }) })
/** Marks a key (or a whole section) as changeable by a live reload. */
export const live = <S extends TSchema>(s: S): S => Object.assign(s, { live: true })
export const section = <P extends TProperties>(props: P, description?: string) =>
  T.Object(props, { additionalProperties: false, default: {}, ...(description === undefined ? {} : { description }) })

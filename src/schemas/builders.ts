/**
 * Small builders that keep the schemas as close to the spec's text as possible.
 * @module
 */
import * as z from "zod/mini";

/** A string field. */
export const str = z.string();
/** An integer field. */
export const int = z.int();
/** A boolean field. */
export const bool = z.boolean();
/** An optional field. */
export const opt = z.optional;
/** A list of strings. */
export const strings = z.array(str);

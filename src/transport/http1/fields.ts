/**
 * Header field lines, in a response head or its chunked trailer section (RFC 9110 section 5).
 * @internal
 * @module
 */
import { Http1Error } from "./error.js";

/** A field name (RFC 9110 section 5.1: a token). */
export const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A field value: visible characters, spaces, tabs and obs-text, nothing else (RFC 9110 section 5.5). */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** One header field line: its lower-cased name and its trimmed value; throws {@link Http1Error}. */
export function parseField(line: string): { name: string; value: string } {
  if (/^[ \t]/.test(line)) throw new Http1Error("HTTP1_PARSE", "a folded header line (obs-fold) in the response");
  const colon = line.indexOf(":");
  const name = colon > 0 ? line.slice(0, colon) : "";
  // OWS only: a CR or any other whitespace is part of the value, and refused below
  const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, "");
  if (!TOKEN.test(name) || !FIELD_VALUE.test(value))
    throw new Http1Error(
      "HTTP1_PARSE",
      `a malformed header line in the response: ${JSON.stringify(line.slice(0, 80))}`,
    );
  return { name: name.toLowerCase(), value };
}

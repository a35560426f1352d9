/**
 * Join URLs (`stratum-join://HOST[:PORT]/XXXX-XXXX-XXX`, also for a QR code) and join
 * endpoints (`host` or `host:port`, port 9444 when absent). Parsed by hand rather than with
 * `URL`: a non-special scheme gets an opaque host there, with no IPv6 or port checking that
 * is the same in every runtime. Browser-safe.
 * @module
 */

import { JoinCodeError, JoinUrlError } from "../errors/index.js";
import { describeCharacter } from "./base32.js";
import { parseJoinCode, type JoinCode } from "./join-code.js";

/** The join listener's port, implied when an endpoint or URL names none. */
export const DEFAULT_JOIN_PORT = 9444;

/** The scheme of join URLs, without `://`. */
export const JOIN_URL_SCHEME = "stratum-join";

/** Where a join listener is reached. */
export interface JoinEndpoint {
  /** Host name (lower case), IPv4 address, or IPv6 address without brackets (lower case). */
  host: string;
  /** TCP port; {@link DEFAULT_JOIN_PORT} when none was given. */
  port: number;
  /** `host:port`, always with the port, IPv6 in brackets: `192.0.2.240:9444`, `[fd00::1]:9444`. */
  endpoint: string;
}

/** A parsed join URL: where to go and the code to prove there. */
export interface JoinUrl extends JoinEndpoint {
  /** The join code of the URL's path. */
  code: JoinCode;
}

const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

function isIPv4(text: string): boolean {
  const parts = text.split(".");
  // No leading zeros: `010` is octal to some resolvers and decimal to others.
  return parts.length === 4 && parts.every((p) => /^(?:0|[1-9]\d{0,2})$/.test(p) && Number(p) <= 255);
}

function isIPv6(text: string): boolean {
  if (!/^[0-9a-f:.]+$/i.test(text)) return false;
  const halves = text.split("::");
  if (halves.length > 2) return false;
  const groups = (half: string): string[] | undefined => (half === "" ? [] : half.split(":"));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  if (!head || !tail) return false;
  const all = [...head, ...tail];
  let count = 0;
  for (let i = 0; i < all.length; i++) {
    const g = all[i]!;
    if (/^[0-9a-f]{1,4}$/i.test(g)) count += 1;
    else if (i === all.length - 1 && isIPv4(g)) count += 2;
    else return false;
  }
  return halves.length === 2 ? count <= 7 : count === 8;
}

function isHostName(text: string): boolean {
  if (text.length > 253) return false;
  const labels = text.split(".");
  // An all-numeric last label would be read as an IPv4 shorthand by some resolvers.
  if (/^\d+$/.test(labels[labels.length - 1]!)) return false;
  return labels.every((l) => DNS_LABEL.test(l));
}

/**
 * Checks and normalises a host given without brackets: an IPv6 address (anything with a
 * colon), an IPv4 dotted quad, or an ASCII DNS name (IDNs as punycode). Lower-cased.
 */
function checkHost(raw: string, where: string): string {
  const host = raw.toLowerCase();
  if (host === "") throw new JoinUrlError("host", `the ${where} names no host`);
  if (host.includes(":")) {
    if (isIPv6(host)) return host;
    throw new JoinUrlError("host", `the ${where}'s host is not a valid IPv6 address`);
  }
  if (/^[\d.]+$/.test(host)) {
    if (isIPv4(host)) return host;
    throw new JoinUrlError(
      "host",
      `the ${where}'s host is not a valid IPv4 address (four numbers 0-255, no leading zeros)`,
    );
  }
  if (isHostName(host)) return host;
  throw new JoinUrlError(
    "host",
    `the ${where}'s host is not a valid host name (ASCII letters, digits and hyphens in dot-separated labels; punycode for international names)`,
  );
}

function checkPort(raw: string, where: string): number {
  if (!/^\d{1,5}$/.test(raw) || Number(raw) < 1 || Number(raw) > 65535) {
    throw new JoinUrlError("port", `the ${where}'s port must be a number from 1 to 65535`);
  }
  return Number(raw);
}

function bracketed(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

function endpointOf(host: string, port: number): JoinEndpoint {
  return { host, port, endpoint: `${bracketed(host)}:${port}` };
}

/**
 * Splits an authority (`host`, `host:port`, `[v6]`, `[v6]:port`). With `bareIPv6`, a host with
 * several colons and no brackets is read as an IPv6 address without a port.
 */
function parseAuthority(authority: string, where: string, bareIPv6: boolean): JoinEndpoint {
  if (authority.startsWith("[")) {
    const close = authority.indexOf("]");
    if (close < 0) throw new JoinUrlError("host", `the ${where}'s IPv6 host has no closing bracket`);
    const inner = authority.slice(1, close);
    if (!inner.includes(":") || !isIPv6(inner)) {
      throw new JoinUrlError(
        "host",
        `the ${where}'s bracketed host is not a valid IPv6 address (zone ids are not supported)`,
      );
    }
    const rest = authority.slice(close + 1);
    if (rest === "") return endpointOf(inner.toLowerCase(), DEFAULT_JOIN_PORT);
    if (!rest.startsWith(":"))
      throw new JoinUrlError("host", `the ${where} has text after its IPv6 host's closing bracket`);
    return endpointOf(inner.toLowerCase(), checkPort(rest.slice(1), where));
  }
  const colons = authority.split(":").length - 1;
  if (colons === 0) return endpointOf(checkHost(authority, where), DEFAULT_JOIN_PORT);
  if (colons > 1) {
    if (bareIPv6 && isIPv6(authority)) return endpointOf(authority.toLowerCase(), DEFAULT_JOIN_PORT);
    throw new JoinUrlError(
      "host",
      `the ${where}'s host looks like an IPv6 address; write it in brackets, e.g. [fd00::1]:${DEFAULT_JOIN_PORT}`,
    );
  }
  const at = authority.indexOf(":");
  return endpointOf(checkHost(authority.slice(0, at), where), checkPort(authority.slice(at + 1), where));
}

/**
 * Reads a join endpoint as an admin gives it (`host` or `host:port`; IPv6 as `[addr]`,
 * `[addr]:port`, or a bare address without a port). Surrounding white space is ignored.
 * @throws {JoinUrlError} `empty`, `host` or `port`.
 */
export function parseEndpoint(endpoint: string): JoinEndpoint {
  const text = typeof endpoint === "string" ? endpoint.trim() : "";
  if (text === "") throw new JoinUrlError("empty", "no join endpoint was given");
  if (/[/?#@\s]/.test(text)) {
    throw new JoinUrlError("host", "a join endpoint is host or host:port, without scheme, path, user or white space");
  }
  return parseAuthority(text, "endpoint", true);
}

/**
 * An endpoint as people type it: the host alone when the port is {@link DEFAULT_JOIN_PORT},
 * else `host:port`; IPv6 in brackets. With `includeDefaultPort`, always `host:port` (the form of
 * `JoinEndpoint.endpoint`).
 * @throws {JoinUrlError} when `host` or `port` is not valid.
 */
export function formatEndpoint(
  endpoint: { host: string; port?: number | undefined },
  options: { includeDefaultPort?: boolean } = {},
): string {
  const raw = endpoint.host.startsWith("[") && endpoint.host.endsWith("]") ? endpoint.host.slice(1, -1) : endpoint.host;
  const host = checkHost(raw, "endpoint");
  const port = endpoint.port ?? DEFAULT_JOIN_PORT;
  checkPort(String(port), "endpoint");
  return port === DEFAULT_JOIN_PORT && !options.includeDefaultPort ? bracketed(host) : `${bracketed(host)}:${port}`;
}

/**
 * Reads `stratum-join://HOST[:PORT]/XXXX-XXXX-XXX`. The scheme and host are case-insensitive
 * (a QR code in alphanumeric mode is upper case), surrounding white space and one trailing `/`
 * are ignored, the port defaults to {@link DEFAULT_JOIN_PORT}, IPv6 hosts must be in brackets.
 * The code is read by {@link parseJoinCode}, equally tolerant.
 * @throws {JoinUrlError} for the URL's structure (`empty`, `scheme`, `host`, `port`, `path`).
 * @throws {JoinCodeError} for its code; a `character` error's `position` counts in the whole
 * URL as given (1-based, in code points).
 */
export function parseJoinUrl(url: string): JoinUrl {
  const original = typeof url === "string" ? url : "";
  const start = original.length - original.trimStart().length;
  const text = original.trim();
  if (text === "") throw new JoinUrlError("empty", "no join URL was given");
  const prefix = `${JOIN_URL_SCHEME}://`;
  if (text.slice(0, prefix.length).toLowerCase() !== prefix) {
    throw new JoinUrlError("scheme", `a join URL starts with ${prefix}`);
  }
  const afterScheme = text.slice(prefix.length);
  if (/[?#]/.test(afterScheme)) throw new JoinUrlError("path", "a join URL has no query or fragment");
  const slash = afterScheme.indexOf("/");
  const authority = slash < 0 ? afterScheme : afterScheme.slice(0, slash);
  if (authority.includes("@")) throw new JoinUrlError("host", "a join URL carries no user name or password");
  if (/\s/.test(authority)) throw new JoinUrlError("host", "the join URL's host contains white space");
  const where = parseAuthority(authority, "join URL", false);
  let path = slash < 0 ? "" : afterScheme.slice(slash + 1);
  if (path.endsWith("/")) path = path.slice(0, -1);
  if (path.trim() === "") throw new JoinUrlError("path", "the join URL has no join code after the host");
  if (path.includes("/")) throw new JoinUrlError("path", "the join URL's path is more than a join code");
  let code: JoinCode;
  try {
    code = parseJoinCode(path);
  } catch (error) {
    if (error instanceof JoinCodeError && error.reason === "character" && error.position !== undefined) {
      // Positions count in the URL the person has in front of them, not in its last segment.
      const codeStart = start + prefix.length + authority.length + 1;
      const position = [...original.slice(0, codeStart)].length + error.position;
      const character = error.character ?? "";
      throw new JoinCodeError(
        "character",
        `the character ${describeCharacter(character)} at position ${position} of the join URL is not part of a join code (Crockford base32: 0-9 and A-Z without U)`,
        { position, character },
      );
    }
    throw error;
  }
  return { ...where, code };
}

/** What {@link formatJoinUrl} needs: an endpoint string, or a host and optional port; and the code. */
export type JoinUrlParts =
  | {
      /** `host` or `host:port`, as {@link parseEndpoint} reads it. */
      endpoint: string;
      /** The join code, as a string in any accepted spelling or parsed. */
      code: string | JoinCode;
    }
  | {
      /** A DNS name, an IPv4 address or an IPv6 address (without brackets). */
      host: string;
      /** The listener's port; {@link DEFAULT_JOIN_PORT} when absent. */
      port?: number | undefined;
      /** The join code, as a string in any accepted spelling or parsed. */
      code: string | JoinCode;
    };

/**
 * `stratum-join://HOST[:PORT]/XXXX-XXXX-XXX`, the port omitted when it is
 * {@link DEFAULT_JOIN_PORT}, IPv6 in brackets, the code in display form. E.g.
 * `stratum-join://192.0.2.240/4F7K-2Q9M-ABD`.
 * @throws {JoinUrlError} for a bad endpoint, host or port; {@link JoinCodeError} for a bad code.
 */
export function formatJoinUrl(parts: JoinUrlParts): string {
  const where = "endpoint" in parts ? parseEndpoint(parts.endpoint) : { host: parts.host, port: parts.port };
  const code = parseJoinCode(typeof parts.code === "string" ? parts.code : parts.code.code);
  return `${JOIN_URL_SCHEME}://${formatEndpoint(where)}/${code.formatted}`;
}

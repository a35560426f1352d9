/**
 * Which HTTP proxy a mirror request goes through: the `proxy` option, or the environment as
 * curl, npm and undici read it (`https_proxy`, `HTTPS_PROXY`, then `http_proxy`, `HTTP_PROXY`;
 * `no_proxy`, `NO_PROXY`), and the `NO_PROXY` rules (hosts, domains, IP literals, CIDRs, `*`,
 * ports).
 * @module
 */
import { BlockList, isIP } from "node:net";
import { ReleaseArgumentError } from "../errors/index.js";

/**
 * The variables naming the proxy of an HTTPS request, first set (and not empty) wins: lower
 * case first, as curl reads them. The `http_proxy` pair is a fallback, as npm and undici's
 * `EnvHttpProxyAgent` use it for HTTPS too (curl does not): a data centre that sets only
 * `HTTP_PROXY` means its machines reach the internet through it.
 */
const PROXY_VARIABLES = ["https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"] as const;
/** The variables listing the hosts reached without the proxy; lower case first, as curl. */
const NO_PROXY_VARIABLES = ["no_proxy", "NO_PROXY"] as const;
/** The port of a proxy URL that names none: curl's default for every proxy. */
const DEFAULT_PROXY_PORT = 1080;

/** An HTTP proxy, as the tunnel connects to it. */
export interface HttpProxy {
  /** Host name or IP literal (IPv6 without brackets). */
  host: string;
  port: number;
  /** `Basic …`, from the URL's userinfo; never in a message. */
  authorization?: string | undefined;
  /** `http://host:port`, for messages: no credentials. */
  display: string;
}

/** Where a request goes: the target, and the environment to read when no proxy option is given. */
export interface ProxyTarget {
  /** The mirror's host name or IP literal (IPv6 without brackets). */
  host: string;
  port: number;
}

/**
 * The proxy for a request to `target`: `option` when it is a URL, none when it is `false`,
 * else the one the environment names unless `NO_PROXY` exempts the target. Throws
 * {@link ReleaseArgumentError} for a proxy URL that is not an `http://` proxy; the message
 * never carries the URL's credentials.
 */
export function chooseProxy(
  option: string | false | undefined,
  target: ProxyTarget,
  env: NodeJS.ProcessEnv = process.env,
): HttpProxy | undefined {
  if (option === false) return undefined;
  if (option !== undefined) return parseProxyUrl(option, "the proxy option");
  const named = PROXY_VARIABLES.find((name) => (env[name] ?? "").trim() !== "");
  if (!named) return undefined;
  const noProxy = NO_PROXY_VARIABLES.map((name) => env[name]).find((value) => value !== undefined);
  if (noProxy !== undefined && bypassesProxy(noProxy, target.host, target.port)) return undefined;
  return parseProxyUrl(env[named]!.trim(), named);
}

/**
 * An HTTP proxy URL: `http://[user:password@]host[:port][/]`, or `host:port` (taken as
 * `http://`, as curl does). Credentials are percent-decoded into a Basic authorization.
 */
export function parseProxyUrl(value: string, from: string): HttpProxy {
  // a host:port (or user:password@host:port) never holds "://"
  const text = value.includes("://") ? value : `http://${value}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ReleaseArgumentError(`${from} is not a proxy URL`);
  }
  const display = `${url.protocol}//${url.host}`;
  if (url.protocol !== "http:")
    throw new ReleaseArgumentError(
      `${from} names ${display}: only an http:// proxy is supported (the mirror's TLS runs inside its CONNECT tunnel)`,
    );
  // an http: URL's path is never empty: "/" when it names none
  if (url.pathname !== "/" || url.search || url.hash)
    throw new ReleaseArgumentError(
      `${from} names ${display} with a path: a proxy URL is http://[user:password@]host[:port]`,
    );
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port === "" ? DEFAULT_PROXY_PORT : Number(url.port);
  let authorization: string | undefined;
  if (url.username !== "" || url.password !== "") {
    let credentials: string;
    try {
      credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    } catch {
      throw new ReleaseArgumentError(`${from}: the credentials of ${display} are not valid percent-encoding`);
    }
    authorization = `Basic ${Buffer.from(credentials).toString("base64")}`;
  }
  return { host, port, authorization, display: `http://${url.host}` };
}

/**
 * Whether a `NO_PROXY` list exempts `host:port` from the proxy. Entries are separated by commas
 * or spaces, case does not matter, and each is one of:
 * - `*`: every host;
 * - a host or domain name, with or without a leading `.` or `*.`: that name and every name
 *   below it (`example.com` and `.example.com` both match `example.com` and `a.example.com`);
 * - an IP literal (`10.1.2.3`, `::1`, `[::1]`): that address, written in any form;
 * - a CIDR block (`10.0.0.0/8`, `fd00::/8`): every address in it;
 * - any of those but `*` and a CIDR followed by `:PORT` (`[v6]:PORT` for IPv6): only that port.
 * Names are not resolved: an IP entry never matches a host name, nor a name an IP literal.
 */
export function bypassesProxy(noProxy: string, host: string, port: number): boolean {
  const target = normaliseHost(host);
  const targetIp = isIP(target);
  // an empty entry (two separators in a row) is malformed, as splitPort says
  for (const raw of noProxy.toLowerCase().split(/[\s,]/)) {
    if (raw === "*") return true;
    const entry = splitPort(raw);
    if (entry === undefined) continue;
    if (entry.port !== undefined && entry.port !== port) continue;
    const name = entry.host;
    const slash = name.indexOf("/");
    if (slash >= 0) {
      if (targetIp !== 0 && inCidr(name.slice(0, slash), name.slice(slash + 1), target, targetIp)) return true;
      continue;
    }
    const family = isIP(name);
    if (family !== 0) {
      if (targetIp !== 0 && sameAddress(name, family, target, targetIp)) return true;
      continue;
    }
    const domain = name.replace(/^\*?\./, "").replace(/\.$/, "");
    if (domain === "" || targetIp !== 0) continue;
    if (target === domain || target.endsWith(`.${domain}`)) return true;
  }
  return false;
}

/** Lower case, no brackets around an IPv6 literal, no trailing dot of a fully qualified name. */
function normaliseHost(host: string): string {
  const lower = host.toLowerCase();
  const bare = lower.startsWith("[") && lower.endsWith("]") ? lower.slice(1, -1) : lower;
  // no IP literal ends in a dot
  return bare.replace(/\.$/, "");
}

/** `host`, `host:port`, `[v6]`, `[v6]:port`, a bare IPv6 literal or a CIDR; undefined when malformed. */
function splitPort(entry: string): { host: string; port?: number } | undefined {
  if (entry.startsWith("[")) {
    const match = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
    if (!match) return undefined;
    return { host: match[1]!, ...(match[2] === undefined ? {} : { port: Number(match[2]) }) };
  }
  // more than one colon: an IPv6 literal or block, which carries no port without brackets
  if (entry.indexOf(":") !== entry.lastIndexOf(":")) return { host: entry };
  const match = /^([^:]+)(?::(\d+))?$/.exec(entry);
  if (!match) return undefined;
  return { host: match[1]!, ...(match[2] === undefined ? {} : { port: Number(match[2]) }) };
}

function ipFamily(family: number): "ipv4" | "ipv6" {
  return family === 6 ? "ipv6" : "ipv4";
}

function sameAddress(entry: string, family: number, target: string, targetFamily: number): boolean {
  const list = new BlockList();
  list.addAddress(entry, ipFamily(family));
  return list.check(target, ipFamily(targetFamily));
}

function inCidr(address: string, bits: string, target: string, targetFamily: number): boolean {
  const family = isIP(address);
  const prefix = Number(bits);
  if (family === 0 || !/^\d+$/.test(bits) || prefix > (family === 6 ? 128 : 32)) return false;
  const list = new BlockList();
  list.addSubnet(address, prefix, ipFamily(family));
  return list.check(target, ipFamily(targetFamily));
}

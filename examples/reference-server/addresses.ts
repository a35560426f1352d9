/**
 * Address arithmetic for the cluster networks, IPv4 and IPv6: parsing CIDRs, comparing
 * addresses and finding the next free host address. Addresses are numbers (bigint, so both
 * families share one path), and every address the founder compares or hands out is written in
 * one canonical form (RFC 5952 for IPv6: lower case, zeros compressed), so `fd00:0:0::5` and
 * `fd00::5` are one address when the founder checks what is held.
 * @module
 */

import { isIPv4, isIPv6 } from "node:net";

/** An IP family. */
export type IpFamily = 4 | 6;

/** A network or interface address: `ip` as written, `base` the network's first address. */
export interface Cidr {
  family: IpFamily;
  ip: bigint;
  prefix: number;
  base: bigint;
  size: bigint;
}

const BITS: Record<IpFamily, number> = { 4: 32, 6: 128 };

/**
 * How many addresses of an IPv6 network the allocator looks at before it calls the network full.
 * A /64 has 2^64 host addresses: the founder hands out addresses from the bottom, so the first
 * 65,536 are far more than a cluster's members, and a bound keeps a misconfigured network (every
 * low address held) from looping for ever.
 */
const MAX_SCAN = 65_536n;

/** An address as a number with its family, or undefined when it is not an IP address. */
export function parseIp(ip: string): { family: IpFamily; value: bigint } | undefined {
  const text = ip.trim();
  if (isIPv4(text)) return { family: 4, value: text.split(".").reduce((n, part) => n * 256n + BigInt(part), 0n) };
  if (!isIPv6(text) || text.includes("%")) return undefined;
  let groups = text.toLowerCase();
  // An embedded IPv4 tail (`::ffff:192.0.2.1`) is two more groups.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(groups);
  if (v4) {
    const n = parseIp(v4[1]!)!.value;
    groups = `${groups.slice(0, -v4[1]!.length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = groups.includes("::") ? groups.split("::") : [groups, undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const all =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  return { family: 6, value: all.reduce((n, g) => n * 65536n + BigInt(`0x${g}`), 0n) };
}

/** The text of an address: a dotted quad, or RFC 5952's canonical IPv6 form. */
export function formatIp(value: bigint, family: IpFamily): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 255n)).join(".");
  const groups = Array.from({ length: 8 }, (_, i) => (value >> BigInt(112 - 16 * i)) & 0xffffn);
  // The longest run of two or more zero groups (the first of equals) becomes `::`.
  let best = { at: -1, length: 1 };
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0n) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0n) j++;
    if (j - i > best.length) best = { at: i, length: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.at < 0) return hex.join(":");
  return `${hex.slice(0, best.at).join(":")}::${hex.slice(best.at + best.length).join(":")}`;
}

/** An address in its canonical form; anything that is not an address comes back as it was. */
export function canonicalIp(ip: string): string {
  const parsed = parseIp(ip);
  return parsed ? formatIp(parsed.value, parsed.family) : ip.trim();
}

/** Parses `a.b.c.d/nn` or `x:…:y/nnn`, or undefined. */
export function parseCidr(text: string): Cidr | undefined {
  const m = /^([0-9A-Fa-f.:]+)\/(\d{1,3})$/.exec(text.trim());
  if (!m) return undefined;
  const ip = parseIp(m[1]!);
  const prefix = Number(m[2]);
  if (!ip || prefix > BITS[ip.family]) return undefined;
  const size = 1n << BigInt(BITS[ip.family] - prefix);
  return { family: ip.family, ip: ip.value, prefix, base: (ip.value / size) * size, size };
}

/** The canonical IP part of `a.b.c.d`, `a.b.c.d/nn`, `x::y` or `x::y/nn`. */
export function bareIp(address: string): string {
  const slash = address.indexOf("/");
  return canonicalIp(slash < 0 ? address : address.slice(0, slash));
}

/** True when `ip` lies in `network` (an address of the other family never does). */
export function inNetwork(network: Cidr, ip: string): boolean {
  const parsed = parseIp(bareIp(ip));
  return (
    parsed !== undefined &&
    parsed.family === network.family &&
    parsed.value >= network.base &&
    parsed.value < network.base + network.size
  );
}

/** True when `ip` is `network`'s own address (IPv4's network address, IPv6's subnet-router anycast). */
export function isNetworkAddress(network: Cidr, ip: string): boolean {
  const parsed = parseIp(bareIp(ip));
  return parsed !== undefined && parsed.family === network.family && parsed.value === network.base;
}

/** The `n`th address of `network` (0 is the network's own), canonical. */
export function hostAt(network: Cidr, n: number): string {
  return formatIp(network.base + BigInt(n), network.family);
}

/**
 * The lowest host address of `network` that is not in `held` (canonical addresses), skipping
 * the network's own address, IPv4's broadcast address and the gateway; undefined when the
 * network is full (for IPv6: when its first {@link MAX_SCAN} addresses are).
 */
export function nextFree(network: Cidr, held: { has(ip: string): boolean }, gateway?: string): string | undefined {
  const small = network.family === 4 && network.prefix >= 31;
  const first = small ? network.base : network.base + 1n;
  const lastHost = network.family === 4 && !small ? network.base + network.size - 2n : network.base + network.size - 1n;
  const last = lastHost - first > MAX_SCAN ? first + MAX_SCAN : lastHost;
  const gw = gateway === undefined ? undefined : canonicalIp(gateway);
  for (let n = first; n <= last; n++) {
    const ip = formatIp(n, network.family);
    if (ip === gw || held.has(ip)) continue;
    return ip;
  }
  return undefined;
}

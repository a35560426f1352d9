/**
 * IPv4 arithmetic for the cluster networks: parsing CIDRs and finding the next free host
 * address. The storage and overlay networks of a Stratum cluster are IPv4.
 * @module
 */

import { isIPv4 } from "node:net";

/** An IPv4 network or interface address: `ip` as written, `base` the network's first address. */
export interface Cidr {
  ip: number;
  prefix: number;
  base: number;
  size: number;
}

/** The 32-bit value of a dotted quad, or undefined. */
export function ipv4ToInt(ip: string): number | undefined {
  if (!isIPv4(ip)) return undefined;
  return ip.split(".").reduce((n, part) => n * 256 + Number(part), 0);
}

/** The dotted quad of a 32-bit value. */
export function intToIpv4(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join(".");
}

/** Parses `a.b.c.d/nn`, or undefined. */
export function parseCidr(text: string): Cidr | undefined {
  const m = /^([0-9.]+)\/(\d{1,2})$/.exec(text.trim());
  if (!m) return undefined;
  const ip = ipv4ToInt(m[1]!);
  const prefix = Number(m[2]);
  if (ip === undefined || prefix > 32) return undefined;
  const size = 2 ** (32 - prefix);
  return { ip, prefix, base: Math.floor(ip / size) * size, size };
}

/** The IP part of `a.b.c.d` or `a.b.c.d/nn` (IPv6 passes through unchanged). */
export function bareIp(address: string): string {
  const slash = address.indexOf("/");
  return slash < 0 ? address.trim() : address.slice(0, slash).trim();
}

/** True when `ip` (dotted quad) lies in `network`. */
export function inNetwork(network: Cidr, ip: string): boolean {
  const n = ipv4ToInt(ip);
  return n !== undefined && n >= network.base && n < network.base + network.size;
}

/**
 * The lowest host address of `network` that is not in `held`, skipping the network and
 * broadcast addresses and the gateway; undefined when the network is full.
 */
export function nextFree(network: Cidr, held: ReadonlySet<string>, gateway?: string): string | undefined {
  const first = network.prefix >= 31 ? network.base : network.base + 1;
  const last = network.prefix >= 31 ? network.base + network.size - 1 : network.base + network.size - 2;
  for (let n = first; n <= last; n++) {
    const ip = intToIpv4(n);
    if (ip === gateway || held.has(ip)) continue;
    return ip;
  }
  return undefined;
}

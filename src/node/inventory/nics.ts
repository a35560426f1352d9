/**
 * The network part of the inventory. The interface list comes from /sys/class/net (the
 * kernel's own list, also without iproute2); `ip -json addr` adds the addresses and the
 * permanent MAC, `ip -json route` the routes. Without `ip`, routes come from
 * /proc/net/route and, on the live system, addresses from Node's getifaddrs view.
 * @module
 */

import { endianness, networkInterfaces } from "node:os";
import { throwIfAborted } from "../../core/retry.js";
import {
  asInt,
  asRecord,
  asString,
  at,
  compact,
  exists,
  linkName,
  listDir,
  readAttr,
  readInt,
  readText,
  runJson,
  type SourceContext,
} from "./source.js";
import type { InventoryNic } from "./types.js";

/** The ARP hardware type of the loopback device (`ARPHRD_LOOPBACK`). */
const ARPHRD_LOOPBACK = "772";

/** Addresses as the kernel hands out for "no address": not worth reporting as a MAC. */
const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2})+$/i;

/** Collects every interface but loopback. `addrJson` and `routeJson` are `ip`'s output, or undefined without `ip`. */
export async function collectNics(ctx: SourceContext, addrJson: unknown, routeJson: unknown): Promise<InventoryNic[]> {
  const ipLinks = new Map<string, Record<string, unknown>>();
  if (Array.isArray(addrJson)) {
    for (const entry of addrJson) {
      const link = asRecord(entry);
      const name = asString(link?.ifname);
      if (link && name) ipLinks.set(name, link);
    }
  }
  const routes = Array.isArray(routeJson) ? routesFromIp(routeJson) : await routesFromProc(ctx);
  const fallbackAddresses = Array.isArray(addrJson) ? undefined : addressesFromNode(ctx);

  const nics: InventoryNic[] = [];
  for (const name of await listDir(at(ctx, "/sys/class/net"))) {
    throwIfAborted(ctx.signal);
    const dir = at(ctx, "/sys/class/net", name);
    if (name === "lo" || (await readAttr(`${dir}/type`)) === ARPHRD_LOOPBACK) continue;
    const ip = ipLinks.get(name);
    const hasDevice = await exists(`${dir}/device`);
    const mac = validMac(asString(ip?.address) ?? (await readAttr(`${dir}/address`)));
    nics.push(
      compact<InventoryNic>({
        name,
        mac,
        permanentMac: await permanentMac(dir, ip, mac, hasDevice),
        operState: (asString(ip?.operstate) ?? (await readAttr(`${dir}/operstate`)))?.toLowerCase(),
        link: ip ? linkFromFlags(ip.flags) : linkFromCarrier(await readAttr(`${dir}/carrier`)),
        speedMbps: validSpeed(await readInt(`${dir}/speed`)),
        mtu: asInt(ip?.mtu) ?? (await readInt(`${dir}/mtu`)),
        // Software interfaces (bridges, bonds, VLANs) have no device and so no driver link.
        driver: hasDevice ? await linkName(`${dir}/device/driver`) : undefined,
        addresses: ip ? addressesFromIp(ip) : (fallbackAddresses?.get(name) ?? (fallbackAddresses ? [] : undefined)),
        wireless: (await exists(`${dir}/wireless`)) || (await exists(`${dir}/phy80211`)),
        routes: routes ? (routes.get(name) ?? []) : undefined,
      }),
    );
  }
  return nics;
}

/** Fetches `ip -json addr` and `ip -json route`; each is undefined when `ip` is missing or too old for JSON. */
export async function runIp(ctx: SourceContext): Promise<[unknown, unknown]> {
  return Promise.all([runJson(ctx, "ip", ["-json", "addr"]), runJson(ctx, "ip", ["-json", "route"])]);
}

/**
 * The permanent MAC: iproute2's `permaddr` (printed only when it differs from the current
 * one), a bond member's `perm_hwaddr`, or the current MAC when the kernel says the device
 * still has the address its driver read from the hardware (`addr_assign_type` 0, which
 * only means "permanent" for a device with hardware behind it).
 */
async function permanentMac(
  dir: string,
  ip: Record<string, unknown> | undefined,
  mac: string | undefined,
  hasDevice: boolean,
): Promise<string | undefined> {
  const known = validMac(asString(ip?.permaddr)) ?? validMac(await readAttr(`${dir}/bonding_slave/perm_hwaddr`));
  if (known) return known;
  return hasDevice && (await readAttr(`${dir}/addr_assign_type`)) === "0" ? mac : undefined;
}

function validMac(value: string | undefined): string | undefined {
  if (!value || !MAC.test(value) || /^[0:]+$/.test(value)) return undefined;
  return value.toLowerCase();
}

/**
 * `LOWER_UP` is the carrier; without it an administratively up interface has no carrier.
 * While the interface is down the kernel does not know, which is also what sysfs says by
 * refusing to read `carrier`.
 */
function linkFromFlags(flags: unknown): "up" | "down" | "unknown" {
  const list = Array.isArray(flags) ? flags : [];
  if (list.includes("LOWER_UP")) return "up";
  return list.includes("UP") ? "down" : "unknown";
}

function linkFromCarrier(carrier: string | undefined): "up" | "down" | "unknown" {
  return carrier === "1" ? "up" : carrier === "0" ? "down" : "unknown";
}

/** Drivers report an unknown speed as -1, or as its unsigned form; neither is a speed. */
function validSpeed(speed: number | undefined): number | undefined {
  return speed !== undefined && speed > 0 && speed < 0xffff_ffff ? speed : undefined;
}

function addressesFromIp(link: Record<string, unknown>): string[] {
  const addresses: string[] = [];
  for (const entry of Array.isArray(link.addr_info) ? link.addr_info : []) {
    const info = asRecord(entry);
    const local = asString(info?.local);
    const prefix = asInt(info?.prefixlen);
    if (local && prefix !== undefined) addresses.push(`${local}/${prefix}`);
  }
  return addresses;
}

/**
 * Without `ip`, the live system's addresses come from getifaddrs through Node: /proc and
 * /sys hold no per-interface IPv4 addresses. A recorded root has no such view, so its
 * addresses stay unknown.
 */
function addressesFromNode(ctx: SourceContext): Map<string, string[]> | undefined {
  if (!ctx.live) return undefined;
  const byName = new Map<string, string[]>();
  const all = Object.entries(networkInterfaces());
  // The kernel lists IPv4 before IPv6; keep that order, as `ip` shows it.
  for (const family of ["IPv4", "IPv6"]) {
    for (const [name, infos] of all) {
      for (const info of infos ?? []) {
        if (info.family === family && info.cidr) byName.set(name, [...(byName.get(name) ?? []), info.cidr]);
      }
    }
  }
  return byName;
}

/** Routes by interface, deduplicated (one destination may have several metrics) and in address order. */
function collectRoutes(pairs: Iterable<[string, string]>): Map<string, string[]> {
  const byDev = new Map<string, Set<string>>();
  for (const [dev, cidr] of pairs) byDev.set(dev, (byDev.get(dev) ?? new Set()).add(cidr));
  const sorted = new Map<string, string[]>();
  for (const [dev, set] of byDev) sorted.set(dev, [...set].sort(compareCidr));
  return sorted;
}

function compareCidr(a: string, b: string): number {
  const [addrA = "", lenA = "0"] = a.split("/");
  const [addrB = "", lenB = "0"] = b.split("/");
  return ipv4ToInt(addrA) - ipv4ToInt(addrB) || Number(lenA) - Number(lenB);
}

function ipv4ToInt(address: string): number {
  return address.split(".").reduce((n, octet) => n * 256 + Number(octet), 0);
}

/**
 * `ip -json route` lists the main table's IPv4 routes. Only unicast routes send packets out
 * of an interface (blackhole, unreachable and prohibit have none); a multipath route goes
 * out of every one of its next hops' interfaces.
 */
function routesFromIp(entries: unknown[]): Map<string, string[]> {
  const pairs: [string, string][] = [];
  for (const entry of entries) {
    const route = asRecord(entry);
    const dst = asString(route?.dst);
    if (!route || !dst || dst === "default" || dst.includes(":")) continue;
    const type = asString(route.type);
    if (type && type !== "unicast") continue;
    const cidr = dst.includes("/") ? dst : `${dst}/32`;
    if (cidr.endsWith("/0")) continue;
    const hops = Array.isArray(route.nexthops) ? route.nexthops.map(asRecord) : [route];
    for (const hop of hops) {
      const dev = asString(hop?.dev);
      if (dev) pairs.push([dev, cidr]);
    }
  }
  return collectRoutes(pairs);
}

/** `RTF_UP`: the route is usable. */
const RTF_UP = 0x1;
/** `RTF_REJECT`: blackhole/unreachable/prohibit, which send nothing out of any interface. */
const RTF_REJECT = 0x200;

/**
 * /proc/net/route is the kernel's view of the main table (IPv4 only). Addresses and masks
 * are the raw network-order words printed as host integers, so their byte order is the
 * machine's own.
 */
async function routesFromProc(ctx: SourceContext): Promise<Map<string, string[]> | undefined> {
  const text = await readText(at(ctx, "/proc/net/route"));
  if (text === undefined) return undefined;
  const pairs: [string, string][] = [];
  for (const line of text.split("\n").slice(1)) {
    const [iface, destHex, , flagsHex, , , , maskHex] = line.trim().split(/\s+/);
    if (!iface || iface === "*" || !destHex || !flagsHex || !maskHex) continue;
    const flags = parseInt(flagsHex, 16);
    if (!(flags & RTF_UP) || flags & RTF_REJECT) continue;
    const mask = wordToOctets(maskHex);
    const prefix = mask.reduce((bits, octet) => bits + popcount(octet), 0);
    if (prefix === 0) continue;
    pairs.push([iface, `${wordToOctets(destHex).join(".")}/${prefix}`]);
  }
  return collectRoutes(pairs);
}

function wordToOctets(hex: string): number[] {
  const word = parseInt(hex, 16) >>> 0;
  const bigEndian = [word >>> 24, (word >>> 16) & 0xff, (word >>> 8) & 0xff, word & 0xff];
  return endianness() === "LE" ? bigEndian.reverse() : bigEndian;
}

function popcount(octet: number): number {
  let bits = 0;
  for (let v = octet; v; v >>= 1) bits += v & 1;
  return bits;
}

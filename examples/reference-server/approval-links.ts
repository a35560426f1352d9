/**
 * The approval's links: each one's device (a NIC the machine has, a bond with members, a VLAN
 * on a parent), the purposes it carries (each carried once), and its addresses, given (inside
 * the networks it carries, free, a host address) or allocated (the next free address of each
 * storage or overlay network, keeping the one a re-approval had). A link's MTU defaults to the
 * largest of the networks it carries.
 * @module
 */

import type { Link } from "@stratum/join";
import { bareIp, inNetwork, isNetworkAddress, nextFree, parseCidr, type Cidr } from "./addresses.js";
import type { ApprovalCheck } from "./approval-check.js";
import type { Mutable } from "./rows.js";

/** What a link carries. */
export type Purpose = "oob" | "mgmt" | "storage" | "overlay" | "provider";

/** The cluster networks a link may carry that the founder allocates addresses in. */
type DataPurpose = "storage" | "overlay";

/** A cluster network addresses can be allocated from: one CIDR, or two for a dual-stack network. */
interface DataNetwork {
  cidrs: Cidr[];
  gateway?: string;
  mtu?: number;
}

type DataNetworks = Partial<Record<DataPurpose, DataNetwork>>;

/** Checks and completes every link; returns which link carries each purpose. */
export function checkLinks(check: ApprovalCheck): Map<Purpose, number> {
  const networks = dataNetworks(check);
  const carriedBy = new Map<Purpose, number>();
  const names = new Map<string, number>();
  const bondKeys = new Set(check.links.filter((l) => l.kind === "bond").flatMap((l) => [l.name, l.interface]));
  check.links.forEach((link, i) => {
    const at = `links[${i}]`;
    if (names.has(link.name)) check.err(`${at}.name`, `links[${names.get(link.name)}] has the same name`);
    names.set(link.name, i);
    const purposes = (link.purposes ?? []) as Purpose[];
    checkDevice(link, at, purposes, bondKeys, check);
    checkPurposes(purposes, i, carriedBy, check);
    const dataPurposes = purposes.filter((p): p is DataPurpose => p === "storage" || p === "overlay");
    linkAddresses(link, at, purposes, dataPurposes, networks, check);
    if (link.mtu === undefined) {
      const mtus = dataPurposes.map((p) => networks[p]?.mtu).filter((m): m is number => m !== undefined);
      if (mtus.length > 0) link.mtu = Math.max(...mtus);
    }
  });
  return carriedBy;
}

/** The cluster's storage and overlay networks whose CIDRs parse (IPv4, IPv6, or both). */
function dataNetworks(check: ApprovalCheck): DataNetworks {
  const networks: DataNetworks = {};
  for (const purpose of ["storage", "overlay"] as const) {
    const net = check.settings.networks[purpose];
    const cidrs = [net.cidr, net.secondaryCidr]
      .filter((c): c is string => c !== undefined)
      .map(parseCidr)
      .filter((c): c is Cidr => c !== undefined);
    if (cidrs.length > 0)
      networks[purpose] = {
        cidrs,
        ...(net.gateway ? { gateway: net.gateway } : {}),
        ...(net.mtu ? { mtu: net.mtu } : {}),
      };
  }
  return networks;
}

/** The CIDRs of a network as the cluster's settings write them, for messages. */
function written(check: ApprovalCheck, p: DataPurpose): string {
  const net = check.settings.networks[p];
  return net.secondaryCidr ? `${net.cidr} and ${net.secondaryCidr}` : net.cidr;
}

/** The link's device exists and fits its kind. */
function checkDevice(
  link: Mutable<Link>,
  at: string,
  purposes: Purpose[],
  bondKeys: Set<string>,
  check: ApprovalCheck,
): void {
  const { nics } = check;
  if (link.kind === "ethernet") {
    if (!nics.has(link.interface)) {
      check.err(
        `${at}.interface`,
        `this machine has no NIC named ${link.interface} (it has ${[...nics.keys()].join(", ") || "none"})`,
      );
    } else if (nics.get(link.interface)!.wireless && purposes.some((p) => p !== "mgmt")) {
      check.err(`${at}.interface`, `${link.interface} is a wireless NIC; it carries no cluster traffic`);
    }
    if (link.controller !== undefined && !bondKeys.has(link.controller)) {
      check.err(`${at}.controller`, `no bond link is named ${link.controller}`);
    }
  } else if (link.kind === "bond") {
    if (!link.bond) check.err(`${at}.bond`, "a bond needs its settings (at least mode)");
    if (nics.has(link.interface))
      check.err(`${at}.interface`, `${link.interface} is a NIC; a bond needs a name of its own`);
    if (!check.links.some((m) => m.controller === link.name || m.controller === link.interface)) {
      check.err(
        `${at}.interface`,
        `the bond ${link.interface} has no member links (ethernet links naming it in controller)`,
      );
    }
  } else if (link.kind === "vlan") {
    if (link.parent === undefined) check.err(`${at}.parent`, "a VLAN needs its parent device");
    else if (!nics.has(link.parent) && !bondKeys.has(link.parent))
      check.err(`${at}.parent`, `this machine has no NIC or bond named ${link.parent}`);
    if (link.vlanId === undefined) check.err(`${at}.vlanId`, "a VLAN needs its VLAN id");
  }
}

/** Each purpose on one link only; `oob` (the stage-1 NIC) on none. */
function checkPurposes(purposes: Purpose[], i: number, carriedBy: Map<Purpose, number>, check: ApprovalCheck): void {
  const at = `links[${i}]`;
  if (purposes.includes("oob")) check.err(`${at}.purposes`, "the oob link is the stage-1 NIC and is not listed");
  for (const p of purposes) {
    if (p === "oob") continue;
    const other = carriedBy.get(p);
    if (other !== undefined && other !== i) check.err(`${at}.purposes`, `${p} is already carried by links[${other}]`);
    else carriedBy.set(p, i);
  }
}

/** Checks the link's given addresses, or allocates those its data networks need. */
function linkAddresses(
  link: Mutable<Link>,
  at: string,
  purposes: Purpose[],
  dataPurposes: DataPurpose[],
  networks: DataNetworks,
  check: ApprovalCheck,
): void {
  const isMember = link.controller !== undefined;
  const providerOnly = purposes.length > 0 && purposes.every((p) => p === "provider");
  if (link.addresses && link.addresses.length > 0) {
    if (isMember) check.err(`${at}.addresses`, "a bond member carries no address; put it on the bond");
    else if (providerOnly) check.err(`${at}.addresses`, "a provider-only link carries no address");
    else checkGivenAddresses(link.addresses, at, dataPurposes, networks, check);
    delete link.addressesAllocated;
  } else if (dataPurposes.length > 0 && !isMember) {
    const allocated = allocateAddresses(at, dataPurposes, networks, check);
    if (allocated.length > 0) {
      link.addresses = allocated;
      link.addressesAllocated = true;
    }
  } else {
    delete link.addressesAllocated;
  }
}

/**
 * Each given address: a CIDR inside a network the link carries, at its prefix, a free host
 * address; and every CIDR of every network the link carries covered (both families of a
 * dual-stack network).
 */
function checkGivenAddresses(
  addresses: readonly string[],
  at: string,
  dataPurposes: DataPurpose[],
  networks: DataNetworks,
  check: ApprovalCheck,
): void {
  const covered = new Set<Cidr>();
  addresses.forEach((address, k) => {
    const field = `${at}.addresses[${k}]`;
    const cidr = parseCidr(address);
    if (!cidr) {
      check.err(field, "is not a CIDR (a.b.c.d/nn or x:…:y/nnn)");
      return;
    }
    const ip = bareIp(address);
    const inside = dataPurposes
      .flatMap((p) => (networks[p]?.cidrs ?? []).map((net) => ({ p, net })))
      .find(({ net }) => inNetwork(net, ip));
    if (dataPurposes.length > 0 && !inside) {
      const carried = dataPurposes.map((p) => `${p} ${written(check, p)}`).join(", ");
      check.err(field, `${ip} is in none of the networks this link carries (${carried})`);
      return;
    }
    const gateway = inside ? networks[inside.p]!.gateway : undefined;
    if (inside && cidr.prefix !== inside.net.prefix)
      check.err(field, `the ${inside.p} network is /${inside.net.prefix}`);
    if (inside && ((gateway !== undefined && ip === bareIp(gateway)) || isNetworkAddress(inside.net, ip)))
      check.err(field, `${ip} is not a host address of the ${inside.p} network`);
    else if (check.held.has(ip)) check.err(field, `${ip} is already held by ${check.held.get(ip)!}`);
    if (inside) covered.add(inside.net);
    check.held.set(ip, at);
  });
  for (const p of dataPurposes)
    if ((networks[p]?.cidrs ?? []).some((net) => !covered.has(net)))
      check.err(`${at}.addresses`, `no address in each of the ${p} network's CIDRs (${written(check, p)})`);
}

/**
 * One address per CIDR of each data network the link carries (an address of each family for a
 * dual-stack network): the one this join had if still free, else the next free.
 */
function allocateAddresses(
  at: string,
  dataPurposes: DataPurpose[],
  networks: DataNetworks,
  check: ApprovalCheck,
): string[] {
  const allocated: string[] = [];
  for (const p of dataPurposes) {
    const net = networks[p];
    if (!net) {
      check.err(`${at}.purposes`, `the cluster's ${p} network has no CIDR addresses can be allocated from`);
      continue;
    }
    for (const cidr of net.cidrs) {
      const keep = [...check.previous].find((ip) => inNetwork(cidr, ip) && !check.held.has(ip));
      const ip = keep ?? nextFree(cidr, check.held, net.gateway);
      if (!ip) {
        check.err(`${at}.addresses`, `the ${p} network ${written(check, p)} has no free address`);
        continue;
      }
      check.held.set(ip, at);
      allocated.push(`${ip}/${cidr.prefix}`);
    }
  }
  return allocated;
}

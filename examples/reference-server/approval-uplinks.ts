/**
 * The approval's management interface and provider uplink. The mgmt interface defaults to the
 * link carrying mgmt, else the NIC holding the address the machine registered from (on a
 * loopback registration, a joiner on the server's own machine, the first wired NIC with an
 * address in the cluster's mgmt network, or without one configured an IPv4 address, else a
 * global IPv6 one); its address to that NIC's. The provider section takes the cluster's
 * topology and VLAN, and its uplink defaults to the link carrying provider, the mgmt
 * interface, or the founder's uplink name.
 * @module
 */

import { isIP } from "node:net";
import type { Assignment } from "@stratum/join";
import { bareIp, inNetwork, parseCidr, type Cidr } from "./addresses.js";
import type { ApprovalCheck, InventoryNic } from "./approval-check.js";
import type { Purpose } from "./approval-links.js";
import { isLoopbackHost } from "./config.js";
import type { StoredAssignment } from "./rows.js";

type Mgmt = NonNullable<Assignment["mgmt"]>;

/** The mgmt section as checked, and whether its interface exists (what follows from a wrong one is not reported again). */
export interface CheckedMgmt {
  mgmt: Mgmt;
  mgmtOk: boolean;
}

/** IPv6 link-local addresses (fe80::/10) mean nothing without a zone: never a mgmt address. */
const LINK_LOCAL = parseCidr("fe80::/10")!;

/** The cluster's mgmt network, when one is configured. */
function mgmtNetwork(check: ApprovalCheck): Cidr | undefined {
  return check.settings.mgmtCidr === undefined ? undefined : parseCidr(check.settings.mgmtCidr);
}

/**
 * The addresses of `ips` a mgmt link may take, best first: those in the mgmt network when one
 * is configured; else IPv4 before global IPv6. Never loopback or link-local.
 */
function mgmtCandidates(ips: readonly string[], check: ApprovalCheck): string[] {
  const usable = ips.map(bareIp).filter((ip) => isIP(ip) !== 0 && !isLoopbackHost(ip) && !inNetwork(LINK_LOCAL, ip));
  const network = mgmtNetwork(check);
  if (network) return usable.filter((ip) => inNetwork(network, ip));
  return [...usable.filter((ip) => isIP(ip) === 4), ...usable.filter((ip) => isIP(ip) === 6)];
}

/** What a mgmt address must be in, for messages. */
function mgmtWanted(check: ApprovalCheck): string {
  return check.settings.mgmtCidr === undefined
    ? "an IPv4 or global IPv6 address"
    : `an address in ${check.settings.mgmtCidr}`;
}

/** Checks and completes `a.mgmt`. */
export function checkMgmt(a: StoredAssignment, carriedBy: Map<Purpose, number>, check: ApprovalCheck): CheckedMgmt {
  const mgmt: Mgmt = { ...(a.mgmt ?? {}) };
  const mgmtLink = carriedBy.get("mgmt");
  const linkInterface = mgmtLink === undefined ? undefined : check.links[mgmtLink]!.interface;
  if (mgmt.interface === undefined && linkInterface !== undefined) mgmt.interface = linkInterface;
  else if (mgmt.interface !== undefined && linkInterface !== undefined && linkInterface !== mgmt.interface) {
    check.err(`links[${mgmtLink}].purposes`, `mgmt is on ${mgmt.interface} (mgmt.interface), not on ${linkInterface}`);
  }
  if (mgmt.interface === undefined) defaultMgmtInterface(mgmt, check);
  else if (!check.deviceExists(mgmt.interface))
    check.err("mgmt.interface", `this machine has no NIC named ${mgmt.interface}`);
  const mgmtOk = mgmt.interface !== undefined && check.deviceExists(mgmt.interface);
  if (mgmtOk && mgmt.address === undefined) {
    const candidates = mgmtCandidates(nicIps(check).get(mgmt.interface!) ?? [], check);
    // A twin's address another node holds is not a default: its next address that is free is.
    const own = candidates.find((ip) => !check.held.has(ip)) ?? candidates[0];
    if (own) mgmt.address = own;
    else
      check.err(
        "mgmt.address",
        `${mgmt.interface} holds no ${mgmtWanted(check).replace(/^an? /, "")}; give the mgmt address as a CIDR with a gateway`,
      );
  }
  if (mgmt.address !== undefined && (mgmtOk || mgmt.interface === undefined)) checkMgmtAddress(mgmt, check);
  if (mgmt.gateway !== undefined && isIP(mgmt.gateway) === 0) check.err("mgmt.gateway", "is not an IP address");
  (mgmt.dns ?? []).forEach((d, i) => {
    if (isIP(d) === 0) check.err(`mgmt.dns[${i}]`, "is not an IP address");
  });
  return { mgmt, mgmtOk };
}

/** Each NIC's addresses, without prefix. */
function nicIps(check: ApprovalCheck): Map<string, string[]> {
  return new Map([...check.nics.values()].map((nic) => [nic.name, (nic.addresses ?? []).map(bareIp)]));
}

/** No mgmt interface given or carried: the NIC the machine registered from, with that address. */
function defaultMgmtInterface(mgmt: Mgmt, check: ApprovalCheck): void {
  const source = check.join.sourceAddr ? bareIp(check.join.sourceAddr) : "";
  const holder = [...nicIps(check)].find(([, ips]) => ips.includes(source));
  const candidates = (nic: InventoryNic): string[] => mgmtCandidates(nic.addresses ?? [], check);
  const wired = [...check.nics.values()].filter((n) => !n.wireless && candidates(n).length > 0);
  // A clone of another node (same image, same static address) would collide on its default:
  // its next wired NIC whose address is free is the default instead; only when none is
  // free does the collision stand, and the check says what holds the address.
  const free = (nic: InventoryNic): string | undefined => candidates(nic).find((ip) => !check.held.has(ip));
  if (holder && (!check.held.has(source) || mgmt.address !== undefined)) {
    mgmt.interface = holder[0];
    mgmt.address ??= source;
  } else if (holder || isLoopbackHost(source)) {
    // A joiner on the reference server's own machine registers from loopback: take its first
    // wired NIC with a mgmt address, the one a real founder would have seen it come from.
    const nic = (mgmt.address === undefined ? wired.find((n) => free(n) !== undefined) : undefined) ?? wired[0];
    if (holder && (!nic || free(nic) === undefined)) {
      mgmt.interface = holder[0];
      mgmt.address ??= source;
    } else if (nic) {
      mgmt.interface = nic.name;
      mgmt.address ??= free(nic) ?? candidates(nic)[0]!;
    }
  }
  if (mgmt.interface === undefined)
    check.err(
      "mgmt.interface",
      `no NIC of this machine holds the address it registered from (${source || "unknown"}); name the mgmt interface`,
    );
}

/** The mgmt address: an IP (or CIDR), free, and either on the interface already or new with a gateway. */
function checkMgmtAddress(mgmt: Mgmt, check: ApprovalCheck): void {
  const address = mgmt.address!;
  const ip = bareIp(address);
  const isCidr = address.includes("/");
  const network = mgmtNetwork(check);
  if (isIP(ip) === 0 || (isCidr && !parseCidr(address))) {
    check.err("mgmt.address", "is not an IP address or CIDR");
  } else if (network && !inNetwork(network, ip)) {
    check.err("mgmt.address", `${ip} is not in the cluster's mgmt network ${check.settings.mgmtCidr}`);
  } else if (check.held.has(ip)) {
    check.err(
      "mgmt.address",
      `${ip} is already held by ${check.held.get(ip)!}; give this machine another address (a new one as a CIDR, with a gateway)`,
    );
  } else if (mgmt.interface !== undefined && !(nicIps(check).get(mgmt.interface) ?? []).includes(ip)) {
    if (!isCidr)
      check.err("mgmt.address", `${ip} is not on ${mgmt.interface}; give a new address as a CIDR, with a gateway`);
    else if (mgmt.gateway === undefined)
      check.err("mgmt.gateway", `a new address on ${mgmt.interface} needs its gateway`);
  }
}

/** Checks and completes `a.provider`. */
export function checkProvider(
  a: StoredAssignment,
  carriedBy: Map<Purpose, number>,
  { mgmt, mgmtOk }: CheckedMgmt,
  check: ApprovalCheck,
): void {
  const nets = check.settings.networks;
  const provider = { ...(a.provider ?? {}) };
  if (provider.topology !== undefined && provider.topology !== nets.providerTopology) {
    check.err("provider.topology", `the cluster's provider topology is ${nets.providerTopology}`);
  }
  provider.topology = nets.providerTopology;
  if (provider.vlan !== undefined && provider.vlan !== nets.providerVlan) {
    check.err(
      "provider.vlan",
      nets.providerVlan === undefined
        ? "the cluster's provider network has no VLAN"
        : `the cluster's provider VLAN is ${nets.providerVlan}`,
    );
  }
  if (nets.providerVlan !== undefined) provider.vlan = nets.providerVlan;
  const uplinkGiven = provider.upstreamInterface !== undefined;
  if (provider.upstreamInterface === undefined) {
    const providerLink = carriedBy.get("provider");
    if (providerLink !== undefined) provider.upstreamInterface = check.links[providerLink]!.interface;
    else if (nets.providerUpstreamPurpose === "mgmt" && mgmt.interface !== undefined)
      provider.upstreamInterface = mgmt.interface;
    else if (nets.providerUpstreamInterface !== undefined && check.deviceExists(nets.providerUpstreamInterface))
      provider.upstreamInterface = nets.providerUpstreamInterface;
  }
  const uplink = provider.upstreamInterface;
  if (uplink === undefined) {
    if (mgmtOk || nets.providerUpstreamPurpose !== "mgmt") {
      check.err(
        "provider.upstreamInterface",
        `no NIC of this machine matches the founder's uplink (${nets.providerUpstreamInterface ?? "none"}); name the uplink`,
      );
    }
  } else if (!check.deviceExists(uplink)) {
    if (uplinkGiven || mgmtOk)
      check.err("provider.upstreamInterface", `this machine has no NIC or bond named ${uplink}`);
  } else if (nets.providerTopology === "bridged") {
    const clash = check.links.findIndex(
      (l) => l.interface === uplink && (l.purposes ?? []).some((p) => p === "storage" || p === "overlay"),
    );
    if (clash >= 0)
      check.err(
        "provider.upstreamInterface",
        `a bridged cluster's uplink carries no storage or overlay traffic, and ${uplink} does (links[${clash}])`,
      );
  }
  a.provider = provider;
}

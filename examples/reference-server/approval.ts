/**
 * The approval's assignment: filled in with the defaults the spec gives, copied from a member
 * when asked, and checked against the machine's inventory and the cluster. Every problem is
 * reported at its field path (`role`, `disks[1].confirm`, `links[0].interface`,
 * `provider.vlan`), all at once, so an operator fixes the assignment in one round trip.
 *
 * Pure: it reads the join, the members, the other joins and the cluster settings, and returns
 * the completed assignment or the field errors. The caller stores it in one transaction.
 * @module
 */

import { isIP } from "node:net";
import type { DiskAssignment, Inventory, Link } from "@stratum/join";
import { bareIp, inNetwork, ipv4ToInt, nextFree, parseCidr, type Cidr } from "./addresses.js";
import type { ClusterSettings } from "./config.js";
import { isLoopbackHost } from "./config.js";
import type { FieldError } from "./http.js";
import type { ApprovalInput, AssignmentInput } from "./schemas.js";
import type { JoinRow, MemberRow, Mutable, StoredAssignment } from "./store.js";

/** The most control-plane nodes a cluster takes (every hybrid node is one). */
export const MAX_CONTROL_PLANE = 5;

/** What the check needs to know besides the approval. */
export interface ApprovalContext {
  join: JoinRow;
  settings: ClusterSettings;
  members: MemberRow[];
  /** Every other registration (for the addresses they hold and the control-plane count). */
  otherJoins: JoinRow[];
}

/** The outcome: the completed assignment, or the field errors. */
export type ApprovalOutcome = { ok: true; assignment: StoredAssignment } | { ok: false; errors: FieldError[] };

/** States whose assignment holds its addresses (spec: "approved, running or failed"). */
const HOLDING_STATES = new Set(["approved", "delivering", "installing", "failed"]);
/** States that will become a control-plane member without another approval. */
const QUEUED_STATES = new Set(["approved"]);

type Purpose = "oob" | "mgmt" | "storage" | "overlay" | "provider";

/** The addresses of an assignment's links, without prefix. */
export function assignmentIps(assignment: StoredAssignment | null | undefined): string[] {
  const out: string[] = [];
  for (const link of assignment?.links ?? []) for (const a of link.addresses ?? []) out.push(bareIp(a));
  return out;
}

function nicIps(inventory: Inventory | null): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const nic of inventory?.nics ?? []) map.set(nic.name, (nic.addresses ?? []).map(bareIp));
  return map;
}

function diskHoldsData(disk: NonNullable<Inventory["disks"]>[number]): string | undefined {
  const holders = disk.holders ?? [];
  if (holders.length > 0) return holders.map((h) => `${h.kind} on ${h.device}`).join(", ");
  if ((disk.partitions ?? []).length > 0) return `${disk.partitions!.length} partition(s)`;
  if ((disk.stack ?? []).length > 0) return "a device stacked on it";
  return undefined;
}

/**
 * Copies a member's assignment onto this machine: links whose NICs it has (addresses left to
 * be allocated again), disks matched by kernel name (keyed by this machine's WWN or by-id
 * path, never with a wipe confirmation), the rack, AZ, NTP servers and provider uplink. What
 * does not match is said in `copyNotes`.
 */
export function copyAssignment(member: MemberRow, inventory: Inventory | null): StoredAssignment {
  const source = member.assignment ?? {};
  const notes: string[] = [];
  const nics = new Set((inventory?.nics ?? []).map((n) => n.name));
  const links: Mutable<Link>[] = [];
  const sourceLinks = source.links ?? [];
  const bondNames = new Set(sourceLinks.filter((l) => l.kind === "bond").flatMap((l) => [l.name, l.interface]));
  sourceLinks.forEach((link, i) => {
    const kind = link.kind ?? "ethernet";
    const needs = kind === "ethernet" ? link.interface : kind === "vlan" ? link.parent : undefined;
    if (needs !== undefined && !nics.has(needs) && !bondNames.has(needs)) {
      notes.push(`links[${i}] (${link.name}): this machine has no NIC named ${needs}; not copied`);
      return;
    }
    const { addresses: _a, addressesAllocated: _b, ...rest } = link;
    links.push(rest);
  });
  // A bond whose members were all left out cannot be built.
  const kept = links.filter((l) => {
    if ((l.kind ?? "ethernet") !== "bond") return true;
    const hasMember = links.some((m) => m.controller === l.name || m.controller === l.interface);
    if (!hasMember) notes.push(`bond ${l.name}: none of its member NICs exist on this machine; not copied`);
    return hasMember;
  });

  const disks: DiskAssignment[] = [];
  const diskNames: Record<string, string> = {};
  (source.disks ?? []).forEach((d, i) => {
    const name = source.diskNames?.[d.key];
    const disk = name === undefined ? undefined : (inventory?.disks ?? []).find((x) => x.name === name);
    if (!disk) {
      notes.push(`disks[${i}] (${name ?? d.key}): this machine has no disk of that name; not copied`);
      return;
    }
    const key = disk.wwn || disk.byId?.[0];
    if (!key) {
      notes.push(`disks[${i}] (${name}): the disk has no WWN or by-id path to key it by; not copied`);
      return;
    }
    const { confirm: _c, ...rest } = d;
    disks.push({ ...rest, key });
    diskNames[key] = disk.name;
    const data = diskHoldsData(disk);
    if (data !== undefined && d.role !== "unused")
      notes.push(`disks[${i}] (${disk.name}): holds data (${data}); set confirm to its key to wipe it`);
  });

  const out: StoredAssignment = { copiedFrom: member.nodeId };
  if (source.rack !== undefined) out.rack = source.rack;
  if (source.az !== undefined) out.az = source.az;
  if (source.ntpServers !== undefined) out.ntpServers = [...source.ntpServers];
  if (kept.length > 0) out.links = kept;
  if (disks.length > 0) {
    out.disks = disks;
    out.diskNames = diskNames;
  }
  if (source.provider) {
    const provider = { ...source.provider };
    const uplink = provider.upstreamInterface;
    if (uplink !== undefined && !nics.has(uplink) && !kept.some((l) => l.interface === uplink)) {
      notes.push(`provider.upstreamInterface: this machine has no ${uplink}; the default is used`);
      delete provider.upstreamInterface;
    }
    out.provider = provider;
  }
  out.copyNotes = notes;
  return out;
}

/**
 * Completes and checks an approval's assignment. Defaults: the name is the hostname; the role
 * hybrid; the mgmt link the NIC holding the address the machine registered from (on a
 * loopback registration, a joiner on the server's own machine, the first NIC with an IPv4
 * address); a link's MTU the largest of the cluster networks it carries; the provider uplink
 * the cluster's. Links carrying storage or overlay without addresses get the next free host
 * address of those networks (`addressesAllocated`), keeping the address a re-approval had
 * while it is still free.
 */
export function checkApproval(input: ApprovalInput, ctx: ApprovalContext): ApprovalOutcome {
  const errors: FieldError[] = [];
  const err = (field: string, message: string): void => {
    errors.push({ field, message });
  };
  const { join, settings } = ctx;
  const inventory = join.inventory;
  const nets = settings.networks;

  // ---- copy, then the request's fields over it ----
  let base: StoredAssignment = {};
  if (input.copyFrom !== undefined) {
    const member = ctx.members.find((m) => m.nodeId === input.copyFrom);
    if (!member) err("copyFrom", `no member has the node id ${input.copyFrom}`);
    else base = copyAssignment(member, inventory);
  }
  const given: AssignmentInput = input.assignment ?? {};
  const { copiedFrom: _cf, copyNotes: _cn, ...overrides } = given;
  const a: StoredAssignment = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    if (value !== undefined) (a as Record<string, unknown>)[key] = value;
  }
  if (given.disks !== undefined) delete a.diskNames;

  const nics = new Map((inventory?.nics ?? []).map((n) => [n.name, n] as const));
  const links: Mutable<Link>[] = (a.links ?? []).map((l) => ({ ...l, kind: l.kind ?? "ethernet" }));
  const linkInterfaces = new Set(links.map((l) => l.interface));
  const deviceExists = (name: string): boolean => nics.has(name) || linkInterfaces.has(name);

  // ---- name ----
  a.name = a.name ?? join.hostname ?? join.id;
  const taken = ctx.members.find((m) => m.name === a.name && m.nodeId !== join.nodeId);
  if (taken) err("name", `${a.name} is already the name of member ${taken.nodeId}`);

  // ---- role ----
  const role = a.role ?? "hybrid";
  if (role !== "hybrid") {
    err("role", `${role} nodes are not supported yet (planned for a later release); every joiner is hybrid`);
  } else {
    const controlPlane =
      ctx.members.filter(
        (m) => m.state !== "leaving" && (m.role === "hybrid" || m.role === "control-plane") && m.nodeId !== join.nodeId,
      ).length + ctx.otherJoins.filter((j) => QUEUED_STATES.has(j.state)).length;
    if (controlPlane + 1 > MAX_CONTROL_PLANE) {
      err(
        "role",
        `the cluster would have ${controlPlane + 1} control-plane nodes (members and approved joins); it takes at most ${MAX_CONTROL_PLANE}`,
      );
    }
  }
  a.role = "hybrid";

  // ---- addresses already held ----
  const held = new Set<string>();
  for (const m of ctx.members) {
    if (m.nodeId === join.nodeId) continue;
    if (m.mgmtIp) held.add(m.mgmtIp);
    for (const n of Object.values(m.networks)) held.add(n.ip);
    for (const ip of assignmentIps(m.assignment)) held.add(ip);
  }
  for (const vip of Object.values(settings.vips)) if (vip) held.add(vip);
  for (const j of ctx.otherJoins)
    if (HOLDING_STATES.has(j.state)) for (const ip of assignmentIps(j.assignment)) held.add(ip);
  const previous = new Set(assignmentIps(join.assignment));

  // ---- links ----
  const networks: Partial<Record<"storage" | "overlay", { cidr: Cidr; gateway?: string; mtu?: number }>> = {};
  for (const purpose of ["storage", "overlay"] as const) {
    const net = nets[purpose];
    const cidr = parseCidr(net.cidr);
    if (cidr)
      networks[purpose] = {
        cidr,
        ...(net.gateway ? { gateway: net.gateway } : {}),
        ...(net.mtu ? { mtu: net.mtu } : {}),
      };
  }
  const carriedBy = new Map<Purpose, number>();
  const names = new Map<string, number>();
  const bondKeys = new Set(links.filter((l) => l.kind === "bond").flatMap((l) => [l.name, l.interface]));
  links.forEach((link, i) => {
    const at = `links[${i}]`;
    if (names.has(link.name)) err(`${at}.name`, `links[${names.get(link.name)}] has the same name`);
    names.set(link.name, i);
    const purposes = (link.purposes ?? []) as Purpose[];
    if (link.kind === "ethernet") {
      if (!nics.has(link.interface)) {
        err(
          `${at}.interface`,
          `this machine has no NIC named ${link.interface} (it has ${[...nics.keys()].join(", ") || "none"})`,
        );
      } else if (nics.get(link.interface)!.wireless && purposes.some((p) => p !== "mgmt")) {
        err(`${at}.interface`, `${link.interface} is a wireless NIC; it carries no cluster traffic`);
      }
      if (link.controller !== undefined && !bondKeys.has(link.controller)) {
        err(`${at}.controller`, `no bond link is named ${link.controller}`);
      }
    } else if (link.kind === "bond") {
      if (!link.bond) err(`${at}.bond`, "a bond needs its settings (at least mode)");
      if (nics.has(link.interface))
        err(`${at}.interface`, `${link.interface} is a NIC; a bond needs a name of its own`);
      if (!links.some((m) => m.controller === link.name || m.controller === link.interface)) {
        err(
          `${at}.interface`,
          `the bond ${link.interface} has no member links (ethernet links naming it in controller)`,
        );
      }
    } else if (link.kind === "vlan") {
      if (link.parent === undefined) err(`${at}.parent`, "a VLAN needs its parent device");
      else if (!nics.has(link.parent) && !bondKeys.has(link.parent))
        err(`${at}.parent`, `this machine has no NIC or bond named ${link.parent}`);
      if (link.vlanId === undefined) err(`${at}.vlanId`, "a VLAN needs its VLAN id");
    }
    if (purposes.includes("oob")) err(`${at}.purposes`, "the oob link is the stage-1 NIC and is not listed");
    purposes.forEach((p) => {
      if (p === "oob") return;
      const other = carriedBy.get(p);
      if (other !== undefined && other !== i) err(`${at}.purposes`, `${p} is already carried by links[${other}]`);
      else carriedBy.set(p, i);
    });
    const dataPurposes = purposes.filter((p): p is "storage" | "overlay" => p === "storage" || p === "overlay");
    const isMember = link.controller !== undefined;
    const providerOnly = purposes.length > 0 && purposes.every((p) => p === "provider");
    if (link.addresses && link.addresses.length > 0) {
      if (isMember) err(`${at}.addresses`, "a bond member carries no address; put it on the bond");
      else if (providerOnly) err(`${at}.addresses`, "a provider-only link carries no address");
      else {
        const covered = new Set<string>();
        link.addresses.forEach((address, k) => {
          const cidr = parseCidr(address);
          if (!cidr) {
            err(`${at}.addresses[${k}]`, "is not an IPv4 CIDR (a.b.c.d/nn)");
            return;
          }
          const ip = bareIp(address);
          const inside = dataPurposes.find((p) => networks[p] && inNetwork(networks[p]!.cidr, ip));
          if (dataPurposes.length > 0 && !inside) {
            err(
              `${at}.addresses[${k}]`,
              `${ip} is in none of the networks this link carries (${dataPurposes.map((p) => `${p} ${nets[p].cidr}`).join(", ")})`,
            );
            return;
          }
          if (inside && cidr.prefix !== networks[inside]!.cidr.prefix)
            err(`${at}.addresses[${k}]`, `the ${inside} network is /${networks[inside]!.cidr.prefix}`);
          if (inside && (ip === networks[inside]!.gateway || ipv4ToInt(ip) === networks[inside]!.cidr.base))
            err(`${at}.addresses[${k}]`, `${ip} is not a host address of the ${inside} network`);
          else if (held.has(ip))
            err(`${at}.addresses[${k}]`, `${ip} is already held by a member, a VIP or another join`);
          if (inside) covered.add(inside);
          held.add(ip);
        });
        for (const p of dataPurposes)
          if (!covered.has(p)) err(`${at}.addresses`, `no address in the ${p} network ${nets[p].cidr}`);
      }
      delete link.addressesAllocated;
    } else if (dataPurposes.length > 0 && !isMember) {
      const allocated: string[] = [];
      for (const p of dataPurposes) {
        const net = networks[p];
        if (!net) {
          err(`${at}.purposes`, `the cluster's ${p} network is not an IPv4 network addresses can be allocated from`);
          continue;
        }
        const keep = [...previous].find((ip) => inNetwork(net.cidr, ip) && !held.has(ip));
        const ip = keep ?? nextFree(net.cidr, held, net.gateway);
        if (!ip) {
          err(`${at}.addresses`, `the ${p} network ${nets[p].cidr} has no free address`);
          continue;
        }
        held.add(ip);
        allocated.push(`${ip}/${net.cidr.prefix}`);
      }
      if (allocated.length > 0) {
        link.addresses = allocated;
        link.addressesAllocated = true;
      }
    } else {
      delete link.addressesAllocated;
    }
    if (link.mtu === undefined) {
      const mtus = dataPurposes.map((p) => networks[p]?.mtu).filter((m): m is number => m !== undefined);
      if (mtus.length > 0) link.mtu = Math.max(...mtus);
    }
  });
  if (links.length > 0) a.links = links;

  // ---- mgmt ----
  const mgmt = { ...(a.mgmt ?? {}) };
  const mgmtLink = carriedBy.get("mgmt");
  if (mgmt.interface === undefined && mgmtLink !== undefined) mgmt.interface = links[mgmtLink]!.interface;
  else if (mgmt.interface !== undefined && mgmtLink !== undefined && links[mgmtLink]!.interface !== mgmt.interface) {
    err(
      `links[${mgmtLink}].purposes`,
      `mgmt is on ${mgmt.interface} (mgmt.interface), not on ${links[mgmtLink]!.interface}`,
    );
  }
  const ipsByNic = nicIps(inventory);
  const source = join.sourceAddr ?? "";
  if (mgmt.interface === undefined) {
    const holder = [...ipsByNic].find(([, ips]) => ips.includes(source));
    if (holder) {
      mgmt.interface = holder[0];
      mgmt.address ??= source;
    } else if (isLoopbackHost(source)) {
      // A joiner on the reference server's own machine registers from loopback: take its first
      // wired NIC with an IPv4 address, the one a real founder would have seen it come from.
      const nic = (inventory?.nics ?? []).find(
        (n) => !n.wireless && (n.addresses ?? []).some((x) => isIP(bareIp(x)) === 4 && !isLoopbackHost(bareIp(x))),
      );
      if (nic) {
        mgmt.interface = nic.name;
        mgmt.address ??= bareIp(
          (nic.addresses ?? []).find((x) => isIP(bareIp(x)) === 4 && !isLoopbackHost(bareIp(x)))!,
        );
      }
    }
    if (mgmt.interface === undefined)
      err(
        "mgmt.interface",
        `no NIC of this machine holds the address it registered from (${source || "unknown"}); name the mgmt interface`,
      );
  } else if (!deviceExists(mgmt.interface)) {
    err("mgmt.interface", `this machine has no NIC named ${mgmt.interface}`);
  }
  // What follows from a wrong mgmt interface is not reported again: fixing it fixes them.
  const mgmtOk = mgmt.interface !== undefined && deviceExists(mgmt.interface);
  if (mgmtOk && mgmt.address === undefined) {
    const own = (ipsByNic.get(mgmt.interface!) ?? []).find((ip) => isIP(ip) === 4);
    if (own) mgmt.address = own;
    else err("mgmt.address", `${mgmt.interface} holds no IPv4 address; give the mgmt address as a CIDR with a gateway`);
  }
  if (mgmt.address !== undefined && (mgmtOk || mgmt.interface === undefined)) {
    const ip = bareIp(mgmt.address);
    const isCidr = mgmt.address.includes("/");
    if (isIP(ip) === 0 || (isCidr && !parseCidr(mgmt.address) && isIP(ip) === 4)) {
      err("mgmt.address", "is not an IP address or CIDR");
    } else if (held.has(ip)) {
      err("mgmt.address", `${ip} is already held by a member or a VIP`);
    } else if (mgmt.interface !== undefined && !(ipsByNic.get(mgmt.interface) ?? []).includes(ip)) {
      if (!isCidr)
        err("mgmt.address", `${ip} is not on ${mgmt.interface}; give a new address as a CIDR, with a gateway`);
      else if (mgmt.gateway === undefined) err("mgmt.gateway", `a new address on ${mgmt.interface} needs its gateway`);
    }
  }
  if (mgmt.gateway !== undefined && isIP(mgmt.gateway) === 0) err("mgmt.gateway", "is not an IP address");
  (mgmt.dns ?? []).forEach((d, i) => {
    if (isIP(d) === 0) err(`mgmt.dns[${i}]`, "is not an IP address");
  });
  a.mgmt = mgmt;

  // ---- disks ----
  const seen = new Map<string, number>();
  const diskNames: Record<string, string> = { ...(a.diskNames ?? {}) };
  const disks: DiskAssignment[] = (a.disks ?? []).map((d) => ({ ...d }));
  disks.forEach((d, i) => {
    const at = `disks[${i}]`;
    const disk = (inventory?.disks ?? []).find(
      (x) => (x.wwn !== undefined && x.wwn !== "" && x.wwn === d.key) || (x.byId ?? []).includes(d.key),
    );
    if (!disk) {
      const byName = (inventory?.disks ?? []).find(
        (x) => x.path === d.key || x.name === d.key || `/dev/${x.name}` === d.key,
      );
      err(
        `${at}.key`,
        byName
          ? `name ${byName.name} by its WWN or a /dev/disk/by-id path: kernel names change between boots`
          : "no disk of this machine has this WWN or /dev/disk/by-id path",
      );
      return;
    }
    if (seen.has(disk.name)) err(`${at}.key`, `${disk.name} is already disks[${seen.get(disk.name)}]`);
    seen.set(disk.name, i);
    diskNames[d.key] = disk.name;
    if ((disk.mountpoints ?? []).length > 0) {
      err(
        `${at}.key`,
        `${disk.name} is the system disk (mounted at ${disk.mountpoints!.join(", ")}); stage 1 fixed it`,
      );
      return;
    }
    if (disk.readOnly) err(`${at}.key`, `${disk.name} is read-only`);
    if (d.role === "compute") {
      d.pool ??= "local";
      d.storageClass ??= d.pool;
    } else {
      if (d.pool !== undefined) err(`${at}.pool`, "only a compute disk has a pool");
      if (d.storageClass !== undefined) err(`${at}.storageClass`, "only a compute disk has a storage class");
    }
    const data = diskHoldsData(disk);
    if (d.role !== "unused" && data !== undefined && d.confirm !== d.key) {
      err(
        `${at}.confirm`,
        d.confirm === undefined || d.confirm === ""
          ? `${disk.name} holds data (${data}); set confirm to its key to wipe it`
          : `does not match the disk's key; type ${d.key} to wipe ${disk.name}`,
      );
    }
  });
  if (disks.length > 0) {
    a.disks = disks;
    a.diskNames = Object.fromEntries(Object.entries(diskNames).filter(([k]) => disks.some((d) => d.key === k)));
  } else {
    delete a.disks;
    delete a.diskNames;
  }

  // ---- provider ----
  const provider = { ...(a.provider ?? {}) };
  if (provider.topology !== undefined && provider.topology !== nets.providerTopology) {
    err("provider.topology", `the cluster's provider topology is ${nets.providerTopology}`);
  }
  provider.topology = nets.providerTopology;
  if (provider.vlan !== undefined && provider.vlan !== nets.providerVlan) {
    err(
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
    if (providerLink !== undefined) provider.upstreamInterface = links[providerLink]!.interface;
    else if (nets.providerUpstreamPurpose === "mgmt" && mgmt.interface !== undefined)
      provider.upstreamInterface = mgmt.interface;
    else if (nets.providerUpstreamInterface !== undefined && deviceExists(nets.providerUpstreamInterface))
      provider.upstreamInterface = nets.providerUpstreamInterface;
  }
  if (provider.upstreamInterface === undefined) {
    if (mgmtOk || nets.providerUpstreamPurpose !== "mgmt") {
      err(
        "provider.upstreamInterface",
        `no NIC of this machine matches the founder's uplink (${nets.providerUpstreamInterface ?? "none"}); name the uplink`,
      );
    }
  } else if (!deviceExists(provider.upstreamInterface)) {
    if (uplinkGiven || mgmtOk)
      err("provider.upstreamInterface", `this machine has no NIC or bond named ${provider.upstreamInterface}`);
  } else if (nets.providerTopology === "bridged") {
    const clash = links.findIndex(
      (l) =>
        l.interface === provider.upstreamInterface &&
        (l.purposes ?? []).some((p) => p === "storage" || p === "overlay"),
    );
    if (clash >= 0)
      err(
        "provider.upstreamInterface",
        `a bridged cluster's uplink carries no storage or overlay traffic, and ${provider.upstreamInterface} does (links[${clash}])`,
      );
  }
  a.provider = provider;

  (a.ntpServers ?? []).forEach((s, i) => {
    if (s.trim() === "") err(`ntpServers[${i}]`, "is empty");
  });

  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, assignment: a };
}

/**
 * `copyFrom`: a member's assignment carried over to another machine, as far as that machine
 * has the same NICs and disks. What does not carry over is said in `copyNotes`, so the
 * operator sees it before approving.
 * @module
 */

import type { DiskAssignment, Inventory, Link } from "@stratum/join";
import { wipeDestroys } from "./approval-disks.js";
import type { MemberRow, Mutable, StoredAssignment } from "./rows.js";

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
    const holds = wipeDestroys(disk);
    if (holds !== undefined && d.role !== "unused")
      notes.push(`disks[${i}] (${disk.name}): ${holds}; to wipe it, confirm with its key`);
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

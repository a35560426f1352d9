/**
 * The assignment an approval applies, part of a join.
 * @module
 */
import * as z from "zod/mini";
import { bool, int, opt, str, strings } from "./builders.js";

/** `MgmtLink`. */
export const MgmtLinkSchema = z.object({
  interface: opt(str),
  address: opt(str),
  gateway: opt(str),
  dns: opt(strings),
});

/** `Bond`. */
export const BondSchema = z.object({
  mode: z.enum(["active-backup", "802.3ad"]),
  xmitHashPolicy: opt(str),
  miimonMs: opt(int),
  lacpRate: opt(str),
});

/** `Link`. `kind` defaults to `ethernet` as the spec says, which is why the generated type has it required. */
export const LinkSchema = z.object({
  name: str,
  kind: z._default(z.enum(["ethernet", "bond", "vlan"]), "ethernet"),
  interface: str,
  parent: opt(str),
  vlanId: opt(int),
  controller: opt(str),
  bond: opt(BondSchema),
  addresses: opt(strings),
  addressesAllocated: opt(bool),
  mtu: opt(int),
  purposes: opt(z.array(z.enum(["oob", "mgmt", "storage", "overlay", "provider"]))),
});

/** `DiskAssignment`. */
export const DiskAssignmentSchema = z.object({
  key: str,
  role: z.enum(["compute", "ceph-osd", "unused"]),
  pool: opt(str),
  storageClass: opt(str),
  confirm: opt(str),
});

/** `ProviderUplink`. */
export const ProviderUplinkSchema = z.object({
  topology: opt(z.enum(["bridged", "routed-host"])),
  upstreamInterface: opt(str),
  vlan: opt(int),
});

/** `Assignment`: everything about a joiner, chosen on the founder. */
export const AssignmentSchema = z.object({
  name: opt(str),
  role: opt(z.enum(["hybrid"])),
  rack: opt(str),
  az: opt(str),
  mgmt: opt(MgmtLinkSchema),
  links: opt(z.array(LinkSchema)),
  disks: opt(z.array(DiskAssignmentSchema)),
  ntpServers: opt(strings),
  provider: opt(ProviderUplinkSchema),
  copiedFrom: opt(str),
  copyNotes: opt(strings),
});

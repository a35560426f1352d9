/**
 * The request bodies the reference server accepts, as zod schemas written from openapi.yaml.
 * A body that does not match is a 400 `INVALID_INPUT` with one field error per problem.
 * Semantic checks (does that NIC exist?) are not here: they are the approval's, answered 409.
 * @module
 */

import { isFounderStepName } from "@stratum/join";
import { z } from "zod";

const SELECTOR = /^[0-9A-HJKMNP-TV-Z]{2}$/;
const BASE64ISH = /^[A-Za-z0-9+/_-]+={0,2}$/;

/** `POST /v1/join/pake`. */
export const PakeStartSchema = z.strictObject({
  selector: z.string().regex(SELECTOR, "must be two Crockford base32 symbols (upper case)"),
  ke1: z.string().min(1).max(4096).regex(BASE64ISH, "must be base64"),
});

const PakeProofSchema = z.object({
  session: z.string().min(1).max(64),
  ke3: z.string().min(1).max(4096).regex(BASE64ISH, "must be base64"),
});

/** `POST /v1/join/code-checks`. */
export const CodeCheckRequestSchema = z.object({
  pake: PakeProofSchema,
  release: z.string().min(1).max(64),
  selfUpgrade: z.boolean().optional(),
});

const int64 = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const text = z.string().max(4096);

const DiskSchema = z.object({
  name: text.min(1),
  path: text.min(1),
  byId: z.array(text).max(64).optional(),
  model: text.optional(),
  serial: text.optional(),
  wwn: text.optional(),
  transport: text.optional(),
  sizeBytes: int64.optional(),
  rotational: z.boolean().optional(),
  removable: z.boolean().optional(),
  readOnly: z.boolean().optional(),
  mountpoints: z.array(text).max(256).optional(),
  holders: z
    .array(z.object({ kind: text, device: text, detail: text.optional() }))
    .max(256)
    .optional(),
  partitions: z
    .array(
      z.object({
        number: z.number().int(),
        name: text,
        path: text,
        sizeBytes: int64,
        fsType: text.optional(),
        label: text.optional(),
        partLabel: text.optional(),
      }),
    )
    .max(256)
    .optional(),
  stack: z
    .array(z.object({ name: text, path: text, type: text }))
    .max(256)
    .optional(),
});

const NicSchema = z.object({
  name: text.min(1),
  mac: text.optional(),
  permanentMac: text.optional(),
  operState: text.optional(),
  link: text.optional(),
  speedMbps: z.number().int().optional(),
  mtu: z.number().int().optional(),
  driver: text.optional(),
  addresses: z.array(text).max(256).optional(),
  wireless: z.boolean().optional(),
  routes: z.array(text).max(1024).optional(),
});

/** A joining machine's inventory. */
export const InventorySchema = z.object({
  uefi: z.boolean().optional(),
  disks: z.array(DiskSchema).max(256).optional(),
  nics: z.array(NicSchema).max(256).optional(),
  cpu: z
    .object({
      model: text.optional(),
      sockets: z.number().int().optional(),
      cores: z.number().int().optional(),
      threads: z.number().int().optional(),
      virtualization: text.optional(),
    })
    .optional(),
  memoryBytes: int64.optional(),
  osDiskLayout: z.enum(["compute-tail", "whole-disk"]).optional(),
  // Any offset is accepted: the trust comes from the PAKE, the offset only tells the operator
  // the machine's clock needs fixing (docs/protocol.md#founder-time).
  clock: z
    .object({
      offsetSeconds: z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).optional(),
      ntpSynchronized: z.boolean().optional(),
    })
    .optional(),
});

/** `POST /v1/join/registrations`. */
export const RegistrationRequestSchema = z.object({
  pake: PakeProofSchema,
  release: z.string().min(1).max(64),
  selfUpgrade: z.boolean().optional(),
  hostname: z.string().max(253).optional(),
  systemSerial: z.string().max(256).optional(),
  inventory: InventorySchema.optional(),
});

/** `POST /v1/join/registrations/{joinId}/progress`. */
export const ProgressReportSchema = z.object({
  totalSteps: z.number().int().min(1).max(200).optional(),
  steps: z
    .array(
      z.object({
        // `stalled` and `operator` are the founder's own failedStep names (docs/protocol.md#progress).
        name: z
          .string()
          .min(1)
          .max(256)
          .refine(
            (name) => !isFounderStepName(name),
            "is a name only the founder gives a failed step (stalled, operator)",
          ),
        title: z.string().max(1024),
        status: z.enum(["running", "done", "failed"]),
        message: z.string().max(4096).optional(),
        at: z.iso.datetime({ offset: true }).optional(),
      }),
    )
    .max(200)
    .optional(),
  log: z.array(z.string().max(4096)).max(2000).optional(),
});

/** `POST /v1/admin/cluster/join-codes` (the body may be absent). */
export const JoinCodeRequestSchema = z.object({
  ttlSeconds: z.number().int().min(1).max(604800).optional(),
  endpoint: z.string().min(1).max(300).optional(),
});

const LinkSchema = z.object({
  name: z.string().min(1).max(64),
  kind: z.enum(["ethernet", "bond", "vlan"]).optional(),
  interface: z.string().min(1).max(64),
  parent: z.string().min(1).max(64).optional(),
  vlanId: z.number().int().min(1).max(4094).optional(),
  controller: z.string().min(1).max(64).optional(),
  bond: z
    .object({
      mode: z.enum(["active-backup", "802.3ad"]),
      xmitHashPolicy: z.string().max(64).optional(),
      miimonMs: z.number().int().min(0).optional(),
      lacpRate: z.string().max(16).optional(),
    })
    .optional(),
  addresses: z.array(z.string().max(64)).max(16).optional(),
  addressesAllocated: z.boolean().optional(),
  mtu: z.number().int().min(68).max(65535).optional(),
  purposes: z
    .array(z.enum(["oob", "mgmt", "storage", "overlay", "provider"]))
    .max(5)
    .optional(),
});

/** An assignment as an approval sends it. `role` takes any node role: the approval refuses all but hybrid at `role` (409). */
export const AssignmentSchema = z.object({
  name: z.string().min(1).max(63).optional(),
  role: z.enum(["control-plane", "hybrid", "hypervisor", "storage"]).optional(),
  rack: z.string().max(63).optional(),
  az: z.string().max(63).optional(),
  mgmt: z
    .object({
      interface: z.string().min(1).max(64).optional(),
      address: z.string().min(1).max(64).optional(),
      gateway: z.string().min(1).max(64).optional(),
      dns: z.array(z.string().max(64)).max(8).optional(),
    })
    .optional(),
  links: z.array(LinkSchema).max(32).optional(),
  disks: z
    .array(
      z.object({
        key: z.string().min(1).max(512),
        role: z.enum(["compute", "ceph-osd", "unused"]),
        pool: z.string().min(1).max(63).optional(),
        storageClass: z.string().min(1).max(63).optional(),
        confirm: z.string().max(512).optional(),
      }),
    )
    .max(64)
    .optional(),
  ntpServers: z.array(z.string().max(253)).max(8).optional(),
  provider: z
    .object({
      topology: z.enum(["bridged", "routed-host"]).optional(),
      upstreamInterface: z.string().min(1).max(64).optional(),
      vlan: z.number().int().min(1).max(4094).optional(),
    })
    .optional(),
  // Read-only in the spec: accepted (a console may send back what it got) and ignored.
  copiedFrom: z.string().optional(),
  copyNotes: z.array(z.string()).optional(),
});

/** `POST /v1/admin/cluster/joins/{joinId}/approve` (the body may be absent: all defaults). */
export const ApprovalSchema = z.object({
  assignment: AssignmentSchema.optional(),
  copyFrom: z.string().min(1).max(64).optional(),
});

/** `POST /v1/admin/cluster/joins/{joinId}/reject`. */
export const RejectionSchema = z.object({
  reason: z.string().min(1).max(1000),
});

/** `POST /v1/admin/cluster/joins/{joinId}/fail`. */
export const JoinFailureSchema = z.object({
  reason: z.string().min(1).max(1000),
});

/** `PUT /v1/admin/cluster/upgrade`. */
export const ClusterUpgradeSchema = z.object({
  inProgress: z.boolean(),
  retryAfterSeconds: z.number().int().min(1).max(86400).optional(),
});

/** A parsed approval. */
export type ApprovalInput = z.output<typeof ApprovalSchema>;
/** A parsed assignment. */
export type AssignmentInput = z.output<typeof AssignmentSchema>;
/** A parsed registration. */
export type RegistrationInput = z.output<typeof RegistrationRequestSchema>;
/** A parsed progress report. */
export type ProgressInput = z.output<typeof ProgressReportSchema>;

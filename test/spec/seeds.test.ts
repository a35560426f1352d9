// The seed pages (shared/seeds) are the source of truth for the four documented endpoints:
// every field, required flag, enum value and status they show must be in openapi.yaml.
// The lists below are read off those pages by hand.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

const spec = parse(readFileSync(new URL("../../openapi.yaml", import.meta.url), "utf8"));
const schemas = spec.components.schemas as Record<
  string,
  { properties?: Record<string, any>; required?: string[]; enum?: string[] }
>;

/** The properties of a schema, following allOf and $ref one level. */
function props(name: string): Record<string, any> {
  return schemas[name]?.properties ?? {};
}
function resolve(node: any): any {
  if (node?.$ref) return resolve(schemas[node.$ref.split("/").pop()]);
  if (node?.allOf) return Object.assign({}, ...node.allOf.map(resolve), { ...node, allOf: undefined });
  return node;
}

const seedFields: Record<string, { required?: string[]; optional?: string[] }> = {
  RegistrationRequest: {
    required: ["pake", "release"],
    optional: ["selfUpgrade", "hostname", "systemSerial", "inventory"],
  },
  CodeCheckRequest: { required: ["pake", "release"], optional: ["selfUpgrade"] },
  PakeProof: { required: ["session", "ke3"] },
  CodeCheck: { optional: ["clusterRelease", "expiresAt", "upgrade"] },
  Inventory: { optional: ["uefi", "disks", "nics", "cpu", "memoryBytes", "osDiskLayout"] },
  Disk: {
    required: ["name", "path"],
    optional: [
      "byId",
      "model",
      "serial",
      "wwn",
      "transport",
      "sizeBytes",
      "rotational",
      "removable",
      "readOnly",
      "mountpoints",
      "holders",
      "partitions",
      "stack",
    ],
  },
  DiskHolder: { required: ["kind", "device"], optional: ["detail"] },
  Partition: { required: ["number", "name", "path", "sizeBytes"], optional: ["fsType", "label", "partLabel"] },
  StackedDevice: { required: ["name", "path", "type"] },
  Nic: {
    required: ["name"],
    optional: [
      "mac",
      "permanentMac",
      "operState",
      "link",
      "speedMbps",
      "mtu",
      "driver",
      "addresses",
      "wireless",
      "routes",
    ],
  },
  Cpu: { optional: ["model", "sockets", "cores", "threads", "virtualization"] },
  Registration: { required: ["state", "pairingCode"], optional: ["waitReason", "reason", "upgrade", "delivery"] },
  Upgrade: { required: ["from", "to"], optional: ["source", "served"] },
  Delivery: { required: ["nodeId", "nodeYaml", "bundle"] },
  Bundle: {
    required: ["role", "nodes"],
    optional: [
      "clusterId",
      "parentDomain",
      "region",
      "dnsUpstreamServers",
      "caBundle",
      "nodeCert",
      "nodeKey",
      "postgresPassword",
      "adminEmail",
      "adminPassword",
      "openBaoToken",
      "openBaoNodeToken",
      "dnsEncryptionKey",
      "openBaoUnsealKey",
      "membershipGeneration",
      "vips",
    ],
  },
  ClusterNode: {
    required: ["nodeId", "role"],
    optional: ["az", "mgmtIp", "networks", "labels", "bootState", "bootPhase", "bootElapseMs", "readyAfterMs"],
  },
  NetworkBinding: { required: ["ip"], optional: ["interface"] },
  Vips: { optional: ["api", "postgres", "openbao", "ovnNb", "ovnSb", "vmselect", "providerGw"] },
  Problem: {
    required: ["type", "title", "status", "requestId", "code"],
    optional: ["detail", "instance", "issues", "errors", "details"],
  },
  PolicyIssue: { required: ["code", "statement", "detail"], optional: ["action"] },
  FieldError: { required: ["field", "message"] },
  JoinCodeRequest: { optional: ["ttlSeconds", "endpoint"] },
  MintedJoinCode: { required: ["joinCode", "endpoint", "code", "url"] },
  JoinCode: {
    optional: ["id", "selector", "attempts", "endpoint", "caFingerprint", "state", "revokedBy", "registrations"],
  },
  NodeJoin: {
    required: ["id", "codeId", "state", "pairingCode", "stalled", "steps", "createdAt", "updatedAt"],
    optional: [
      "hostname",
      "systemSerial",
      "release",
      "sourceAddr",
      "keyFingerprint",
      "inventory",
      "assignment",
      "nodeId",
      "waitReason",
      "upgrade",
      "approvedBy",
      "approvedAt",
      "rejectedBy",
      "rejectedAt",
      "reason",
      "deliveredAt",
      "lastSeenAt",
      "currentStep",
      "failedStep",
      "failedStepTitle",
      "failedError",
      "logTail",
      "expiresAt",
    ],
  },
  Assignment: {
    optional: [
      "name",
      "role",
      "rack",
      "az",
      "mgmt",
      "links",
      "disks",
      "ntpServers",
      "provider",
      "copiedFrom",
      "copyNotes",
    ],
  },
  MgmtLink: { optional: ["interface", "address", "gateway", "dns"] },
  Link: {
    required: ["name", "interface"],
    optional: ["kind", "parent", "vlanId", "controller", "bond", "addresses", "addressesAllocated", "mtu", "purposes"],
  },
  Bond: { required: ["mode"], optional: ["xmitHashPolicy", "miimonMs", "lacpRate"] },
  DiskAssignment: { required: ["key", "role"], optional: ["pool", "storageClass", "confirm"] },
  ProviderUplink: { optional: ["topology", "upstreamInterface", "vlan"] },
  Step: { required: ["name", "title", "status"], optional: ["message", "at"] },
};

const seedEnums: Array<[string, string[]]> = [
  [
    "JoinState",
    ["needs-upgrade", "pending", "approved", "delivering", "installing", "joined", "failed", "rejected", "expired"],
  ],
  ["NodeRole", ["control-plane", "hybrid", "hypervisor", "storage"]],
  ["Inventory.osDiskLayout", ["compute-tail", "whole-disk"]],
  ["ClusterNode.bootState", ["ready", "starting", "unreachable"]],
  ["Assignment.role", ["hybrid"]],
  ["Link.kind", ["ethernet", "bond", "vlan"]],
  ["Bond.mode", ["active-backup", "802.3ad"]],
  ["Link.purposes", ["oob", "mgmt", "storage", "overlay", "provider"]],
  ["DiskAssignment.role", ["compute", "ceph-osd", "unused"]],
  ["ProviderUplink.topology", ["bridged", "routed-host"]],
  ["Step.status", ["running", "done", "failed"]],
  ["JoinCodeState", ["live", "expired", "revoked"]],
];

const seedStatuses: Array<[string, string, string[]]> = [
  ["/v1/join/registrations", "post", ["200", "201", "400", "401", "409", "429", "503"]],
  ["/v1/join/code-checks", "post", ["200", "400", "401", "409", "429", "503"]],
  ["/v1/admin/cluster/join-codes", "post", ["201", "400", "403", "409", "503"]],
  ["/v1/admin/cluster/joins", "get", ["200", "403"]],
];

describe("openapi.yaml against the seed pages", () => {
  for (const [schema, { required = [], optional = [] }] of Object.entries(seedFields)) {
    it(`${schema} has every seeded field, with the seeded required flags`, () => {
      const have = props(schema);
      for (const field of [...required, ...optional]) expect(Object.keys(have), `${schema}.${field}`).toContain(field);
      for (const field of required)
        expect(schemas[schema]?.required ?? [], `${schema}.${field} required`).toContain(field);
    });
  }

  it.each(seedEnums)("%s has the seeded enum values", (where, values) => {
    const [schema, field] = where.split(".") as [string, string | undefined];
    let node = field ? resolve(props(schema)[field]) : resolve(schemas[schema]);
    if (node?.type === "array") node = resolve(node.items);
    expect([...(node?.enum ?? [])].sort()).toEqual([...values].sort());
  });

  it.each(seedStatuses)("%s %s answers every seeded status", (path, method, statuses) => {
    const responses = Object.keys(spec.paths[path][method].responses);
    for (const status of statuses) expect(responses).toContain(status);
  });

  it("marks every secret of the bundle and the minted code as sensitive", () => {
    for (const field of [
      "nodeKey",
      "postgresPassword",
      "adminPassword",
      "openBaoToken",
      "openBaoNodeToken",
      "dnsEncryptionKey",
      "openBaoUnsealKey",
    ]) {
      expect(props("Bundle")[field]["x-sensitive"], field).toBe(true);
    }
    expect(props("MintedJoinCode").code["x-sensitive"]).toBe(true);
  });

  it("puts Retry-After on 429 and 503, WWW-Authenticate on 401", () => {
    const responses = spec.components.responses;
    expect(responses.TooManyRequests.headers["Retry-After"]).toBeDefined();
    expect(responses.Unavailable.headers["Retry-After"]).toBeDefined();
    expect(responses.Unauthorized.headers["WWW-Authenticate"]).toBeDefined();
  });
});

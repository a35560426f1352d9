/**
 * Failures in plain words. Every SDK failure becomes a sentence saying what happened and what
 * to do, the server's own explanation (`detail`, written for people), the field errors, and a
 * reference line (problem code and request id) for a bug report. Branches on the error's
 * class and `code`, never on its message; the SDK's messages carry no token or code, and
 * operation names with path templates (`POST /v1/…/{joinId}/approve`) are never shown.
 * @module
 */

import { NetworkError, ResponseValidationError, StratumApiError, StratumError, TimeoutError } from "@stratum/join";
import type { FieldProblem } from "@stratum/join";

/** What kind of failure, for what the page does about it. */
export type FailureKind =
  /** No answer (refused, unreachable, CORS, timed out): it may pass, and clears when the server is back. */
  | "network"
  /** The token was not accepted: only signing in again helps. */
  | "auth"
  /** The server refused this request (field errors, a state conflict, a missing permission). */
  | "refused"
  /** The founder's disk is full, nothing was saved: it passes once space is freed, and clears then. */
  | "storage"
  /** Anything else: a server fault, an answer not understood. */
  | "other";

/** A failure, described for a person. */
export interface FailureReport {
  kind: FailureKind;
  /** What happened and what to do, in one or two sentences. */
  summary: string;
  /** The server's own explanation, when it gave one beyond the summary. */
  detail: string | undefined;
  /** Field errors at their paths (`mgmt.address`, `disks[1].confirm`, `endpoint`). */
  fields: FieldProblem[];
  /** "Code JOIN_APPROVAL_REFUSED, request req-5t2m8q1z", for a bug report. */
  reference: string | undefined;
}

/** What the failed call was trying to do, for the summary: "approve node-2 (nj-…)". */
export interface FailureContext {
  /** The action, as a verb phrase: "approve node-2 (nj-8w2k4m1p)". */
  action?: string;
  /** The API's base URL, for "is it running". */
  apiUrl?: string;
}

/** Describes any failure of an SDK call for a person. */
export function describeFailure(error: unknown, context: FailureContext = {}): FailureReport {
  const report = describe(error, context);
  return { ...report, summary: report.summary.charAt(0).toUpperCase() + report.summary.slice(1) };
}

function describe(error: unknown, context: FailureContext): FailureReport {
  const action = context.action ? `Could not ${context.action}: ` : "";
  if (error instanceof StratumApiError) {
    const reference = [`code ${error.code}`, error.requestId && `request ${error.requestId}`]
      .filter(Boolean)
      .join(", ");
    return {
      kind:
        error.status === 401
          ? "auth"
          : error.code === "STORAGE_UNAVAILABLE"
            ? "storage"
            : error.status >= 500 && error.code !== "RATE_LIMITED"
              ? "other"
              : "refused",
      summary: `${action}${refusalInWords(error)}`,
      detail: error.detail,
      fields: error.errors,
      reference: `Reference: ${reference}.`,
    };
  }
  if (error instanceof TimeoutError) {
    return network(`${action}the server took too long to answer. Try again in a moment.`);
  }
  if (error instanceof NetworkError) {
    // A browser hides why a request failed (refused, wrong URL, CORS); say where to look.
    const where = context.apiUrl ? ` at ${context.apiUrl}` : "";
    return network(
      `${action}the server${where} did not answer. Check that it is running and that it allows this page's address (CORS).`,
    );
  }
  if (error instanceof ResponseValidationError) {
    return other(`${action}the server's answer was not understood. Is this the Stratum admin API?`);
  }
  if (StratumError.is(error)) return other(`${action}${error.message}.`);
  return other(`${action}${error instanceof Error ? error.message : String(error)}.`);
}

function network(summary: string): FailureReport {
  return { kind: "network", summary, detail: undefined, fields: [], reference: undefined };
}

function other(summary: string): FailureReport {
  return { kind: "other", summary, detail: undefined, fields: [], reference: undefined };
}

/** The refusal in words, by problem code (the spec's list), with what to do next. */
function refusalInWords(error: StratumApiError): string {
  switch (error.code) {
    case "UNAUTHORIZED":
      return "the API token was not accepted. Check it and sign in again.";
    case "FORBIDDEN": {
      const permission = typeof error.details?.permission === "string" ? ` (it needs ${error.details.permission})` : "";
      return `this token is not allowed to do that${permission}.`;
    }
    case "INVALID_INPUT":
      return error.errors.length
        ? "some values are not valid. Fix the marked fields and try again."
        : "the request was not valid.";
    case "JOIN_APPROVAL_REFUSED":
      return "the cluster refused this assignment. Fix the marked fields and approve again.";
    case "JOIN_STATE_CONFLICT":
      return "the machine has moved on meanwhile; its card shows where it stands now.";
    case "NOT_FOUND":
      return "it no longer exists on the server.";
    case "RATE_LIMITED":
      return `too many requests.${error.retryAfter ? ` Wait ${error.retryAfter} s and try again.` : " Wait a moment and try again."}`;
    case "UPGRADE_IN_PROGRESS":
      return "the cluster is upgrading. Try again when the upgrade is over.";
    case "STORAGE_UNAVAILABLE":
      return "the cluster's disk is full, so nothing was saved. Free space on the founder, then try again.";
    case "INTERNAL":
      return "the server failed. Try again; if it keeps failing, quote the request id below.";
    default:
      return error.status >= 500 ? "the server failed. Try again in a moment." : "the server refused the request.";
  }
}

/**
 * A field path as a person reads it: `mgmt.address` → "Management address",
 * `disks[1].confirm` → "Disk 2: wipe confirmation", `links[0].interface` → "Link 1: interface".
 * An `assignment.` prefix (a schema refusal names the whole body's path) is dropped.
 */
export function fieldLabel(path: string): string {
  const field = path.replace(/^assignment\./, "");
  if (field === "") return "The request";
  const known = FIELD_LABELS[field];
  if (known) return known;
  const indexed = /^(disks|links|ntpServers|mgmt\.dns)\[(\d+)\](?:\.(.+))?$/.exec(field);
  if (indexed) {
    const [, list, index, rest] = indexed;
    const noun = { disks: "Disk", links: "Link", ntpServers: "NTP server", "mgmt.dns": "DNS server" }[list!]!;
    const part = rest ? `: ${FIELD_LABELS[`${list}[].${rest}`] ?? rest}` : "";
    return `${noun} ${Number(index) + 1}${part}`;
  }
  return field;
}

const FIELD_LABELS: Record<string, string> = {
  name: "Name",
  role: "Role",
  rack: "Rack",
  az: "Availability zone",
  copyFrom: "Copy from",
  "mgmt.interface": "Management interface",
  "mgmt.address": "Management address",
  "mgmt.gateway": "Management gateway",
  "provider.upstreamInterface": "VM uplink interface",
  "provider.topology": "VM network topology",
  "provider.vlan": "VM network VLAN",
  "disks[].key": "which disk",
  "disks[].role": "role",
  "disks[].confirm": "wipe confirmation",
  "disks[].pool": "pool",
  "disks[].storageClass": "storage class",
  "links[].interface": "interface",
  "links[].purposes": "purposes",
  "links[].addresses": "addresses",
  endpoint: "Endpoint",
  ttlSeconds: "Valid for",
  reason: "Reason",
};

/**
 * A throwaway test CA and a server leaf for 127.0.0.1, ::1 and localhost, for the HTTPS
 * mirror: made with the SDK's own PKI helpers (src/protocol/pki.ts), one implementation of each.
 */
import { createClusterCa, issueListenerCertificate } from "../../../src/server/ca.js";

/** PEMs of a test CA and a leaf it signed. */
export interface TestPki {
  caPem: string;
  certPem: string;
  keyPem: string;
}

/** Makes a CA and a leaf for 127.0.0.1, ::1 and localhost. */
export async function makeTestPki(): Promise<TestPki> {
  const ca = await createClusterCa({ commonName: "stratum release mirror test CA", validDays: 2 });
  const leaf = await issueListenerCertificate(ca, { hosts: ["127.0.0.1", "::1", "localhost"], validDays: 1 });
  return { caPem: ca.certPem, certPem: leaf.certPem, keyPem: leaf.keyPem };
}

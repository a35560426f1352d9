/**
 * Certificates and refusals of the listener check, as the tests of `src/protocol/pki.ts`, the
 * joiner's PKI and the founder's time use them.
 */
import { vi, expect } from "vitest";
import { JoinProtocolError } from "../../src/errors/index.js";
import { issueListenerCertificate, type ClusterCa, type IssuedCertificate } from "../../src/server/ca.js";

/** The `LISTENER_CERTIFICATE` error `fn` throws; fails the test when it throws another or none. */
export function listenerRefusal(fn: () => void): JoinProtocolError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(JoinProtocolError);
    expect((error as JoinProtocolError).code).toBe("LISTENER_CERTIFICATE");
    return error as JoinProtocolError;
  }
  throw new Error("expected a LISTENER_CERTIFICATE refusal");
}

/**
 * A listener leaf of `ca` for 127.0.0.1 issued when the clock said `at` (ms since the epoch):
 * valid from `at` − 5 min to `at` + `days`.
 */
export async function leafIssuedAt(ca: ClusterCa, at: number, days = 1): Promise<IssuedCertificate> {
  vi.useFakeTimers({ toFake: ["Date"], now: at });
  try {
    return await issueListenerCertificate(ca, { hosts: ["127.0.0.1"], validDays: days });
  } finally {
    vi.useRealTimers();
  }
}

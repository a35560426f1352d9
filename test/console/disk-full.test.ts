// The console's handling of a founder whose disk is full, without a browser: the words it
// shows, and the gate every write goes through, which sends a write refused with
// STORAGE_UNAVAILABLE again after Retry-After, pauses the others meanwhile, and says when the
// founder saves again.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { NetworkError, StratumApiError, type AdminClient } from "../../src/index.js";
import {
  diskFullText,
  isDiskFull,
  StorageGate,
  withStorageGate,
  type DiskFull,
} from "../../examples/console/src/disk-full.js";
import { describeFailure } from "../../examples/console/src/messages.js";

const NOW = Date.parse("2026-11-29T12:00:00Z");
const plain = (text: string) => text.replace(/\u00a0/g, " ");

/** The founder's answer while its disk is full, as the SDK raises it. */
function diskFull(retryAfter: number | undefined = 30): StratumApiError {
  return new StratumApiError(
    503,
    {
      code: "STORAGE_UNAVAILABLE",
      title: "Storage unavailable",
      detail: "The founder cannot write its state (its disk is full); nothing was changed. Retry later.",
      requestId: "req-9",
    },
    retryAfter,
  );
}

describe("a full disk in plain words", () => {
  it("says what it means and what to do, with the code only as a reference", () => {
    const report = describeFailure(diskFull(), { action: "approve node-2 (nj-1)" });
    expect(report).toMatchObject({
      kind: "storage",
      summary:
        "Could not approve node-2 (nj-1): the cluster's disk is full, so nothing was saved. Free space on the founder, then try again.",
      reference: "Reference: code STORAGE_UNAVAILABLE, request req-9.",
    });
    expect(report.summary).not.toMatch(/STORAGE_UNAVAILABLE|503/);
    expect(isDiskFull(diskFull())).toBe(true);
    expect(isDiskFull(new StratumApiError(503, { code: "INTERNAL" }))).toBe(false);
  });

  it("counts down to the next try", () => {
    const state: DiskFull = { since: NOW - 60_000, retryAt: NOW + 25_000, waiting: 1 };
    expect(plain(diskFullText(state, NOW))).toBe(
      "The cluster's disk is full: nothing can be saved until space is freed on the founder. Trying again in 25 s.",
    );
    expect(diskFullText(state, NOW + 24_500)).toMatch(/Trying again now…$/);
  });
});

describe("the gate every write goes through", () => {
  let states: (DiskFull | undefined)[];
  let saved: number;
  let gate: StorageGate;

  beforeEach(() => {
    vi.useFakeTimers({ now: NOW });
    states = [];
    saved = 0;
    gate = new StorageGate({ changed: (s) => states.push(s && { ...s }), saved: () => saved++ });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("sends a write again after Retry-After while the disk is full, and says when it saves again", async () => {
    const send = vi
      .fn<() => Promise<string>>()
      .mockRejectedValueOnce(diskFull(2))
      .mockRejectedValueOnce(diskFull(5))
      .mockResolvedValueOnce("approved");
    const written = gate.write(send);
    await vi.advanceTimersByTimeAsync(0);
    expect(send).toHaveBeenCalledTimes(1);
    expect(gate.state).toEqual({ since: NOW, retryAt: NOW + 2_000, waiting: 1 });
    // Not before Retry-After.
    await vi.advanceTimersByTimeAsync(1_999);
    expect(send).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(send).toHaveBeenCalledTimes(2);
    expect(gate.state).toEqual({ since: NOW, retryAt: NOW + 7_000, waiting: 1 });
    await vi.advanceTimersByTimeAsync(5_000);
    await expect(written).resolves.toBe("approved");
    expect(gate.state).toBeUndefined();
    expect(states.at(-1)).toBeUndefined();
    expect(saved).toBe(1);
  });

  it("waits 30 s without Retry-After, and passes any other failure through at once", async () => {
    const send = vi.fn<() => Promise<string>>().mockRejectedValueOnce(diskFull(undefined)).mockResolvedValue("ok");
    const written = gate.write(send);
    await vi.advanceTimersByTimeAsync(0);
    expect(gate.state?.retryAt).toBe(NOW + 30_000);
    await vi.advanceTimersByTimeAsync(30_000);
    await expect(written).resolves.toBe("ok");

    const refused = new StratumApiError(409, { code: "JOIN_STATE_CONFLICT" });
    await expect(gate.write(() => Promise.reject(refused))).rejects.toBe(refused);
    const lost = new NetworkError("no answer");
    await expect(gate.write(() => Promise.reject(lost))).rejects.toBe(lost);
    expect(gate.state).toBeUndefined();
  });

  it("gives up when stopped (the write rejects with the disk-full error) or aborted (with the signal's reason)", async () => {
    const full = diskFull(30);
    const stopped = gate.write(() => Promise.reject(full));
    const controller = new AbortController();
    const aborted = gate.write(() => Promise.reject(diskFull(30)), controller.signal);
    const settled = [stopped.catch((e: unknown) => e), aborted.catch((e: unknown) => e)];
    await vi.advanceTimersByTimeAsync(0);
    expect(gate.state?.waiting).toBe(2);
    controller.abort(new Error("closed"));
    expect(await settled[1]).toMatchObject({ message: "closed" });
    expect(gate.state?.waiting).toBe(1);
    gate.stop();
    expect(await settled[0]).toBe(full);
    // Nobody tries any more: the notice goes with the last one.
    expect(gate.state).toBeUndefined();
    expect(saved).toBe(0);
  });

  it("sends the client's writes through it, and its reads straight", async () => {
    const calls: string[] = [];
    let approvals = 0;
    const client = {
      approveNodeJoin: (joinId: string) => {
        calls.push(`approve ${joinId}`);
        return ++approvals === 1 ? Promise.reject(diskFull(1)) : Promise.resolve({ id: joinId });
      },
      listNodeJoins: () => {
        calls.push("list");
        return Promise.reject(diskFull(1));
      },
    } as unknown as AdminClient;
    const gated = withStorageGate(client, gate);
    const approved = gated.approveNodeJoin("nj-1", {}, {});
    await expect(gated.listNodeJoins()).rejects.toMatchObject({ code: "STORAGE_UNAVAILABLE" });
    await vi.advanceTimersByTimeAsync(1_000);
    await expect(approved).resolves.toEqual({ id: "nj-1" });
    expect(calls).toEqual(["approve nj-1", "list", "approve nj-1"]);
  });
});

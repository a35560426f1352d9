// The words and the threshold of a machine's clock warning (docs/protocol.md#founder-time),
// shared by the CLI and the console.
import { describe, expect, it } from "vitest";
import { CLOCK_TOLERANCE_SECONDS, clockIsOff, clockWarning, describeClockOffset } from "../../src/index.js";

describe("clock warnings", () => {
  it("warns past 5 minutes either way, not within", () => {
    expect(CLOCK_TOLERANCE_SECONDS).toBe(300);
    for (const within of [0, 1, -1, 299, -299, 300, -300]) expect(clockIsOff(within), String(within)).toBe(false);
    for (const off of [301, -301, 3 * 365 * 86_400, -365 * 86_400]) expect(clockIsOff(off), String(off)).toBe(true);
    expect(clockIsOff(Number.NaN)).toBe(false);
    expect(clockWarning({ offsetSeconds: 299 })).toBeUndefined();
    expect(clockWarning({ ntpSynchronized: false })).toBeUndefined();
    expect(clockWarning(undefined)).toBeUndefined();
  });

  it("says how far and which way, from the machine's side, in the largest whole unit", () => {
    // The offset is the founder's time minus the machine's: positive, the machine is behind.
    expect(describeClockOffset(3 * 365 * 86_400)).toBe("3 years behind the founder's");
    expect(describeClockOffset(-365 * 86_400)).toBe("1 year ahead of the founder's");
    expect(describeClockOffset(849_390_403)).toBe("27 years behind the founder's");
    expect(describeClockOffset(2 * 86_400 + 3_600)).toBe("2 days behind the founder's");
    expect(describeClockOffset(-7_200)).toBe("2 hours ahead of the founder's");
    expect(describeClockOffset(360)).toBe("6 minutes behind the founder's");
    expect(describeClockOffset(-5)).toBe("5 seconds ahead of the founder's");
    expect(clockWarning({ offsetSeconds: 94_608_000, ntpSynchronized: false })).toBe(
      "the machine's clock is 3 years behind the founder's (not synchronised by NTP): fix it",
    );
    expect(clockWarning({ offsetSeconds: -600, ntpSynchronized: true })).toBe(
      "the machine's clock is 10 minutes ahead of the founder's (though NTP says it is synchronised): fix it",
    );
    expect(clockWarning({ offsetSeconds: -600 })).toBe(
      "the machine's clock is 10 minutes ahead of the founder's: fix it",
    );
  });
});

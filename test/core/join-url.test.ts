import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JoinCodeError, StratumError } from "../../src/errors/index.js";
import { generateJoinCode, parseJoinCode } from "../../src/core/join-code.js";
import {
  DEFAULT_JOIN_PORT,
  formatEndpoint,
  formatJoinUrl,
  parseEndpoint,
  parseJoinUrl,
} from "../../src/core/join-url.js";
import { JoinUrlError } from "../../src/errors/input.js";

const SEED_URL = "stratum-join://192.0.2.240/4F7K-2Q9M-ABD";

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

function urlError(fn: () => unknown): JoinUrlError {
  const e = thrown(fn);
  expect(e).toBeInstanceOf(JoinUrlError);
  expect((e as JoinUrlError).code).toBe("JOIN_URL_MALFORMED");
  expect(StratumError.is(e)).toBe(true);
  return e as JoinUrlError;
}

describe("parseJoinUrl", () => {
  it("reads the seed example", () => {
    const u = parseJoinUrl(SEED_URL);
    expect(u.host).toBe("192.0.2.240");
    expect(u.port).toBe(9444);
    expect(u.endpoint).toBe("192.0.2.240:9444");
    expect(u.code).toEqual(parseJoinCode("4F7K-2Q9M-ABD"));
  });

  it("reads ports, names, upper case (QR alphanumeric mode), white space and a trailing slash", () => {
    expect(parseJoinUrl("stratum-join://join.example.com:10443/4f7k2q9mabd")).toMatchObject({
      host: "join.example.com",
      port: 10443,
      endpoint: "join.example.com:10443",
    });
    expect(parseJoinUrl("  STRATUM-JOIN://JOIN.EXAMPLE.COM/4F7K-2Q9M-ABD/\n")).toMatchObject({
      host: "join.example.com",
      port: DEFAULT_JOIN_PORT,
    });
  });

  it("reads IPv6 hosts in brackets", () => {
    const u = parseJoinUrl("stratum-join://[FD00::1]/4F7K-2Q9M-ABD");
    expect(u).toMatchObject({ host: "fd00::1", port: 9444, endpoint: "[fd00::1]:9444" });
    expect(parseJoinUrl("stratum-join://[2001:db8::2:1]:8443/4F7K-2Q9M-ABD")).toMatchObject({
      host: "2001:db8::2:1",
      port: 8443,
      endpoint: "[2001:db8::2:1]:8443",
    });
    expect(parseJoinUrl("stratum-join://[::ffff:192.0.2.1]/4F7K-2Q9M-ABD").host).toBe("::ffff:192.0.2.1");
    expect(parseJoinUrl("stratum-join://[1:2:3:4:5:6:7:8]/4F7K-2Q9M-ABD").host).toBe("1:2:3:4:5:6:7:8");
  });

  it("refuses bad structure with what is wrong", () => {
    const cases: Array<[string, string]> = [
      ["", "empty"],
      ["https://192.0.2.240/4F7K-2Q9M-ABD", "scheme"],
      ["stratum-join:192.0.2.240/4F7K-2Q9M-ABD", "scheme"],
      ["stratum-join:///4F7K-2Q9M-ABD", "host"],
      ["stratum-join://fd00::1/4F7K-2Q9M-ABD", "host"],
      ["stratum-join://[fd00::1/4F7K-2Q9M-ABD", "host"],
      ["stratum-join://[fd00::1%25eth0]/4F7K-2Q9M-ABD", "host"],
      ["stratum-join://[1:2:3:4:5:6:7:8:9]/4F7K-2Q9M-ABD", "host"],
      ["stratum-join://[192.0.2.1]/4F7K-2Q9M-ABD", "host"],
      ["stratum-join://[fd00::1]x/4F7K-2Q9M-ABD", "host"],
      ["stratum-join://user@host/4F7K-2Q9M-ABD", "host"],
      ["stratum-join://192.0.2.256/4F7K-2Q9M-ABD", "host"],
      ["stratum-join://192.0.2/4F7K-2Q9M-ABD", "host"],
      ["stratum-join://bad_host/4F7K-2Q9M-ABD", "host"],
      ["stratum-join://-bad.example/4F7K-2Q9M-ABD", "host"],
      ["stratum-join://host:/4F7K-2Q9M-ABD", "port"],
      ["stratum-join://host:0/4F7K-2Q9M-ABD", "port"],
      ["stratum-join://host:65536/4F7K-2Q9M-ABD", "port"],
      ["stratum-join://host:94a4/4F7K-2Q9M-ABD", "port"],
      ["stratum-join://[fd00::1]:/4F7K-2Q9M-ABD", "port"],
      ["stratum-join://192.0.2.240", "path"],
      ["stratum-join://192.0.2.240/", "path"],
      ["stratum-join://192.0.2.240/join/4F7K-2Q9M-ABD", "path"],
      ["stratum-join://192.0.2.240/4F7K-2Q9M-ABD?x=1", "path"],
      ["stratum-join://192.0.2.240/4F7K-2Q9M-ABD#x", "path"],
    ];
    for (const [input, reason] of cases) {
      const e = urlError(() => parseJoinUrl(input));
      expect(e.reason, input).toBe(reason);
      expect(e.message).not.toContain("4F7K");
    }
  });

  it("lets the code's JoinCodeError through, with positions in the URL", () => {
    const bad = thrown(() => parseJoinUrl("stratum-join://192.0.2.240/4F7K-2Q9M-ABC"));
    expect(bad).toBeInstanceOf(JoinCodeError);
    expect((bad as JoinCodeError).reason).toBe("check");

    const swapped = thrown(() => parseJoinUrl("stratum-join://192.0.2.240/F47K-2Q9M-ABD")) as JoinCodeError;
    expect(swapped.suggestion).toBe("4F7K-2Q9M-ABD");

    const url = " stratum-join://[fd00::1]:9444/4F7K-2Q9M-ABU";
    const e = thrown(() => parseJoinUrl(url)) as JoinCodeError;
    expect(e).toBeInstanceOf(JoinCodeError);
    expect(e.reason).toBe("character");
    expect(e.character).toBe("U");
    expect(e.position).toBe(url.length);
    expect(url[e.position! - 1]).toBe("U");
    expect(e.message).toContain(`position ${url.length}`);
    expect(e.message).not.toContain("4F7K");
  });

  it("round-trips with formatJoinUrl", () => {
    const host = fc.oneof(
      fc.ipV4(),
      fc.ipV6(),
      fc.domain().filter((d) => !/\.\d+$/.test(d)),
    );
    fc.assert(
      fc.property(host, fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }), (h, port) => {
        const code = generateJoinCode();
        const url = formatJoinUrl({ host: h, port, code });
        const back = parseJoinUrl(url);
        expect(back.host).toBe(h.toLowerCase());
        expect(back.port).toBe(port ?? 9444);
        expect(back.code).toEqual(code);
        expect(url.includes(":9444/")).toBe(false);
        expect(formatJoinUrl({ endpoint: back.endpoint, code: back.code.code })).toBe(url);
      }),
      { numRuns: 500 },
    );
  });
});

describe("formatJoinUrl", () => {
  it("writes the seed example, the port omitted when it is 9444", () => {
    expect(formatJoinUrl({ endpoint: "192.0.2.240", code: "4F7K2Q9MABD" })).toBe(SEED_URL);
    expect(formatJoinUrl({ endpoint: "192.0.2.240:9444", code: "4f7k-2q9m-abd" })).toBe(SEED_URL);
    expect(formatJoinUrl({ host: "192.0.2.240", port: 9444, code: parseJoinCode("4F7K-2Q9M-ABD") })).toBe(SEED_URL);
    expect(formatJoinUrl({ host: "192.0.2.240", port: 8443, code: "4F7K2Q9MABD" })).toBe(
      "stratum-join://192.0.2.240:8443/4F7K-2Q9M-ABD",
    );
    expect(formatJoinUrl({ host: "fd00::1", code: "4F7K2Q9MABD" })).toBe("stratum-join://[fd00::1]/4F7K-2Q9M-ABD");
    expect(formatJoinUrl({ endpoint: "[fd00::1]:1", code: "4F7K2Q9MABD" })).toBe(
      "stratum-join://[fd00::1]:1/4F7K-2Q9M-ABD",
    );
  });

  it("refuses a bad code or host", () => {
    expect(thrown(() => formatJoinUrl({ endpoint: "192.0.2.240", code: "4F7K2Q9MABC" }))).toBeInstanceOf(JoinCodeError);
    expect(urlError(() => formatJoinUrl({ host: "a b", code: "4F7K2Q9MABD" })).reason).toBe("host");
    expect(urlError(() => formatJoinUrl({ host: "h", port: 70000, code: "4F7K2Q9MABD" })).reason).toBe("port");
  });
});

describe("endpoints", () => {
  it("parses host and host:port, default 9444", () => {
    expect(parseEndpoint("192.0.2.240")).toEqual({ host: "192.0.2.240", port: 9444, endpoint: "192.0.2.240:9444" });
    expect(parseEndpoint(" Join.Example.com:1 ")).toEqual({
      host: "join.example.com",
      port: 1,
      endpoint: "join.example.com:1",
    });
    expect(parseEndpoint("[fd00::1]")).toEqual({ host: "fd00::1", port: 9444, endpoint: "[fd00::1]:9444" });
    expect(parseEndpoint("[fd00::1]:9445")).toEqual({ host: "fd00::1", port: 9445, endpoint: "[fd00::1]:9445" });
    // A bare IPv6 address cannot carry a port, so it is read as the host alone.
    expect(parseEndpoint("fd00::1")).toEqual({ host: "fd00::1", port: 9444, endpoint: "[fd00::1]:9444" });
  });

  it("refuses malformed endpoints", () => {
    for (const [input, reason] of [
      ["", "empty"],
      ["https://host", "host"],
      ["host/path", "host"],
      ["host:99999", "port"],
      ["fd00::1::2", "host"],
      ["a..b", "host"],
    ] as const) {
      expect(urlError(() => parseEndpoint(input)).reason, input).toBe(reason);
    }
  });

  it("formats the way people type them", () => {
    expect(formatEndpoint({ host: "192.0.2.240" })).toBe("192.0.2.240");
    expect(formatEndpoint({ host: "192.0.2.240", port: 9444 })).toBe("192.0.2.240");
    expect(formatEndpoint({ host: "192.0.2.240", port: 9444 }, { includeDefaultPort: true })).toBe("192.0.2.240:9444");
    expect(formatEndpoint({ host: "fd00::1", port: 9445 })).toBe("[fd00::1]:9445");
    expect(formatEndpoint({ host: "[fd00::1]" })).toBe("[fd00::1]");
    expect(formatEndpoint(parseEndpoint("[FD00::1]:9444"))).toBe("[fd00::1]");
  });
});

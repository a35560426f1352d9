/**
 * Choosing the proxy of a mirror request: the variables curl, npm and undici read, the proxy
 * URL (credentials, default port, refused schemes, no secret in an error) and NO_PROXY.
 */
import { describe, expect, it } from "vitest";
import { ReleaseArgumentError } from "../../src/errors/index.js";
import { bypassesProxy, chooseProxy, parseProxyUrl } from "../../src/transport/proxy.js";

const MIRROR = { host: "mirror.example.com", port: 443 };

describe("NO_PROXY matching", () => {
  const cases: Array<[noProxy: string, host: string, port: number, bypass: boolean]> = [
    ["*", "anything.example", 443, true],
    ["example.com", "example.com", 443, true],
    ["example.com", "mirror.example.com", 443, true],
    ["example.com", "deep.mirror.example.com", 443, true],
    [".example.com", "mirror.example.com", 443, true],
    [".example.com", "example.com", 443, true],
    ["*.example.com", "mirror.example.com", 443, true],
    ["example.com", "badexample.com", 443, false],
    ["example.com", "example.com.evil.net", 443, false],
    ["EXAMPLE.com", "Mirror.Example.COM", 443, true],
    ["example.com.", "mirror.example.com", 443, true],
    ["example.com", "mirror.example.com.", 443, true],
    ["other.org, example.com", "mirror.example.com", 443, true],
    ["other.org example.com", "mirror.example.com", 443, true],
    ["other.org,,  ", "mirror.example.com", 443, false],
    ["", "mirror.example.com", 443, false],
    ["example.com:8443", "mirror.example.com", 8443, true],
    ["example.com:8443", "mirror.example.com", 443, false],
    ["10.1.2.3", "10.1.2.3", 443, true],
    ["10.1.2.3", "10.1.2.4", 443, false],
    ["10.1.2.3:443", "10.1.2.3", 443, true],
    ["10.1.2.3:443", "10.1.2.3", 8443, false],
    ["10.0.0.0/8", "10.200.3.4", 443, true],
    ["10.0.0.0/8", "11.0.0.1", 443, false],
    ["192.168.1.0/24", "192.168.1.255", 443, true],
    ["192.168.1.0/24", "192.168.2.1", 443, false],
    ["::1", "::1", 443, true],
    ["[::1]", "::1", 443, true],
    ["[::1]", "[::1]", 443, true],
    ["0:0:0:0:0:0:0:1", "::1", 443, true],
    ["[::1]:8443", "::1", 8443, true],
    ["[::1]:8443", "::1", 443, false],
    ["fd00::/8", "fd12:3456::1", 443, true],
    ["fd00::/8", "fe80::1", 443, false],
    // names are not resolved: an address entry never matches a name, nor a name an address
    ["127.0.0.1", "localhost", 443, false],
    ["localhost", "127.0.0.1", 443, false],
    ["10.0.0.0/8", "ten.example", 443, false],
    // a domain entry does not match an address that merely ends like it
    ["0.0.1", "10.0.0.1", 443, false],
    // malformed entries are ignored, not fatal
    ["10.0.0.0/99, [::1, example.com", "mirror.example.com", 443, true],
    ["10.0.0.0/99", "10.0.0.1", 443, false],
  ];
  it.each(cases)("NO_PROXY=%j, %s:%i → bypass %s", (noProxy, host, port, bypass) => {
    expect(bypassesProxy(noProxy, host, port)).toBe(bypass);
  });
});

describe("the proxy of a mirror request", () => {
  it("reads https_proxy, HTTPS_PROXY, then http_proxy, HTTP_PROXY; lower case first; empty is unset", () => {
    const pick = (env: NodeJS.ProcessEnv) => chooseProxy(undefined, MIRROR, env)?.display;
    expect(pick({})).toBeUndefined();
    expect(pick({ HTTPS_PROXY: "http://a:1" })).toBe("http://a:1");
    expect(pick({ https_proxy: "http://b:1", HTTPS_PROXY: "http://a:1" })).toBe("http://b:1");
    expect(pick({ HTTP_PROXY: "http://c:1" })).toBe("http://c:1");
    expect(pick({ http_proxy: "http://d:1", HTTP_PROXY: "http://c:1" })).toBe("http://d:1");
    expect(pick({ HTTP_PROXY: "http://c:1", HTTPS_PROXY: "http://a:1" })).toBe("http://a:1");
    expect(pick({ https_proxy: "", HTTPS_PROXY: "http://a:1" })).toBe("http://a:1");
    expect(pick({ HTTPS_PROXY: "  " })).toBeUndefined();
  });

  it("no_proxy before NO_PROXY, as curl; an explicit proxy ignores both; false ignores the environment", () => {
    const env = { HTTPS_PROXY: "http://p:3128" };
    expect(chooseProxy(undefined, MIRROR, { ...env, NO_PROXY: "example.com" })).toBeUndefined();
    expect(chooseProxy(undefined, MIRROR, { ...env, no_proxy: "other.org", NO_PROXY: "example.com" })).toBeDefined();
    expect(chooseProxy("http://q:1", MIRROR, { ...env, NO_PROXY: "*" })?.display).toBe("http://q:1");
    expect(chooseProxy(false, MIRROR, env)).toBeUndefined();
  });

  it("parses the proxy URL: port 1080 by default (as curl), scheme-less host:port, IPv6, percent-encoded credentials", () => {
    expect(parseProxyUrl("http://proxy.corp", "x")).toEqual({
      host: "proxy.corp",
      port: 1080,
      display: "http://proxy.corp",
    });
    expect(parseProxyUrl("proxy.corp:3128", "x")).toMatchObject({ host: "proxy.corp", port: 3128 });
    expect(parseProxyUrl("http://[fd00::1]:3128/", "x")).toMatchObject({
      host: "fd00::1",
      port: 3128,
      display: "http://[fd00::1]:3128",
    });
    const withCredentials = parseProxyUrl("http://us%40er:p%3Ass@proxy.corp:3128", "x");
    expect(withCredentials.display).toBe("http://proxy.corp:3128");
    expect(withCredentials.authorization).toBe(`Basic ${Buffer.from("us@er:p:ss").toString("base64")}`);
  });

  it("refuses what is not an http:// proxy, never echoing credentials", () => {
    for (const bad of [
      "https://u:hunter2@proxy:443",
      "socks5://u:hunter2@proxy:1080",
      "http://u:hunter2@proxy:3128/path",
      "http://u:hunter2@[bad",
    ]) {
      let error: unknown;
      try {
        chooseProxy(undefined, MIRROR, { HTTPS_PROXY: bad });
      } catch (e) {
        error = e;
      }
      expect(error, bad).toBeInstanceOf(ReleaseArgumentError);
      expect((error as Error).message).toContain("HTTPS_PROXY");
      expect((error as Error).message).not.toContain("hunter2");
    }
  });
});

describe("NO_PROXY entries: only well-formed ones match", () => {
  const cases: Array<[noProxy: string, host: string, port: number, bypass: boolean]> = [
    // an entry that is only a dot or a wildcard dot names no domain
    [".", "example.com", 443, false],
    ["*.", "example.com", 443, false],
    [".", "example.com..", 443, false],
    // a port is all digits, after the one colon of a name
    ["example.com:443x", "mirror.example.com", 443, false],
    [":443", "443", 443, false],
    ["example.com:", "mirror.example.com", 443, false],
    // brackets hold an IPv6 literal whole: one bracket is no literal, and nothing may follow
    ["::1", "[::1x", 443, false],
    ["::1", "x::1]", 443, false],
    ["[::1]x", "::1", 443, false],
    ["x[::1]", "::1", 443, false],
    ["[::1]:44x", "::1", 443, false],
    // a CIDR is an address, a slash and a prefix no longer than the family's
    ["10.0.0.1/32", "10.0.0.1", 443, true],
    ["10.0.0.1/32", "10.0.0.2", 443, false],
    ["10.0.0.0/33", "10.0.0.1", 443, false],
    ["fd00::/64", "fd00::1", 443, true],
    ["fd00::/64", "fd00:0:0:1::1", 443, false],
    ["::1/128", "::1", 443, true],
    ["::/129", "::1", 443, false],
    ["ten.example/8", "10.0.0.1", 443, false],
    ["10.0.0.0/8x", "10.0.0.1", 443, false],
    ["10.0.0.0/x8", "10.0.0.1", 443, false],
    ["/8", "10.0.0.1", 443, false],
    // separators: commas and white space, in runs
    [" ,\texample.com,\n", "mirror.example.com", 443, true],
    ["other.org,,example.com", "mirror.example.com", 443, true],
  ];
  it.each(cases)("NO_PROXY=%j, %s:%i → bypass %s", (noProxy, host, port, bypass) => {
    expect(bypassesProxy(noProxy, host, port)).toBe(bypass);
  });
});

describe("the proxy URL: what a refusal says, and what is sent", () => {
  const refusal = (run: () => unknown): string => {
    try {
      run();
    } catch (error) {
      expect(error).toBeInstanceOf(ReleaseArgumentError);
      return (error as Error).message;
    }
    throw new Error("expected a refusal");
  };

  it("a refusal names where the URL came from and the proxy, never its credentials", () => {
    expect(refusal(() => chooseProxy("https://u:hunter2@proxy:443", MIRROR, {}))).toBe(
      "the proxy option names https://proxy: only an http:// proxy is supported (the mirror's TLS runs inside its CONNECT tunnel)",
    );
    expect(refusal(() => chooseProxy(undefined, MIRROR, { https_proxy: "http://u:hunter2@proxy:3128/x?y" }))).toBe(
      "https_proxy names http://proxy:3128 with a path: a proxy URL is http://[user:password@]host[:port]",
    );
    for (const withQuery of ["http://proxy:3128?x", "http://proxy:3128#x", "http://proxy:3128/p"]) {
      expect(refusal(() => parseProxyUrl(withQuery, "x"))).toMatch(/^x names http:\/\/proxy:3128 with a path/);
    }
    expect(refusal(() => chooseProxy("http://[bad", MIRROR, {}))).toBe("the proxy option is not a proxy URL");
  });

  it("credentials that are not valid percent-encoding are refused without being shown", () => {
    const message = refusal(() => chooseProxy(undefined, MIRROR, { HTTPS_PROXY: "http://us%ZZer:hunter2@proxy:3128" }));
    expect(message).toBe("HTTPS_PROXY: the credentials of http://proxy:3128 are not valid percent-encoding");
  });

  it("a user without a password, or a password without a user, is still sent", () => {
    const basic = (credentials: string) => `Basic ${Buffer.from(credentials).toString("base64")}`;
    expect(parseProxyUrl("http://user@proxy:3128", "x").authorization).toBe(basic("user:"));
    expect(parseProxyUrl("http://:secret@proxy:3128", "x").authorization).toBe(basic(":secret"));
    expect(parseProxyUrl("http://us%C3%A9r:p%C3%A4ss@proxy:3128", "x").authorization).toBe(basic("usér:päss"));
    expect(parseProxyUrl("http://proxy:3128", "x").authorization).toBeUndefined();
  });

  it("the variable's value is read without the white space around it", () => {
    expect(chooseProxy(undefined, MIRROR, { HTTPS_PROXY: "  http://proxy:3128\n" })).toMatchObject({
      host: "proxy",
      port: 3128,
      display: "http://proxy:3128",
    });
    expect(chooseProxy(undefined, MIRROR, { HTTPS_PROXY: " proxy:3128 " })).toMatchObject({
      host: "proxy",
      port: 3128,
    });
  });
});

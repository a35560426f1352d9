// What a person sees at an 80-column terminal: the CLI runs as a process in a pseudo-terminal
// (`script`), and the screen it leaves is checked: help that fits, colour on a terminal and
// not in a pipe or with NO_COLOR, the retry line that updates in place while the listener is
// down and the "reconnected" line after, each state once, the suggested fix of a mistyped code
// on a terminal only, Ctrl-C → 130.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { COMMANDS, runCli } from "../../src/cli/run.js";
import { stripAnsi } from "../../src/cli/style.js";
import { expectInstalled } from "../machine/tools.js";
import { type TestServer } from "../helpers/reference-server.js";
import { startUnsealingHarness } from "../node/machine-secrets.js";
import { startSwtpm, type Swtpm } from "../node/swtpm.js";
import { buildCli, inPipe, inTerminal, inTerminalShell, killAll, removeCli, screen, shellQuote } from "./process.js";

const ESC = "\x1b[";
let cli: string;
let tmp: string;

beforeAll(async () => {
  expectInstalled("bsdutils"); // `script`, the terminal
  tmp = mkdtempSync(join(tmpdir(), "stratum-cli-tty-"));
  cli = await buildCli();
});
afterEach(killAll);
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
  if (cli) removeCli(cli);
});

/** The screen lines wider than 80 columns. */
const tooWide = (lines: readonly string[]) => lines.filter((line) => [...line].length > 80);

describe("help at 80 columns", () => {
  it("help fits 80 columns on a terminal, in colour: commands grouped, examples, exit codes", async () => {
    const helps = [["--help"], ["help", "exit-codes"], ["register", "--help"], ["admin", "approve", "--help"]];
    // One terminal session for all of them (each a process of its own), a marker between.
    const node = shellQuote(process.execPath);
    const command = helps
      .map((args) => `echo '=== ${args.join(" ")}'; ${node} ${shellQuote(cli)} ${args.map(shellQuote).join(" ")}`)
      .join("; ");
    const run = inTerminalShell(command);
    expect(await run.exited, run.out()).toBe(0);
    const raw = run.out();
    const lines = screen(raw);
    expect(tooWide(lines)).toEqual([]);
    // Colour and emphasis: the headings are bold.
    expect(raw).toContain(`${ESC}1mUsage:`);
    // Wrapped to the width, not merely short: the register help has lines near it.
    expect(lines.some((line) => line.length >= 70)).toBe(true);
    const section = (from: string, to?: string) =>
      lines.slice(lines.indexOf(from), to ? lines.indexOf(to) : undefined).join("\n");
    const main = section("=== --help", "=== help exit-codes");
    expect(main).toContain("On the joining machine:");
    expect(main).toContain("On the founder: the admin API");
    expect(main).toMatch(/Exit codes:\n\s+0 {2}success/);
    expect(main).toMatch(/ 10 {2}possible attack/);
    expect(section("=== help exit-codes", "=== register --help")).toContain("JOIN_BINDING_FAILED");
    expect(section("=== register --help", "=== admin approve --help")).toMatch(
      /Examples:\n {2}# .+\n {2}stratum-join register /,
    );
  });

  it("every command's help, at 80 columns, has no line wider and shows examples", async () => {
    for (const command of COMMANDS) {
      let stdout = "";
      const code = await runCli([...command.path, "--help"], {
        stdout: { write: (t: string) => (stdout += t) },
        stderr: { write: () => undefined },
        env: {},
        isTTY: true,
        columns: 80,
      });
      expect(code).toBe(0);
      const lines = screen(stdout);
      expect(tooWide(lines), command.path.join(" ")).toEqual([]);
      expect(stdout).toContain(`${ESC}1mExamples:`);
      expect(lines.join("\n"), command.path.join(" ")).toMatch(/Examples:\n {2}# .+\n {2}\S/);
    }
  });

  it("no colour in a pipe or with NO_COLOR; FORCE_COLOR forces it", async () => {
    const piped = inPipe(cli, ["--help"]);
    expect(await piped.exited).toBe(0);
    expect(piped.out()).toContain("Usage: stratum-join");
    expect(piped.out()).not.toContain("\x1b");
    // Unknown width in a pipe: 80 columns.
    expect(tooWide(piped.out().split("\n"))).toEqual([]);
    const noColour = inTerminal(cli, ["register", "--help"], { NO_COLOR: "1" });
    expect(await noColour.exited).toBe(0);
    expect(noColour.out()).toContain("Usage: stratum-join register");
    expect(noColour.out()).not.toContain(ESC);
    const forced = inPipe(cli, ["--help"], { FORCE_COLOR: "1" });
    expect(await forced.exited).toBe(0);
    expect(forced.out()).toContain(`${ESC}1m`);
  });
});

describe("errors on a terminal", () => {
  it("a mistyped code's fix is shown on a terminal, never in --json or a pipe", async () => {
    const tty = inTerminal(cli, ["code", "check", "4F7K-2Q9M-BAD"]);
    expect(await tty.exited).toBe(3);
    expect(screen(tty.out()).join("\n")).toContain("did you mean 4F7K-2Q9M-ABD?");
    expect(tty.out()).toContain(ESC); // in colour
    const json = inTerminal(cli, ["code", "check", "4F7K-2Q9M-BAD", "--json"]);
    expect(await json.exited).toBe(3);
    expect(json.out()).toContain('"JOIN_CODE_MALFORMED"');
    expect(json.out()).not.toContain("4F7K-2Q9M-ABD");
    expect(json.out()).not.toContain(ESC);
    const piped = inPipe(cli, ["code", "check", "4F7K-2Q9M-BAD"]);
    expect(await piped.exited).toBe(3);
    expect(piped.err()).toContain("JOIN_CODE_MALFORMED");
    expect(piped.err()).not.toContain("4F7K-2Q9M-ABD");
    expect(piped.err()).not.toContain("\x1b");
  });

  it("an error is wrapped to the terminal and followed by what to do next", async () => {
    const run = inTerminal(cli, ["admin", "joins", "--api", "http://127.0.0.1:9", "--token-file", "/nonexistent"]);
    expect(await run.exited).toBe(15);
    const lines = screen(run.out());
    expect(tooWide(lines)).toEqual([]);
    expect(lines.join("\n")).toMatch(/FILE_ERROR: cannot read the token file \/nonexistent: ENOENT/);
    expect(lines.some((line) => line.startsWith("→ "))).toBe(true);
  });
});

/** A TCP relay in front of the join listener that can be cut and restored, on the same port. */
class Relay {
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  port = 0;
  constructor(readonly target: { host: string; port: number }) {}

  async up(): Promise<void> {
    this.#server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on("error", () => undefined);
        socket.on("close", () => {
          client.destroy();
          upstream.destroy();
          this.#sockets.delete(socket);
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.#server!.listen(this.port, "127.0.0.1", resolve));
    this.port = (this.#server.address() as { port: number }).port;
  }

  async down(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const socket of this.#sockets) socket.destroy();
    if (server) await new Promise((resolve) => server.close(resolve));
  }
}

describe("waiting on a terminal, against a reference server", () => {
  let h: TestServer;
  let relay: Relay;
  let url: string;
  let tpm: Swtpm;
  let homes: string;
  beforeAll(async () => {
    [h, tpm] = await Promise.all([startUnsealingHarness({ timing: { tickMs: 100 } }), startSwtpm()]);
    homes = mkdtempSync(join(tmpdir(), "sj-"));
    const [host, port] = h.server.joinEndpoint.split(":");
    relay = new Relay({ host: host!, port: Number(port) });
    await relay.up();
    url = (await h.admin.mintJoinCode({ endpoint: `127.0.0.1:${relay.port}` })).url;
  });
  afterAll(async () => {
    await relay?.down();
    await Promise.all([h?.dispose(), tpm?.stop()]);
    if (homes) rmSync(homes, { recursive: true, force: true });
  });

  /**
   * A `--secrets` file with paths no longer than a real machine's (/etc/stratum/…, under a
   * short temporary directory), so the lines about them are as long as there.
   */
  function secretsFile(): string {
    const at = (name: string) => join(homes, name);
    const file = at("secrets.json");
    writeFileSync(
      file,
      JSON.stringify({
        adminPassword: [{ env: at("cp.env"), name: "STRATUM_IAM_ADMIN_PASSWORD" }, { file: at("bootstrap.txt") }],
        openBaoToken: { env: at("cp.env"), name: "STRATUM_OPENBAO_TOKEN" },
        openBaoNodeToken: { file: at("node.token") },
        dnsEncryptionKey: { env: at("axdnsd.env"), name: "ENCRYPTION_KEY" },
        postgresPassword: { file: at("pg") },
        openBaoUnsealKey: { tpm: at("unseal.sealed") },
      }),
    );
    return file;
  }

  it("one line per state; while the listener is down one updating retry line, then 'reconnected'", async () => {
    // A directory as short as a real one (/var/lib/stratum-join), so the lines are as long.
    const dir = join(tmp, "m1");
    const run = inTerminal(
      cli,
      ["register", "--identity", "m1", "--release", "0.6.0", "--wait", "delivering", "--secrets", secretsFile()],
      { STRATUM_JOIN_URL: url, TPM2TOOLS_TCTI: tpm.tcti },
      { cwd: tmp },
    );
    await run.until((out) => out.includes("join session saved"), "the wait to begin");
    await relay.down();
    // The line is drawn again and again (retries, and the countdown between them)...
    await run.until(
      (out) =>
        (out.match(/retrying in \d+ s…/g) ?? []).length >= 3 &&
        /unreachable \((ECONNREFUSED|ECONNRESET)\), retrying in \d+ s…$/.test(stripAnsi(out)),
      "the retry line to update",
    );
    // ...in place: the screen holds one such line.
    const during = screen(run.out());
    expect(
      during.filter((line) => line.includes("unreachable")),
      during.join("\n"),
    ).toEqual([
      expect.stringMatching(
        new RegExp(
          `^listener 127\\.0\\.0\\.1:${relay.port} unreachable \\((ECONNREFUSED|ECONNRESET)\\), retrying in \\d+ s…$`,
        ),
      ),
    ]);
    await relay.up();
    await run.until((out) => out.includes("reconnected"), "the reconnected line");

    const { joinId } = JSON.parse(readFileSync(join(dir, "session.json"), "utf8")) as { joinId: string };
    await h.admin.approveNodeJoin(joinId);
    expect(await run.exited, run.out()).toBe(0);
    const lines = screen(run.out());
    expect(tooWide(lines), lines.join("\n")).toEqual([]);
    expect(lines.filter((line) => line.includes("unreachable"))).toEqual([]);
    expect(lines.filter((line) => line.startsWith("reconnected to"))).toHaveLength(1);
    expect(lines.filter((line) => line.includes("state pending"))).toHaveLength(1);
    expect(lines.filter((line) => line.includes("state delivering"))).toHaveLength(1);
    // Where each secret went: one line each, the unseal key sealed.
    expect(lines.filter((line) => /^ {2}openBaoUnsealKey +TPM-sealed /.test(line))).toHaveLength(1);
    expect(lines.filter((line) => /^ {2}adminPassword /.test(line))).toHaveLength(2);
    expect(lines.some((line) => line.includes("PAIRING CODE"))).toBe(true);
    // The states in colour: pending in yellow, delivering in cyan.
    expect(run.out()).toContain(`${ESC}33mpending`);
    expect(run.out()).toContain(`${ESC}36mdelivering`);
  });

  it("in a pipe, each retry is a plain line and the reconnection too", async () => {
    const dir = join(tmp, "machine-piped");
    const run = inPipe(
      cli,
      ["register", "--identity", dir, "--release", "0.6.0", "--no-inventory", "--wait", "joined"],
      {
        STRATUM_JOIN_URL: url,
      },
    );
    await run.until((out) => out.includes("join session saved"), "the wait to begin");
    await relay.down();
    await run.until((out) => out.includes("retrying in"), "a retry line");
    await relay.up();
    await run.until((out) => out.includes("reconnected"), "the reconnected line");
    run.child.kill("SIGINT");
    expect(await run.exited).toBe(130);
    expect(run.out()).not.toContain("\x1b");
    expect(run.out()).not.toContain("\r");
    // The wait in flight when the relay went down is reset; a later one is refused.
    expect(run.out()).toMatch(
      /^listener 127\.0\.0\.1:\d+ unreachable \((ECONNREFUSED|ECONNRESET)\); retrying in \d+ s$/m,
    );
    expect(stripAnsi(run.err())).toContain("ABORTED: interrupted");
  });

  it("Ctrl-C at the terminal stops the wait: exit 130", async () => {
    const run = inTerminal(
      cli,
      [
        "register",
        "--identity",
        join(tmp, "machine-ctrl-c"),
        "--release",
        "0.6.0",
        "--no-inventory",
        "--wait",
        "joined",
      ],
      {
        STRATUM_JOIN_URL: url,
      },
    );
    await run.until((out) => out.includes("join session saved"), "the wait to begin");
    run.child.stdin!.write("\x03");
    expect(await run.exited).toBe(130);
    expect(screen(run.out()).some((line) => line.startsWith("stratum-join: ABORTED: interrupted"))).toBe(true);
  });
});

// docs/cli.md, the CLI reference, against the CLI itself: it is what scripts/cli-reference.ts
// makes from the command specs now (`npm run check:cli-docs` in `npm test` holds the same), it
// documents every command, flag, environment variable, JSON result and exit code, and the
// generator rewrites only its regions: a spec changed shows as a stale page, a hand-written
// paragraph stays, and a page without a region is refused.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import type { CommandSpec } from "../../src/cli/args.js";
import { environmentVariables } from "../../src/cli/help.js";
import { COMMANDS, EXIT_CODE_TABLE } from "../../src/cli/run.js";
import { CLI_REFERENCE, renderCliReference } from "../../scripts/cli-reference.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
const page = readFileSync(CLI_REFERENCE, "utf8");

/** The section of `text` under the heading `heading`, up to the next heading of its level or above (fences skipped). */
function section(text: string, heading: string): string {
  const lines = text.split("\n");
  const start = lines.indexOf(heading);
  expect(start, heading).toBeGreaterThan(0);
  const level = heading.indexOf(" ");
  let fenced = false;
  let end = start + 1;
  for (; end < lines.length; end++) {
    if (lines[end]!.startsWith("```")) fenced = !fenced;
    else if (!fenced && new RegExp(`^#{1,${level}} `).test(lines[end]!)) break;
  }
  return lines.slice(start, end).join("\n");
}

describe("docs/cli.md", () => {
  it("is what the command specs make now", () => {
    expect(renderCliReference(page)).toBe(page);
  });

  it("documents every command, flag, environment variable, JSON result and exit code", () => {
    for (const command of COMMANDS) {
      const name = command.path.join(" ");
      const heading = page.split("\n").find((l) => l.startsWith(`### \`stratum-join ${name}`));
      expect(heading, name).toBeDefined();
      const own = section(page, heading!);
      for (const [flag, spec] of Object.entries(command.flags)) {
        expect(own, `${name} --${flag}`).toContain(`--${flag}`);
        if (spec.env) expect(own, `${name} --${flag}'s env`).toContain(spec.env);
      }
      expect(command.result, name).not.toBe("");
      expect(own, `${name}'s --json result`).toContain(command.result.replace(/\|/g, "\\|"));
    }
    const environment = section(page, "## Environment variables");
    for (const variable of environmentVariables(COMMANDS))
      for (const name of variable.name.split(", "))
        expect(
          environment.split("\n").some((row) => row.split(" | ")[0]!.includes(`\`${name}\``)),
          name,
        ).toBe(true);
    const exits = section(page, "## Exit codes");
    for (const row of EXIT_CODE_TABLE) {
      expect(exits, `exit ${row.exit}`).toMatch(new RegExp(`^\\| ${row.exit} \\|`, "m"));
      for (const code of row.codes.filter((c) => /^[A-Z_]+$/.test(c))) expect(exits, code).toContain(`\`${code}\``);
    }
  });

  it("is rewritten in its regions only: a changed spec shows, a hand-written paragraph stays", () => {
    const register = COMMANDS.find((c) => c.path.join(" ") === "register")!;
    const changed: CommandSpec[] = COMMANDS.map((c) =>
      c === register
        ? { ...c, flags: { ...c.flags, "dry-run": { type: "boolean", description: "register nothing" } } }
        : c,
    );
    const made = renderCliReference(page, changed);
    expect(made).not.toBe(page);
    expect(section(made, "### `stratum-join register`")).toContain("| `--dry-run` | register nothing |");
    // Outside the commands region, nothing moved.
    expect(made.replace(/\n\| `--dry-run` \| register nothing \|/, "")).toBe(page);

    const edited = page.replace("## The secrets file\n", "## The secrets file\n\nA paragraph of the page's own.\n");
    expect(edited).not.toBe(page);
    expect(renderCliReference(edited)).toBe(edited);
  });

  it("refuses a page without one of its regions, or with a region twice", () => {
    const without = page.replace(/<!-- BEGIN GENERATED exit-codes -->[\s\S]*<!-- END GENERATED exit-codes -->/, "");
    expect(() => renderCliReference(without)).toThrow("the regions exit-codes are missing");
    const unclosed = page.replace("<!-- END GENERATED environment -->", "");
    expect(() => renderCliReference(unclosed)).toThrow('the region "environment" has no');
    const twice = `${page}\n<!-- BEGIN GENERATED commands -->\n<!-- END GENERATED commands -->\n`;
    expect(() => renderCliReference(twice)).toThrow('the region "commands" is there twice');
  });

  it("npm run check:cli-docs fails on a stale page, naming the region, and passes on the page as made", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stratum-cli-docs-"));
    try {
      const check = (file: string) =>
        run(process.execPath, ["--import", "tsx", "scripts/cli-reference.ts", "--check", file], { cwd: root }).then(
          ({ stdout }) => ({ code: 0, output: stdout }),
          (error: { code?: number; stderr?: string }) => ({ code: error.code ?? 1, output: error.stderr ?? "" }),
        );
      const fresh = join(dir, "cli.md");
      writeFileSync(fresh, page);
      const stale = join(dir, "stale.md");
      writeFileSync(stale, page.replace("| `--wait STATE` |", "| `--wait STATE` | (edited by hand) |"));
      const [ok, refused] = await Promise.all([check(fresh), check(stale)]);
      expect(ok).toMatchObject({ code: 0, output: expect.stringContaining("in sync") });
      expect(refused.code).toBe(1);
      expect(refused.output).toContain("is stale against the CLI's command specs (commands)");
      expect(refused.output).toContain("npm run docs:cli");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

// docs/cli.md, the CLI reference, written from the CLI's own declarations: the command specs
// (src/cli/commands/, in the order of `COMMANDS`), their flags, arguments, examples and JSON
// results, the environment variables (help.ts) and the exit-code table (exit-codes.ts). `--help`
// reads the same declarations, so the page and the terminal cannot say different things.
//
// The page also has hand-written parts (what every command does alike, the secrets and
// assignment files): prose about more than one command, which has no spec to live in. They stay
// as they are; only the regions between `<!-- BEGIN GENERATED name … -->` and
// `<!-- END GENERATED name -->` are rewritten, and a region missing from the page is an error.
//
// Usage: node --import tsx scripts/cli-reference.ts [--check] [FILE]   (FILE: docs/cli.md)
//   npm run docs:cli        rewrites the regions
//   npm run check:cli-docs  fails, naming the regions, when the page is not what the specs make
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { COMMON_FLAGS, flagDescription, type CommandSpec, type FlagSpec } from "../src/cli/args.js";
import { EXIT_CODE_TABLE } from "../src/cli/exit-codes.js";
import { COMMAND_GROUPS, environmentVariables, EXIT_CODES_NOTE, groupOf } from "../src/cli/help.js";
import { COMMANDS } from "../src/cli/run.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** The page this script writes. */
export const CLI_REFERENCE = join(root, "docs", "cli.md");

/** The flags whose value is a file the page describes in a hand-written section (its heading's anchor). */
const FILE_SECTIONS: Readonly<Record<string, string>> = {
  secrets: "the-secrets-file",
  assignment: "the-assignment-file",
};

/** Text for a Markdown line or table cell: `<` would start an HTML tag, `|` end a cell. */
function escape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/\|/g, "\\|");
}

/** Prose from a spec: escaped, one paragraph a line, flags in code spans. */
function prose(text: string): string {
  return text
    .split(/\n\s*\n/)
    .map((paragraph) =>
      escape(paragraph.replace(/\s*\n\s*/g, " ")).replace(
        // A flag, with its value when one follows in capitals (`--wait STATE`, `--log -`).
        /(^|[\s(])(--[a-z][a-z-]*(?: [A-Z][A-Z_]*\b| -(?= ))?)/g,
        (_, before: string, flag: string) => `${before}\`${flag}\``,
      ),
    )
    .join("\n\n");
}

function code(text: string): string {
  return `\`${text.replace(/\|/g, "\\|")}\``;
}

function flagLabel(name: string, flag: FlagSpec): string {
  return `--${name}${flag.type === "string" ? ` ${flag.value ?? "VALUE"}` : ""}`;
}

function usage(spec: CommandSpec): string {
  const positionals = (spec.positionals ?? []).map((p) => (p.optional ? `[${p.name}]` : p.name));
  return ["stratum-join", ...spec.path, ...positionals].join(" ");
}

/** A heading's anchor, as GitHub makes it (test/readme/markdown.ts's `headingSlug`). */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function commandSection(spec: CommandSpec): string[] {
  const lines = [`### ${code(usage(spec))}`, "", prose(spec.summary)];
  if (spec.details) lines.push("", prose(spec.details));
  if (spec.positionals?.length) {
    lines.push("", "| argument | meaning |", "| --- | --- |");
    for (const p of spec.positionals)
      lines.push(`| ${code(p.name)} | ${prose(p.description)}${p.optional ? " (optional)" : ""} |`);
  }
  const flags = Object.entries(spec.flags).filter(([, flag]) => !flag.hidden);
  if (flags.length > 0) {
    lines.push("", "| flag | meaning |", "| --- | --- |");
    for (const [name, flag] of flags) {
      const notes = [flag.multiple ? "repeatable" : "", flag.env ? `env ${code(flag.env)}` : ""].filter(Boolean);
      const section = FILE_SECTIONS[name];
      if (section) notes.push(`[the file](#${section})`);
      lines.push(
        `| ${code(flagLabel(name, flag))} | ${prose(flagDescription(flag))}${notes.length ? `; ${notes.join("; ")}` : ""} |`,
      );
    }
  }
  const hidden = Object.entries(spec.flags).filter(([, flag]) => flag.hidden);
  for (const [name, flag] of hidden)
    lines.push(
      "",
      `Still accepted, not shown by \`--help\`: ${code(`--${name}`)}, an old spelling: ${prose(flag.description)}.`,
    );
  if (spec.examples?.length) {
    lines.push("", "```sh");
    spec.examples.forEach((example, i) => {
      if (i > 0) lines.push("");
      lines.push(`# ${example.comment}`, example.command);
    });
    lines.push("```");
  }
  lines.push("", `With \`--json\`: ${spec.result.startsWith("{") ? code(spec.result) : escape(spec.result)}.`);
  return lines;
}

/** Every generated region's content, by name. */
function regions(commands: readonly CommandSpec[]): Record<string, string[]> {
  const environment = ["| variable | read by | what it does |", "| --- | --- | --- |"];
  for (const v of environmentVariables(commands)) {
    const names = v.name.split(", ").map(code).join(", ");
    environment.push(`| ${names} | ${prose(v.usedBy)} | ${prose(v.meaning)} |`);
  }

  const commandLines = ["Every command also takes:", ""];
  for (const [name, flag] of Object.entries(COMMON_FLAGS))
    commandLines.push(`- ${code(`${flag.short ? `-${flag.short}, ` : ""}--${name}`)}: ${escape(flag.description)}`);
  for (const group of COMMAND_GROUPS) {
    const members = commands.filter((c) => groupOf(c) === group);
    commandLines.push("", `**${group.title}:**`, "");
    for (const c of members)
      commandLines.push(`- [${code(c.path.join(" "))}](#${slug(usage(c))}): ${prose(c.summary)}`);
  }
  for (const c of commands) commandLines.push("", ...commandSection(c));

  const exitCodes = [prose(EXIT_CODES_NOTE), "", "| exit | meaning | error codes |", "| --- | --- | --- |"];
  for (const row of EXIT_CODE_TABLE) {
    const codes = row.codes.map((c) => (/^[A-Z_]+$/.test(c) ? code(c) : escape(c))).join(", ");
    exitCodes.push(`| ${row.exit} | ${prose(row.meaning)} | ${codes} |`);
  }
  return { environment, commands: commandLines, "exit-codes": exitCodes };
}

const BEGIN = /^<!-- BEGIN GENERATED ([\w-]+)\b.*-->$/;

/**
 * `page` with each generated region rewritten from `commands`; everything outside the regions
 * kept as it is.
 * @throws when a region is missing, unknown, unclosed or twice in the page, or a section a flag
 *   links to has no heading
 */
export function renderCliReference(page: string, commands: readonly CommandSpec[] = COMMANDS): string {
  const made = regions(commands);
  const lines = page.split("\n");
  const out: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const begin = BEGIN.exec(lines[i]!);
    out.push(lines[i]!);
    if (!begin) continue;
    const name = begin[1]!;
    if (!(name in made)) throw new Error(`docs/cli.md: no generated region is called "${name}"`);
    if (seen.has(name)) throw new Error(`docs/cli.md: the region "${name}" is there twice`);
    seen.add(name);
    const end = lines.indexOf(`<!-- END GENERATED ${name} -->`, i + 1);
    if (end < 0) throw new Error(`docs/cli.md: the region "${name}" has no <!-- END GENERATED ${name} -->`);
    out.push("", ...made[name]!, "", lines[end]!);
    i = end;
  }
  const missing = Object.keys(made).filter((name) => !seen.has(name));
  if (missing.length > 0) throw new Error(`docs/cli.md: the regions ${missing.join(", ")} are missing`);
  const text = out.join("\n");
  for (const heading of Object.values(FILE_SECTIONS))
    if (!text.split("\n").some((line) => /^#+ /.test(line) && slug(line.replace(/^#+\s+/, "")) === heading))
      throw new Error(`docs/cli.md: no heading for #${heading}, which the flags link to`);
  return text;
}

/** The names of the regions of `page` that differ from what `made` holds. */
function staleRegions(page: string, made: string): string[] {
  const region = (text: string, name: string) => {
    const start = text.indexOf(`<!-- BEGIN GENERATED ${name}`);
    return text.slice(start, text.indexOf(`<!-- END GENERATED ${name} -->`, start));
  };
  return Object.keys(regions(COMMANDS)).filter((name) => region(page, name) !== region(made, name));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const args = process.argv.slice(2);
  const check = args.includes("--check");
  const file = resolve(args.find((a) => !a.startsWith("--")) ?? CLI_REFERENCE);
  const name = relative(root, file);
  const page = readFileSync(file, "utf8");
  const made = renderCliReference(page);
  if (!check) {
    if (made !== page) writeFileSync(file, made);
    console.log(`${name}: written from the CLI's command specs (${COMMANDS.length} commands).`);
  } else if (made !== page) {
    console.error(
      `${name} is stale against the CLI's command specs (${staleRegions(page, made).join(", ")}): run \`npm run docs:cli\` and commit.`,
    );
    process.exitCode = 1;
  } else {
    console.log(`${name} is in sync with the CLI's command specs (${COMMANDS.length} commands).`);
  }
}

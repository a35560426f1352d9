/**
 * The help a person reads at a terminal: wrapped to its width (80 columns when it is unknown,
 * e.g. in a pipe), commands grouped by who runs them, examples for each command, and the exit
 * codes, so nobody needs a web page open beside the terminal. The same declarations make the
 * CLI reference, docs/cli.md (scripts/cli-reference.ts).
 * @module
 */

import { COMMON_FLAGS, flagDescription, type CommandSpec, type FlagSpec } from "./args.js";
import { EXIT_CODE_TABLE } from "./exit-codes.js";
import { stripAnsi, visibleWidth, type Style } from "./style.js";

/** How help is laid out: the terminal's width and the style of the stream it goes to. */
export interface HelpLayout {
  /** The columns no line may pass. */
  width: number;
  /** Bold headings and names, when the stream is a terminal. */
  style: Style;
}

/** The width help is wrapped to when the terminal's is unknown. */
export const DEFAULT_WIDTH = 80;
// Below this, wrapping makes help worse, not better: a few words a line.
const MIN_WIDTH = 40;
// The column descriptions start at, unless the terminal is too narrow for two columns.
const LABEL_COLUMN = 26;

/** The width to wrap to: the terminal's columns, else `COLUMNS`, else 80; never under 40. */
export function helpWidth(columns: number | undefined, env: Readonly<Record<string, string | undefined>>): number {
  const fromEnv = Number(env.COLUMNS);
  const width = columns && columns > 0 ? columns : Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : DEFAULT_WIDTH;
  return Math.max(MIN_WIDTH, width);
}

/**
 * `text` word-wrapped so that no line is wider than `width` columns: the first line indented
 * by `first` spaces, the others by `rest`. Escapes (colour) take no column. A word longer
 * than a line is broken where it must be (and loses its colour).
 */
export function wrap(text: string, width: number, rest = 0, first = rest): string[] {
  const lines: string[] = [];
  let line = " ".repeat(first);
  let used = first;
  let empty = true;
  const newLine = () => {
    lines.push(line);
    line = " ".repeat(rest);
    used = rest;
    empty = true;
  };
  for (let word of text.split(/\s+/).filter(Boolean)) {
    let size = visibleWidth(word);
    if (!empty && used + 1 + size > width) newLine();
    if (used + (empty ? 0 : 1) + size > width) {
      let points = [...stripAnsi(word)];
      while (used + (empty ? 0 : 1) + points.length > width) {
        const cut = Math.max(1, width - used - (empty ? 0 : 1));
        line += `${empty ? "" : " "}${points.slice(0, cut).join("")}`;
        newLine();
        points = points.slice(cut);
      }
      word = points.join("");
      size = points.length;
    }
    line += `${empty ? "" : " "}${word}`;
    used += (empty ? 0 : 1) + size;
    empty = false;
  }
  if (!empty || lines.length === 0) lines.push(line);
  return lines;
}

/** Paragraphs (separated by a blank line) wrapped to `width`; single newlines inside a paragraph are spaces. */
function paragraphs(text: string, width: number, indent = 0): string[] {
  const out: string[] = [];
  for (const paragraph of text.split(/\n\s*\n/)) {
    if (out.length > 0) out.push("");
    out.push(...wrap(paragraph, width, indent));
  }
  return out;
}

/** Two columns: labels, then their descriptions, wrapped; a label too long for its column puts its description below. */
function columns(
  rows: readonly (readonly [string, string])[],
  layout: HelpLayout,
  paint: (label: string) => string,
  widest = Math.max(0, ...rows.map(([label]) => label.length)),
) {
  const { width } = layout;
  const column = Math.min(LABEL_COLUMN, widest + 4);
  const twoColumns = width - column >= 30;
  const lines: string[] = [];
  for (const [label, description] of rows) {
    const head = `  ${paint(label)}`;
    if (!twoColumns) {
      lines.push(head, ...wrap(description, width, 6));
      continue;
    }
    const text = wrap(description, width, column, column);
    if (label.length + 4 > column) lines.push(head, ...text);
    else lines.push(`${head}${" ".repeat(column - 2 - label.length)}${text[0]!.slice(column)}`, ...text.slice(1));
  }
  return lines;
}

/** A shell command, broken with ` \` at spaces so that no line is wider than `width`. */
function shellLines(command: string, width: number): string[] {
  const words = command.split(" ");
  const lines: string[] = [];
  let line = "  ";
  for (const word of words) {
    if (line.trim() !== "" && line.length + 1 + word.length + 2 > width) {
      lines.push(`${line} \\`);
      line = "      ";
    }
    line += `${line.trim() === "" ? "" : " "}${word}`;
  }
  lines.push(line);
  return lines;
}

/** One command's examples, each a comment line and the command. */
function examples(spec: CommandSpec, layout: HelpLayout): string[] {
  const lines: string[] = [];
  for (const example of spec.examples ?? []) {
    if (lines.length > 0) lines.push("");
    for (const comment of wrap(example.comment, layout.width - 4)) lines.push(`  ${layout.style.dim(`# ${comment}`)}`);
    lines.push(...shellLines(example.command, layout.width));
  }
  return lines;
}

function flagLabel(name: string, flag: FlagSpec): string {
  return `${flag.short ? `-${flag.short}, ` : ""}--${name}${flag.type === "string" ? ` ${flag.value ?? "VALUE"}` : ""}`;
}

/** The `--help` text of a command. */
export function commandHelp(spec: CommandSpec, layout: HelpLayout): string {
  const { style, width } = layout;
  const flags = Object.entries({ ...spec.flags, ...COMMON_FLAGS }).filter(([, flag]) => !flag.hidden);
  const positionals = (spec.positionals ?? []).map((p) => (p.optional ? `[${p.name}]` : p.name)).join(" ");
  const heading = (text: string) => style.bold(text);
  const usage = wrap(
    `Usage: stratum-join ${spec.path.join(" ")}${positionals ? ` ${positionals}` : ""} [flags]`,
    width,
    6,
    0,
  );
  const lines = [
    `${heading("Usage:")}${usage[0]!.slice("Usage:".length)}`,
    ...usage.slice(1),
    "",
    ...wrap(spec.summary, width),
  ];
  if (spec.details) lines.push("", ...paragraphs(spec.details, width));
  if (spec.positionals?.length) {
    lines.push("", heading("Arguments:"));
    lines.push(
      ...columns(
        spec.positionals.map((p) => [p.name, p.description] as const),
        layout,
        style.bold,
      ),
    );
  }
  lines.push("", heading("Flags:"));
  lines.push(
    ...columns(
      flags.map(([name, flag]) => {
        const extra = [flag.multiple ? "repeatable" : "", flag.env ? `env ${flag.env}` : ""].filter(Boolean).join("; ");
        return [flagLabel(name, flag), `${flagDescription(flag)}${extra ? ` (${extra})` : ""}`] as const;
      }),
      layout,
      style.bold,
    ),
  );
  if (spec.examples?.length) lines.push("", heading("Examples:"), ...examples(spec, layout));
  lines.push("", heading("With --json:"), ...wrap(spec.result, width, 2));
  lines.push("", ...wrap("Exit codes: stratum-join help exit-codes", width));
  return `${lines.join("\n")}\n`;
}

/** The first words of the commands that come in groups (`admin mint`, `release sign`). */
export const GROUP_WORDS: ReadonlySet<string> = new Set(["code", "release", "admin"]);

/** An environment variable the CLI reads, beside those a flag falls back to (`FlagSpec.env`). */
export interface EnvironmentVariable {
  name: string;
  /** The commands that read it, in words. */
  usedBy: string;
  /** What it does. */
  meaning: string;
}

/** The environment variables no flag names: listed by `--help` and the CLI reference. */
export const ENVIRONMENT: readonly EnvironmentVariable[] = [
  {
    name: "STRATUM_DEBUG",
    usedBy: "every command",
    meaning: "set to anything: a failure also prints its stack trace (without --json)",
  },
  {
    name: "NO_COLOR",
    usedBy: "every command",
    meaning: "set and not empty: no colour or emphasis, even on a terminal",
  },
  {
    name: "FORCE_COLOR",
    usedBy: "every command",
    meaning: "colour and emphasis even in a pipe (0 or false: none); wins over NO_COLOR",
  },
  {
    name: "COLUMNS",
    usedBy: "--help",
    meaning: "the width help is wrapped to when the terminal's is unknown (default 80)",
  },
  {
    name: "TPM2TOOLS_TCTI",
    usedBy: "register, status, unseal",
    meaning: 'the TPM of {"tpm": FILE} destinations, as tpm2-tools reads it (default /dev/tpmrm0)',
  },
  {
    name: "HTTPS_PROXY, NO_PROXY",
    usedBy: "register, release download",
    meaning:
      "the HTTP proxy to reach a release mirror through, as curl reads them; --proxy wins; never for the founder",
  },
];

/**
 * Every environment variable of the CLI: those flags fall back to (with the flag, and the
 * commands that have it), then {@link ENVIRONMENT}.
 */
export function environmentVariables(commands: readonly CommandSpec[]): EnvironmentVariable[] {
  const byName = new Map<string, { flag: string; users: string[] }>();
  for (const command of commands)
    for (const [name, flag] of Object.entries(command.flags)) {
      if (!flag.env) continue;
      const entry = byName.get(flag.env) ?? { flag: name, users: [] };
      entry.users.push(command.path.join(" "));
      byName.set(flag.env, entry);
    }
  const fromFlags = [...byName].map(([name, { flag, users }]) => {
    const group = users[0]!.split(" ")[0]!;
    const wholeGroup =
      GROUP_WORDS.has(group) &&
      commands.filter((c) => c.path[0] === group).every((c) => users.includes(c.path.join(" ")));
    return {
      name,
      usedBy: wholeGroup ? `every ${group} command` : users.join(", "),
      meaning: `instead of --${flag}`,
    };
  });
  return [...fromFlags, ...ENVIRONMENT];
}

/** Who runs which commands: the order and the headings of `stratum-join --help`. */
export const COMMAND_GROUPS = [
  {
    name: "joiner",
    title: "On the joining machine",
    words: ["code", "check", "register", "progress", "status", "unseal"],
  },
  { name: "release", title: "Releases: keys, signed manifests, verified downloads", words: ["release"] },
  { name: "admin", title: "On the founder: the admin API (join codes and joins)", words: ["admin"] },
] as const;

/** The group a command is listed under. */
export function groupOf(spec: CommandSpec): (typeof COMMAND_GROUPS)[number] {
  return COMMAND_GROUPS.find((g) => (g.words as readonly string[]).includes(spec.path[0]!)) ?? COMMAND_GROUPS[0];
}

/** The command list; `all` sets the label column, so that every group of one help lines up. */
function commandRows(commands: readonly CommandSpec[], layout: HelpLayout, all = commands): string[] {
  return columns(
    commands.map((c) => [c.path.join(" "), c.summary] as const),
    layout,
    layout.style.bold,
    Math.max(...all.map((c) => c.path.join(" ").length)),
  );
}

/** `stratum-join --help`: the commands by group, the global flags, and the exit codes. */
export function mainHelp(commands: readonly CommandSpec[], layout: HelpLayout): string {
  const { style, width } = layout;
  const lines = [
    `${style.bold("Usage:")} stratum-join <command> [flags]`,
    "",
    ...wrap("Join a machine to a Stratum cluster, and admit machines, from the command line.", width),
  ];
  for (const group of COMMAND_GROUPS) {
    const members = commands.filter((c) => groupOf(c) === group);
    if (members.length === 0) continue;
    lines.push("", style.bold(`${group.title}:`), ...commandRows(members, layout, commands));
  }
  lines.push(
    "",
    style.bold("Every command takes:"),
    ...columns(
      [
        ["--json", 'one JSON document on stdout: the result, or {"error":{"code",…}}'],
        ["-h, --help", "the command's flags and examples"],
        ["--version", "the package's version (alone)"],
      ],
      layout,
      style.bold,
    ),
    "",
    style.bold("Environment:"),
    ...columns(
      environmentVariables(commands).map((v) => [v.name, `${v.meaning} (${v.usedBy})`] as const),
      layout,
      style.bold,
    ),
    "",
    style.bold("Exit codes:"),
    ...columns(
      EXIT_CODE_TABLE.map((row) => [String(row.exit).padStart(3), row.summary] as const),
      layout,
      (label) => label,
    ),
    "",
    ...wrap(
      "Run 'stratum-join <command> --help' for a command's flags and examples, and 'stratum-join help exit-codes' for the error codes behind each exit code.",
      width,
    ),
  );
  return `${lines.join("\n")}\n`;
}

/** `stratum-join <group> --help`: the group's commands. */
export function groupHelp(commands: readonly CommandSpec[], group: string, layout: HelpLayout): string {
  const { style, width } = layout;
  const members = commands.filter((c) => c.path[0] === group);
  const title =
    group === "code" ? "Offline checks of a join code" : (COMMAND_GROUPS.find((g) => g.name === group)?.title ?? group);
  return `${[
    `${style.bold("Usage:")} stratum-join ${group} <command> [flags]`,
    "",
    ...wrap(title, width),
    "",
    style.bold("Commands:"),
    ...commandRows(members, layout),
    "",
    ...wrap(`Run 'stratum-join ${group} <command> --help' for a command's flags and examples.`, width),
  ].join("\n")}\n`;
}

/** What `stratum-join help exit-codes` and the CLI reference say before the table. */
export const EXIT_CODES_NOTE =
  "The exit code says what to do next; with --json, error.code says exactly what happened. An API refusal without a problem code exits by its status: 401/403 12, 404 14, 429/503 8, 400/409/422 13, any other 1.";

/** `stratum-join help exit-codes`: every exit code, what it means, and the error codes behind it. */
export function exitCodesHelp(layout: HelpLayout): string {
  const { style, width } = layout;
  const lines = [style.bold("Exit codes of stratum-join"), "", ...wrap(EXIT_CODES_NOTE, width)];
  for (const row of EXIT_CODE_TABLE) {
    const meaning = wrap(row.meaning, width, 5);
    lines.push("", `${style.bold(String(row.exit).padStart(3))}  ${meaning[0]!.slice(5)}`, ...meaning.slice(1));
    if (row.codes.length > 0) lines.push(...wrap(row.codes.join(", "), width, 5).map((l) => style.dim(l)));
  }
  return `${lines.join("\n")}\n`;
}

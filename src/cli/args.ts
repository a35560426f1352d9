/**
 * Commands as data: each declares its flags once, and the same declaration drives
 * `node:util` `parseArgs`, `--help` (help.ts) and the CLI reference, docs/cli.md, which
 * `npm run docs:cli` (scripts/cli-reference.ts) writes from it.
 * @module
 */

import { parseArgs, type ParseArgsConfig } from "node:util";
import { CliError } from "../errors/cli.js";
import type { Output } from "./output.js";
import { closest } from "./suggest.js";

/** One flag of a command. */
export interface FlagSpec {
  type: "string" | "boolean";
  /** May be given more than once (the values are collected in order). */
  multiple?: boolean | undefined;
  /** A one-letter alias. */
  short?: string | undefined;
  /** The value's placeholder in help, e.g. `DIR`. */
  value?: string | undefined;
  /** One line of help (`--help` and docs/cli.md add "(required)" to a required flag's). */
  description: string;
  /**
   * The command cannot run without it (given, or from `env`). Read it with {@link requiredFlag}
   * (or {@link requiredList}), whose `USAGE` error (`--NAME is required`) comes from this spec,
   * where the action reads it: the action's other checks keep their order.
   */
  required?: boolean | undefined;
  /** An environment variable read when the flag is absent. */
  env?: string | undefined;
  /** Accepted but not shown in help: an old spelling kept so that existing scripts go on working. */
  hidden?: boolean | undefined;
}

/** A positional argument of a command. */
export interface PositionalSpec {
  name: string;
  description: string;
  /** Absent means required. */
  optional?: boolean | undefined;
}

/** What a command's `run` receives. */
export interface CommandContext {
  /** Where results, state changes, progress and errors go (human or `--json`). */
  out: Output;
  /** The environment (`STRATUM_API`, `STRATUM_TOKEN`, `STRATUM_JOIN_URL`). */
  env: Readonly<Record<string, string | undefined>>;
  /** Aborted by Ctrl-C: every wait and download takes it. */
  signal: AbortSignal;
  /** Stderr is a terminal: progress bars and the updating retry line are drawn. */
  isTTY: boolean;
  /** Standard input, for `--log -`. */
  stdin?: AsyncIterable<string | Uint8Array> | undefined;
}

/** One example of a command's `--help`: what it is for, then the command line. */
export interface CommandExample {
  comment: string;
  command: string;
}

/** The flags of a command, by name. */
export type Flags = Readonly<Record<string, FlagSpec>>;

/** What a flag's value is once parsed: `true`, the string, or the strings of a repeatable flag. */
type FlagValue<F extends FlagSpec> = F extends { type: "boolean" }
  ? boolean
  : F extends { type: "string"; multiple: true }
    ? string[]
    : F extends { type: "string"; multiple?: false | undefined }
      ? string
      : string | boolean | string[];

/** The names of the flags in `F` whose value is of kind `V` (and, with `R` true, that are `required`). */
type FlagNames<F extends Flags, V, R extends boolean = boolean> = {
  [K in keyof F & string]: FlagValue<F[K]> extends V
    ? (F[K] extends { required: true } ? true : false) extends R
      ? K
      : never
    : never;
}[keyof F & string];

/** A one-value string flag of `F`. */
export type StringFlagName<F extends Flags> = FlagNames<F, string>;
/** A one-value string flag of `F` that its spec marks `required`. */
export type RequiredFlagName<F extends Flags> = FlagNames<F, string, true>;
/** A repeatable string flag of `F`. */
export type ListFlagName<F extends Flags> = FlagNames<F, string[]>;
/** A repeatable string flag of `F` that its spec marks `required`. */
export type RequiredListName<F extends Flags> = FlagNames<F, string[], true>;

/**
 * Parsed flags (env fallbacks applied) and positionals of the command whose flags are `F`:
 * reading a flag the command does not declare is a type error. A flag is absent until read
 * with {@link requiredFlag}, which says `--NAME is required` where the action reads it, so
 * the action's own checks keep their order.
 */
export interface ParsedArgs<F extends Flags = Flags> {
  values: { readonly [K in keyof (F & typeof commonFlags)]?: FlagValue<(F & typeof commonFlags)[K]> };
  positionals: string[];
  /** The command these are the arguments of (its name and flags, for the errors). */
  command: CommandSpec<F>;
}

/**
 * What a command does, given its parsed flags; resolves to the exit code (0 unless the command
 * says otherwise). The dispatcher (run.ts) calls it with the arguments its own spec parsed.
 */
// Declared through a method so that the list of every command (`CommandSpec` with any flags)
// can hold each one; a spec's own `load` is still checked against its flags.
export type CommandAction<F extends Flags = Flags> = {
  run(ctx: CommandContext, args: ParsedArgs<F>): Promise<number | void>;
}["run"];

/**
 * A command: its words (`["admin", "mint"]`), its help, its flags, and where what it does is.
 * The declaration is data and imports nothing heavy, so `--help` and every other command read
 * it for free; the action is in its own module (`src/cli/actions/`), loaded only when the
 * command runs, with what it needs (the joiner, the downloader, the admin client). `F`, the
 * flags' declared types, types the arguments the dispatcher (run.ts) hands the action: the
 * action imports only those types, never the spec, which is what loads it.
 */
export interface CommandSpec<F extends Flags = Flags> {
  path: readonly string[];
  /** One line, for the command list. */
  summary: string;
  /** More help, shown by `--help` after the usage. */
  details?: string | undefined;
  positionals?: readonly PositionalSpec[] | undefined;
  flags: F;
  /** Shown under `Examples:` in `--help`. */
  examples?: readonly CommandExample[] | undefined;
  /**
   * The shape of the one JSON document `--json` prints on success, for a script to read
   * (`{joinId, state, …}`; `?` marks a field that may be absent).
   */
  result: string;
  /** Loads what the command does: a dynamic `import()` of its action module. */
  load(): Promise<CommandAction<F>>;
  /**
   * Which flag fixes a field the API refused (`mgmt.address` → "fix with --address"), said
   * after each field error of a refusal; undefined for a field no flag sets.
   */
  fieldHint?(field: string): string | undefined;
}

/**
 * A command's flags, declared: the same object, its types kept (which flags there are, which
 * are `required`, `multiple` or `boolean`), so that its action's reads are checked.
 */
export function defineFlags<const F extends Flags>(flags: F): F {
  return flags;
}

/** One flag, declared: {@link defineFlags} for a flag shared by several commands. */
export function defineFlag<const F extends FlagSpec>(flag: F): F {
  return flag;
}

/** The flags every command takes, with their types (`--json`, `--help`). */
const commonFlags = defineFlags({
  json: {
    type: "boolean",
    description: 'print one JSON document on stdout (the result, or {"error":{...}}); human progress goes to stderr',
  },
  help: { type: "boolean", short: "h", description: "show this help" },
});

/** The flags every command takes. */
export const COMMON_FLAGS: Flags = commonFlags;

/** The flags that name the join listener and the code (`check`, `register`). */
export const TARGET_FLAGS = defineFlags({
  url: {
    type: "string",
    value: "URL",
    env: "STRATUM_JOIN_URL",
    description:
      "the join URL stratum-join://HOST[:PORT]/XXXX-XXXX-XXX (secret: prefer the env var, argv is visible to other local users)",
  },
  endpoint: { type: "string", value: "HOST[:PORT]", description: "the join listener, instead of --url (with --code)" },
  code: { type: "string", value: "CODE", description: "the join code, instead of --url (with --endpoint)" },
});

/** The `--secrets` flag of every command that writes a delivery (src/cli/delivery.ts reads it). */
export const SECRETS_FLAG = defineFlag({
  type: "string",
  value: "FILE",
  description:
    'where each secret of the delivery goes: JSON, field → {"file": PATH}, {"env": PATH, "name": NAME}, {"command": [ARGV…]} (the secret on stdin) or {"tpm": PATH} (sealed to this machine\'s TPM)',
});

/** Parses `args` for `spec`; unknown flags, missing values and wrong positional counts are `USAGE` errors. */
export function parseCommandArgs<F extends Flags>(
  spec: CommandSpec<F>,
  args: string[],
  env: Readonly<Record<string, string | undefined>>,
): ParsedArgs<F> {
  const flags: Flags = { ...spec.flags, ...COMMON_FLAGS };
  const options: NonNullable<ParseArgsConfig["options"]> = {};
  for (const [name, flag] of Object.entries(flags)) {
    options[name] = {
      type: flag.type,
      ...(flag.multiple ? { multiple: true } : {}),
      ...(flag.short ? { short: flag.short } : {}),
    };
  }
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new CliError("USAGE", parseFailure(error, spec, Object.keys(flags)), { command: spec.path.join(" ") });
  }
  const values: Record<string, string | boolean | string[]> = {};
  for (const [name, flag] of Object.entries(flags)) {
    const value = parsed.values[name] as string | boolean | string[] | undefined;
    if (value !== undefined) values[name] = value;
    else if (flag.env && env[flag.env]) values[name] = flag.multiple ? [env[flag.env]!] : env[flag.env]!;
  }
  // The values were parsed by the spec's own flags: each name and kind is the spec's.
  const typed = values as ParsedArgs<F>["values"];
  if (values.help) return { values: typed, positionals: parsed.positionals, command: spec };
  const specs = spec.positionals ?? [];
  const required = specs.filter((p) => !p.optional).length;
  if (parsed.positionals.length < required) {
    throw new CliError(
      "USAGE",
      `missing ${specs
        .slice(parsed.positionals.length)
        .filter((p) => !p.optional)
        .map((p) => p.name)
        .join(", ")}`,
      { command: spec.path.join(" ") },
    );
  }
  if (parsed.positionals.length > specs.length) {
    throw new CliError("USAGE", `unexpected argument ${JSON.stringify(parsed.positionals[specs.length])}`, {
      command: spec.path.join(" "),
    });
  }
  return { values: typed, positionals: parsed.positionals, command: spec };
}

/**
 * What `parseArgs` refused, in the CLI's words: an unknown flag with the closest known one
 * (`--wiat` → "did you mean --wait?"), a flag without its value. Its own text ("To specify a
 * positional argument starting with a '-', place it after '--'") is for other programs. Only
 * the flag's name is repeated, never a value (it may be a secret).
 */
function parseFailure(error: unknown, spec: CommandSpec, known: readonly string[]): string {
  const message = (error as Error).message;
  const command = spec.path.join(" ");
  const unknown = /^Unknown option '(-{1,2})([^']*)'/.exec(message);
  if (unknown) {
    const guess = closest(unknown[2]!, known);
    return `unknown flag ${unknown[1]}${unknown[2]} for ${command}${guess ? `; did you mean --${guess}?` : ""}`;
  }
  const missing = /^Option '(-[^ ']+(?:, )?)?(--[^ ']+)[^']*' argument missing/.exec(message);
  if (missing) return `${missing[2]} needs a value`;
  const typed = /^Option '(--[^ ']+)[^']*' does not take an argument/.exec(message);
  if (typed) return `${typed[1]} takes no value`;
  // Other parseArgs errors name the flag only, never its value, so they are safe to show.
  return message;
}

/** A flag's help text: its description, and "(required)" when its spec says so. */
export function flagDescription(flag: FlagSpec): string {
  return flag.required ? `${flag.description} (required)` : flag.description;
}

/**
 * The `USAGE` error of a required flag that is absent, naming its environment variable if it
 * has one. A flag its spec does not mark `required` is a mistake of the CLI's own (its help
 * would not say so; the types refuse it too), refused as such.
 */
function missingFlag(name: string, command: CommandSpec): CliError {
  const flag = command.flags[name];
  if (!flag?.required)
    throw new Error(`--${name} of ${command.path.join(" ")} is read as required but its spec does not say so`);
  const env = flag.env;
  return new CliError("USAGE", `--${name} is required${env ? ` (or set ${env})` : ""}`, {
    command: command.path.join(" "),
  });
}

/** A flag's parsed value, by a name the types have already checked against the command's spec. */
function valueOf(args: ParsedArgs<Flags>, name: string): string | boolean | string[] | undefined {
  return (args.values as Readonly<Record<string, string | boolean | string[] | undefined>>)[name];
}

/** A string flag's value; undefined when absent (or empty). */
export function stringFlag<F extends Flags>(args: ParsedArgs<F>, name: NoInfer<StringFlagName<F>>): string | undefined {
  return stringOf(valueOf(args, name));
}

/** A flag's value as a string; undefined when absent or empty. */
function stringOf(value: string | boolean | string[] | undefined): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/**
 * The value of a flag its spec marks `required`.
 * @throws CliError `USAGE` `--NAME is required` when it is absent all the same
 */
export function requiredFlag<F extends Flags>(args: ParsedArgs<F>, name: NoInfer<RequiredFlagName<F>>): string {
  const value = stringOf(valueOf(args, name));
  if (value === undefined) throw missingFlag(name, args.command);
  return value;
}

/**
 * The values of a repeatable flag its spec marks `required`.
 * @throws CliError `USAGE` `--NAME is required` when it is absent
 */
export function requiredList<F extends Flags>(args: ParsedArgs<F>, name: NoInfer<RequiredListName<F>>): string[] {
  const values = listOf(valueOf(args, name));
  if (values.length === 0) throw missingFlag(name, args.command);
  return values;
}

/** A repeatable flag's values (empty when absent). */
export function listFlag<F extends Flags>(args: ParsedArgs<F>, name: NoInfer<ListFlagName<F>>): string[] {
  return listOf(valueOf(args, name));
}

/** A flag's values as a list. */
function listOf(value: string | boolean | string[] | undefined): string[] {
  return Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
}

/** A positive whole number flag, or a `USAGE` error. */
export function numberFlag<F extends Flags>(args: ParsedArgs<F>, name: NoInfer<StringFlagName<F>>): number | undefined {
  const value = stringOf(valueOf(args, name));
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new CliError("USAGE", `--${name} takes a whole number of at least 1`, {
      command: args.command.path.join(" "),
    });
  }
  return Number(value);
}

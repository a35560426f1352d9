/**
 * The CLI run in-process with captured output, as a script would run it (no terminal unless
 * asked): the helper every CLI test uses.
 */
import { runCli } from "../../src/cli/run.js";
import { expectDocumentedResult } from "./json-results.js";

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as the one JSON document it must be. */
  json: any;
}

/** Runs the CLI in-process, as a script would (no TTY unless asked). */
export async function cli(
  args: string[],
  options: {
    env?: Record<string, string>;
    signal?: AbortSignal;
    isTTY?: boolean;
    /** Sees each write to stderr as it happens. */
    onStderr?: (text: string) => unknown;
  } = {},
): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: {
      write: (t: string) => {
        stderr += t;
        options.onStderr?.(t);
      },
    },
    env: options.env ?? {},
    isTTY: options.isTTY ?? false,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  let json: unknown;
  if (args.includes("--json")) json = JSON.parse(stdout); // throws unless stdout is exactly one document
  if (args.includes("--json") && code === 0) expectDocumentedResult(args, json);
  return { code, stdout, stderr, json };
}

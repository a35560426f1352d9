/**
 * `NAME=value` lines in an environment file, as systemd's `EnvironmentFile=` and podman's
 * `--env-file` read them: one line per variable, every other line (comments, other variables,
 * blank lines) kept as it is.
 * @module
 */

/** A name both readers take: letters, digits and `_`, not starting with a digit. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Why `value` cannot be written as a bare `NAME=value` line that both readers read back as
 * `value`, or undefined when it can. systemd strips surrounding white space and quotes and
 * reads backslashes as escapes; podman takes the rest of the line as it is. A line break ends
 * the value for both. Secrets of the bundle (base64, hex, tokens) never hit these.
 */
export function envValueProblem(value: string): string | undefined {
  if (/[\r\n\0]/.test(value)) return "it holds a line break or a NUL";
  if (value.includes("\\")) return "it holds a backslash, which systemd reads as an escape";
  if (/^\s|\s$/.test(value)) return "it starts or ends with white space, which systemd strips";
  if (/^["']/.test(value)) return "it starts with a quote, which systemd strips";
  return undefined;
}

/**
 * `text` with `NAME=value` in place of the first line that sets `name` (and without any later
 * line that sets it again), or appended when no line does. Every other line is kept, byte for
 * byte; a last line without its newline gets one.
 */
export function upsertEnvLine(text: string, name: string, value: string): string {
  const lines = text === "" ? [] : text.split("\n");
  if (lines.length > 0 && lines.at(-1) === "") lines.pop();
  const sets = (line: string) => {
    const trimmed = line.replace(/^\s*(export\s+)?/, "");
    return trimmed.startsWith(`${name}=`) || new RegExp(`^${name}\\s*=`).test(trimmed);
  };
  const out: string[] = [];
  let done = false;
  for (const line of lines) {
    if (!sets(line)) out.push(line);
    else if (!done) {
      out.push(`${name}=${value}`);
      done = true;
    }
  }
  if (!done) out.push(`${name}=${value}`);
  return `${out.join("\n")}\n`;
}

// What the README test supplies for the installer snippets' `// yours:` import: the installer's
// screen (lines on stdout, which the test reads) and its install steps (which only check that the
// delivery is there). Copied next to the snippets in the packed test project.
import { existsSync } from "node:fs";
import { join } from "node:path";

/** A line on the installer's screen. */
export function show(text: string): void {
  console.log(text);
}

/** The pairing code, shown big on the machine's console. */
export function showPairingCode(code: string): void {
  console.log(`PAIRING ${code}`);
}

/** Asks the person at the machine for the join URL; the test sets STRATUM_JOIN_URL instead. */
export function askForJoinUrl(): Promise<string> {
  return Promise.reject(new Error("the test sets STRATUM_JOIN_URL: nothing to ask"));
}

/** One install step with the delivery; its install-log lines. */
export async function install(step: string, deliveryDir: string): Promise<string[]> {
  if (!existsSync(join(deliveryDir, "node.yaml"))) throw new Error(`no node.yaml in ${deliveryDir}`);
  return [`${step}: installed with ${join(deliveryDir, "node.yaml")}`];
}

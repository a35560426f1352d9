/**
 * The README's TypeScript snippets as the README tests write them out: each with the file it
 * is written to and, for those a test runs, its role; the modules a `// yours:` import names
 * (./supplied/), and what the fragments (snippets that continue another) use without defining.
 * The snippet test runs them; the TypeScript matrix test compiles them under other settings.
 */
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { codeBlocks, SCRIPT_LANGS, type CodeBlock } from "./markdown.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const supplied = fileURLToPath(new URL("./supplied/", import.meta.url));

/** The snippets the snippet test runs, by where they stand in the README. */
export type Role = "stage-1" | "stage-2" | "console" | "testing" | "script";
export const RUN: Record<Role, { file: string; where: string }> = {
  "stage-1": { file: "stage-1.ts", where: "the first block of 'Installer stage 1'" },
  "stage-2": { file: "stage-2.ts", where: "the second block of 'Installer stage 1'" },
  console: { file: "console.ts", where: "the block of 'The console' (outside its subsection)" },
  testing: { file: "console.test.ts", where: "the block of 'Testing a console without a server'" },
  script: { file: "approve-confirmed.ts", where: "the TypeScript block of 'Scripts'" },
};

/** The modules a `// yours:` import may name, supplied by the tests (./supplied/). */
export const SUPPLIED_MODULES: Record<string, string> = {
  "./installer-ui.js": "installer-ui.ts",
  "./console-ui.js": "console-ui.ts",
};

/**
 * What the fragments (the type-checked snippets that continue another, e.g. the self-upgrade
 * example) use without defining: the installer's state at that point, and a progress bar of the
 * reader's. Given to the fragments only; a fragment naming anything else fails to compile.
 */
export const FRAGMENT_CONTEXT = `import type { JoinSession, MachineIdentity, Registration } from "@stratum/join/node";
declare global {
  const registration: Registration;
  const session: JoinSession;
  const identity: MachineIdentity;
  const trustedPem: string;
  const bar: { update(fraction: number): void };
  const signal: AbortSignal;
}
export {};
`;
/** The file {@link FRAGMENT_CONTEXT} is written to. */
export const FRAGMENT_CONTEXT_FILE = "fragment-context.d.ts";

/** A README snippet with the file it is written to, and its role when a test runs it. */
export type Snippet = CodeBlock & { role?: Role; file: string };

/** The README's script blocks, each with the role the snippet test runs it in (none: type-checked only). */
export function readmeSnippets(readme = readFileSync(join(root, "README.md"), "utf8")): Snippet[] {
  const installer: CodeBlock[] = [];
  return codeBlocks(readme)
    .filter((block) => SCRIPT_LANGS.includes(block.lang))
    .map((block) => {
      let role: Role | undefined;
      if (block.section.startsWith("Installer stage 1")) {
        installer.push(block);
        role = installer.length === 1 ? "stage-1" : installer.length === 2 ? "stage-2" : undefined;
      } else if (block.subsection.startsWith("Testing a console without a server")) role = "testing";
      else if (block.section.startsWith("The console:") && block.subsection === "") role = "console";
      else if (block.section === "Scripts") role = "script";
      const js = block.lang.startsWith("j");
      return {
        ...block,
        ...(role ? { role } : {}),
        file: role ? RUN[role].file : `fragment-L${block.line}.${js ? "js" : "ts"}`,
      };
    });
}

/** Writes every snippet, the supplied modules and the fragments' context into `dir`. */
export function writeSnippets(dir: string, snippets: Snippet[] = readmeSnippets()): void {
  for (const snippet of snippets) writeFileSync(join(dir, snippet.file), snippet.code);
  for (const file of Object.values(SUPPLIED_MODULES)) cpSync(join(supplied, file), join(dir, file));
  writeFileSync(join(dir, FRAGMENT_CONTEXT_FILE), FRAGMENT_CONTEXT);
}

/** The names a supplied module exports. */
export function exportsOf(file: string): string[] {
  const text = readFileSync(join(supplied, file), "utf8");
  return [...text.matchAll(/^export (?:async )?(?:function|const|class) (\w+)/gm)].map((m) => m[1]!);
}

/**
 * tsc's error lines for the snippet files, at the README's own lines
 * (`README.md:123 error TS2304: Cannot find name …`); other lines as they are.
 */
export function atReadmeLines(output: string, snippets: Snippet[]): string[] {
  const where = new Map(snippets.map((s) => [s.file, s.line]));
  return output
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const m = /^(\S+?)\((\d+),\d+\): (.*)$/.exec(line);
      const start = m && where.get(m[1]!);
      return m && start ? `README.md:${start + Number(m[2]) - 1} ${m[3]}` : line;
    });
}

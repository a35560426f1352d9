/**
 * Reading Markdown as the README tests need it: the fenced code blocks with the heading they sit
 * under, the lines a snippet marks as the reader's own (`// yours:`), and the relative links with
 * the anchors they may point at.
 */

/** A fenced code block of a Markdown file. */
export interface CodeBlock {
  /** The fence's language (`ts`, `sh`, …; "" when none). */
  lang: string;
  /** The nearest `##` heading above it. */
  section: string;
  /** The nearest `###` heading above it, inside `section` ("" when none). */
  subsection: string;
  /** The 1-based line of the block's first code line in the file. */
  line: number;
  /** The code, without the fences. */
  code: string;
}

/** The languages whose blocks are TypeScript or JavaScript snippets. */
export const SCRIPT_LANGS = ["ts", "typescript", "js", "javascript"];

/** Every fenced block of `markdown`, in order. */
export function codeBlocks(markdown: string): CodeBlock[] {
  const lines = markdown.split("\n");
  const blocks: CodeBlock[] = [];
  let section = "";
  let subsection = "";
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith("## ")) [section, subsection] = [line.slice(3).trim(), ""];
    else if (line.startsWith("### ")) subsection = line.slice(4).trim();
    const fence = /^(`{3,}|~{3,})\s*([\w+-]*)/.exec(line);
    if (!fence) continue;
    const close = fence[1]!;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !lines[end]!.startsWith(close)) end++;
    blocks.push({ lang: fence[2]!, section, subsection, line: start + 1, code: lines.slice(start, end).join("\n") });
    i = end;
  }
  return blocks;
}

/** The lines of `markdown` with its fenced blocks blanked (same line count). */
function outsideFences(markdown: string): string[] {
  let inFence: string | undefined;
  return markdown.split("\n").map((line) => {
    const fence = /^(`{3,}|~{3,})/.exec(line);
    if (inFence) {
      if (fence && line.startsWith(inFence)) inFence = undefined;
      return "";
    }
    if (fence) {
      inFence = fence[1]!;
      return "";
    }
    return line;
  });
}

/** `markdown` with its fenced blocks and inline code spans blanked (same line count), for link search. */
function prose(markdown: string): string[] {
  return outsideFences(markdown).map((line) => line.replace(/`[^`]*`/g, (span) => " ".repeat(span.length)));
}

/** A link of a Markdown file to a path (with or without an anchor) or to an anchor of itself. */
export interface RelativeLink {
  /** The link's target as written. */
  target: string;
  /** The 1-based line it is on. */
  line: number;
}

/** Every link of `markdown` that is not absolute (no scheme, not protocol-relative). */
export function relativeLinks(markdown: string): RelativeLink[] {
  const links: RelativeLink[] = [];
  prose(markdown).forEach((line, i) => {
    for (const match of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = match[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")) continue;
      links.push({ target, line: i + 1 });
    }
    for (const match of line.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/g)) {
      const target = match[1]!;
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push({ target, line: i + 1 });
    }
    for (const match of line.matchAll(/<a\s[^>]*href="([^"]+)"/g)) {
      const target = match[1]!;
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push({ target, line: i + 1 });
    }
  });
  return links;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function headingSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** Every anchor a link into `markdown` may name: its headings' slugs (repeats numbered) and its `<a id>`/`<a name>`. */
export function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of outsideFences(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const slug = headingSlug(heading[1]!);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      found.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const match of line.matchAll(/<a\s[^>]*(?:id|name)="([^"]+)"/g)) found.add(match[1]!);
  }
  return found;
}

/** A line of a snippet that the reader supplies: an import of their own module, or a constant of theirs. */
export type YoursLine =
  | { kind: "import"; names: string[]; from: string; line: number }
  | { kind: "const"; name: string; line: number }
  | { kind: "unrecognised"; text: string; line: number };

/**
 * The `// yours:` lines of a snippet: `import { a, b } from "./module.js"; // yours: …` (the
 * import may span lines; the marker follows its end) and `const NAME = …; // yours: …`.
 */
export function yoursLines(code: string): YoursLine[] {
  const found: YoursLine[] = [];
  const lineOf = (index: number) => code.slice(0, index).split("\n").length;
  const imports = /import\s*\{([^}]*)\}\s*from\s*"([^"]+)";[ \t]*\/\/ yours:/g;
  const covered = new Set<number>();
  for (const match of code.matchAll(imports)) {
    const names = match[1]!
      .split(",")
      .map((name) => name.trim())
      .filter(Boolean);
    const line = lineOf(match.index + match[0].length);
    covered.add(line);
    found.push({ kind: "import", names, from: match[2]!, line });
  }
  code.split("\n").forEach((text, i) => {
    if (!text.includes("// yours:") || covered.has(i + 1)) return;
    const constant = /^const (\w+)(?::[^=]+)? = .+;[ \t]*\/\/ yours:/.exec(text);
    found.push(
      constant ? { kind: "const", name: constant[1]!, line: i + 1 } : { kind: "unrecognised", text, line: i + 1 },
    );
  });
  return found;
}

/** `code` with each `const NAME = …; // yours: …` line given the value `values[NAME]` (an expression). */
export function supplyConstants(code: string, values: Record<string, string>): string {
  return code
    .split("\n")
    .map((text) => {
      const constant = /^const (\w+)(?::[^=]+)? = .+;[ \t]*\/\/ yours:/.exec(text);
      if (!constant) return text;
      const value = values[constant[1]!];
      if (value === undefined) throw new Error(`no value supplied for ${constant[1]}`);
      return `const ${constant[1]} = ${value}; // supplied by the test`;
    })
    .join("\n");
}

/**
 * Listing a release directory: what the tooling signs and what a directory check compares
 * with its manifest.
 * @internal
 * @module
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";

/** Every regular file below `dir`, as sorted release paths (POSIX, relative). Symlinks and other non-regular entries are returned in `rejected`. */
export async function walkFiles(dir: string): Promise<{ files: string[]; rejected: string[] }> {
  const files: string[] = [];
  const rejected: string[] = [];
  async function walk(at: string, prefix: string): Promise<void> {
    const entries = await readdir(at, { withFileTypes: true });
    for (const entry of entries) {
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(join(at, entry.name), rel);
      else if (entry.isFile()) files.push(rel);
      else rejected.push(rel);
    }
  }
  await walk(dir, "");
  // code-unit order, not the locale's: the manifest's order is the same on every machine
  const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return { files: files.sort(order), rejected: rejected.sort(order) };
}

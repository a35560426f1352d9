/**
 * The founder serving the cluster's release to a joiner that upgrades itself (`served: true`):
 * files of `<releaseDir>/<version>/` (payload/manifest.json, os/blobs/..., sysext/...), read
 * only, single byte ranges, a strong ETag and If-Range, never compressed, a few files at once
 * per registration. The joiner trusts none of it: it checks the manifest's signature and
 * every file against the manifest.
 * @module
 */

import { createHash } from "node:crypto";
import { createReadStream, existsSync, realpathSync, statSync, type Stats } from "node:fs";
import { join, sep } from "node:path";
import { HttpProblem, type RequestContext } from "./http.js";
import type { ReleaseAvailability } from "./upgrade-rules.js";

/** The top-level directories of a release that may be served. */
const SERVED_ROOTS = new Set(["payload", "os", "sysext"]);

/**
 * Where a joiner may get `release`: from the mirror (`source`, preferred: it spares the
 * founder) or served by the founder when its release directory has the release's manifest.
 */
export function releaseAvailability(
  release: string,
  options: { releaseDir?: string | undefined; releaseMirror?: string | undefined },
): ReleaseAvailability | undefined {
  if (options.releaseMirror) return { source: `${options.releaseMirror.replace(/\/+$/, "")}/${release}/` };
  if (options.releaseDir && existsSync(join(options.releaseDir, release, "payload", "manifest.json")))
    return { served: true };
  return undefined;
}

/**
 * The file a served path names, or a 404. The path is decoded one segment at a time, so an
 * encoded slash cannot build a path; `.`, `..`, empty segments, backslashes and NUL are
 * refused, and the real path (symlinks resolved) must stay inside the release directory.
 */
export function resolveReleasePath(root: string, rawPath: string): string {
  const notFound = (): HttpProblem => new HttpProblem(404, "NOT_FOUND", { detail: "No such file in the release." });
  const segments: string[] = [];
  for (const raw of rawPath.split("/")) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      throw notFound();
    }
    if (segment === "" || segment === "." || segment === ".." || /[/\\\0]/.test(segment)) throw notFound();
    segments.push(segment);
  }
  if (!SERVED_ROOTS.has(segments[0] ?? "")) throw notFound();
  let realRoot: string;
  let realFile: string;
  try {
    realRoot = realpathSync(root);
    realFile = realpathSync(join(root, ...segments));
  } catch {
    throw notFound();
  }
  if (!realFile.startsWith(realRoot + sep)) throw notFound();
  return realFile;
}

/** A strong ETag of a file's identity and version: size, mtime and inode, hashed. */
export function fileEtag(stat: Stats): string {
  const digest = createHash("sha256").update(`${stat.size}-${stat.mtimeMs}-${stat.ino}`).digest("hex").slice(0, 32);
  return `"${digest}"`;
}

/** A single satisfiable range, "unsatisfiable", or undefined when the header is to be ignored. */
export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | "unsatisfiable" | undefined {
  if (header === undefined) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m) return undefined; // several ranges or another unit: answered whole, as RFC 9110 allows
  const [, a, b] = m;
  if (a === "" && b === "") return undefined;
  if (a === "") {
    const suffix = Number(b);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(a);
  const end = b === "" ? size - 1 : Math.min(Number(b), size - 1);
  if (b !== "" && Number(b) < start) return undefined;
  if (start >= size) return "unsatisfiable";
  return { start, end };
}

/** Counts files streaming per registration, for the "a few at once" limit. */
export class ServedFiles {
  readonly #active = new Map<string, number>();

  /** Takes a slot for `joinId`, or false when it already streams `max` files. */
  acquire(joinId: string, max: number): boolean {
    const n = this.#active.get(joinId) ?? 0;
    if (n >= max) return false;
    this.#active.set(joinId, n + 1);
    return true;
  }

  /** Gives a slot back. */
  release(joinId: string): void {
    const n = (this.#active.get(joinId) ?? 1) - 1;
    if (n <= 0) this.#active.delete(joinId);
    else this.#active.set(joinId, n);
  }
}

/**
 * Answers GET or HEAD for one release file: 200 whole, 206 one range (`Content-Range`), 416
 * past the end (its `Content-Range` naming only the size), If-Range honoured (a changed file is sent
 * whole). The slot taken for it is given back when the answer ends, however it ends.
 */
export function sendReleaseFile(ctx: RequestContext, file: string, done: () => void): void {
  let stat: Stats;
  try {
    stat = statSync(file);
  } catch {
    done();
    throw new HttpProblem(404, "NOT_FOUND", { detail: "No such file in the release." });
  }
  if (!stat.isFile()) {
    done();
    throw new HttpProblem(404, "NOT_FOUND", { detail: "No such file in the release." });
  }
  const size = stat.size;
  const etag = fileEtag(stat);
  const ifRange = ctx.req.headers["if-range"];
  const rangeHeader = ifRange !== undefined && ifRange !== etag ? undefined : ctx.req.headers.range;
  const range = parseRange(rangeHeader, size);
  const common = {
    ETag: etag,
    "Accept-Ranges": "bytes",
    "Content-Type": "application/octet-stream",
    "Cache-Control": "no-store",
  };
  if (range === "unsatisfiable") {
    done();
    throw new HttpProblem(416, "RANGE_NOT_SATISFIABLE", {
      detail: `The range starts past the end of the file (${size} bytes).`,
      headers: { "Content-Range": `bytes */${size}`, ETag: etag, "Accept-Ranges": "bytes" },
    });
  }
  const { res } = ctx;
  res.once("close", done);
  const start = range?.start ?? 0;
  const end = range?.end ?? size - 1;
  const length = size === 0 ? 0 : end - start + 1;
  if (range)
    res.writeHead(206, { ...common, "Content-Range": `bytes ${start}-${end}/${size}`, "Content-Length": length });
  else res.writeHead(200, { ...common, "Content-Length": size });
  if (ctx.req.method === "HEAD" || length === 0) {
    res.end();
    return;
  }
  const stream = createReadStream(file, { start, end });
  stream.on("error", () => res.destroy());
  stream.pipe(res);
}

/**
 * Direct I/O for the downloader's writes (`O_DIRECT` on Linux): aligned buffers and a second,
 * direct handle on a file already open.
 * @internal
 * @module
 */
import { constants as fsc } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";

/** Alignment of direct I/O: offsets, lengths and buffer addresses (4096 covers 512- and 4096-byte sectors). */
export const DIRECT_ALIGN = 4096;

/** A WebAssembly page: the unit a WebAssembly memory grows by. */
const WASM_PAGE = 65_536;

/**
 * `count` buffers of `size` bytes (a multiple of {@link DIRECT_ALIGN}) at page-aligned
 * addresses, as direct I/O needs, and shared (views of a `SharedArrayBuffer`) when the
 * runtime allows, so a worker thread can hash them in place. JavaScript cannot ask for an
 * address; a WebAssembly memory's base is page-aligned by construction, so the buffers are
 * views of one. Undefined when WebAssembly is unavailable (`--jitless`): the caller then
 * writes through the page cache from ordinary buffers.
 */
export function alignedBuffers(count: number, size: number): Buffer[] | undefined {
  const pages = Math.ceil((count * size) / WASM_PAGE);
  let memory: WebAssembly.Memory | undefined;
  for (const shared of [true, false]) {
    try {
      memory = new WebAssembly.Memory({ initial: pages, maximum: pages, shared });
      break;
    } catch {
      // no shared memory here: try an unshared one
    }
  }
  if (!memory) return undefined;
  const buffer = memory.buffer;
  return Array.from({ length: count }, (_, i) => Buffer.from(buffer, i * size, size));
}

/**
 * A second handle on an open file, for direct I/O (`O_DIRECT`: written to the device, not
 * copied into the page cache, so the final fsync has nothing left to write back). Opened
 * through `/proc/self/fd`, so it is the very file `fh` has open, never whatever the path
 * names by now. Undefined where there is no `O_DIRECT` (not Linux) or the file system refuses
 * it: the caller then writes through `fh`.
 */
export async function openDirect(fh: FileHandle): Promise<FileHandle | undefined> {
  if (process.platform !== "linux" || !fsc.O_DIRECT) return undefined;
  try {
    return await open(`/proc/self/fd/${fh.fd}`, fsc.O_WRONLY | fsc.O_DIRECT);
  } catch {
    return undefined;
  }
}

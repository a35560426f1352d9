/**
 * Progress reports of a download: per file and for the whole release, at most one every
 * {@link REPORT_EVERY_MS} and one whenever a file is verified.
 * @internal
 * @module
 */
import type { ReleaseFile } from "../../release/manifest-types.js";

/** A progress report; one is sent at most every 100 ms, and whenever a file is verified. */
export interface ReleaseProgress {
  /** The file this report is about. */
  file: {
    /** Its release path. */
    path: string;
    /** Bytes of it verified so far: re-hashed from a `.partial` or an earlier run's file, or fetched. */
    bytesDone: number;
    /** Its declared size. */
    size: number;
    /** `checking` while bytes already on disk are re-hashed, `downloading`, then `verified`. */
    state: "checking" | "downloading" | "verified";
  };
  /** Bytes of the whole release done (as `file.bytesDone`, summed). */
  bytesDone: number;
  /** Bytes of the whole release. */
  bytesTotal: number;
  /** Files verified and in place. */
  filesDone: number;
  /** Files in the manifest. */
  filesTotal: number;
  /** Bytes received from the source in this run. */
  bytesFetched: number;
  /** Receive rate over the last 2 s, bytes per second. */
  bytesPerSecond: number;
}

/** Ten reports a second at most: smooth for a progress bar, nothing for the download's CPU. */
const REPORT_EVERY_MS = 100;
/** The receive rate is averaged over this long: steady enough to read, recent enough to mean "now". */
const RATE_WINDOW_MS = 2000;

/** One file's side of the progress. */
export interface FileTrack {
  state: ReleaseProgress["file"]["state"];
  /** `n` more bytes of the file are done. */
  add(n: number): void;
  /** The file starts over from zero. */
  reset(): void;
  /** The file is verified and in place. */
  verified(): void;
}

/** The progress of a whole download, reported to `onProgress`. */
export class Progress {
  private bytesDone = 0;
  private filesDone = 0;
  private readonly bytesTotal: number;
  private last = 0;
  /** (time, bytes fetched) samples over the last {@link RATE_WINDOW_MS}. */
  private readonly samples: Array<[number, number]> = [];

  constructor(
    private readonly files: readonly ReleaseFile[],
    private readonly onProgress: ((p: ReleaseProgress) => void) | undefined,
    private readonly fetched: () => number,
  ) {
    this.bytesTotal = files.reduce((sum, f) => sum + f.size, 0);
  }

  /** The progress of one file of the manifest. */
  track(file: ReleaseFile): FileTrack {
    const state = {
      path: file.path,
      bytesDone: 0,
      size: file.size,
      state: "downloading" as ReleaseProgress["file"]["state"],
    };
    const self = this;
    return {
      get state() {
        return state.state;
      },
      set state(value) {
        state.state = value;
      },
      add(n) {
        state.bytesDone += n;
        self.bytesDone += n;
        self.emit(state, false);
      },
      reset() {
        self.bytesDone -= state.bytesDone;
        state.bytesDone = 0;
      },
      verified() {
        self.bytesDone += file.size - state.bytesDone;
        state.bytesDone = file.size;
        state.state = "verified";
        self.filesDone += 1;
        self.emit(state, true);
      },
    };
  }

  private emit(file: ReleaseProgress["file"], force: boolean): void {
    if (!this.onProgress) return;
    const now = performance.now();
    if (!force && now - this.last < REPORT_EVERY_MS) return;
    this.last = now;
    const fetched = this.fetched();
    this.samples.push([now, fetched]);
    while (this.samples.length > 2 && now - this.samples[1]![0] >= RATE_WINDOW_MS) this.samples.shift();
    const [t0, f0] = this.samples[0]!;
    const rate = now - t0 > 0 ? ((fetched - f0) * 1000) / (now - t0) : 0;
    try {
      this.onProgress({
        file: { ...file },
        bytesDone: this.bytesDone,
        bytesTotal: this.bytesTotal,
        filesDone: this.filesDone,
        filesTotal: this.files.length,
        bytesFetched: fetched,
        bytesPerSecond: Math.round(rate),
      });
    } catch {
      // a progress callback cannot break a download
    }
  }
}

/**
 * The one error a start fails with when a listener cannot take its address, worded for the
 * person who started it: which listener, which address, why, and which setting to change.
 * `main.ts` prints it as one line and exits non-zero.
 * @module
 */

/**
 * A listener could not take its address: in use, not this machine's, or not allowed. `setting`
 * names the configuration that chooses the address, so the one line an operator reads says
 * what to change.
 */
export class ListenError extends Error {
  /** The address as `host:port`. */
  readonly address: string;
  /** The environment variable (and flag) that sets it, e.g. `STRATUM_JOIN_ADDR`. */
  readonly setting: string;
  /** The system's error code: `EADDRINUSE`, `EADDRNOTAVAIL`, `EACCES`, … */
  readonly code: string | undefined;

  constructor(what: string, address: string, setting: string, cause: unknown) {
    const code = (cause as NodeJS.ErrnoException | undefined)?.code;
    const why =
      code === "EADDRINUSE"
        ? "the address is in use (another process listens there)"
        : code === "EADDRNOTAVAIL"
          ? "it is not an address of this machine"
          : code === "EACCES"
            ? "permission denied (a port below 1024 needs privileges)"
            : ((cause as Error | undefined)?.message ?? "unknown error");
    const flag = `--${setting
      .replace(/^STRATUM_/, "")
      .toLowerCase()
      .replace(/_/g, "-")}`;
    super(
      `the ${what} cannot listen on ${address}: ${why}; set ${setting} (or ${flag}) to another address (port 0 picks a free one)`,
      { cause },
    );
    this.name = "ListenError";
    this.address = address;
    this.setting = setting;
    this.code = code;
  }
}

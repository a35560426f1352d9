/**
 * The JavaScript runtime lacks something a call needs ({@link RuntimeUnsupportedError}): the
 * call is refused before it sends anything, rather than failing half way with the runtime's
 * own TypeError.
 * @module
 */
import { StratumError } from "./stratum-error.js";

/** What the runtime lacks. */
export type RuntimeFeature =
  /**
   * The TLS exporter (`TLSSocket.exportKeyingMaterial`, RFC 5705): proving a join code binds
   * the proof to the TLS connection through it (docs/protocol.md#channel-binding), so
   * `checkJoinCode` and `registerMachine` cannot run without it. Deno's `node:tls` has none.
   */
  "tls-exporter";

/** A call this runtime cannot make; `feature` names what it lacks, `runtime` which runtime this is. */
export class RuntimeUnsupportedError extends StratumError {
  /** Always `RUNTIME_UNSUPPORTED`. */
  declare readonly code: "RUNTIME_UNSUPPORTED";
  /** What the runtime lacks. */
  readonly feature: RuntimeFeature;
  /** The runtime and its version, e.g. `Deno 2.9.6`, `Bun 1.4.4`, `Node v20.20.2`. */
  readonly runtime: string;

  constructor(feature: RuntimeFeature, runtime: string, message: string) {
    super("RUNTIME_UNSUPPORTED", message);
    this.name = "RuntimeUnsupportedError";
    this.feature = feature;
    this.runtime = runtime;
  }
}

/** The running runtime and its version, as {@link RuntimeUnsupportedError.runtime} names it. */
export function runtimeName(): string {
  const g = globalThis as {
    Deno?: { version?: { deno?: string } } | undefined;
    Bun?: { version?: string } | undefined;
    process?: { version?: string } | undefined;
  };
  if (g.Deno?.version?.deno) return `Deno ${g.Deno.version.deno}`;
  if (g.Bun?.version) return `Bun ${g.Bun.version}`;
  if (g.process?.version) return `Node ${g.process.version}`;
  return "this runtime";
}

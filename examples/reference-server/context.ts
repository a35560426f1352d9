/**
 * What every part of the founder shares: the store, the configuration, the cluster's identity
 * and secrets, the current CA, and the few reads they all make (the membership generation,
 * whether an upgrade runs, a join by id). join-codes.ts, registrations.ts, decisions.ts and
 * delivery-queue.ts each hold one; data-dir.ts makes it when the cluster opens.
 * @module
 */

import type { ClusterCa } from "@stratum/join/server";
import type { ClusterSettings, Limits, Timing } from "./config.js";
import type { ClusterSecrets, OpenBaoMode } from "./delivery.js";
import { HttpProblem, quotedId } from "./http.js";
import type { JoinRow } from "./rows.js";
import type { Store } from "./store.js";
import type { ReleaseAvailability } from "./upgrade-rules.js";

/** What the cluster needs from the server's configuration. */
export interface ClusterOptions {
  dataDir: string;
  clusterRelease: string;
  isoPath: string;
  limits: Limits;
  timing: Timing;
  cluster: Partial<ClusterSettings> | undefined;
  /** How the cluster's OpenBao runs (which bundles carry the unseal key). */
  openBaoMode: OpenBaoMode;
  availability: () => ReleaseAvailability | undefined;
  faultHook: ((point: string) => void) | undefined;
}

/** Whether a cluster upgrade is in progress (`setClusterUpgrade`). */
export interface UpgradeState {
  inProgress: boolean;
  retryAfterSeconds: number;
}

/**
 * The `Retry-After` an upgrade answers when its request names none: long enough that waiting
 * joiners do not poll a busy cluster, short enough that they notice it is over.
 */
export const DEFAULT_UPGRADE_RETRY_SECONDS = 30;

/** The cluster's identity as a fresh data directory stores it. */
export interface StoredCluster {
  clusterId: string;
  settings: ClusterSettings;
}

/** The founder's shared state. */
export class ClusterContext {
  readonly store: Store;
  readonly options: ClusterOptions;
  readonly clusterId: string;
  readonly settings: ClusterSettings;
  readonly secrets: ClusterSecrets;
  /** The OPAQUE server setup (secret). */
  readonly serverSetup: string;
  #ca: ClusterCa;

  constructor(
    store: Store,
    options: ClusterOptions,
    stored: StoredCluster,
    secrets: ClusterSecrets,
    ca: ClusterCa,
    serverSetup: string,
  ) {
    this.store = store;
    this.options = options;
    this.clusterId = stored.clusterId;
    this.settings = stored.settings;
    this.secrets = secrets;
    this.serverSetup = serverSetup;
    this.#ca = ca;
  }

  /** The current cluster root CA (with its key). */
  get ca(): ClusterCa {
    return this.#ca;
  }

  /** Switches to a new CA, once its rotation is committed. */
  replaceCa(ca: ClusterCa): void {
    this.#ca = ca;
  }

  /** Calls the test hook at a named point (a throw there simulates a crash). */
  fault(point: string): void {
    this.options.faultHook?.(point);
  }

  /** The membership generation. */
  generation(): number {
    return this.store.getMeta<number>("generation") ?? 1;
  }

  /** Whether an upgrade is in progress. */
  upgradeState(): UpgradeState {
    return (
      this.store.getMeta<UpgradeState>("upgrade") ?? {
        inProgress: false,
        retryAfterSeconds: DEFAULT_UPGRADE_RETRY_SECONDS,
      }
    );
  }

  /** A registration by id; 404 when unknown. */
  joinOr404(joinId: string): JoinRow {
    const join = this.store.getJoin(joinId);
    if (!join) throw new HttpProblem(404, "NOT_FOUND", { detail: `No join ${quotedId(joinId)}.` });
    return join;
  }
}

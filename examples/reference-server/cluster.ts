/**
 * The founder's state and every change to it: join codes, registrations and their state
 * machine, approvals, members, the cluster CA and the cluster events tests can cause. The HTTP
 * layers (admin-api.ts, join-listener.ts) only parse, authorise and answer; the rules live
 * here, and each change is one transaction with its audit entry.
 *
 * State machine of a join:
 *   needs-upgrade ─(registers again on the cluster's release)→ pending
 *   pending ─approve→ approved ─(runner: its turn, green cluster)→ delivering
 *   delivering ─(first progress report)→ installing ─(step `join` done)→ joined
 *   delivering|installing ─(a failed step)→ failed ─retry|approve→ approved
 *   needs-upgrade|pending|approved ─reject→ rejected
 *   needs-upgrade|pending ─(24 h after its code's expiry)→ expired
 * @module
 */

import { X509Certificate as NodeX509Certificate } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
  openSync,
  fsyncSync,
  closeSync,
} from "node:fs";
import { join } from "node:path";
import {
  generateJoinCode,
  JoinUrlError,
  formatEndpoint,
  formatJoinUrl,
  parseEndpoint,
  type CodeCheck,
  type JoinCodeInfo,
  type MintedJoinCode,
  type NodeJoin,
  type Registration,
  type Step,
} from "@stratum/join";
import {
  createClusterCa,
  createJoinCodeRecord,
  createServerSetup,
  issueNodeCertificate,
  type ClusterCa,
} from "@stratum/join/server";
import { checkApproval } from "./approval.js";
import { DEFAULT_CLUSTER, type ClusterSettings, type Limits, type Timing } from "./config.js";
import {
  buildBundle,
  buildDelivery,
  buildNodeYaml,
  networkBindings,
  nodeLabels,
  type ClusterSecrets,
} from "./delivery.js";
import { HttpProblem, invalidInput } from "./http.js";
import { newClusterId, newCodeId, newJoinId, newNodeId, randomHex } from "./ids.js";
import type { ApprovalInput, ProgressInput, RegistrationInput } from "./schemas.js";
import {
  newJoinRow,
  Store,
  type JoinCodeRow,
  type JoinRow,
  type JoinState,
  type MemberRow,
  type StoredAssignment,
} from "./store.js";
import { judgeRelease, mismatchDetail, type ReleaseAvailability } from "./upgrade-rules.js";
import { codeState, iso, joinCodeView, memberView, nodeJoinView, registrationView, RUNNING_STATES } from "./views.js";

/** The states after which nothing more happens to a join. */
export const FINAL_STATES: ReadonlySet<JoinState> = new Set(["joined", "rejected", "expired"]);
const WAITING_STATES: JoinState[] = ["pending", "needs-upgrade"];

/** What the cluster needs from the server's configuration. */
export interface ClusterOptions {
  dataDir: string;
  clusterRelease: string;
  isoPath: string;
  limits: Limits;
  timing: Timing;
  cluster: Partial<ClusterSettings> | undefined;
  availability: () => ReleaseAvailability | undefined;
  faultHook: ((point: string) => void) | undefined;
}

/** Whether a cluster upgrade is in progress (`setClusterUpgrade`). */
export interface UpgradeState {
  inProgress: boolean;
  retryAfterSeconds: number;
}

interface StoredCluster {
  clusterId: string;
  settings: ClusterSettings;
}

/** Writes a file atomically with `mode`: temp file, fsync, rename. */
function writeSecretFile(path: string, content: string, mode = 0o600): void {
  const temp = `${path}.tmp-${randomHex(4)}`;
  writeFileSync(temp, content, { mode });
  const fd = openSync(temp, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  chmodSync(path, mode);
}

function caFromFiles(certPem: string, keyPem: string, fingerprint: string): ClusterCa {
  const certDer = new Uint8Array(new NodeX509Certificate(certPem).raw);
  return { certPem, keyPem, certDer, fingerprint };
}

/** The founder. Open it with {@link Cluster.open}. */
export class Cluster {
  readonly store: Store;
  readonly options: ClusterOptions;
  readonly clusterId: string;
  readonly settings: ClusterSettings;
  readonly secrets: ClusterSecrets;
  #ca: ClusterCa;
  readonly #serverSetup: string;

  private constructor(
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
    this.#ca = ca;
    this.#serverSetup = serverSetup;
  }

  /**
   * Opens the data directory (made 0700), creating on first start the database, the cluster
   * CA (its key a 0600 file), the OPAQUE server setup (0600), the cluster's settings and
   * secrets, and the founder as first member.
   */
  static async open(options: ClusterOptions): Promise<Cluster> {
    // Made 0700 when it is made; an existing directory's mode is the owner's business (it may
    // be a directory that holds other things), while every secret file in it is 0600.
    if (!existsSync(options.dataDir)) mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    mkdirSync(join(options.dataDir, "ca"), { recursive: true, mode: 0o700 });
    const store = new Store(join(options.dataDir, "stratum.db"));
    try {
      const setupPath = join(options.dataDir, "opaque-server-setup");
      if (!existsSync(setupPath)) writeSecretFile(setupPath, await createServerSetup());
      const serverSetup = readFileSync(setupPath, "utf8").trim();

      let caMeta = store.getMeta<{ stem: string; fingerprint: string }>("ca");
      if (!caMeta) {
        const ca = await createClusterCa();
        const stem = Cluster.#writeCa(options.dataDir, ca);
        store.tx(() => {
          store.setMeta("ca", { stem, fingerprint: ca.fingerprint });
          store.audit("system", "cluster.ca.created", "cluster", { caFingerprint: ca.fingerprint });
        });
        caMeta = { stem, fingerprint: ca.fingerprint };
      }
      const caDir = join(options.dataDir, "ca");
      const ca = caFromFiles(
        readFileSync(join(caDir, `${caMeta.stem}.pem`), "utf8"),
        readFileSync(join(caDir, `${caMeta.stem}.key`), "utf8"),
        caMeta.fingerprint,
      );

      let stored = store.getMeta<StoredCluster>("cluster");
      let secrets = store.getMeta<ClusterSecrets>("secrets");
      if (!stored || !secrets) {
        const settings: ClusterSettings = { ...DEFAULT_CLUSTER, ...(options.cluster ?? {}) };
        const fresh: StoredCluster = { clusterId: newClusterId(), settings };
        const newSecrets: ClusterSecrets = {
          postgresPassword: randomHex(24),
          adminPassword: randomHex(16),
          openBaoToken: `hvs.${randomHex(24)}`,
          dnsEncryptionKey: randomHex(32),
          openBaoUnsealKey: Buffer.from(randomHex(32), "hex").toString("base64"),
        };
        store.tx(() => {
          store.setMeta("cluster", fresh);
          store.setMeta("secrets", newSecrets);
          store.setMeta("generation", 1);
          store.setMeta("upgrade", { inProgress: false, retryAfterSeconds: 30 });
          const f = settings.founder;
          const storagePrefix = settings.networks.storage.cidr.split("/")[1] ?? "24";
          const overlayPrefix = settings.networks.overlay.cidr.split("/")[1] ?? "24";
          const assignment: StoredAssignment = {
            name: f.name,
            role: "hybrid",
            ...(f.rack ? { rack: f.rack } : {}),
            ...(f.az ? { az: f.az } : {}),
            mgmt: { interface: f.mgmtInterface, address: f.mgmtIp },
            links: [
              {
                name: "data",
                kind: "ethernet",
                interface: f.dataInterface,
                purposes: ["storage", "overlay"],
                addresses: [`${f.storageIp}/${storagePrefix}`, `${f.overlayIp}/${overlayPrefix}`],
                mtu: Math.max(settings.networks.storage.mtu ?? 1500, settings.networks.overlay.mtu ?? 1500),
              },
            ],
            disks: [{ key: f.disk.key, role: f.disk.role }],
            diskNames: { [f.disk.key]: f.disk.name },
            provider: {
              topology: settings.networks.providerTopology,
              ...(settings.networks.providerUpstreamInterface
                ? { upstreamInterface: settings.networks.providerUpstreamInterface }
                : {}),
              ...(settings.networks.providerVlan !== undefined ? { vlan: settings.networks.providerVlan } : {}),
            },
          };
          const member: MemberRow = {
            nodeId: newNodeId(),
            name: f.name,
            role: "hybrid",
            state: "active",
            mgmtIp: f.mgmtIp,
            appliedGeneration: 1,
            joinedAt: Date.now(),
            joinId: null,
            az: f.az ?? null,
            labels: nodeLabels(assignment),
            networks: networkBindings(assignment, settings),
            assignment,
          };
          store.putMember(member);
          store.audit("system", "cluster.created", fresh.clusterId, { founder: member.nodeId });
        });
        stored = fresh;
        secrets = newSecrets;
      }
      return new Cluster(store, options, stored, secrets, ca, serverSetup);
    } catch (error) {
      store.close();
      throw error;
    }
  }

  static #writeCa(dataDir: string, ca: ClusterCa): string {
    const stem = ca.fingerprint.replace(/:/g, "").slice(0, 16).toLowerCase();
    writeSecretFile(join(dataDir, "ca", `${stem}.key`), ca.keyPem);
    writeSecretFile(join(dataDir, "ca", `${stem}.pem`), ca.certPem, 0o644);
    return stem;
  }

  /** The current cluster root CA (with its key). */
  get ca(): ClusterCa {
    return this.#ca;
  }

  /** The OPAQUE server setup (secret). */
  get serverSetup(): string {
    return this.#serverSetup;
  }

  #fault(point: string): void {
    this.options.faultHook?.(point);
  }

  /** The membership generation. */
  generation(): number {
    return this.store.getMeta<number>("generation") ?? 1;
  }

  /** Whether an upgrade is in progress. */
  upgradeState(): UpgradeState {
    return this.store.getMeta<UpgradeState>("upgrade") ?? { inProgress: false, retryAfterSeconds: 30 };
  }

  /** Throws 503 `UPGRADE_IN_PROGRESS` while an upgrade is in progress. */
  assertNotUpgrading(): void {
    const upgrade = this.upgradeState();
    if (upgrade.inProgress) {
      throw new HttpProblem(503, "UPGRADE_IN_PROGRESS", {
        detail: "The cluster is upgrading; try again later.",
        headers: { "Retry-After": String(upgrade.retryAfterSeconds) },
      });
    }
  }

  // ---------------------------------------------------------------- join codes

  /**
   * Mints a join code: a fresh code whose selector no live code has, its OPAQUE record made
   * under the current CA (the only thing stored), audited. The code is in the answer only.
   */
  async mintCode(
    actor: string,
    request: { ttlSeconds?: number | undefined; endpoint?: string | undefined },
    defaultEndpoint: string,
  ): Promise<MintedJoinCode> {
    const ttl = request.ttlSeconds ?? this.options.timing.defaultCodeTtlSeconds;
    if (ttl > this.options.timing.maxCodeTtlSeconds)
      throw invalidInput([
        { field: "ttlSeconds", message: `at most ${this.options.timing.maxCodeTtlSeconds} seconds` },
      ]);
    let endpoint: ReturnType<typeof parseEndpoint>;
    try {
      endpoint = parseEndpoint(request.endpoint ?? defaultEndpoint);
    } catch (error) {
      if (error instanceof JoinUrlError) throw invalidInput([{ field: "endpoint", message: error.message }]);
      throw error;
    }
    for (let attempt = 0; attempt < 8; attempt++) {
      // Draws are cheap (the Argon2 comes after): draw until the selector is free, which finds
      // one of the last free selectors too.
      const taken = new Set(this.store.liveCodes(Date.now()).map((c) => c.selector));
      if (taken.size >= 1024) break;
      let code = generateJoinCode();
      for (let draw = 0; taken.has(code.selector) && draw < 200_000; draw++) code = generateJoinCode();
      if (taken.has(code.selector)) break;
      const id = newCodeId();
      const ca = this.#ca;
      const record = await createJoinCodeRecord({
        serverSetup: this.#serverSetup,
        codeId: id,
        code: code.code,
        caDer: ca.certDer,
      });
      const now = Date.now();
      const row: JoinCodeRow = {
        id,
        selector: code.selector,
        record,
        caFingerprint: ca.fingerprint,
        endpoint: endpoint.endpoint,
        attempts: 0,
        createdBy: actor,
        createdAt: now,
        expiresAt: now + ttl * 1000,
        revokedBy: null,
        revokedAt: null,
      };
      const inserted = this.store.tx(() => {
        // Checked again inside the transaction: another mint may have taken the selector, or the
        // CA may have rotated, while Argon2 ran.
        if (ca !== this.#ca || this.store.liveCodes(now).some((c) => c.selector === code.selector)) return false;
        this.store.insertCode(row);
        this.store.audit(actor, "cluster.join_code.minted", id, {
          selector: row.selector,
          endpoint: row.endpoint,
          expiresAt: iso(row.expiresAt),
        });
        return true;
      });
      if (!inserted) continue;
      return {
        joinCode: joinCodeView(row, now, 0),
        endpoint: formatEndpoint(endpoint),
        code: code.formatted,
        url: formatJoinUrl({ endpoint: endpoint.endpoint, code: code.code }),
      };
    }
    throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
      detail: "No free selector: too many live join codes. Revoke some first.",
    });
  }

  /** Every join code, newest first. */
  listCodes(): JoinCodeInfo[] {
    const now = Date.now();
    return this.store.listCodes().map((c) => joinCodeView(c, now, this.store.registrationsOf(c.id)));
  }

  /** Revokes a code (answers a code that is no longer live as it is). */
  revokeCode(actor: string, id: string): JoinCodeInfo {
    const now = Date.now();
    const row = this.store.tx(() => {
      const code = this.store.getCode(id);
      if (!code) throw new HttpProblem(404, "NOT_FOUND", { detail: `No join code ${id}.` });
      if (codeState(code, now) === "live") {
        this.store.revokeCode(id, actor, now);
        this.store.audit(actor, "cluster.join_code.revoked", id, { selector: code.selector });
      }
      return this.store.getCode(id)!;
    });
    return joinCodeView(row, now, this.store.registrationsOf(id));
  }

  /**
   * The code a PAKE for `selector` runs against: the live one, else the newest that is not (so
   * its holder learns at KE3 why it no longer works), else none (a fake KE2). A code minted
   * under another CA is refused at once: 401 `JOIN_CODE_STALE`.
   */
  codeForPake(selector: string): JoinCodeRow | undefined {
    const now = Date.now();
    const codes = this.store.codesBySelector(selector);
    const chosen = codes.find((c) => codeState(c, now) === "live") ?? codes[0];
    if (chosen && chosen.caFingerprint !== this.#ca.fingerprint) {
      throw new HttpProblem(401, "JOIN_CODE_STALE", {
        detail: "The join code was minted under a cluster CA that has since rotated; mint a new one.",
      });
    }
    return chosen;
  }

  /**
   * Counts an unproven PAKE attempt on a live code, atomically: true when counted. A code
   * whose budget is spent is burned instead (revoked by `system:too-many-attempts`).
   */
  countAttempt(codeId: string): boolean {
    return this.store.tx(() => {
      const code = this.store.getCode(codeId);
      if (!code || codeState(code, Date.now()) !== "live") return false;
      if (code.attempts >= this.options.limits.maxAttempts) {
        this.store.revokeCode(codeId, "system:too-many-attempts", Date.now());
        this.store.audit("system:too-many-attempts", "cluster.join_code.revoked", codeId, {
          selector: code.selector,
          attempts: code.attempts,
        });
        return false;
      }
      this.store.setAttempts(codeId, code.attempts + 1);
      return true;
    });
  }

  /** A valid KE3 clears the attempt its KE1 counted. */
  clearAttempt(codeId: string): void {
    this.store.tx(() => {
      const code = this.store.getCode(codeId);
      if (code && code.attempts > 0) this.store.setAttempts(codeId, code.attempts - 1);
    });
  }

  /** After a proven KE3: why the code no longer works (401 with the reason), or nothing. */
  refusalOfProvenCode(codeId: string): HttpProblem | undefined {
    const code = this.store.getCode(codeId);
    if (!code) return new HttpProblem(401, "JOIN_CODE_INVALID", { detail: "The join code was not proven." });
    if (code.caFingerprint !== this.#ca.fingerprint) {
      return new HttpProblem(401, "JOIN_CODE_STALE", {
        detail: "The join code was minted under a cluster CA that has since rotated; mint a new one.",
      });
    }
    const state = codeState(code, Date.now());
    if (state === "revoked") {
      const burned = code.revokedBy === "system:too-many-attempts";
      return new HttpProblem(401, "JOIN_CODE_REVOKED", {
        detail: burned
          ? "The join code was revoked after too many attempts that did not prove it."
          : "The join code was revoked.",
        details: { revokedBy: code.revokedBy },
      });
    }
    if (state === "expired")
      return new HttpProblem(401, "JOIN_CODE_EXPIRED", { detail: "The join code has expired; mint a new one." });
    return undefined;
  }

  // ---------------------------------------------------------------- releases

  /** The verdict on a joiner's release, or a 409 `RELEASE_MISMATCH` with the rule that failed. */
  judge(release: string, selfUpgrade: boolean): ReturnType<typeof judgeRelease> & { kind: "same" | "upgrade" } {
    const clusterRelease = this.options.clusterRelease;
    const verdict = judgeRelease(release, clusterRelease, selfUpgrade, this.options.availability);
    if (verdict.kind === "mismatch") {
      throw new HttpProblem(409, "RELEASE_MISMATCH", {
        detail: mismatchDetail(verdict.reason, release, clusterRelease),
        details: {
          clusterRelease,
          isoPath: this.options.isoPath.replace("{release}", clusterRelease),
          reason: verdict.reason,
        },
      });
    }
    return verdict;
  }

  /** The answer of a passed code check. */
  codeCheck(codeId: string, release: string, selfUpgrade: boolean): CodeCheck {
    const verdict = this.judge(release, selfUpgrade);
    const code = this.store.getCode(codeId)!;
    return {
      clusterRelease: this.options.clusterRelease,
      expiresAt: iso(code.expiresAt),
      ...(verdict.kind === "upgrade" ? { upgrade: verdict.upgrade } : {}),
    };
  }

  // ---------------------------------------------------------------- registrations

  /**
   * Registers a machine whose code was just proven, or answers its key's registration: a new
   * one is 201, the key's existing one 200 (a `needs-upgrade` one that now runs the cluster's
   * release becomes `pending`). A rejected key is 409; more than `maxWaiting` waiting is 429.
   */
  register(
    input: RegistrationInput,
    proof: {
      codeId: string;
      keyFingerprint: string;
      sourceAddr: string;
      pairingCode: string;
      allowNew: () => number | undefined;
    },
  ): { status: 200 | 201; registration: Registration } {
    const verdict = this.judge(input.release, input.selfUpgrade === true);
    const now = Date.now();
    const code = this.store.getCode(proof.codeId)!;
    const expiresAt = code.expiresAt + this.options.timing.pendingGraceMs;
    return this.store.tx(() => {
      const existing = this.store.joinByKey(proof.keyFingerprint);
      if (existing && existing.state === "rejected") {
        throw new HttpProblem(409, "REGISTRATION_REJECTED", {
          detail: "This machine's registration was rejected.",
          details: { reason: existing.reason ?? "" },
        });
      }
      if (existing && existing.state !== "expired") {
        if (existing.state === "needs-upgrade") {
          if (verdict.kind === "same") {
            this.store.patchJoin(
              existing.id,
              {
                state: "pending",
                release: input.release,
                upgrade: null,
                failedStep: null,
                failedStepTitle: null,
                failedError: null,
                expiresAt: Math.max(existing.expiresAt ?? 0, expiresAt),
              },
              now,
            );
            this.store.audit("joiner", "cluster.join.upgraded", existing.id, { release: input.release });
          } else if (JSON.stringify(verdict.upgrade) !== JSON.stringify(existing.upgrade)) {
            this.store.patchJoin(existing.id, { release: input.release, upgrade: verdict.upgrade }, now);
          }
        }
        return { status: 200, registration: this.registration(this.store.getJoin(existing.id)!) };
      }
      const waiting = this.store.joinsInState(...WAITING_STATES).length;
      if (waiting >= this.options.limits.maxWaiting) {
        throw new HttpProblem(429, "RATE_LIMITED", {
          detail: `${waiting} registrations are waiting for approval; try again later.`,
          headers: { "Retry-After": "60" },
        });
      }
      const retryAfter = proof.allowNew();
      if (retryAfter !== undefined) {
        throw new HttpProblem(429, "RATE_LIMITED", {
          detail: "Too many registrations from this address.",
          headers: { "Retry-After": String(retryAfter) },
        });
      }
      const row = newJoinRow({
        id: newJoinId(),
        codeId: proof.codeId,
        state: verdict.kind === "upgrade" ? "needs-upgrade" : "pending",
        pairingCode: proof.pairingCode,
        keyFingerprint: proof.keyFingerprint,
        sourceAddr: proof.sourceAddr,
        hostname: input.hostname ?? null,
        systemSerial: input.systemSerial ?? null,
        release: input.release,
        inventory: input.inventory ?? null,
        upgrade: verdict.kind === "upgrade" ? verdict.upgrade : null,
        createdAt: now,
        expiresAt,
      });
      this.store.insertJoin(row);
      this.store.audit("joiner", "cluster.join.registered", row.id, {
        codeId: row.codeId,
        keyFingerprint: row.keyFingerprint,
        state: row.state,
        sourceAddr: row.sourceAddr,
      });
      return { status: 201, registration: this.registration(row) };
    });
  }

  /** A registration if `keyFingerprint` owns it; else 404 (another key learns nothing). */
  ownedJoin(joinId: string, keyFingerprint: string | undefined): JoinRow {
    const join = this.store.getJoin(joinId);
    if (!join || keyFingerprint === undefined || join.keyFingerprint !== keyFingerprint) {
      throw new HttpProblem(404, "NOT_FOUND", { detail: "No such registration for this key." });
    }
    return join;
  }

  /** The joiner's view of a registration. */
  registration(join: JoinRow): Registration {
    return registrationView(join, join.state === "approved" ? this.waitReason(join) : undefined);
  }

  /** What an approved join waits for. */
  waitReason(join: JoinRow): string {
    if (this.upgradeState().inProgress)
      return "waiting for the cluster upgrade to finish: joins run only on a green cluster";
    const running = this.store.joinsInState("delivering", "installing")[0];
    if (running && running.id !== join.id) return `waiting for ${running.id} to finish: one join runs at a time`;
    const ahead = this.#queue().findIndex((j) => j.id === join.id);
    return ahead > 0 ? `queued behind ${ahead} approved join(s)` : "queued: delivery starts shortly";
  }

  #queue(): JoinRow[] {
    return this.store
      .joinsInState("approved")
      .sort((a, b) => (a.approvedAt ?? 0) - (b.approvedAt ?? 0) || a.createdAt - b.createdAt);
  }

  /**
   * Records a progress report: steps (merged by name), new log lines (the last 2,000 kept),
   * and the state changes they mean. Only while `needs-upgrade`, `delivering` or `installing`.
   */
  progress(join: JoinRow, report: ProgressInput): Registration {
    if (join.state !== "needs-upgrade" && !RUNNING_STATES.has(join.state)) {
      throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
        detail: `The join is ${join.state}; it takes no progress reports.`,
      });
    }
    const now = Date.now();
    this.store.tx(() => {
      const current = this.store.getJoin(join.id)!;
      if (current.state !== join.state)
        throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
          detail: `The join is ${current.state}; it takes no progress reports.`,
        });
      const steps: Step[] = [...current.steps];
      for (const step of report.steps ?? []) {
        const i = steps.findIndex((s) => s.name === step.name);
        if (i >= 0) steps[i] = step;
        else steps.push(step);
      }
      this.store.appendLog(join.id, report.log ?? [], this.options.limits.logLines);
      const running = [...steps].reverse().find((s) => s.status === "running");
      const patch: Partial<JoinRow> = {
        steps,
        lastSeenAt: now,
        currentStep: running?.name ?? steps[steps.length - 1]?.name ?? null,
      };
      const failed = (report.steps ?? []).find((s) => s.status === "failed");
      if (current.state === "needs-upgrade") {
        const upgradeFailure = (report.steps ?? [])
          .filter((s) => s.status === "failed" && (s.name === "upgrade" || s.name.startsWith("upgrade/")))
          .pop();
        if (upgradeFailure)
          Object.assign(patch, {
            failedStep: upgradeFailure.name,
            failedStepTitle: upgradeFailure.title,
            failedError: upgradeFailure.message ?? "failed",
          });
        this.store.patchJoin(join.id, patch, now);
        return;
      }
      let state: JoinState = current.state === "delivering" ? "installing" : current.state;
      if (state !== current.state) this.store.audit("joiner", "cluster.join.installing", join.id, {});
      if (failed) {
        state = "failed";
        Object.assign(patch, {
          failedStep: failed.name,
          failedStepTitle: failed.title,
          failedError: failed.message ?? "failed",
          delivery: null,
        });
        if (current.nodeId) this.store.deleteMember(current.nodeId);
        this.store.audit("joiner", "cluster.join.failed", join.id, { failedStep: failed.name });
      } else if ((report.steps ?? []).some((s) => s.name === "join" && s.status === "done")) {
        state = "joined";
        patch.delivery = null;
        const member = current.nodeId ? this.store.getMember(current.nodeId) : undefined;
        if (member)
          this.store.putMember({ ...member, state: "active", appliedGeneration: this.generation(), joinedAt: now });
        this.store.audit("joiner", "cluster.join.joined", join.id, { nodeId: current.nodeId });
      }
      patch.state = state;
      this.store.patchJoin(join.id, patch, now);
    });
    return this.registration(this.store.getJoin(join.id)!);
  }

  // ---------------------------------------------------------------- admin on joins

  /** Every registration as the admin sees it, newest first. */
  listJoins(): NodeJoin[] {
    const now = Date.now();
    return this.store.listJoins().map((j) =>
      nodeJoinView(j, {
        now,
        stallAfterMs: this.options.timing.stallAfterMs,
        waitReason: j.state === "approved" ? this.waitReason(j) : undefined,
      }),
    );
  }

  /** One registration with its log tail; 404 when unknown. */
  getJoin(joinId: string): NodeJoin {
    const join = this.store.getJoin(joinId);
    if (!join) throw new HttpProblem(404, "NOT_FOUND", { detail: `No join ${joinId}.` });
    return nodeJoinView(join, {
      now: Date.now(),
      stallAfterMs: this.options.timing.stallAfterMs,
      waitReason: join.state === "approved" ? this.waitReason(join) : undefined,
      logTail: this.store.logTail(joinId),
    });
  }

  /** Approves a pending (or failed) join with its completed assignment; 409 with field errors when it does not fit. */
  approve(actor: string, joinId: string, input: ApprovalInput): NodeJoin {
    this.store.tx(() => {
      const join = this.store.getJoin(joinId);
      if (!join) throw new HttpProblem(404, "NOT_FOUND", { detail: `No join ${joinId}.` });
      if (join.state === "needs-upgrade") {
        throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
          detail:
            "The machine is upgrading itself to the cluster's release; it can be approved once it registers again as pending.",
        });
      }
      if (join.state !== "pending" && join.state !== "failed") {
        throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
          detail: `The join is ${join.state}; only a pending or failed join can be approved.`,
        });
      }
      const outcome = checkApproval(input, {
        join,
        settings: this.settings,
        members: this.store.listMembers(),
        otherJoins: this.store.listJoins().filter((j) => j.id !== joinId),
      });
      if (!outcome.ok)
        throw new HttpProblem(409, "JOIN_APPROVAL_REFUSED", {
          detail: "The assignment does not fit the machine or the cluster.",
          errors: outcome.errors,
        });
      const nodeId = join.nodeId ?? newNodeId();
      this.store.patchJoin(joinId, this.#requeue(actor, { assignment: outcome.assignment, nodeId }));
      this.store.audit(actor, "cluster.join.approved", joinId, {
        nodeId,
        ...(outcome.assignment.copiedFrom ? { copiedFrom: outcome.assignment.copiedFrom } : {}),
      });
    });
    return this.getJoin(joinId);
  }

  #requeue(actor: string, extra: Partial<JoinRow>): Partial<JoinRow> {
    return {
      ...extra,
      state: "approved",
      approvedBy: actor,
      approvedAt: Date.now(),
      failedStep: null,
      failedStepTitle: null,
      failedError: null,
      steps: [],
      currentStep: null,
      deliveredAt: null,
      delivery: null,
    };
  }

  /** Rejects a join that has not started delivering; its key is refused from then on. */
  reject(actor: string, joinId: string, reason: string): NodeJoin {
    this.store.tx(() => {
      const join = this.store.getJoin(joinId);
      if (!join) throw new HttpProblem(404, "NOT_FOUND", { detail: `No join ${joinId}.` });
      if (!["needs-upgrade", "pending", "approved"].includes(join.state)) {
        throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
          detail: `The join is ${join.state}; only a join that has not started delivering can be rejected.`,
        });
      }
      const now = Date.now();
      this.store.patchJoin(joinId, { state: "rejected", rejectedBy: actor, rejectedAt: now, reason }, now);
      this.store.audit(actor, "cluster.join.rejected", joinId, {});
    });
    return this.getJoin(joinId);
  }

  /** Queues a failed join again with the assignment (and addresses) it had. */
  retry(actor: string, joinId: string): NodeJoin {
    this.store.tx(() => {
      const join = this.store.getJoin(joinId);
      if (!join) throw new HttpProblem(404, "NOT_FOUND", { detail: `No join ${joinId}.` });
      if (join.state !== "failed")
        throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
          detail: `The join is ${join.state}; only a failed join can be retried.`,
        });
      this.store.patchJoin(joinId, this.#requeue(actor, {}));
      this.store.audit(actor, "cluster.join.retried", joinId, {});
    });
    return this.getJoin(joinId);
  }

  // ---------------------------------------------------------------- the runner's steps

  /**
   * Expires waiting joins nobody approved within the grace after their code's expiry.
   * Returns how many expired.
   */
  expireWaiting(now = Date.now()): number {
    const due = this.store.joinsInState(...WAITING_STATES).filter((j) => j.expiresAt !== null && j.expiresAt <= now);
    if (due.length === 0) return 0;
    this.store.tx(() => {
      for (const j of due) {
        this.store.patchJoin(j.id, { state: "expired" }, now);
        this.store.audit("system", "cluster.join.expired", j.id, {});
      }
    });
    return due.length;
  }

  /**
   * Starts the next approved join when none runs and the cluster is green: issues its
   * transport leaf, then in one transaction writes its member row (joining), raises the
   * membership generation and stores its node.yaml and bundle (`delivering`). Returns the
   * join started, if any.
   */
  async deliverNext(): Promise<string | undefined> {
    if (this.upgradeState().inProgress) return undefined;
    if (this.store.joinsInState("delivering", "installing").length > 0) return undefined;
    const next = this.#queue()[0];
    if (!next || !next.nodeId || !next.assignment) return undefined;
    const assignment = next.assignment;
    const nodeId = next.nodeId;
    const mgmtIp = assignment.mgmt?.address ? assignment.mgmt.address.split("/")[0]! : undefined;
    const ca = this.#ca;
    const leaf = await issueNodeCertificate(ca, { nodeId, ...(mgmtIp ? { hosts: [mgmtIp] } : {}) });
    const openBaoNodeToken = `hvs.${randomHex(24)}`;
    return this.store.tx(() => {
      const join = this.store.getJoin(next.id);
      // Rejected, or another join started, while the leaf was being issued; or the CA rotated.
      if (
        !join ||
        join.state !== "approved" ||
        ca !== this.#ca ||
        this.store.joinsInState("delivering", "installing").length > 0
      )
        return undefined;
      const generation = this.generation() + 1;
      this.store.setMeta("generation", generation);
      this.store.putMember({
        nodeId,
        name: assignment.name ?? join.hostname ?? nodeId,
        role: "hybrid",
        state: "joining",
        mgmtIp: mgmtIp ?? null,
        appliedGeneration: 0,
        joinedAt: null,
        joinId: join.id,
        az: assignment.az ?? null,
        labels: nodeLabels(assignment),
        networks: networkBindings(assignment, this.settings),
        assignment,
      });
      this.store.applyGenerationToActive(generation);
      this.#fault("delivery");
      const bundle = buildBundle({
        clusterId: this.clusterId,
        settings: this.settings,
        secrets: this.secrets,
        openBaoNodeToken,
        caPem: ca.certPem,
        nodeCert: leaf.certPem,
        nodeKey: leaf.keyPem!,
        members: this.store.listMembers(),
        membershipGeneration: generation,
      });
      const nodeYaml = buildNodeYaml({ nodeId, clusterId: this.clusterId, assignment, settings: this.settings });
      const now = Date.now();
      this.store.patchJoin(
        join.id,
        { state: "delivering", deliveredAt: now, lastSeenAt: null, delivery: buildDelivery(nodeId, nodeYaml, bundle) },
        now,
      );
      this.store.audit("system", "cluster.join.delivering", join.id, { nodeId, membershipGeneration: generation });
      return join.id;
    });
  }

  /** True while the join listener must be open: a live code, or a registration not final. */
  listenerNeeded(now = Date.now()): boolean {
    return this.store.countLiveCodes(now) > 0 || this.store.countOpenJoins() > 0;
  }

  // ---------------------------------------------------------------- cluster

  /** The members and the membership generation. */
  members(): { membershipGeneration: number; items: ReturnType<typeof memberView>[] } {
    return { membershipGeneration: this.generation(), items: this.store.listMembers().map(memberView) };
  }

  /**
   * Rotates the cluster CA: a new CA (key file written before the switch is committed), every
   * live code ended (revoked by `system:ca-rotation`; a joiner is told `JOIN_CODE_STALE`).
   */
  async rotateCa(actor: string): Promise<{ caFingerprint: string; revokedCodes: number }> {
    const ca = await createClusterCa();
    const stem = Cluster.#writeCa(this.options.dataDir, ca);
    const now = Date.now();
    const revoked = this.store.tx(() => {
      const live = this.store.liveCodes(now);
      for (const code of live) this.store.revokeCode(code.id, "system:ca-rotation", now);
      this.store.setMeta("ca", { stem, fingerprint: ca.fingerprint });
      this.store.audit(actor, "cluster.ca.rotated", "cluster", {
        caFingerprint: ca.fingerprint,
        revokedCodes: live.length,
      });
      return live.length;
    });
    this.#ca = ca;
    return { caFingerprint: ca.fingerprint, revokedCodes: revoked };
  }

  /** Marks a cluster upgrade in progress, or over. */
  setUpgrade(actor: string, request: { inProgress: boolean; retryAfterSeconds?: number | undefined }): UpgradeState {
    const state: UpgradeState = { inProgress: request.inProgress, retryAfterSeconds: request.retryAfterSeconds ?? 30 };
    this.store.tx(() => {
      this.store.setMeta("upgrade", state);
      this.store.audit(actor, "cluster.upgrade.changed", "cluster", { ...state });
    });
    return state;
  }

  /** Closes the database. */
  close(): void {
    this.store.close();
  }
}

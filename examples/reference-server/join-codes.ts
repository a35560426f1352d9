/**
 * Join codes: mint (a selector no live code has, the OPAQUE record made under the current CA),
 * list and revoke, the code a PAKE runs against, and the counted attempts that burn a code
 * someone is guessing (docs/protocol.md §6; pake-sessions.ts keeps the outstanding ones).
 * @module
 */

import {
  JoinUrlError,
  formatEndpoint,
  formatJoinUrl,
  generateJoinCode,
  parseEndpoint,
  type JoinCode,
  type JoinCodeInfo,
  type MintedJoinCode,
} from "@stratum/join";
import { createJoinCodeRecord } from "@stratum/join/server";
import type { ClusterContext } from "./context.js";
import { HttpProblem, invalidInput, quotedId } from "./http.js";
import { newCodeId } from "./ids.js";
import type { UnprovenEnds } from "./pake-sessions.js";
import type { AttemptSourceRow, JoinCodeRow } from "./rows.js";
import { codeState, iso, joinCodeView } from "./views.js";

/** Selectors are two Crockford symbols: 32² of them. */
const SELECTORS = 32 * 32;
/**
 * How often a mint starts over when another mint or a CA rotation got in while Argon2 ran:
 * each try is one Argon2 run, and more than a few collisions in a row means something else
 * is wrong.
 */
const MINT_TRIES = 8;
/**
 * Draws of a fresh code per try before the selector search gives up: with one selector free
 * in 1,024 a draw finds it with p = 1/1024, so 200,000 draws miss it with p ≈ e^-195.
 */
const DRAWS_PER_TRY = 200_000;
/** Who revokes a code whose attempt budget is spent (the audit's actor; answered as `revokedBy`). */
const BURNED_BY = "system:too-many-attempts";

/** The join codes of a cluster. */
export class JoinCodes {
  readonly #context: ClusterContext;
  /**
   * Every code by selector, newest first, read whole after any committed change. A PAKE looks
   * its selector up here, so a live selector and an unknown one cost the same (a map lookup),
   * where a query by selector materialised a row for the one and not the other.
   */
  #bySelector: Map<string, JoinCodeRow[]> | undefined;

  constructor(context: ClusterContext) {
    this.#context = context;
    context.store.on("change", () => (this.#bySelector = undefined));
  }

  /**
   * Mints a join code: a fresh code whose selector no live code has, its OPAQUE record made
   * under the current CA (the only thing stored), audited. The code is in the answer only.
   */
  async mint(
    actor: string,
    request: { ttlSeconds?: number | undefined; endpoint?: string | undefined },
    defaultEndpoint: string,
  ): Promise<MintedJoinCode> {
    const { timing } = this.#context.options;
    const ttl = request.ttlSeconds ?? timing.defaultCodeTtlSeconds;
    if (ttl > timing.maxCodeTtlSeconds)
      throw invalidInput([{ field: "ttlSeconds", message: `at most ${timing.maxCodeTtlSeconds} seconds` }]);
    let endpoint: ReturnType<typeof parseEndpoint>;
    try {
      endpoint = parseEndpoint(request.endpoint ?? defaultEndpoint);
    } catch (error) {
      if (error instanceof JoinUrlError) throw invalidInput([{ field: "endpoint", message: error.message }]);
      throw error;
    }
    for (let attempt = 0; attempt < MINT_TRIES; attempt++) {
      const code = this.#drawFreeSelector();
      if (!code) break;
      const row = await this.#insert(actor, code, endpoint.endpoint, ttl);
      if (!row) continue;
      return {
        joinCode: joinCodeView(row, row.createdAt, 0, []),
        endpoint: formatEndpoint(endpoint),
        code: code.formatted,
        url: formatJoinUrl({ endpoint: endpoint.endpoint, code: code.code }),
      };
    }
    throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
      detail: "No free selector: too many live join codes. Revoke some first.",
    });
  }

  /**
   * A fresh code whose selector no live code has, or none when every selector is taken.
   * Draws are cheap (the Argon2 comes after): drawing until the selector is free finds one of
   * the last free selectors too.
   */
  #drawFreeSelector(): JoinCode | undefined {
    const taken = new Set(this.#context.store.liveCodes(Date.now()).map((c) => c.selector));
    if (taken.size >= SELECTORS) return undefined;
    let code = generateJoinCode();
    for (let draw = 0; taken.has(code.selector) && draw < DRAWS_PER_TRY; draw++) code = generateJoinCode();
    return taken.has(code.selector) ? undefined : code;
  }

  /** Makes the code's record and stores it; undefined when its selector or the CA changed meanwhile. */
  async #insert(actor: string, code: JoinCode, endpoint: string, ttl: number): Promise<JoinCodeRow | undefined> {
    const { store } = this.#context;
    const id = newCodeId();
    const ca = this.#context.ca;
    const record = await createJoinCodeRecord({
      serverSetup: this.#context.serverSetup,
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
      endpoint,
      attempts: 0,
      createdBy: actor,
      createdAt: now,
      expiresAt: now + ttl * 1000,
      revokedBy: null,
      revokedAt: null,
    };
    return store.tx(() => {
      // Checked again inside the transaction: another mint may have taken the selector, or the
      // CA may have rotated, while Argon2 ran.
      if (ca !== this.#context.ca || store.liveCodes(now).some((c) => c.selector === code.selector)) return undefined;
      store.insertCode(row);
      store.audit(actor, "cluster.join_code.minted", id, {
        selector: row.selector,
        endpoint: row.endpoint,
        expiresAt: iso(row.expiresAt),
      });
      return row;
    });
  }

  /** Every join code, newest first. */
  list(): JoinCodeInfo[] {
    const { store } = this.#context;
    const now = Date.now();
    return store.listCodes().map((c) => joinCodeView(c, now, store.registrationsOf(c.id), store.attemptSources(c.id)));
  }

  /** Revokes a code (answers a code that is no longer live as it is). */
  revoke(actor: string, id: string): JoinCodeInfo {
    const { store } = this.#context;
    const now = Date.now();
    const row = store.tx(() => {
      const code = store.getCode(id);
      if (!code) throw new HttpProblem(404, "NOT_FOUND", { detail: `No join code ${quotedId(id)}.` });
      if (codeState(code, now) === "live") {
        store.revokeCode(id, actor, now);
        store.audit(actor, "cluster.join_code.revoked", id, { selector: code.selector });
      }
      return store.getCode(id)!;
    });
    return joinCodeView(row, now, store.registrationsOf(id), store.attemptSources(id));
  }

  /**
   * The code a PAKE for `selector` runs against: the live one, else the newest that is not (so
   * its holder learns at KE3 why it no longer works), else none (a fake KE2). A code minted
   * under another CA is refused at once: 401 `JOIN_CODE_STALE`. A live code already at the
   * attempt limit (left so by a lowered limit) is burned here, so it answers as burned rather
   * than busy.
   */
  forPake(selector: string): JoinCodeRow | undefined {
    const now = Date.now();
    // Newest first, so a live one is first: a selector names one live code at most, and a code
    // minted after it while it was live would have had to take another selector.
    const chosen = this.#codesBySelector().get(selector)?.[0];
    if (chosen && chosen.caFingerprint !== this.#context.ca.fingerprint) throw staleCode();
    if (chosen && codeState(chosen, now) === "live" && chosen.attempts >= this.#context.options.limits.maxAttempts) {
      this.countUnproven(new Map([[chosen.id, new Map()]]));
      return this.#context.store.getCode(chosen.id);
    }
    return chosen;
  }

  #codesBySelector(): Map<string, JoinCodeRow[]> {
    if (this.#bySelector) return this.#bySelector;
    const bySelector = new Map<string, JoinCodeRow[]>();
    for (const code of this.#context.store.listCodes()) {
      const codes = bySelector.get(code.selector);
      if (codes) codes.push(code);
      else bySelector.set(code.selector, [code]);
    }
    this.#bySelector = bySelector;
    return bySelector;
  }

  /**
   * Counts exchanges that ended unproven (code id → source → how many), in one transaction, and
   * keeps where they came from. Only a code still live counts (an ended one can no longer be
   * guessed); one that reaches the limit is burned: revoked by `system:too-many-attempts`,
   * audited with the sources of its attempts.
   * @returns the codes burned now, with where their attempts came from
   */
  countUnproven(ends: UnprovenEnds): BurnedCode[] {
    const { store } = this.#context;
    const max = this.#context.options.limits.maxAttempts;
    return store.tx(() => {
      const now = Date.now();
      const burned: BurnedCode[] = [];
      for (const [codeId, bySource] of ends) {
        const code = store.getCode(codeId);
        if (!code || codeState(code, now) !== "live") continue;
        let attempts = code.attempts;
        for (const [source, n] of bySource) {
          const counted = Math.min(n, max - attempts);
          if (counted <= 0) break;
          store.addAttemptSource(codeId, source, counted, now);
          attempts += counted;
        }
        if (attempts !== code.attempts) store.setAttempts(codeId, attempts);
        if (attempts < max) continue;
        const sources = store.attemptSources(codeId);
        store.revokeCode(codeId, BURNED_BY, now);
        store.audit(BURNED_BY, "cluster.join_code.revoked", codeId, {
          selector: code.selector,
          attempts,
          sources: sources.map((s) => ({ source: s.source, attempts: s.attempts })),
        });
        burned.push({ id: codeId, selector: code.selector, sources });
      }
      return burned;
    });
  }

  /** After a proven KE3: why the code no longer works (401 with the reason), or nothing. */
  refusalOfProvenCode(codeId: string): HttpProblem | undefined {
    const code = this.#context.store.getCode(codeId);
    if (!code) return new HttpProblem(401, "JOIN_CODE_INVALID", { detail: "The join code was not proven." });
    if (code.caFingerprint !== this.#context.ca.fingerprint) return staleCode();
    const state = codeState(code, Date.now());
    if (state === "revoked") {
      return new HttpProblem(401, "JOIN_CODE_REVOKED", {
        detail:
          code.revokedBy === BURNED_BY
            ? "The join code was revoked after too many attempts that did not prove it."
            : "The join code was revoked.",
        details: { revokedBy: code.revokedBy },
      });
    }
    if (state === "expired")
      return new HttpProblem(401, "JOIN_CODE_EXPIRED", { detail: "The join code has expired; mint a new one." });
    return undefined;
  }
}

/** A code the attempts just counted burned, with where its attempts came from. */
export interface BurnedCode {
  id: string;
  selector: string;
  sources: AttemptSourceRow[];
}

function staleCode(): HttpProblem {
  return new HttpProblem(401, "JOIN_CODE_STALE", {
    detail: "The join code was minted under a cluster CA that has since rotated; mint a new one.",
  });
}

/**
 * The PAKE exchanges the join listener waits on, and the attempt budget they draw on
 * (docs/protocol.md §5.3 and §6). Memory only: a session holds the server's half-finished
 * login, a secret that must not outlive the process.
 *
 * An exchange is outstanding from its KE1 until it ends: proven (a KE3 that verifies: never
 * counted) or unproven (a KE3 that does not, its connection gone, or its session expired:
 * counted in the code's `attempts`). A code takes at most `maxAttempts − attempts` outstanding
 * exchanges at once, so counted and outstanding together never pass the limit: a guesser gets
 * at most `maxAttempts` KE2 answers per code however parallel it is, and a batch of machines
 * that all know the code never burns it (proven exchanges are not counted; the ones beyond the
 * free slots are told to wait).
 *
 * Why in memory, with only the counted ends written: a KE1 then writes nothing, for a live
 * code as for an unknown selector, so the two answer in the same time (a durable write at KE1
 * took a live selector's answer from 4 to 11 ms, which told an outsider which selectors to
 * guess at). Outstanding exchanges lost in a crash are dropped, not counted: a crash costs an
 * honest machine a retry, never its code. Unproven ends are written just after the answer that
 * ended them (batched), so a failed KE3 on a live code answers as fast as one on a fake.
 *
 * Unknown selectors and ended codes draw on a budget too (nothing is ever counted on it), so
 * that `JOIN_CODE_BUSY` does not tell a live selector from an unused one either. No cap is
 * shared between budgets: a selector names at most one budget at a time, so the exchanges held
 * are at most 10 per selector (10,240 in all) and 10 per live code, and a flood of KE1s for
 * selectors that name no code fills only its own selectors' budgets, never a live code's. An
 * exchange for a selector with no code keeps no messages (its KE3 can only fail): a few hundred
 * bytes.
 *
 * Each unproven end is counted with its source (an address, or an IPv6 prefix), so the operator
 * sees who burned a code (docs/protocol.md#attempts).
 * @module
 */

/** What an exchange draws on: a code's budget, or an unknown selector's. */
export interface Budget {
  /** The code's id, or `selector:XX` for a selector with no code. */
  key: string;
  /** The attempts already counted on it (0 unless the code is live). */
  counted: number;
  /** Whether an unproven end counts on the code: it was live at KE1. */
  countable: boolean;
}

/** A PAKE exchange waiting for its KE3. Secret-bearing (the server's login state); memory only. */
export interface PakeSession {
  id: string;
  socketId: string;
  keyFingerprint: string;
  /** Where the KE1 came from, as the limits count it (an address, or an IPv6 prefix). */
  source: string;
  /** The server's login state (for a fake KE2 too: its KE3 is checked like a real one, to take as long). */
  serverState: string;
  /** The code the exchange runs against; null for a fake KE2 (unknown selector). */
  codeId: string | null;
  budget: Budget;
  /** KE1 and KE2 as the binding transcript takes them; null for a fake KE2, whose KE3 cannot verify. */
  messages: { ke1: Uint8Array; ke2: Uint8Array } | null;
  caDer: Uint8Array;
  caFingerprint: string;
  /** The `serverTime` the answer carried, exactly as sent: field 7 of the binding transcript. */
  serverTime: string;
  expiresAt: number;
}

/** A slot of a budget taken for an exchange whose KE2 is being made. */
export interface Slot {
  readonly budget: Budget;
  /** Gives the slot back without counting anything (the KE1 was malformed). */
  release(): void;
}

/** Unproven ends not written yet: code id → source → how many. */
export type UnprovenEnds = ReadonlyMap<string, ReadonlyMap<string, number>>;

/** What {@link PakeSessions} needs. */
export interface PakeSessionsOptions {
  /** The attempt budget of a code (10). */
  maxAttempts: number;
  /** Writes unproven ends (code id → source → how many); throws to keep them for the next try. */
  writeUnproven: (ends: UnprovenEnds) => void;
  /** Reports a failed write (the counts are kept and written with the next ones). */
  onWriteError: (error: unknown) => void;
  /** Told when an exchange of a code live at its KE1 ends proven (it gives its share of the live rate back). */
  onProvenLive?: () => void;
  /** Told when an exchange of a code live at its KE1 ends unproven (its share stays spent). */
  onUnprovenLive?: () => void;
}

/** How many ends `bySource` holds in all. */
const total = (bySource: ReadonlyMap<string, number> | undefined): number =>
  [...(bySource?.values() ?? [])].reduce((sum, n) => sum + n, 0);

/** The exchanges waiting for their KE3, and the outstanding and counted exchanges of each budget. */
export class PakeSessions {
  readonly #o: PakeSessionsOptions;
  readonly #sessions = new Map<string, PakeSession>();
  readonly #bySocket = new Map<string, Set<string>>();
  /** Budget key → exchanges outstanding (sessions, and slots whose KE2 is being made). */
  readonly #outstanding = new Map<string, number>();
  /** Code id → source → unproven ends not written yet. */
  readonly #unwritten = new Map<string, Map<string, number>>();
  #writeScheduled = false;
  #closed = false;

  constructor(options: PakeSessionsOptions) {
    this.#o = options;
  }

  /** Exchanges waiting for their KE3. */
  get size(): number {
    return this.#sessions.size;
  }

  /**
   * What the exchanges hold in memory now: sessions, connections with a session, budgets with
   * an exchange outstanding, and codes with unproven ends not written yet. Each falls back to 0
   * when the exchanges end: what a flood leaves behind is bounded by what is still going.
   */
  held(): { sessions: number; connections: number; budgets: number; unwritten: number } {
    return {
      sessions: this.#sessions.size,
      connections: this.#bySocket.size,
      budgets: this.#outstanding.size,
      unwritten: this.#unwritten.size,
    };
  }

  /** Exchanges of `key` outstanding now (a code's id, or `selector:XX`). */
  outstanding(key: string): number {
    return this.#outstanding.get(key) ?? 0;
  }

  /**
   * Takes a slot of `budget` for a new exchange, or undefined when `maxAttempts − counted`
   * exchanges of it are outstanding already. Synchronous, so two KE1s arriving together cannot
   * both take the last slot.
   */
  reserve(budget: Budget): Slot | undefined {
    const counted = budget.counted + (budget.countable ? total(this.#unwritten.get(budget.key)) : 0);
    if (this.#closed || this.outstanding(budget.key) + Math.min(counted, this.#o.maxAttempts) >= this.#o.maxAttempts)
      return undefined;
    this.#outstanding.set(budget.key, this.outstanding(budget.key) + 1);
    let released = false;
    return {
      budget,
      release: () => {
        if (released) return;
        released = true;
        this.#free(budget.key);
      },
    };
  }

  /** Keeps the session of an exchange whose slot was reserved and whose KE2 is answered. */
  add(session: PakeSession): void {
    this.#sessions.set(session.id, session);
    let ids = this.#bySocket.get(session.socketId);
    if (!ids) this.#bySocket.set(session.socketId, (ids = new Set()));
    ids.add(session.id);
  }

  /**
   * The session `id` if this connection and this key own it, removed (a session is used once);
   * undefined otherwise, and then it is not removed, so a stranger who learnt a session id
   * cannot cancel its owner's exchange.
   */
  take(id: string, socketId: string, keyFingerprint: string): PakeSession | undefined {
    const session = this.#sessions.get(id);
    if (!session || session.socketId !== socketId || session.keyFingerprint !== keyFingerprint) return undefined;
    this.#forget(session);
    return session;
  }

  /** Ends a taken exchange: proven (never counted) or unproven (counted on a code that was live). */
  end(session: PakeSession, proven: boolean): void {
    this.#free(session.budget.key);
    if (!session.budget.countable || this.#closed) return;
    if (proven) {
      this.#o.onProvenLive?.();
      return;
    }
    this.#o.onUnprovenLive?.();
    const codeId = session.budget.key;
    let bySource = this.#unwritten.get(codeId);
    if (!bySource) this.#unwritten.set(codeId, (bySource = new Map()));
    bySource.set(session.source, (bySource.get(session.source) ?? 0) + 1);
    this.#scheduleWrite();
  }

  /** Ends, unproven, every exchange whose session expired by `now` (and retries a failed write). */
  expire(now: number): void {
    for (const session of this.#sessions.values()) {
      if (session.expiresAt > now) continue;
      this.#forget(session);
      this.end(session, false);
    }
    // A write that failed is tried again (writeNow does nothing when nothing waits).
    this.#scheduleWrite();
  }

  /** Ends, unproven, the exchanges of a connection that closed: their KE3 can no longer come. */
  connectionClosed(socketId: string): void {
    const ids = this.#bySocket.get(socketId);
    if (!ids) return;
    // Every id a connection holds has its session: #forget removes the two together.
    for (const id of [...ids]) {
      const session = this.#sessions.get(id)!;
      this.#forget(session);
      this.end(session, false);
    }
  }

  /** Writes the unproven ends not written yet (also called when the listener shuts down). */
  writeNow(): void {
    this.#writeScheduled = false;
    if (this.#unwritten.size === 0) return;
    const ends = new Map([...this.#unwritten].map(([codeId, bySource]) => [codeId, new Map(bySource)]));
    try {
      this.#o.writeUnproven(ends);
    } catch (error) {
      this.#o.onWriteError(error);
      return;
    }
    // All of it was written: the write is synchronous, so no end came in meanwhile.
    this.#unwritten.clear();
  }

  /**
   * Stops for good: unproven ends are written, outstanding exchanges are dropped without being
   * counted (as a crash would drop them), and connections closing from here on count nothing.
   */
  close(): void {
    this.writeNow();
    this.#closed = true;
    this.#sessions.clear();
    this.#bySocket.clear();
    this.#outstanding.clear();
  }

  #forget(session: PakeSession): void {
    this.#sessions.delete(session.id);
    // A kept session's connection holds its id (add): the set is there.
    const ids = this.#bySocket.get(session.socketId)!;
    ids.delete(session.id);
    if (ids.size === 0) this.#bySocket.delete(session.socketId);
  }

  #free(key: string): void {
    const n = this.outstanding(key) - 1;
    if (n > 0) this.#outstanding.set(key, n);
    else this.#outstanding.delete(key);
  }

  #scheduleWrite(): void {
    if (this.#writeScheduled) return;
    this.#writeScheduled = true;
    // After the answer that ended the exchange has gone out; ends that come together are
    // written in one transaction.
    setImmediate(() => {
      if (!this.#closed) this.writeNow();
    });
  }
}

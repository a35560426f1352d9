/**
 * The join listener's per-address limits (docs/protocol.md §3.3): sliding-window counters per
 * source address and kind of call.
 * @module
 */

import type { Socket } from "node:net";

/** Sliding-window counters per address and kind of call. */
export class AddressLimiter {
  readonly #hits = new Map<string, number[]>();

  /**
   * Records a call of `kind` from `address` unless `max` calls were made in the last
   * `windowMs`; returns the seconds until one more is allowed when it is refused.
   */
  hit(address: string, kind: string, max: number, windowMs: number, now = Date.now()): number | undefined {
    const key = `${kind} ${address}`;
    const recent = (this.#hits.get(key) ?? []).filter((t) => t > now - windowMs);
    if (recent.length >= max) {
      this.#hits.set(key, recent);
      return Math.max(1, Math.ceil((recent[0]! + windowMs - now) / 1000));
    }
    recent.push(now);
    this.#hits.set(key, recent);
    return undefined;
  }

  /** Forgets windows that have passed. */
  prune(windowMs: number, now = Date.now()): void {
    for (const [key, hits] of this.#hits) {
      const recent = hits.filter((t) => t > now - windowMs);
      if (recent.length === 0) this.#hits.delete(key);
      else this.#hits.set(key, recent);
    }
  }
}

/** The caller's address as registrations record it (IPv4-mapped IPv6 written as IPv4). */
export function peerAddress(socket: Socket): string {
  const address = socket.remoteAddress ?? "";
  return address.startsWith("::ffff:") ? address.slice(7) : address;
}

/**
 * The join listener's per-address limits (docs/protocol.md#listener-limits): sliding-window
 * counters per source and kind of call. A source is an IPv4 address, or an IPv6 prefix (a /64
 * by default): one site gets a whole /64, so counting its addresses one by one would limit
 * nothing.
 * @module
 */

import type { Socket } from "node:net";
import { formatIp, parseIp } from "./addresses.js";

/** Sliding-window counters per address and kind of call. */
export class AddressLimiter {
  readonly #hits = new Map<string, number[]>();

  /** How many windows (a source and a kind of call) it holds now: what {@link prune} bounds. */
  get size(): number {
    return this.#hits.size;
  }

  /**
   * Records a call of `kind` from `address` unless `max` calls were made in the last
   * `windowMs`; returns the seconds until one more is allowed when it is refused.
   */
  hit(address: string, kind: string, max: number, windowMs: number, now: number = Date.now()): number | undefined {
    const key = `${kind} ${address}`;
    const recent = this.#hits.get(key)?.filter((t) => t > now - windowMs) ?? [];
    if (recent.length >= max) {
      this.#hits.set(key, recent);
      return Math.max(1, Math.ceil((recent[0]! + windowMs - now) / 1000));
    }
    recent.push(now);
    this.#hits.set(key, recent);
    return undefined;
  }

  /** Takes back the call of `kind` from `address` recorded at `at` (a call that turned out to cost nothing). */
  forget(address: string, kind: string, at: number): void {
    const hits = this.#hits.get(`${kind} ${address}`);
    const i = hits?.lastIndexOf(at) ?? -1;
    if (i >= 0) hits!.splice(i, 1);
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

/**
 * The source `address` is counted as: an IPv4 address as it is, an IPv6 address as its prefix
 * of `ipv6PrefixLength` bits (`2001:db8:1:2::/64`); anything else as it is.
 */
export function sourceOf(address: string, ipv6PrefixLength: number): string {
  const parsed = parseIp(address);
  if (!parsed || parsed.family === 4 || ipv6PrefixLength >= 128) return address;
  const host = 128n - BigInt(ipv6PrefixLength);
  const prefix = (parsed.value >> host) << host;
  return `${formatIp(prefix, 6)}/${ipv6PrefixLength}`;
}

/**
 * KE1s as an attacker without a code sends them: raw HTTP/1.1 over one TLS 1.3 connection from a
 * chosen source address (all of 127.0.0.0/8 is this machine's; an IPv6 one inside a network
 * namespace), many requests written at once, the answers' statuses read back in order. No
 * OPAQUE beyond a KE1 made once: the exchanges are left waiting, or ended by closing.
 */
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import { CROCKFORD_ALPHABET } from "../../src/core/base32.js";
import type { MachineIdentity } from "../../src/node/identity.js";
import { startLogin } from "../../src/node/opaque.js";

// Requests written at once on a connection: enough to keep the listener busy, few enough that
// Node's HTTP server takes them as a client's pipeline rather than a flood it cuts.
const PIPELINED = 16;

/** Every selector: 1,024 pairs of symbols. */
export const SELECTORS = [...CROCKFORD_ALPHABET].flatMap((a) => [...CROCKFORD_ALPHABET].map((b) => a + b));

/** A well-formed KE1 (of a code nobody minted): the listener answers it for any selector. */
export async function anyKe1(): Promise<string> {
  return (await startLogin("0000000000A")).ke1;
}

/** An answer as read back: its status and `Retry-After`. */
export interface RawAnswer {
  status: number;
  retryAfter: number | undefined;
}

/** One keep-alive TLS connection to the join listener. */
export class RawConnection {
  readonly socket: TLSSocket;
  #buffer = Buffer.alloc(0);
  #wake: (() => void) | undefined;
  #closed = false;

  private constructor(socket: TLSSocket) {
    this.socket = socket;
    socket.on("data", (d: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, d]);
      this.#wake?.();
    });
    const gone = (): void => {
      this.#closed = true;
      this.#wake?.();
    };
    socket.on("close", gone).on("error", gone);
  }

  /** Opens it from `localAddress`, presenting `identity`'s certificate. */
  static async open(options: {
    host: string;
    port: number;
    identity: MachineIdentity;
    localAddress?: string;
  }): Promise<RawConnection> {
    const socket = tlsConnect({
      host: options.host,
      port: options.port,
      // tls.connect hands it to the TCP connection; @types/node lists it for net only.
      ...(options.localAddress ? ({ localAddress: options.localAddress } as object) : {}),
      cert: options.identity.certPem,
      key: options.identity.keyPem,
      rejectUnauthorized: false,
      minVersion: "TLSv1.3",
    });
    await new Promise<void>((resolve, reject) => {
      socket.once("secureConnect", () => resolve());
      socket.once("error", reject);
    });
    return new RawConnection(socket);
  }

  /** Writes `bodies` as POSTs to `path` at once (pipelined) and reads their answers, in order. */
  post(path: string, bodies: readonly string[]): Promise<RawAnswer[]> {
    this.write(
      bodies
        .map(
          (body) =>
            `POST ${path} HTTP/1.1\r\nHost: founder\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        )
        .join(""),
    );
    return this.read(bodies.length);
  }

  /** Writes bytes as they are. */
  write(text: string): void {
    this.socket.write(text);
  }

  /** Reads the next `n` answers (fewer when the connection closes first). */
  async read(n: number): Promise<RawAnswer[]> {
    const answers: RawAnswer[] = [];
    while (answers.length < n) {
      const end = this.#buffer.indexOf("\r\n\r\n");
      if (end >= 0) {
        const head = this.#buffer.subarray(0, end).toString("latin1");
        const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
        if (this.#buffer.length >= end + 4 + length) {
          this.#buffer = this.#buffer.subarray(end + 4 + length);
          const retry = /retry-after:\s*(\d+)/i.exec(head)?.[1];
          answers.push({
            status: Number(head.split(" ")[1]),
            retryAfter: retry === undefined ? undefined : Number(retry),
          });
          continue;
        }
      }
      if (this.#closed) break;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
    return answers;
  }

  /** KE1s for `selectors` (one each), pipelined a few at a time. */
  async ke1s(selectors: readonly string[], ke1: string): Promise<RawAnswer[]> {
    const answers: RawAnswer[] = [];
    for (let i = 0; i < selectors.length; i += PIPELINED) {
      const batch = selectors.slice(i, i + PIPELINED).map((selector) => JSON.stringify({ selector, ke1 }));
      answers.push(...(await this.post("/v1/join/pake", batch)));
      if (this.#closed) break;
    }
    return answers;
  }

  /** Closes the connection: its exchanges end, unproven. */
  close(): void {
    this.socket.destroy();
  }
}

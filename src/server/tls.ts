/**
 * The join listener's TLS: TLS 1.3 only, a client certificate asked for (its key is the
 * machine's identity), no session tickets (every connection a full handshake, so the channel
 * binding always covers a fresh exporter), and the client key's fingerprint read off a socket.
 * @module
 */
import type * as tls from "node:tls";
import { JoinProtocolError } from "../errors/index.js";
import { spkiFingerprint } from "../protocol/pki.js";

/**
 * TLS options of the join listener: TLS 1.3 only, a client certificate requested but any key
 * accepted (`rejectUnauthorized: false`: the key is the identity, the PAKE and the key pin do
 * the authorising). Session tickets cannot be switched off through options in TLS 1.3 (Node
 * has no `num_tickets`; `SSL_OP_NO_TICKET` only makes OpenSSL send stateful tickets,
 * `sessionTimeout: 0` and `ticketKeys` change nothing); call {@link disableSessionTickets} on
 * the server created with these options.
 *
 * Also set the HTTP server's `keepAliveTimeout` well above the joiner's pause between the PAKE
 * answer and KE3 (Argon2 runs in between; 65 s or more): Node's default of 5 s would close the
 * connection the exchange is bound to.
 * @param options.certPem the listener's leaf (plus any intermediate), PEM
 * @param options.keyPem its key, PEM
 * @param options.caPem the cluster CA, PEM (optional): set as `ca`, so `socket.authorized`
 *   tells whether a client certificate chains to the cluster CA; nothing is refused for it
 */
export function tlsServerOptions(options: {
  certPem: string;
  keyPem: string;
  caPem?: string | undefined;
}): tls.TlsOptions {
  return {
    cert: options.certPem,
    key: options.keyPem,
    ...(options.caPem ? { ca: options.caPem } : {}),
    minVersion: "TLSv1.3",
    maxVersion: "TLSv1.3",
    requestCert: true,
    rejectUnauthorized: false,
  };
}

interface NativeSecureContext {
  enableTicketKeyCallback?: (() => void) | undefined;
  onticketkeycallback?:
    ((name: Buffer, iv: Buffer, encrypt: boolean) => [number, Buffer, Buffer, Buffer, Buffer]) | undefined;
}

const NO_TICKETS = Symbol.for("stratum.join.noSessionTickets");

/**
 * Makes a `tls.Server` (or `https.Server`) issue no TLS 1.3 session tickets and accept none, so
 * there is no resumption: every connection does a full handshake with the client certificate.
 *
 * How: Node exposes no public switch for TLS 1.3 tickets, so this installs a ticket-key
 * callback on the server's native secure context that answers "no key" (0). For a ticket to
 * send, OpenSSL then aborts its construction (TLS 1.3 forbids an empty ticket, so none is
 * sent); for a ticket offered by a client it does a full handshake. It relies on Node's
 * internal `_sharedCreds.context.enableTicketKeyCallback`, present since Node 0.x and kept for
 * Node's own tests; test/node/pinned-connection.test.ts counts the client's `'session'` events
 * so a Node that drops it fails loudly. `setSecureContext` is wrapped to re-apply it.
 * @throws JoinProtocolError `TLS_FAILED` if this Node does not offer the hook
 */
export function disableSessionTickets(server: tls.Server): void {
  const target = server as tls.Server & { _sharedCreds?: { context?: NativeSecureContext }; [NO_TICKETS]?: true };
  const apply = (): void => {
    const context = target._sharedCreds?.context;
    if (!context || typeof context.enableTicketKeyCallback !== "function") {
      throw new JoinProtocolError("TLS_FAILED", "this Node version offers no way to disable TLS 1.3 session tickets");
    }
    // Node requires well-formed key material even when the answer is "no key".
    const zero = Buffer.alloc(16);
    context.onticketkeycallback = () => [0, zero, zero, zero, zero];
    context.enableTicketKeyCallback();
  };
  apply();
  if (target[NO_TICKETS]) return;
  target[NO_TICKETS] = true;
  const setSecureContext = target.setSecureContext.bind(target);
  target.setSecureContext = (options: tls.SecureContextOptions) => {
    setSecureContext(options);
    apply();
  };
}

/**
 * The key fingerprint of the client certificate on a server-side socket (SHA-256 of its
 * SubjectPublicKeyInfo, as the joiner computes it), or undefined when the client sent none.
 */
export function peerKeyFingerprint(socket: tls.TLSSocket): string | undefined {
  const cert = socket.getPeerCertificate(false);
  if (!cert || !cert.raw || cert.raw.length === 0) return undefined;
  return spkiFingerprint(new Uint8Array(cert.raw));
}

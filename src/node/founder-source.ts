/**
 * The founder as a release source: `GET /v1/join/registrations/{joinId}/release/{path}` on the
 * join listener, each request over its own TLS connection pinned to the session's CA (with the
 * listener role) and presenting the machine's key, which the founder serves to only while the
 * registration is `needs-upgrade`.
 * @module
 */
import { http1Get } from "../transport/http1/index.js";
import {
  encodeReleasePath,
  requestHeaders,
  type ReleaseFetchResponse,
  type ReleaseSource,
} from "../transport/sources.js";
import type { MachineIdentity } from "./identity.js";
import type { JoinSession } from "./join-session.js";
import { connectPinnedSocket } from "./pinned-socket.js";
import { sessionConnectionOptions } from "./registration.js";

/**
 * A {@link ReleaseSource} on the founder. One connection per file request: the downloader
 * fetches a few files at once, and HTTP/1.1 on one pinned socket would serialise them. The
 * connection is checked exactly as the joiner's others are (`openSessionConnection`), and the
 * body is decrypted straight into the downloader's buffers, as from a mirror. Each connection
 * closes when its body has been read or given up.
 */
export function founderReleaseSource(session: JoinSession, identity: MachineIdentity): ReleaseSource {
  const basePath = `/v1/join/registrations/${encodeURIComponent(session.joinId)}/release`;
  return {
    describe: () => `founder ${session.endpoint}${basePath}/`,
    async fetch(path, request): Promise<ReleaseFetchResponse> {
      // checked per request, before any connection: the identity must be the registration's
      const options = sessionConnectionOptions(session, identity);
      const answer = await http1Get({
        connect: (onread, signal) => connectPinnedSocket({ ...options, signal }, onread),
        authority: session.endpoint,
        path: `${basePath}/${encodeReleasePath(path)}`,
        headers: requestHeaders(undefined, request),
        ...(request.signal ? { signal: request.signal } : {}),
      });
      return { status: answer.status, headers: answer.headers, body: answer.body };
    },
  };
}

/**
 * The founder as a release source: `GET /v1/join/registrations/{joinId}/release/{path}` on the
 * join listener, each request over its own TLS connection pinned to the session's CA (with the
 * listener role) and presenting the machine's key, which the founder serves to only while the
 * registration is `needs-upgrade`.
 * @module
 */
import { dispatcherSource, type ReleaseFetchResponse, type ReleaseSource } from "../release/sources.js";
import type { MachineIdentity } from "./identity.js";
import type { JoinSession } from "./join-session.js";
import { openSessionConnection } from "./registration.js";

/**
 * A {@link ReleaseSource} on the founder. One connection per file request: the downloader
 * fetches a few files at once, and HTTP/1.1 on one pinned socket would serialise them. Each
 * connection closes when its body has been read or given up.
 */
export function founderReleaseSource(session: JoinSession, identity: MachineIdentity): ReleaseSource {
  const basePath = `/v1/join/registrations/${encodeURIComponent(session.joinId)}/release`;
  return {
    describe: () => `founder ${session.endpoint}${basePath}/`,
    async fetch(path, request): Promise<ReleaseFetchResponse> {
      const connection = await openSessionConnection(session, identity, request.signal ? { signal: request.signal } : {});
      try {
        const answer = await dispatcherSource(connection.client, basePath).fetch(path, request);
        const inner = (answer.body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
        // A hand-written iterator, not a generator: a generator's `return()` before its first
        // `next()` skips its `finally`, and the downloader may give up on a body unread.
        const body: AsyncIterableIterator<Uint8Array> = {
          [Symbol.asyncIterator]() {
            return body;
          },
          async next() {
            try {
              const step = await inner.next();
              if (step.done) await connection.close();
              return step;
            } catch (error) {
              await connection.close();
              throw error;
            }
          },
          async return() {
            try {
              await inner.return?.();
            } finally {
              await connection.close();
            }
            return { done: true, value: undefined };
          },
        };
        return { ...answer, body };
      } catch (error) {
        await connection.close();
        throw error;
      }
    },
  };
}

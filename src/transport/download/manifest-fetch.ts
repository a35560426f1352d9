/**
 * Fetching the manifest envelope: one whole-file GET, retried as a file is, cut off at the
 * envelope cap before anything parses it.
 * @internal
 * @module
 */
import { NetworkError, ReleaseVerificationError } from "../../errors/index.js";
import { RELEASE_MANIFEST_PATH } from "../../release/manifest-rules.js";
import type { ReleaseFetchResponse } from "../sources.js";
import { checkIdentityEncoding, contentLength, retryOrRefuse } from "./answer.js";
import { Attempts } from "./attempts.js";
import { discard, readCapped } from "./body.js";
import type { DownloadSession, RequestScope } from "./session.js";

/** The envelope's bytes as served, at most `cap` of them; verification is the caller's. */
export async function fetchManifest(session: DownloadSession, cap: number): Promise<Buffer> {
  const path = RELEASE_MANIFEST_PATH;
  const attempts = new Attempts(session, path, 0);
  for (;;) {
    const answer = await attempts.fetch({});
    if (!answer) continue;
    const { response, scope } = answer;
    try {
      if (response.status !== 200) {
        if (response.status === 206 || response.status === 416) {
          await discard(response.body);
          const what = `answered HTTP ${response.status} to a request without Range`;
          throw session.badResponse(path, what, response.status);
        }
        await retryOrRefuse(session, attempts, response, path);
        continue;
      }
      const envelope = await readEnvelope(session, attempts, answer, cap);
      if (envelope) return envelope;
    } finally {
      scope.end();
    }
  }
}

/** The body of a 200 for the manifest, or undefined after a failure that was counted (retry). */
async function readEnvelope(
  session: DownloadSession,
  attempts: Attempts,
  { response, scope }: { response: ReleaseFetchResponse; scope: RequestScope },
  cap: number,
): Promise<Buffer | undefined> {
  const path = RELEASE_MANIFEST_PATH;
  await checkIdentityEncoding(session, response, path);
  const declared = contentLength(response);
  if (declared !== undefined && declared > cap) {
    await discard(response.body);
    throw new ReleaseVerificationError(
      "envelope-size",
      `the manifest envelope is ${declared} bytes, more than the ${cap} allowed`,
      { path },
    );
  }
  let envelope: Buffer | undefined;
  try {
    envelope = await readCapped(response.body, cap, (chunk) => {
      session.fetched += chunk.length;
      scope.received(chunk.length);
    });
  } catch (error) {
    await attempts.backOffOrGiveUp(session.transientOrThrow(error, path));
    return undefined;
  }
  // the cap applies before anything parses the bytes: reading stopped there
  if (envelope === undefined)
    throw new ReleaseVerificationError("envelope-size", `the manifest envelope is more than the ${cap} bytes allowed`, {
      path,
    });
  if (declared !== undefined && envelope.length !== declared) {
    await attempts.backOffOrGiveUp(
      new NetworkError(`the manifest body ended after ${envelope.length} of ${declared} bytes`),
    );
    return undefined;
  }
  return envelope;
}

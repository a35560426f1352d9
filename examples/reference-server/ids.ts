/**
 * Identifiers of the reference server: random Crockford base32, prefixed by kind so that a log
 * line or a support ticket says what an id names. None is derived from a join code: an id is
 * public, the code is not.
 * @module
 */

import { randomBytes } from "node:crypto";
import { randomCrockford } from "@stratum/join/server";

/** `symbols` random Crockford symbols (upper case). */
export const randomSymbols = randomCrockford;

/** A join code's id, e.g. `jc-7q2m9k4d`. */
export const newCodeId = (): string => `jc-${randomSymbols(8).toLowerCase()}`;
/** A registration's id, e.g. `nj-8w2k4m1p`. */
export const newJoinId = (): string => `nj-${randomSymbols(8).toLowerCase()}`;
/** A node id, e.g. `n-abc12def`. */
export const newNodeId = (): string => `n-${randomSymbols(8).toLowerCase()}`;
/** A cluster id, e.g. `cl-3vin6yzz`. */
export const newClusterId = (): string => `cl-${randomSymbols(8).toLowerCase()}`;
/** A request id, e.g. `req-5t2m8q1z`; every answer carries it and every log line names it. */
export const newRequestId = (): string => `req-${randomSymbols(8).toLowerCase()}`;
/** A PAKE session, `pk-` and 16 symbols (80 bits), the spec's pattern. */
export const newPakeSession = (): string => `pk-${randomSymbols(16)}`;
/** An API token: 256 random bits, base64url, with a prefix a secret scanner can recognise. */
export const newApiToken = (): string => `stratum_${randomBytes(32).toString("base64url")}`;
/** A random secret as hex (`bytes` random bytes). */
export const randomHex = (bytes: number): string => randomBytes(bytes).toString("hex");

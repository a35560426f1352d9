/**
 * @peculiar/x509, for issuing certificates only: the machine identity's self-signed wrapper
 * (`createMachineIdentity`) and the founder's CA and leaves (`src/server/ca.ts`). Everything
 * the joiner checks on a certificate uses `node:crypto` and `./certificate-fields.ts` instead.
 *
 * Loading the library costs about 13 MiB of memory and 0.15 s of CPU (Node 20, on this
 * project's 2-core machine; it brings tsyringe, tslib and a dozen ASN.1 schema packages), so
 * nothing imports this module statically: its users `await import("./x509.js")` inside the
 * async functions that issue a certificate, and importing `@stratum/join/node` or
 * `@stratum/join/server` does not load it (test/package/startup.test.ts holds that).
 * @module
 */

import { createRequire } from "node:module";
import type * as X509 from "@peculiar/x509";

/**
 * @peculiar/x509 pulls in tsyringe, which throws at load time unless a `Reflect.getMetadata`
 * polyfill is installed, and this package does not depend on one. tsyringe only touches the
 * Reflect metadata API while the library's classes are being decorated, i.e. during the
 * synchronous load; so a tiny metadata store is installed for that load only and removed
 * again, leaving the global `Reflect` as the application had it. The library is loaded with
 * `require` (it ships CommonJS as `main`) so the order is guaranteed, which a hoisted `import`
 * or a side-effect import (dropped under `sideEffects: false`) would not be.
 */
function loadX509(): typeof X509 {
  const reflect = Reflect as unknown as Record<string, unknown>;
  const added: string[] = [];
  if (typeof reflect.getMetadata !== "function") {
    const store = new WeakMap<object, Map<unknown, unknown>>();
    const own = (target: object, key: unknown): unknown => store.get(target)?.get(key);
    const shim: Record<string, (...args: never[]) => unknown> = {
      getOwnMetadata: (key: unknown, target: object) => own(target, key),
      getMetadata: (key: unknown, target: object) => {
        for (let o: object | null = target; o !== null; o = Object.getPrototypeOf(o) as object | null) {
          const value = own(o, key);
          if (value !== undefined) return value;
        }
        return undefined;
      },
      defineMetadata: (key: unknown, value: unknown, target: object) => {
        let map = store.get(target);
        if (!map) store.set(target, (map = new Map()));
        map.set(key, value);
      },
    };
    for (const [name, fn] of Object.entries(shim)) {
      if (reflect[name] === undefined) {
        reflect[name] = fn;
        added.push(name);
      }
    }
  }
  try {
    return createRequire(import.meta.url)("@peculiar/x509") as typeof X509;
  } finally {
    for (const name of added) delete reflect[name];
  }
}

/**
 * The @peculiar/x509 module, loaded once with the polyfill dance above when this module is
 * first imported. Other modules of the SDK use this instead of importing the package
 * themselves (which throws without a Reflect polyfill unless this module was loaded first).
 */
export const x509: typeof X509 = loadX509();
// Webcrypto of the running Node: the library's default provider lookup is browser-oriented.
x509.cryptoProvider.set(globalThis.crypto);

/**
 * @peculiar/x509, for issuing certificates only: the machine identity's self-signed wrapper
 * (`createMachineIdentity`) and the founder's CA and leaves (`src/server/ca.ts`). Everything
 * the joiner checks on a certificate uses `node:crypto` and `./certificate-fields.ts` instead.
 *
 * Loading the library costs about 13 MiB of memory and 0.15 s of CPU (Node 20, on this
 * project's 2-core machine; it brings tsyringe, tslib and a dozen ASN.1 schema packages), so
 * it is loaded by {@link loadX509}, inside the async functions that issue a certificate:
 * importing `@stratum/join/node` or `@stratum/join/server` does not load it
 * (test/package/startup.test.ts holds that).
 *
 * The load is a dynamic `import()` of the package by name, which every bundler follows: an
 * installer's stage 1 bundled into one file carries the library (test/package/bundle.test.ts).
 * @module
 */

import type * as X509 from "@peculiar/x509";

let library: Promise<typeof X509> | undefined;

/**
 * The @peculiar/x509 module, loaded once. Other modules of the SDK use this instead of
 * importing the package themselves (which throws without a Reflect polyfill). A failed load is
 * not kept, so a later call tries again.
 * @internal
 */
export function loadX509(): Promise<typeof X509> {
  library ??= importWithReflectMetadata().catch((error: unknown) => {
    library = undefined;
    throw error;
  });
  return library;
}

/**
 * @peculiar/x509 pulls in tsyringe, which throws at load time unless a `Reflect.getMetadata`
 * polyfill is installed, and this package does not depend on one. tsyringe only touches the
 * Reflect metadata API while the library's classes are being decorated, i.e. while it loads;
 * so a tiny metadata store is installed for that load only and removed again, leaving the
 * global `Reflect` as the application had it (a polyfill the application installs meanwhile
 * is left alone). Why not a static import after a module that installs it: an import of an
 * external package is evaluated before the code of the module (or build chunk) that holds it.
 */
async function importWithReflectMetadata(): Promise<typeof X509> {
  const added = installReflectMetadata();
  try {
    const x509 = await import("@peculiar/x509");
    // Webcrypto of the running runtime: the library's default provider lookup is browser-oriented.
    x509.cryptoProvider.set(globalThis.crypto);
    return x509;
  } finally {
    const reflect = Reflect as unknown as Record<string, unknown>;
    for (const [name, fn] of added) if (reflect[name] === fn) delete reflect[name];
  }
}

/** Installs the metadata calls tsyringe needs where `Reflect` lacks them; returns what it added. */
function installReflectMetadata(): Array<[string, unknown]> {
  const reflect = Reflect as unknown as Record<string, unknown>;
  if (typeof reflect.getMetadata === "function") return [];
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
  const added: Array<[string, unknown]> = [];
  for (const [name, fn] of Object.entries(shim)) {
    if (reflect[name] === undefined) {
      reflect[name] = fn;
      added.push([name, fn]);
    }
  }
  return added;
}

/**
 * The Debian tools a test runs, looked up in the one list of them (scripts/test-machine.mjs,
 * which `npm test` checks and, as root, installs first). A test whose tool is missing fails,
 * naming the package and how to install it: it never skips.
 */
import { expect } from "vitest";
import { installLine, proven, REQUIREMENTS, type Requirement } from "../../scripts/test-machine.mjs";

/** The requirement of Debian package `name`; a name not on the list is a mistake in the test. */
export function requirement(name: string): Requirement {
  const found = REQUIREMENTS.find((r) => r.package === name);
  if (!found) throw new Error(`${name} is not in scripts/test-machine.mjs's REQUIREMENTS: add it there`);
  return found;
}

/**
 * Asserts that Debian package `name` is installed (its proof holds), with the install line as
 * the failure's message. Returns its path when its proof is one.
 */
export function expectInstalled(name: string): string | undefined {
  const r = requirement(name);
  expect(proven(r.proof), installLine([r])).toBe(true);
  return r.proof.path;
}

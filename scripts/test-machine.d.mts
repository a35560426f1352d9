// Types of scripts/test-machine.mjs, for the tests that import it.

/** How to tell a package is installed: an absolute path, a program on the PATH, or a multiarch library. */
export type Proof =
  | { path: string; command?: never; library?: never }
  | { command: string; path?: never; library?: never }
  | { library: string; path?: never; command?: never };

/** One Debian package the tests need. */
export interface Requirement {
  package: string;
  proof: Proof;
  neededBy: string;
}

export const REQUIREMENTS: readonly Requirement[];
export function proven(proof: Proof, env?: NodeJS.ProcessEnv): boolean;
export function missingRequirements(
  requirements?: readonly Requirement[],
  isProven?: (proof: Proof) => boolean,
): Requirement[];
export function table(requirements: readonly Requirement[]): string;
export function installLine(missing: readonly Requirement[]): string;
export function aptInstall(
  packages: string[],
  runCommand?: (command: string, args: string[], env: NodeJS.ProcessEnv) => void,
  policy?: string,
): void;
export function setUpTestMachine(options?: {
  requirements?: readonly Requirement[];
  isRoot?: boolean;
  install?: boolean;
  isProven?: (proof: Proof) => boolean;
  installPackages?: (packages: string[]) => void;
  log?: (line: string) => void;
  error?: (line: string) => void;
}): number;

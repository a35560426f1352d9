/**
 * The cluster's upgrade rules (openapi.yaml, info.description): which joiner releases are
 * accepted as they are, which may upgrade themselves first (`needs-upgrade`), and why the rest
 * are refused (`RELEASE_MISMATCH` with `details.reason`).
 * @module
 */

/** Why a release was refused, in the order the rules are checked. */
export type MismatchReason = "malformed" | "newer" | "too-old" | "no-self-upgrade" | "not-available";

/**
 * How far behind (in minor versions, same major) a self-upgrade may start: the spec's upgrade
 * rules (openapi.yaml, info.description) fix two; further behind, the machine is reinstalled
 * from the cluster's ISO.
 */
export const MAX_MINOR_BEHIND = 2;

/** Where the founder can hand a joiner the cluster's release from. */
export interface ReleaseAvailability {
  /** The release mirror's URL of the release directory. */
  source?: string;
  /** The founder serves the release itself. */
  served?: boolean;
}

/** The verdict on a joiner's release. */
export type ReleaseVerdict =
  | { kind: "same" }
  | { kind: "upgrade"; upgrade: { from: string; to: string; source?: string; served?: boolean } }
  | { kind: "mismatch"; reason: MismatchReason };

function semver(text: string): [number, number, number] | undefined {
  const m = /^(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})$/.exec(text);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

function compare(a: [number, number, number], b: [number, number, number]): number {
  for (let i = 0; i < 3; i++) if (a[i]! !== b[i]!) return a[i]! - b[i]!;
  return 0;
}

/**
 * Applies the upgrade rules to a joiner's `release` against the cluster's: the same release
 * passes as it is; otherwise both must be MAJOR.MINOR.PATCH (`malformed`), the joiner's older
 * (`newer`), same major and at most two minors behind (`too-old`), the joiner must have said it
 * can upgrade itself (`no-self-upgrade`), and the founder must be able to hand it the release
 * (`not-available`).
 */
export function applyUpgradeRules(
  release: string,
  clusterRelease: string,
  selfUpgrade: boolean,
  availability: () => ReleaseAvailability | undefined,
): ReleaseVerdict {
  if (release === clusterRelease) return { kind: "same" };
  const mine = semver(release);
  const theirs = semver(clusterRelease);
  if (!mine || !theirs) return { kind: "mismatch", reason: "malformed" };
  if (compare(mine, theirs) >= 0) return { kind: "mismatch", reason: "newer" };
  if (mine[0] !== theirs[0] || theirs[1] - mine[1] > MAX_MINOR_BEHIND) return { kind: "mismatch", reason: "too-old" };
  if (!selfUpgrade) return { kind: "mismatch", reason: "no-self-upgrade" };
  const available = availability();
  if (!available) return { kind: "mismatch", reason: "not-available" };
  return { kind: "upgrade", upgrade: { from: release, to: clusterRelease, ...available } };
}

const MESSAGES: Record<MismatchReason, (release: string, cluster: string) => string> = {
  malformed: (r, c) =>
    `This machine runs ${r}; the cluster runs ${c}. A self-upgrade needs both to be MAJOR.MINOR.PATCH releases.`,
  newer: (r, c) => `This machine runs ${r}, newer than the cluster's ${c}; install it from the cluster's release.`,
  "too-old": (r, c) =>
    `This machine runs ${r}; the cluster runs ${c}, which it cannot upgrade to by itself (same major version, at most ${MAX_MINOR_BEHIND} minor versions behind).`,
  "no-self-upgrade": (r, c) =>
    `This machine runs ${r}; the cluster runs ${c}, and the machine did not offer to upgrade itself.`,
  "not-available": (r, c) =>
    `This machine runs ${r}; the cluster runs ${c}, which the founder can neither serve nor name a mirror for.`,
};

/** The person-readable detail of a refusal. */
export function mismatchDetail(reason: MismatchReason, release: string, clusterRelease: string): string {
  return MESSAGES[reason](release, clusterRelease);
}

/**
 * The release manifest's types: what `payload/manifest.json` signs. Types only, so the
 * tooling that builds a manifest and the verifier that checks one both depend on this module
 * and never on each other.
 * @module
 */

/** One file of a release, as its manifest lists it. */
export interface ReleaseFile {
  /** Relative POSIX path inside `os/blobs/` or `sysext/`. */
  path: string;
  /** Exact size in bytes. */
  size: number;
  /** Lower-case hex SHA-256 of the content. */
  sha256: string;
}

/** The signed payload of `payload/manifest.json`: every file of the release but the manifest itself. */
export interface ReleaseManifest {
  /** Always 1. */
  schema: 1;
  /** The release this is, e.g. `0.6.0`. */
  release: string;
  /** When it was built (RFC 3339). */
  createdAt: string;
  /** Every file but `payload/manifest.json`, sorted by path. */
  files: ReleaseFile[];
}

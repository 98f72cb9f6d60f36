/**
 * Synthetic images under the names the seed manifests use, so a registry seeded with them can
 * stand in for mcr.microsoft.com (and Docker Hub) through a mirror: servercore, iis,
 * nanoserver and powershell for Server 2019/2022 (and 2025), a multi-OS .NET index and a Linux
 * nginx. Configs and index entries carry realistic os.version values with revisions. The
 * formats vary on purpose (Docker v2 manifests and lists, OCI manifests and indexes), as they
 * do on MCR. `testCatalog` adds images for edge cases: entries without platforms, broken
 * configs, a private repository.
 */

/** Windows builds with the revisions the synthetic images carry. */
export const osVersions = {
  ltsc2019: '10.0.17763.6054',
  ltsc2022: '10.0.20348.2582',
  ltsc2025: '10.0.26100.1742',
} as const;

export type ManifestFormat = 'oci' | 'docker';

export interface SyntheticPlatform {
  os: string;
  architecture: string;
  osVersion?: string;
  variant?: string;
}

/** A single-platform image: a manifest, its config and one small layer. */
export interface SyntheticManifest {
  kind: 'manifest';
  format: ManifestFormat;
  platform: SyntheticPlatform;
  /** Config bytes to push instead of the generated config (for malformed-config tests). */
  rawConfig?: string;
  /**
   * The size the manifest declares for its layer instead of the small blob's: an image as large
   * as a real Windows one for what reads manifests only (the operator's pre-pull sizes), with
   * no gigabytes pushed. A pull of it would fail its size check.
   */
  declaredLayerBytes?: number;
}

export interface SyntheticIndexEntry {
  image: SyntheticManifest;
  /** Whether the index entry names its platform (default true; OCI makes it optional). */
  declarePlatform?: boolean;
}

/** A multi-platform image: an OCI index or Docker manifest list. */
export interface SyntheticIndex {
  kind: 'index';
  format: ManifestFormat;
  entries: SyntheticIndexEntry[];
  /** Add a BuildKit-style attestation entry (platform unknown/unknown), as Docker Hub images have. */
  attestation?: boolean;
}

export type SyntheticImage = SyntheticManifest | SyntheticIndex;

export interface CatalogEntry {
  /** Repository as on the upstream registry, e.g. "windows/servercore". */
  repository: string;
  tag: string;
  image: SyntheticImage;
  /** The registry the real image lives on (what a mirror stands in for). */
  upstream: 'mcr.microsoft.com' | 'docker.io';
}

const windows = (osVersion: string, format: ManifestFormat = 'docker'): SyntheticManifest => ({
  kind: 'manifest',
  format,
  platform: { os: 'windows', architecture: 'amd64', osVersion },
});

const linux = (architecture: string, variant?: string): SyntheticManifest => ({
  kind: 'manifest',
  format: 'oci',
  platform: { os: 'linux', architecture, ...(variant ? { variant } : {}) },
});

const mcr = (repository: string, tag: string, image: SyntheticImage): CatalogEntry => ({
  repository,
  tag,
  image,
  upstream: 'mcr.microsoft.com',
});

/** Windows images under their mcr.microsoft.com names. */
export const mcrCatalog: readonly CatalogEntry[] = [
  mcr('windows/servercore', 'ltsc2019', windows(osVersions.ltsc2019)),
  mcr('windows/servercore', 'ltsc2022', windows(osVersions.ltsc2022, 'oci')),
  // MCR serves its Windows tags as one-entry manifest lists.
  mcr('windows/servercore', 'ltsc2025', {
    kind: 'index',
    format: 'docker',
    entries: [{ image: windows(osVersions.ltsc2025) }],
  }),
  mcr('windows/servercore', 'multiarch', {
    kind: 'index',
    format: 'oci',
    entries: [
      { image: windows(osVersions.ltsc2019, 'oci') },
      { image: windows(osVersions.ltsc2022, 'oci') },
      { image: windows(osVersions.ltsc2025, 'oci') },
      {
        image: {
          kind: 'manifest',
          format: 'oci',
          platform: { os: 'windows', architecture: 'arm64', osVersion: osVersions.ltsc2025 },
        },
      },
    ],
  }),
  mcr('windows/servercore/iis', 'windowsservercore-ltsc2019', windows(osVersions.ltsc2019)),
  mcr('windows/servercore/iis', 'windowsservercore-ltsc2022', windows(osVersions.ltsc2022)),
  mcr('windows/servercore/iis', 'latest', {
    kind: 'index',
    format: 'docker',
    entries: [{ image: windows(osVersions.ltsc2019) }, { image: windows(osVersions.ltsc2022) }],
  }),
  mcr('windows/nanoserver', '1809', windows(osVersions.ltsc2019)),
  mcr('windows/nanoserver', 'ltsc2022', windows(osVersions.ltsc2022)),
  mcr('powershell', 'lts-nanoserver-1809', windows(osVersions.ltsc2019)),
  mcr('powershell', 'lts-nanoserver-ltsc2022', windows(osVersions.ltsc2022)),
  // A multi-OS index, as .NET publishes: Linux and every Windows LTSC in one tag.
  mcr('dotnet/runtime', '8.0', {
    kind: 'index',
    format: 'oci',
    entries: [
      { image: linux('amd64') },
      { image: linux('arm64', 'v8') },
      { image: windows(osVersions.ltsc2019, 'oci') },
      { image: windows(osVersions.ltsc2022, 'oci') },
      { image: windows(osVersions.ltsc2025, 'oci') },
    ],
  }),
];

/** Linux images under their Docker Hub names. */
export const dockerHubCatalog: readonly CatalogEntry[] = [
  {
    repository: 'library/nginx',
    tag: 'latest',
    image: {
      kind: 'index',
      format: 'oci',
      entries: [{ image: linux('amd64') }, { image: linux('arm64', 'v8') }],
      attestation: true,
    },
    upstream: 'docker.io',
  },
  {
    repository: 'library/busybox',
    tag: 'latest',
    image: { kind: 'manifest', format: 'docker', platform: { os: 'linux', architecture: 'amd64' } },
    upstream: 'docker.io',
  },
];

/** Every image the lab registry holds. */
export const labCatalog: readonly CatalogEntry[] = [...mcrCatalog, ...dockerHubCatalog];

const edgeCase = (repository: string, tag: string, image: SyntheticImage): CatalogEntry => ({
  repository,
  tag,
  image,
  upstream: 'mcr.microsoft.com',
});

/** Edge cases for the resolver tests. */
export const testCatalog: readonly CatalogEntry[] = [
  // Entries without platform: the resolver reads each child manifest's config.
  edgeCase('winfleet-test/undeclared', 'latest', {
    kind: 'index',
    format: 'oci',
    entries: [
      { image: windows(osVersions.ltsc2019, 'oci'), declarePlatform: false },
      { image: windows(osVersions.ltsc2022, 'oci'), declarePlatform: false },
    ],
  }),
  // A Windows image without os.version, which runs on any Windows host.
  edgeCase('winfleet-test/no-os-version', 'latest', {
    kind: 'manifest',
    format: 'docker',
    platform: { os: 'windows', architecture: 'amd64' },
  }),
  edgeCase('winfleet-test/broken', 'config-not-json', {
    ...windows(osVersions.ltsc2022),
    rawConfig: 'this is not JSON',
  }),
  edgeCase('winfleet-test/broken', 'config-without-os', {
    ...windows(osVersions.ltsc2022),
    rawConfig: JSON.stringify({ architecture: 'amd64', rootfs: { type: 'layers', diff_ids: [] } }),
  }),
  edgeCase('winfleet-test/broken', 'os-version-number', {
    ...windows(osVersions.ltsc2022),
    rawConfig: JSON.stringify({ architecture: 'amd64', os: 'windows', 'os.version': 10.0 }),
  }),
  // Only the token registry's authenticated users may pull it.
  edgeCase('private/windows-app', 'ltsc2022', windows(osVersions.ltsc2022)),
];

/** The platforms a resolver should report for a catalog image (attestations excluded). */
export function expectedPlatforms(image: SyntheticImage): SyntheticPlatform[] {
  if (image.kind === 'manifest') return [image.platform];
  return image.entries.map((entry) => entry.image.platform);
}

/**
 * Windows Server releases and the build numbers Kubernetes labels nodes with
 * (`node.kubernetes.io/windows-build` = major.minor.build).
 */
import { WinfleetError } from '../errors/catalog.ts';

export const windowsBuildLabel = 'node.kubernetes.io/windows-build';

/** A Windows Server release winfleet knows by name. */
export interface WindowsRelease {
  /** Short name used in RuntimeClass names and CLI flags: "2019", "2022", "2025". */
  name: string;
  /** major.minor.build, the value of the windows-build label. */
  build: string;
  /** Long-term servicing channel release (the ones hosts run in production). */
  ltsc: boolean;
  /** The container image tag family Microsoft publishes for it. */
  imageTag: string;
}

export const windowsReleases = [
  { name: '2019', build: '10.0.17763', ltsc: true, imageTag: 'ltsc2019' },
  { name: '2022', build: '10.0.20348', ltsc: true, imageTag: 'ltsc2022' },
  { name: '2025', build: '10.0.26100', ltsc: true, imageTag: 'ltsc2025' },
] as const satisfies readonly WindowsRelease[];

export type WindowsReleaseName = (typeof windowsReleases)[number]['name'];

/** The release named `name`; throws for names winfleet does not know. */
export function windowsRelease(name: string): WindowsRelease {
  const release = windowsReleases.find((r) => r.name === name);
  if (!release) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `Unknown Windows release "${name}"; use one of ${windowsReleases.map((r) => r.name).join(', ')}`,
    );
  }
  return release;
}

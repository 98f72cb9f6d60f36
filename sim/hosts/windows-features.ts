/**
 * The Windows features of a simulated Windows Server (Server Manager's Get-WindowsFeature /
 * Install-WindowsFeature), for the one winfleet needs: Containers, without which there is no
 * vmcompute.dll (the Host Compute Service) for containerd's shims. A feature's InstallState is
 * one of Server Manager's: Installed, Available (its payload is on disk), Removed (its payload
 * was removed: installing needs -Source), InstallPending and UninstallPending (a reboot
 * finishes the change). Installing Containers needs a reboot, as on Windows: it is
 * InstallPending until the machine boots again.
 */

/** Server Manager's InstallState (Microsoft.Windows.ServerManager.Commands.InstallState). */
export type FeatureInstallState =
  | 'Installed'
  | 'Available'
  | 'Removed'
  | 'InstallPending'
  | 'UninstallPending';

/** The features a simulated host knows, with their state. */
export type WindowsFeatureStates = Partial<Record<string, FeatureInstallState>>;

/** What Install-WindowsFeature returns (its FeatureOperationResult, the fields winfleet reads). */
export interface FeatureInstallResult {
  success: boolean;
  /** "Yes", "No" or "Maybe", as the RestartNeeded property prints. */
  restartNeeded: 'Yes' | 'No';
  /** FeatureOperationExitCode as it prints. */
  exitCode: 'Success' | 'NoChangeNeeded' | 'SuccessRestartRequired';
}

/** Install-WindowsFeature's error for a feature whose payload was removed (0x800f081f). */
export const sourceFilesNotFound =
  'The request to add or remove features on the specified server failed. Installation of one or more roles, role services, or features failed. The source files could not be found. Use the "Source" option to specify the location of the files that are required to install the roles, role services, or features. For more information about specifying a source location, see http://go.microsoft.com/fwlink/?LinkId=243077. Error: 0x800f081f';

const states: readonly FeatureInstallState[] = [
  'Installed',
  'Available',
  'Removed',
  'InstallPending',
  'UninstallPending',
];

/** The features a host has unless told otherwise. */
export const defaultFeatures: Readonly<WindowsFeatureStates> = { Containers: 'Installed' };

export class WindowsFeatures {
  /** By lower-cased name: the name as Windows spells it and its state. */
  readonly #features = new Map<string, { name: string; state: FeatureInstallState }>();

  constructor(initial: Readonly<WindowsFeatureStates> = defaultFeatures) {
    for (const [name, state] of Object.entries({ ...defaultFeatures, ...initial })) {
      if (state === undefined) continue;
      if (!states.includes(state)) {
        throw new RangeError(
          `Cannot give feature ${name} the state "${state}"; use one of ${states.join(', ')}`,
        );
      }
      this.#features.set(name.toLowerCase(), { name, state });
    }
  }

  /** The feature's name and InstallState; undefined for a name the host does not know. */
  get(name: string): { name: string; state: FeatureInstallState } | undefined {
    const feature = this.#features.get(name.toLowerCase());
    return feature && { ...feature };
  }

  isInstalled(name: string): boolean {
    return this.get(name)?.state === 'Installed';
  }

  /**
   * Install-WindowsFeature: an available feature becomes InstallPending and needs a restart;
   * an installed one needs nothing. Throws RangeError for an unknown name and Error (with
   * Windows' text) for a removed one.
   */
  install(name: string): FeatureInstallResult {
    const feature = this.#features.get(name.toLowerCase());
    if (!feature) {
      throw new RangeError(
        `ArgumentNotValid: The role, role service, or feature name is not valid: '${name}'. The name was not found.`,
      );
    }
    switch (feature.state) {
      case 'Installed':
        return { success: true, restartNeeded: 'No', exitCode: 'NoChangeNeeded' };
      case 'InstallPending':
        return { success: true, restartNeeded: 'Yes', exitCode: 'NoChangeNeeded' };
      case 'Removed':
        throw new Error(sourceFilesNotFound);
      case 'Available':
      case 'UninstallPending':
        feature.state = 'InstallPending';
        return { success: true, restartNeeded: 'Yes', exitCode: 'SuccessRestartRequired' };
    }
  }

  /** Sets a feature's state (a test's or the lab's setup; Uninstall-WindowsFeature). */
  set(name: string, state: FeatureInstallState): void {
    if (!states.includes(state)) {
      throw new RangeError(
        `Cannot give feature ${name} the state "${state}"; use one of ${states.join(', ')}`,
      );
    }
    const existing = this.#features.get(name.toLowerCase());
    this.#features.set(name.toLowerCase(), { name: existing?.name ?? name, state });
  }

  /** A boot finishes pending changes. */
  boot(): void {
    for (const feature of this.#features.values()) {
      if (feature.state === 'InstallPending') feature.state = 'Installed';
      else if (feature.state === 'UninstallPending') feature.state = 'Available';
    }
  }
}

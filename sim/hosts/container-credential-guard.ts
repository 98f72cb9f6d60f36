/**
 * Container Credential Guard (CCG) on a simulated host, and the host's answer to the agent's
 * gMSA facts (HostOS.gmsaHostFacts, src/agent/windows/gmsa-host-facts.ts): its Active Directory
 * domain (SimMachine.domain, a fake domain name: a host is joined or not), whether CCG is there
 * and the CCG plug-ins registered. docs/fidelity-ledger.md has the source of each and what is
 * not modelled.
 *
 * CCG (ccg.exe) ships from Windows Server 2019 (every simulated release); its COMClasses key,
 * where plug-ins register, exists only where the Containers feature is installed. A plug-in is
 * a CLSID under that key, usable once its COM class is registered too (HKCR\CLSID\{clsid}).
 */
import type { CcgPlugin, GmsaHostFacts } from '../../src/agent/windows/gmsa-host-facts.ts';
import type { WindowsFeatures } from './windows-features.ts';

const clsidPattern =
  /^\{[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\}$/;

/** The CLSID of Microsoft's Azure Key Vault CCG plug-in (CCGAKVPlugin), for tests and the lab. */
export const azureKeyVaultCcgPlugin = '{CCC2A336-D7F3-4818-A213-272B7924213E}';

export class ContainerCredentialGuard {
  /** By upper-cased CLSID: the CLSID as registered and whether its COM class is registered. */
  readonly #plugins = new Map<string, CcgPlugin>();
  readonly #features: WindowsFeatures;

  constructor(features: WindowsFeatures, plugins: readonly string[] = []) {
    this.#features = features;
    for (const clsid of plugins) this.registerPlugin(clsid);
  }

  /** ccg.exe and its COMClasses key: there while the Containers feature is installed. */
  get available(): boolean {
    return this.#features.isInstalled('Containers');
  }

  /**
   * Adds a plug-in's key under CCG\COMClasses; `comClassRegistered: false` models a plug-in
   * whose DLL was never registered (regsvcs) or was unregistered since.
   */
  registerPlugin(clsid: string, options: { comClassRegistered?: boolean } = {}): void {
    if (!clsidPattern.test(clsid)) {
      throw new RangeError(
        `Cannot register CCG plug-in "${clsid}": a COM class id is {xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}`,
      );
    }
    this.#plugins.set(clsid.toUpperCase(), {
      clsid,
      comClassRegistered: options.comClassRegistered ?? true,
    });
  }

  removePlugin(clsid: string): void {
    this.#plugins.delete(clsid.toUpperCase());
  }

  /** The plug-ins as the COMClasses key lists them; none while the key does not exist. */
  plugins(): CcgPlugin[] {
    return this.available ? [...this.#plugins.values()].map((p) => ({ ...p })) : [];
  }
}

/** What the agent's gMSA facts script prints on this machine. */
export function simGmsaHostFacts(machine: {
  domain: string | undefined;
  ccg: ContainerCredentialGuard;
}): GmsaHostFacts {
  return {
    partOfDomain: machine.domain !== undefined,
    domain: machine.domain ?? 'WORKGROUP',
    ccgAvailable: machine.ccg.available,
    ccgPlugins: machine.ccg.plugins(),
  };
}

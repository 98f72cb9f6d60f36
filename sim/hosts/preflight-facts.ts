/**
 * A simulated host's answer to the `preflight-facts` catalog script (remote-commands.ts runs
 * it): the values Windows gives for each property the script reads, from the machine's state.
 * docs/fidelity-ledger.md has the upstream source of each and what is not modelled.
 */
import type { HyperVFacts, PreflightFacts } from '../../src/cli/check/preflight-facts.ts';
import { hyperVFeature } from './containerd-standin.ts';
import { netbiosName, type SimMachine } from './machine.ts';

export function preflightFacts(machine: SimMachine): PreflightFacts {
  const netbios = netbiosName(machine.hostname);
  // A running kubelet listens on its port on every address: Go's net.Listen(":10250") on
  // Windows opens one dual-stack socket, which Get-NetTCPConnection shows as "::".
  const kubelets = machine
    .processes()
    .filter((p) => p.imageName.toLowerCase() === 'kubelet.exe')
    .map((p) => ({ localAddress: '::', owningProcess: p.pid, processName: 'kubelet' }));
  const others = machine.extraTcpListeners
    .filter((l) => l.port === 10250)
    .map(({ localAddress, owningProcess, processName }) => ({
      localAddress,
      owningProcess,
      processName,
    }));
  const rules = machine.firewall
    .rules()
    // Get-NetFirewallPortFilter -Protocol TCP, then LocalPort -contains '10250': an "Any"
    // protocol or "Any" port rule is not listed.
    .filter((r) => r.protocol === 'TCP' && r.localPorts !== 'Any' && r.localPorts.includes(10250))
    .map((r) => ({ name: r.name, enabled: r.enabled, direction: r.direction, action: r.action }));
  return {
    netbiosName: netbios,
    partOfDomain: machine.domain !== undefined,
    domain: machine.domain ?? 'WORKGROUP',
    logicalProcessors: machine.cpus,
    memoryBytes: machine.memoryBytes,
    // The simulated SSH server runs commands only for administrators, with a full token.
    userName: `${netbios}\\Administrator`,
    administrator: true,
    // DateTime.ToString('o') of a UTC time: seven fractional digits and Z.
    utcNow: new Date(machine.localTime()).toISOString().replace(/Z$/, '0000Z'),
    listeners10250: [...kubelets, ...others],
    firewallRules10250: rules,
    winHttpProxy: {
      proxyServer: machine.winHttpProxy?.proxyServer ?? null,
      bypassList: machine.winHttpProxy?.bypassList ?? null,
    },
    proxyEnvironment: {
      HTTP_PROXY: machine.env.get('HTTP_PROXY') ?? null,
      HTTPS_PROXY: machine.env.get('HTTPS_PROXY') ?? null,
      NO_PROXY: machine.env.get('NO_PROXY') ?? null,
    },
  };
}

/**
 * The answer to `hyperv-facts`: Get-WindowsFeature Hyper-V, Win32_ComputerSystem.HypervisorPresent and Win32_Processor.
 * VirtualizationFirmwareEnabled: a hypervisor is present in a VM, or on hardware once the
 * Hyper-V role runs (it needs the extensions); once Hyper-V's own hypervisor runs, Windows
 * reports VirtualizationFirmwareEnabled False (docs/fidelity-ledger.md).
 */
export function hyperVFacts(machine: SimMachine): HyperVFacts {
  const { vm, extensions } = machine.virtualization;
  const ownHypervisor = extensions && machine.features.isInstalled(hyperVFeature);
  return {
    // Every Windows Server lists the role: Available until installed.
    feature: machine.features.get(hyperVFeature)?.state ?? 'Available',
    hypervisorPresent: vm || ownHypervisor,
    virtualizationFirmwareEnabled: extensions && !ownHypervisor,
  };
}

/**
 * The host side of a diagnostics bundle: each catalog `diagnostic` item over SSH, one host at
 * a time, each item on its own (a failed item does not lose the others; a host that cannot
 * be reached is one failure, and the other hosts are still collected).
 */
import {
  type DiagnosticItem,
  diagnosticItems,
  diagnosticKeepsTail,
  readDiagnostic,
} from '../../hostaccess/remote-scripts.ts';
import type { HostTarget } from '../host-targets.ts';
import type { CollectedItem } from './cluster.ts';

export const diagnosticTitles: Record<DiagnosticItem, string> = {
  services: 'sc.exe qc / sc.exe query of hns and the node services',
  hns: 'HNS networks, endpoints and policies (hnsdiag list all -d)',
  ipconfig: 'ipconfig /all',
  routes: 'route print',
  firewall: "winfleet's firewall rules (Get-NetFirewallRule)",
  'excluded-ports': 'excluded TCP port ranges (netsh int ipv4 show excludedportrange)',
  'os-version': 'OS build and UBR (registry CurrentVersion)',
  hotfixes: 'Get-HotFix',
  'events-system': 'System event log',
  'events-application': 'Application event log',
  'events-hns': 'Host Network Service event log (Admin)',
  'log-kubelet': 'kubelet log',
  'log-kube-proxy': 'kube-proxy log',
  'log-containerd': 'containerd log',
  'log-csi-proxy': 'csi-proxy log',
  'log-agent': 'winfleet agent log',
  'config-kubelet': 'kubelet configuration',
  'config-containerd': 'containerd config.toml',
  'config-cni': 'CNI configuration',
  'agent-status': 'winfleet agent state, configuration and applied services manifest',
};

/** The bundle directory name of a host: hosts/<namespace>_<name> or hosts/<address>. */
export function hostDirectory(target: HostTarget): string {
  return `hosts/${target.name.replace(/[^A-Za-z0-9._-]/g, '_')}`;
}

export interface HostCollection {
  target: HostTarget;
  /** Why the host could not be reached at all. */
  failure?: string;
  /** The SSH host key fingerprint the host presented. */
  presentedKey?: string;
  items: CollectedItem[];
}

export async function collectHost(
  target: HostTarget,
  hours: number,
  onItem: (item: DiagnosticItem) => void = () => {},
): Promise<HostCollection> {
  const dir = hostDirectory(target);
  let remote: Awaited<ReturnType<HostTarget['open']>>;
  try {
    remote = await target.open();
  } catch (error) {
    return {
      target,
      failure: `cannot reach ${target.name} (${target.address}) over SSH: ${(error as Error).message}`,
      items: [],
    };
  }
  const items: CollectedItem[] = [];
  const presentedKey = remote.session.fingerprint;
  try {
    for (const item of diagnosticItems) {
      onItem(item);
      const path = `${dir}/${item}.txt`;
      try {
        const output = readDiagnostic(await remote.script('diagnostic', { item, hours }), item);
        items.push({
          path,
          title: diagnosticTitles[item],
          text: output.text.endsWith('\n') ? output.text : `${output.text}\r\n`,
          truncated: output.truncated,
          keepTail: diagnosticKeepsTail(item),
        });
      } catch (error) {
        items.push({ path, title: diagnosticTitles[item], error: (error as Error).message });
      }
    }
  } finally {
    remote.close();
  }
  return { target, presentedKey, items };
}

/**
 * The hybrid-overlay-node stand-in: what hybrid-overlay-node.exe (ovn-org/ovn-kubernetes
 * go-controller/hybrid-overlay: cmd/hybrid-overlay-node/hybrid-overlay-node.go,
 * pkg/controller/{node.go,ho_node_windows.go}, pkg/types/types.go) does on a simulated host,
 * against the real API server, with the credentials its kubeconfig gives:
 * 1. parses its flags (urfave/cli v2 over Go's flag package: go-flags.ts); a flag it does not
 *    define exits 1 ("flag provided but not defined"); without --node it panics ("missing node
 *    name; use the 'node' flag to provide one", exit 2, as a Go panic does);
 * 2. reads its Node (kube.GetNode; an error panics, exit 2);
 * 3. ensureBaseNetwork: the persistent Overlay network BaseOVNKubernetesHybridOverlayNetwork on
 *    the unused 100.64.0.0/30, gateway 100.64.0.2, VSID 4098 (HybridOverlayVNI + 1), kept when it
 *    exists;
 * 4. lists and watches every Node (its node informer); for its own Node with
 *    `k8s.ovn.org/hybrid-overlay-node-subnet` and an InternalIP (getNodeSubnetAndIP), initSelf:
 *    the Overlay network OVNKubernetesHybridOverlayNetwork on that subnet, gateway its first
 *    address, VSID 4097, with a HostRoute policy (an existing one on the same subnet and gateway
 *    is kept, its RemoteSubnetRoute policies cleared), then the network's DR MAC written to the
 *    Node's `k8s.ovn.org/hybrid-overlay-distributed-router-gateway-mac` (a merge patch of the
 *    Node, SetAnnotationsOnNode); without the subnet it waits for it;
 * 5. for every other Node with a subnet (`k8s.ovn.org/node-subnets` of an OVN node, else the
 *    hybrid subnet annotation), an InternalIP and a DR MAC annotation (getNodeDetails), one
 *    RemoteSubnetRoute {IsolationId 4097, DistributedRouterMacAddress, ProviderAddress: its
 *    InternalIP, DestinationPrefix: its subnet}; removed when the Node loses one of them or goes.
 * Logs go to --logfile (klog's log_file), else standard error.
 * Not modelled (docs/fidelity-ledger.md): the Pod informer (its handlers do nothing on Windows:
 * ho_node_windows.go AddPod/DeletePod return nil), the HostRoute feature check (every simulated
 * build has it), DuplicateIPv4Routes, the bootstrap-kubeconfig certificate of its own, and
 * machine-ID matching: it knows its own Node by name (equal on a real host, where each Node's
 * status.nodeInfo.machineID is its machine's).
 */
import * as k8s from '@kubernetes/client-node';
import { formatIpv4, parseIpv4Cidr } from '../../src/net/ipv4-cidr.ts';
import { reflect } from './api-reflector.ts';
import { GoFlagError, type GoFlagKind, parseGoFlags } from './go-flags.ts';
import type { HnsNetworkPolicy } from './hns-networks.ts';
import { callOptions, kubeConfigFor, readKubeconfig } from './kubelet-kubeconfig.ts';
import type { SimMachine } from './machine.ts';
import type { ProgramContext, SimProgram } from './sim-process.ts';

/** The hybrid overlay's Node annotations (pkg/types/types.go) and OVN's node subnets. */
export const hybridOverlayAnnotations = {
  nodeSubnet: 'k8s.ovn.org/hybrid-overlay-node-subnet',
  drMac: 'k8s.ovn.org/hybrid-overlay-distributed-router-gateway-mac',
  ovnNodeSubnets: 'k8s.ovn.org/node-subnets',
} as const;

const networkName = 'OVNKubernetesHybridOverlayNetwork';
const baseNetworkName = 'BaseOVNKubernetesHybridOverlayNetwork';
const hybridOverlayVni = 4097;

/** The flags hybrid-overlay-node defines that winfleet or WMCO pass (config.go, the command). */
export const hybridOverlayFlags: ReadonlyMap<string, GoFlagKind> = new Map<string, GoFlagKind>([
  ['node', 'string'],
  ['windows-service', 'bool'],
  ['k8s-kubeconfig', 'string'],
  ['k8s-apiserver', 'string'],
  ['k8s-cacert', 'string'],
  ['k8s-token', 'string'],
  ['bootstrap-kubeconfig', 'string'],
  ['cert-dir', 'string'],
  ['cert-duration', 'string'],
  ['logfile', 'string'],
  ['loglevel', 'int'],
  ['hybrid-overlay-vxlan-port', 'int'],
  ['version', 'bool'],
]);

export interface HybridOverlayStatus {
  pid: number;
  phase: 'starting' | 'waiting-for-subnet' | 'running' | 'exited';
  subnet?: string;
  drMac?: string;
  /** Remote DestinationPrefix → ProviderAddress. */
  routes: Record<string, string>;
}

const statusKey = 'hybrid-overlay-node';

/** What the stand-in on a machine is doing, for tests. */
export function hybridOverlayStatus(machine: SimMachine): HybridOverlayStatus | undefined {
  return machine.state<{ status?: HybridOverlayStatus }>(statusKey, () => ({})).status;
}

class Panic extends Error {}

/** A remote Node's subnet, InternalIP and DR MAC (getNodeDetails), or undefined. */
export function remoteHybridNode(
  node: k8s.V1Node,
): { subnet: string; ip: string; drMac: string } | undefined {
  const a = node.metadata?.annotations ?? {};
  let subnet: string | undefined;
  const ovn = a[hybridOverlayAnnotations.ovnNodeSubnets];
  if (ovn) {
    try {
      const parsed = (JSON.parse(ovn) as { default?: unknown }).default;
      const first = Array.isArray(parsed) ? parsed[0] : parsed;
      if (typeof first === 'string') subnet = first;
    } catch {
      // ParseNodeHostSubnetAnnotation fails: the hybrid subnet is tried next.
    }
  }
  subnet ??= a[hybridOverlayAnnotations.nodeSubnet];
  const cidr = subnet ? parseIpv4Cidr(subnet) : undefined;
  const ip = node.status?.addresses?.find((x) => x.type === 'InternalIP')?.address;
  const drMac = a[hybridOverlayAnnotations.drMac];
  if (!cidr || !ip || !drMac || !/^([0-9a-f]{2}[:-]){5}[0-9a-f]{2}$/i.test(drMac)) return undefined;
  return {
    subnet: `${formatIpv4(cidr.network)}/${cidr.prefix}`,
    ip,
    drMac: drMac.toLowerCase().replaceAll('-', ':'),
  };
}

export function createHybridOverlayStandIn(
  options: { apiTimeoutMs?: number; watchTimeoutSeconds?: number } = {},
): SimProgram {
  return async function hybridOverlayNode(context: ProgramContext): Promise<number> {
    const status: HybridOverlayStatus = { pid: context.pid, phase: 'starting', routes: {} };
    context.machine.state<{ status?: HybridOverlayStatus }>(statusKey, () => ({})).status = status;
    let logFile: string | undefined;
    let writing = Promise.resolve();
    const log = (severity: 'I' | 'E', message: string) => {
      const line = `${severity}${new Date().toISOString().slice(5, 23).replace('T', ' ')} ${String(context.pid).padStart(7)} hybrid-overlay] ${message}\n`;
      const file = logFile;
      if (!file) {
        context.stderr(line);
        return;
      }
      // klog's log file, appended in order.
      const fs = context.machine.fs;
      writing = writing
        .then(async () => {
          const before = (await fs.tryReadFile(file)) ?? Buffer.alloc(0);
          await fs.writeFile(file, Buffer.concat([before, Buffer.from(line)]));
        })
        .catch(() => undefined);
    };
    try {
      let flags: ReturnType<typeof parseGoFlags>;
      try {
        flags = parseGoFlags(hybridOverlayFlags, context.argv);
      } catch (error) {
        if (!(error instanceof GoFlagError)) throw error;
        context.stderr(`Incorrect Usage: ${error.message}\n`);
        return 1;
      }
      const one = (name: string) => flags.values.get(name);
      logFile = one('logfile') || undefined;
      const nodeName = one('node') ?? '';
      if (!nodeName) throw new Panic("missing node name; use the 'node' flag to provide one");
      const kubeconfig = one('k8s-kubeconfig');
      if (!kubeconfig || !(await context.machine.fs.stat(kubeconfig)))
        throw new Panic(
          `stat ${kubeconfig ?? ''}: The system cannot find the file specified.`.trimStart(),
        );
      const kc = kubeConfigFor(await readKubeconfig(context.machine.fs, kubeconfig));
      const core = kc.makeApiClient(k8s.CoreV1Api);
      const call = (patch: boolean | 'strategic' = false) =>
        callOptions(context.signal, options.apiTimeoutMs ?? 10_000, patch);
      try {
        await core.readNode({ name: nodeName }, call());
      } catch (error) {
        throw new Panic(`nodes "${nodeName}" ${(error as Error).message}`);
      }
      const hns = context.machine.hns;
      if (!hns.find(baseNetworkName)) {
        log('I', `Creating the base overlay network '${baseNetworkName}'.`);
        hns.ensure(
          baseNetworkName,
          'Overlay',
          [{ addressPrefix: '100.64.0.0/30', gateway: '100.64.0.2' }],
          { vsid: hybridOverlayVni + 1, managementIp: context.machine.address },
        );
      }
      status.phase = 'waiting-for-subnet';
      let ownSubnet: string | undefined;
      let networkId: string | undefined;
      let annotatedMac: string | undefined;
      const nodes = new Map<string, k8s.V1Node>();
      const initSelf = (subnet: string) => {
        const cidr = parseIpv4Cidr(subnet)!;
        const gateway = formatIpv4(cidr.network + 1);
        const existing = hns.find(networkName);
        if (
          existing &&
          hns.subnets(existing.id).some((s) => s.addressPrefix === subnet && s.gateway === gateway)
        ) {
          log('I', `Reusing existing overlay network '${networkName}' (address prefix ${subnet})`);
          const routes = hns.policies(existing.id).filter((p) => p.Type === 'RemoteSubnetRoute');
          if (routes.length > 0) hns.removePolicies(existing.id, routes);
          return existing.id;
        }
        if (existing) hns.remove(existing.id);
        log('I', `Creating overlay network '${networkName}' (address prefix ${subnet})`);
        const created = hns.ensure(networkName, 'Overlay', [{ addressPrefix: subnet, gateway }], {
          vsid: hybridOverlayVni,
          managementIp: context.machine.address,
        });
        hns.addPolicies(created.id, [{ Type: 'HostRoute', Settings: {} }]);
        return created.id;
      };
      const apply = () => {
        const self = nodes.get(nodeName);
        const raw = self?.metadata?.annotations?.[hybridOverlayAnnotations.nodeSubnet];
        const cidr = raw ? parseIpv4Cidr(raw) : undefined;
        const subnet = cidr ? `${formatIpv4(cidr.network)}/${cidr.prefix}` : undefined;
        if (subnet && subnet !== ownSubnet) {
          ownSubnet = subnet;
          networkId = initSelf(subnet);
          status.subnet = subnet;
          status.phase = 'running';
        }
        if (!networkId || !hns.policies(networkId)) return;
        const drMac = hns
          .policies(networkId)
          .find(
            (p): p is Extract<HnsNetworkPolicy, { Type: 'DrMacAddress' }> =>
              p.Type === 'DrMacAddress',
          )
          ?.Settings.Address.toLowerCase()
          .replaceAll('-', ':');
        if (drMac && drMac !== annotatedMac) {
          annotatedMac = drMac;
          status.drMac = drMac;
          void core
            .patchNode(
              {
                name: nodeName,
                body: { metadata: { annotations: { [hybridOverlayAnnotations.drMac]: drMac } } },
              },
              call(true),
            )
            .catch((error: unknown) => {
              annotatedMac = undefined;
              log('E', `Failed to set DRMAC annotation on node: ${(error as Error).message}`);
            });
        }
        const want = new Map<string, HnsNetworkPolicy>();
        for (const node of nodes.values()) {
          if (node.metadata?.name === nodeName) continue;
          const remote = remoteHybridNode(node);
          if (!remote) continue;
          want.set(remote.subnet, {
            Type: 'RemoteSubnetRoute',
            Settings: {
              IsolationId: hybridOverlayVni,
              DistributedRouterMacAddress: remote.drMac,
              ProviderAddress: remote.ip,
              DestinationPrefix: remote.subnet,
            },
          });
        }
        const held = hns
          .policies(networkId)
          .filter(
            (p): p is Extract<HnsNetworkPolicy, { Type: 'RemoteSubnetRoute' }> =>
              p.Type === 'RemoteSubnetRoute',
          );
        const stale = held.filter(
          (p) => JSON.stringify(want.get(p.Settings.DestinationPrefix)) !== JSON.stringify(p),
        );
        if (stale.length > 0) hns.removePolicies(networkId, stale);
        const missing = [...want.values()].filter(
          (p) => !held.some((h) => JSON.stringify(h) === JSON.stringify(p)),
        );
        if (missing.length > 0) hns.addPolicies(networkId, missing);
        status.routes = Object.fromEntries(
          [...want.values()].map((p) => {
            const s = (p as Extract<HnsNetworkPolicy, { Type: 'RemoteSubnetRoute' }>).Settings;
            return [s.DestinationPrefix, s.ProviderAddress];
          }),
        );
      };
      await reflect<k8s.V1Node>({
        kc,
        path: '/api/v1/nodes',
        list: () => core.listNode({}, call()),
        store: nodes,
        signal: context.signal,
        watchTimeoutSeconds: options.watchTimeoutSeconds ?? 25,
        retryMinMs: 800,
        retryMaxMs: 30_000,
        onChange: apply,
        onFailure: (error) =>
          log('E', `"Failed to watch" err="failed to list *v1.Node: ${(error as Error).message}"`),
      });
      return 0;
    } catch (error) {
      if (context.signal.aborted) return 0;
      if (error instanceof Panic) {
        context.stderr(`panic: ${error.message}\n\ngoroutine 1 [running]:\nmain.main()\n`);
        return 2;
      }
      log('E', (error as Error).message);
      return 1;
    } finally {
      status.phase = 'exited';
    }
  };
}

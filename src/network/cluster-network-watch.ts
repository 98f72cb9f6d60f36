/**
 * The operator's view of the cluster's pod network: network.mode resolved against what the
 * cluster runs (read-cluster-network.ts), read at start, when the configuration changes and
 * every few minutes, and turned into what a node joins with (the services manifest's network,
 * node-network.ts) or the reason no node may join now. A reading that fails (the API server
 * away, a permission missing) keeps the last one; the network the manifests carry is the last
 * good one, so a refused reading never rolls nodes to another network.
 */
import type * as k8s from '@kubernetes/client-node';
import type { NetworkResolution, ResolvedNetwork } from '../api/network-mode.ts';
import { JoinFailureReason } from '../api/reasons.ts';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import type { Logger } from '../log/logger.ts';
import { flannelHostGwDefaultNetwork, type NodeNetwork } from '../servicesmanifest/node-network.ts';
import { readClusterNetwork } from './read-cluster-network.ts';

/** What joining is allowed with now. */
export type NodeNetworkState =
  | { ok: true; network: NodeNetwork; detected: string; warnings: string[] }
  | { ok: false; reason: string; message: string };

/**
 * What a node joins with for a resolved network: the node side of each mode winfleet builds.
 * ovn-hybrid needs hybrid-overlay-node.exe in the payload, which winfleet cannot build (payload
 * check: node-services.ts servicesManifestFor).
 * @package
 */
export function nodeNetworkFor(resolved: ResolvedNetwork): NodeNetworkState {
  switch (resolved.mode) {
    case 'routed':
      return { ok: true, network: { mode: 'routed' }, detected: resolved.detected, warnings: [] };
    case 'flannel-vxlan': {
      const flannel = resolved.flannel!;
      return {
        ok: true,
        network: { mode: 'flannel-vxlan', vni: flannel.vni, netConf: flannel.netConf },
        detected: resolved.detected,
        warnings: [],
      };
    }
    case 'flannel-host-gw': {
      const flannel = resolved.flannel!;
      const networkName = hostGwNetworkName(flannel.netConf);
      // The name goes into the CNI config, kube-proxy's flags and host-local's store directory.
      if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(networkName))
        return {
          ok: false,
          reason: JoinFailureReason.NetworkUnsupported,
          message: `network.mode flannel-host-gw: net-conf.json of ${flannel.source} names the host-gw network ${JSON.stringify(networkName)} (Backend.Name), which winfleet does not use as an HNS, CNI and host-local network name: no node is joined. Remove Backend.Name (flanneld then uses cbr0) or give letters, digits, '.', '_' and '-' only`,
        };
      return {
        ok: true,
        network: {
          mode: 'flannel-host-gw',
          networkName,
          netConf: flannel.netConf,
        },
        detected: resolved.detected,
        warnings: [],
      };
    }
    case 'external': {
      const e = resolved.external!;
      // winkernel on an Overlay network needs --source-vip, an address of the CNI's IPAM that
      // winfleet cannot reserve outside host-local: the CNI's own kube-proxy must do it.
      if (e.overlay && e.kubeProxy)
        return {
          ok: false,
          reason: JoinFailureReason.NetworkUnsupported,
          message: `network.mode external: ${e.cni}'s Windows data plane is VXLAN (an HNS Overlay network), on which kube-proxy needs a --source-vip from ${e.cni}'s IPAM, and winfleet's kube-proxy cannot reserve one: no node is joined. Run the kube-proxy DaemonSet ${e.cni} documents for Windows (kube-system/kube-proxy-windows) and set network.external.kubeProxy: auto or off`,
        };
      return {
        ok: true,
        network: {
          mode: 'external',
          cniConfDir: e.cniConfDir,
          cniBinDir: e.cniBinDir,
          kubeProxy: e.kubeProxy,
          ...(e.networkName ? { networkName: e.networkName } : {}),
          ...(e.overlay ? { overlay: true as const } : {}),
        },
        detected: resolved.detected,
        warnings: [],
      };
    }
    case 'ovn-hybrid': {
      const port = resolved.ovnHybrid?.vxlanPort;
      return {
        ok: true,
        network: { mode: 'ovn-hybrid', ...(port !== undefined ? { vxlanPort: port } : {}) },
        detected: resolved.detected,
        warnings: [],
      };
    }
  }
}

/**
 * The L2Bridge network flanneld's host-gw backend makes: net-conf.json's Backend.Name, else
 * cbr0 (hostgw_windows.go RegisterNetwork). net-conf.json was parsed when it was resolved.
 * @package
 */
export function hostGwNetworkName(netConf: string): string {
  try {
    const backend = (JSON.parse(netConf) as { Backend?: { Name?: unknown } }).Backend;
    if (typeof backend?.Name === 'string' && backend.Name !== '') return backend.Name;
  } catch {
    // Not JSON: resolve-network refused it before; the default stands.
  }
  return flannelHostGwDefaultNetwork;
}

/** The state a resolution gives. */
export function nodeNetworkState(resolution: NetworkResolution): NodeNetworkState {
  if (!resolution.ok) return { ok: false, reason: resolution.reason, message: resolution.message };
  const state = nodeNetworkFor(resolution.network);
  return state.ok ? { ...state, warnings: resolution.warnings ?? [] } : state;
}

export interface ClusterNetworkWatch {
  /** Joining now: allowed with this network, or refused and why (never read yet: refused). */
  current(): NodeNetworkState;
  /** The last network joining was allowed with (the manifests'), if there was one. */
  lastGood(): NodeNetwork | undefined;
  /** Reads again now; resolves with the new state. */
  refresh(): Promise<NodeNetworkState>;
  stop(): void;
}

export interface ClusterNetworkWatchOptions {
  kc: k8s.KubeConfig;
  config: () => WinfleetConfig;
  log: Logger;
  /** Between readings. Default 2 minutes. */
  intervalMs?: number;
  /** Called when the state changes (not at the first reading). */
  onChange?: (state: NodeNetworkState) => void;
}

/** Starts the watch; the first reading is done when the promise resolves. */
export async function watchClusterNetwork(
  options: ClusterNetworkWatchOptions,
): Promise<ClusterNetworkWatch> {
  const log = options.log.child({ component: 'cluster-network' });
  let state: NodeNetworkState = {
    ok: false,
    reason: JoinFailureReason.NetworkUnverified,
    message: 'the cluster’s pod network has not been read yet',
  };
  let good: NodeNetwork | undefined;
  let first = true;
  let running: Promise<NodeNetworkState> | undefined;
  const read = async (): Promise<NodeNetworkState> => {
    try {
      const { resolution } = await readClusterNetwork(options.kc, options.config().network);
      const next = nodeNetworkState(resolution);
      if (next.ok) good = next.network;
      const changed = JSON.stringify(next) !== JSON.stringify(state);
      state = next;
      if (changed) {
        if (next.ok)
          log.info('pod network', {
            mode: next.network.mode,
            detected: next.detected,
            warnings: next.warnings,
          });
        else log.warn('no node joins', { reason: next.reason, message: next.message });
        if (!first) options.onChange?.(next);
      }
    } catch (error) {
      // The last reading stands; a first one that fails refuses joins until one succeeds.
      log.warn('cannot read the cluster’s pod network', { error });
      if (first)
        state = {
          ok: false,
          reason: JoinFailureReason.NetworkUnverified,
          message: `the cluster’s pod network cannot be read: ${(error as Error).message}`,
        };
    } finally {
      first = false;
    }
    return state;
  };
  const refresh = () => {
    running ??= read().finally(() => {
      running = undefined;
    });
    return running;
  };
  await refresh();
  const timer = setInterval(() => void refresh(), options.intervalMs ?? 120_000);
  timer.unref();
  return {
    current: () => state,
    lastGood: () => good,
    refresh,
    stop: () => clearInterval(timer),
  };
}

/**
 * What admission decisions read about the cluster, from the shared informers: the builds of
 * Ready Windows nodes, RuntimeClass node selectors, opted-out namespaces, and (cached briefly)
 * the GMSACredentialSpecs when that CRD is installed.
 *
 * Nothing here walks the node cache per request: the Ready schedulable Windows nodes are filed
 * by build in an index of the node informer, kept as each Node event arrives, so the builds
 * are the index's values and a build's node count is its bucket's size.
 */
import * as k8s from '@kubernetes/client-node';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import type { Informer } from '../controller-runtime/informer.ts';
import { nodeIsReady } from '../controller-runtime/informer-factory.ts';
import { isNotFound } from '../kube/client.ts';
import { windowsBuildLabel } from '../windows/builds.ts';
import { hyperVIsolationLabel } from '../windows/isolation.ts';
import type { RuntimeClassSelectors } from './pod-os.ts';

/** @package */
export interface ClusterFacts {
  readyWindowsBuilds(): string[];
  /** Builds of the Ready schedulable Windows nodes labelled winfleet.io/hyperv-isolation=true. */
  readyHyperVBuilds(): string[];
  /** Ready schedulable Windows nodes per build (for metrics). */
  readyWindowsNodeCounts(): Map<string, number>;
  runtimeClasses: RuntimeClassSelectors;
  namespaceOptedOut(namespace: string): boolean;
  gmsaCredentialSpecs(): Promise<ReadonlySet<string> | undefined>;
}

/** The node index of Ready, schedulable Windows nodes by windows-build label. */
export const readyWindowsBuildIndex = 'readyWindowsBuild';

/** The build a node is filed under in readyWindowsBuildIndex ([] when it is not counted). */
export function readyWindowsBuildOf(node: k8s.V1Node): string[] {
  const labels = node.metadata?.labels ?? {};
  if (labels['kubernetes.io/os'] !== 'windows' || node.spec?.unschedulable || !nodeIsReady(node))
    return [];
  const build = labels[windowsBuildLabel];
  return build ? [build] : [];
}

/** The node index of Ready, schedulable Hyper-V Windows nodes by windows-build label. */
export const readyHyperVBuildIndex = 'readyHyperVBuild';

/** The build a node is filed under in readyHyperVBuildIndex ([] when it is not counted). */
export function readyHyperVBuildOf(node: k8s.V1Node): string[] {
  if (node.metadata?.labels?.[hyperVIsolationLabel] !== 'true') return [];
  return readyWindowsBuildOf(node);
}

/** Ready schedulable Windows nodes per build, from the index (empty until it is added). */
export function readyWindowsNodeCounts(nodes: Informer<k8s.V1Node>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const build of nodes.indexValues(readyWindowsBuildIndex))
    counts.set(build, nodes.countByIndex(readyWindowsBuildIndex, build));
  return counts;
}

export function clusterFacts(
  kc: k8s.KubeConfig,
  informers: {
    nodes: Informer<k8s.V1Node>;
    runtimeClasses: Informer<k8s.V1RuntimeClass>;
    namespaces: Informer<k8s.V1Namespace>;
  },
  config: () => WinfleetConfig,
): ClusterFacts {
  informers.nodes.addIndex(readyWindowsBuildIndex, readyWindowsBuildOf);
  informers.nodes.addIndex(readyHyperVBuildIndex, readyHyperVBuildOf);
  let objects: k8s.KubernetesObjectApi | undefined;
  let gmsa: { at: number; value: Promise<ReadonlySet<string> | undefined> } | undefined;
  return {
    readyWindowsBuilds: () => informers.nodes.indexValues(readyWindowsBuildIndex),
    readyHyperVBuilds: () => informers.nodes.indexValues(readyHyperVBuildIndex),
    readyWindowsNodeCounts: () => readyWindowsNodeCounts(informers.nodes),
    runtimeClasses: (name) => informers.runtimeClasses.get(name)?.scheduling?.nodeSelector,
    namespaceOptedOut(namespace) {
      const { key, value } = config().webhook.optOutLabel;
      return informers.namespaces.get(namespace)?.metadata?.labels?.[key] === value;
    },
    gmsaCredentialSpecs() {
      if (gmsa && Date.now() - gmsa.at < 10_000) return gmsa.value;
      objects ??= k8s.KubernetesObjectApi.makeApiClient(kc);
      const value = objects
        .list('windows.k8s.io/v1', 'GMSACredentialSpec')
        .then(
          (list) => new Set(list.items.map((i) => i.metadata?.name ?? '')) as ReadonlySet<string>,
        )
        .catch((error: unknown) => {
          // No CRD: nothing to check. Other errors: do not block pods on it either.
          if (isNotFound(error) || /Unrecognized API version and kind/.test(String(error)))
            return undefined;
          return undefined;
        });
      gmsa = { at: Date.now(), value };
      return value;
    },
  };
}

/**
 * What admission decisions read about the cluster, from the shared informers: the builds of
 * Ready Windows nodes, RuntimeClass node selectors, opted-out namespaces, and (cached briefly)
 * the GMSACredentialSpecs when that CRD is installed.
 */
import * as k8s from '@kubernetes/client-node';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import type { Informer } from '../controller/informer.ts';
import { nodeIsReady } from '../controller/informer-factory.ts';
import { isNotFound } from '../kube/client.ts';
import { windowsBuildLabel } from '../windows/builds.ts';
import type { RuntimeClassSelectors } from './pod-os.ts';

export interface ClusterFacts {
  readyWindowsBuilds(): string[];
  runtimeClasses: RuntimeClassSelectors;
  namespaceOptedOut(namespace: string): boolean;
  gmsaCredentialSpecs(): Promise<ReadonlySet<string> | undefined>;
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
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  let gmsa: { at: number; value: Promise<ReadonlySet<string> | undefined> } | undefined;
  return {
    readyWindowsBuilds() {
      const builds = new Set<string>();
      for (const node of informers.nodes.list()) {
        const labels = node.metadata?.labels ?? {};
        if (
          labels['kubernetes.io/os'] !== 'windows' ||
          node.spec?.unschedulable ||
          !nodeIsReady(node)
        )
          continue;
        const build = labels[windowsBuildLabel];
        if (build) builds.add(build);
      }
      return [...builds];
    },
    runtimeClasses: (name) => informers.runtimeClasses.get(name)?.scheduling?.nodeSelector,
    namespaceOptedOut(namespace) {
      const { key, value } = config().webhook.optOutLabel;
      return informers.namespaces.get(namespace)?.metadata?.labels?.[key] === value;
    },
    gmsaCredentialSpecs() {
      if (gmsa && Date.now() - gmsa.at < 10_000) return gmsa.value;
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

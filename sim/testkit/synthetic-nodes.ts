/**
 * Nodes made in memory for unit tests that drive informers offline (replace/apply) instead of
 * a control plane: Windows nodes of a build, Ready or not, and an informer that never talks to
 * an API server.
 */
import * as k8s from '@kubernetes/client-node';
import { Informer, type ResourceType } from '../../src/controller-runtime/informer.ts';
import { resources, slimNode } from '../../src/controller-runtime/informer-factory.ts';
import { windowsBuildLabel } from '../../src/windows/builds.ts';

export interface SyntheticNode {
  build?: string;
  os?: 'windows' | 'linux';
  arch?: string;
  ready?: boolean;
  unschedulable?: boolean;
  resourceVersion?: string;
  annotations?: Record<string, string>;
  /** status.addresses, as InternalIP (default none). */
  addresses?: string[];
}

/** A Node as the API server would send it (slimmed by the informer's transform). */
export function syntheticNode(name: string, options: SyntheticNode = {}): k8s.V1Node {
  const os = options.os ?? 'windows';
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      resourceVersion: options.resourceVersion ?? '1',
      labels: {
        'kubernetes.io/os': os,
        'kubernetes.io/arch': options.arch ?? 'amd64',
        ...(options.build ? { [windowsBuildLabel]: options.build } : {}),
      },
      ...(options.annotations ? { annotations: options.annotations } : {}),
    },
    spec: options.unschedulable ? { unschedulable: true } : {},
    status: {
      conditions: [{ type: 'Ready', status: options.ready === false ? 'False' : 'True' }],
      ...(options.addresses
        ? { addresses: options.addresses.map((address) => ({ type: 'InternalIP', address })) }
        : {}),
    },
  };
}

/** The builds the lab mixes: 2019, 2022, 2025. */
export const mixedBuilds = ['10.0.17763', '10.0.20348', '10.0.26100'] as const;

/** `count` Ready Windows nodes named node-0..., builds taken round-robin from mixedBuilds. */
export function syntheticFleet(count: number): k8s.V1Node[] {
  return Array.from({ length: count }, (_, i) =>
    syntheticNode(`node-${i}`, { build: mixedBuilds[i % mixedBuilds.length]! }),
  );
}

/** An informer that is never started: tests feed it with replace() and apply(). */
export function offlineInformer<T extends k8s.KubernetesObject>(
  resource: ResourceType,
  transform?: (object: T) => T,
): Informer<T> {
  return new Informer<T>(new k8s.KubeConfig(), { resource, ...(transform ? { transform } : {}) });
}

/** An offline Node informer slimming like the operator's. */
export function offlineNodeInformer(): Informer<k8s.V1Node> {
  return offlineInformer<k8s.V1Node>(resources.nodes, slimNode);
}

/** A kubeconfig naming a loopback server nothing listens on: clients can be built, not used. */
export function unusedKubeConfig(): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'none', server: 'https://127.0.0.1:9', skipTLSVerify: true }],
    users: [{ name: 'none' }],
    contexts: [{ name: 'none', cluster: 'none', user: 'none' }],
    currentContext: 'none',
  });
  return kc;
}

/** Records the keys a controller is asked to reconcile instead of reconciling them. */
export function recordEnqueues(controller: { enqueue(key: string): void }): string[] {
  const keys: string[] = [];
  controller.enqueue = (key: string) => {
    keys.push(key);
  };
  return keys;
}

/** An offline Node informer holding `nodes` (slimmed like the operator's). */
export function nodeCacheOf(nodes: readonly k8s.V1Node[]): Informer<k8s.V1Node> {
  const informer = offlineNodeInformer();
  informer.replace(nodes);
  return informer;
}

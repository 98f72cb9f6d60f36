/**
 * Test helpers that register kwok-managed nodes: Linux workers and Windows nodes that look
 * like real ones to the scheduler (labels, taint, nodeInfo). kwok then keeps them Ready and
 * runs the pods bound to them.
 */
import * as k8s from '@kubernetes/client-node';
import { waitFor } from '../../src/kube/wait-for.ts';
import { windowsBuildLabel, windowsRelease } from '../../src/windows/builds.ts';
import { kwokNodeAnnotation } from '../cluster/start-cluster.ts';

/** The taint Windows nodes carry in the Kubernetes docs' pattern (seed 001). */
export const windowsTaint: k8s.V1Taint = { key: 'os', value: 'windows', effect: 'NoSchedule' };

export interface NodeOptions {
  name: string;
  labels?: Record<string, string>;
  taints?: k8s.V1Taint[];
  /** Wait until kwok reports the node Ready (default true). */
  waitReady?: boolean;
  /**
   * Annotations over the default kwok one (hostNodeAnnotation: the second kwok keeps the node,
   * and its pods wait for a podIP from whoever plays their sandboxes).
   */
  annotations?: Record<string, string>;
}

export interface WindowsNodeOptions extends NodeOptions {
  /** "2019", "2022" or "2025". */
  release: string;
  /** Update build revision (UBR); the kernel version carries it. */
  revision?: number;
  /** Replace the default `os=windows:NoSchedule` taint; [] for none. */
  taints?: k8s.V1Taint[];
}

function isReady(node: k8s.V1Node): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

async function registerNode(
  kc: k8s.KubeConfig,
  node: k8s.V1Node,
  waitReady: boolean,
): Promise<k8s.V1Node> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const created = await core.createNode({ body: node });
  if (!waitReady) return created;
  return waitFor(
    async () => {
      const current = await core.readNode({ name: created.metadata!.name! });
      return isReady(current) ? current : undefined;
    },
    { description: `node ${created.metadata!.name} to be Ready`, timeoutMs: 60_000 },
  );
}

/** Registers a kwok-managed Linux node. */
export function createLinuxNode(kc: k8s.KubeConfig, options: NodeOptions): Promise<k8s.V1Node> {
  return registerNode(
    kc,
    {
      metadata: {
        name: options.name,
        annotations: { [kwokNodeAnnotation.key]: kwokNodeAnnotation.value, ...options.annotations },
        labels: {
          'kubernetes.io/os': 'linux',
          'kubernetes.io/arch': 'amd64',
          'kubernetes.io/hostname': options.name,
          type: 'kwok',
          ...options.labels,
        },
      },
      spec: { taints: options.taints ?? [] },
      status: {
        nodeInfo: {
          architecture: 'amd64',
          operatingSystem: 'linux',
          kernelVersion: '6.1.0-kwok',
          osImage: 'Debian GNU/Linux 12 (bookworm)',
          containerRuntimeVersion: 'containerd://2.1.0',
          kubeletVersion: 'v1.36.5',
          kubeProxyVersion: 'v1.36.5',
          bootID: '',
          machineID: '',
          systemUUID: '',
        },
      },
    },
    options.waitReady ?? true,
  );
}

/** Registers a kwok-managed Windows Server node of the given release. */
export function createWindowsNode(
  kc: k8s.KubeConfig,
  options: WindowsNodeOptions,
): Promise<k8s.V1Node> {
  const release = windowsRelease(options.release);
  const kernelVersion = `${release.build}.${options.revision ?? 1}`;
  return registerNode(
    kc,
    {
      metadata: {
        name: options.name,
        annotations: { [kwokNodeAnnotation.key]: kwokNodeAnnotation.value },
        labels: {
          'kubernetes.io/os': 'windows',
          'kubernetes.io/arch': 'amd64',
          'kubernetes.io/hostname': options.name,
          [windowsBuildLabel]: release.build,
          type: 'kwok',
          ...options.labels,
        },
      },
      spec: { taints: options.taints ?? [windowsTaint] },
      status: {
        nodeInfo: {
          architecture: 'amd64',
          operatingSystem: 'windows',
          kernelVersion,
          osImage: `Windows Server ${release.name} Datacenter`,
          containerRuntimeVersion: 'containerd://2.1.0',
          kubeletVersion: 'v1.36.5',
          kubeProxyVersion: 'v1.36.5',
          bootID: '',
          machineID: '',
          systemUUID: '',
        },
      },
    },
    options.waitReady ?? true,
  );
}

/** A bare IIS pod bound to `nodeName` (tolerating the Windows taint), for a node's pod network. */
export async function createWindowsPodOn(
  core: k8s.CoreV1Api,
  namespace: string,
  nodeName: string,
  name = 'web',
): Promise<void> {
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name },
      spec: {
        nodeName,
        tolerations: [{ key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' }],
        containers: [{ name: 'iis', image: 'mcr.microsoft.com/windows/servercore/iis' }],
      },
    },
  });
}

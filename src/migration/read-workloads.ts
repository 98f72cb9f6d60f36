/**
 * What a migration plan reads from the API server: the workloads of one namespace or all, and
 * each RuntimeClass's node selector (by name); for a pool migration, the workloads with pods on
 * given nodes (their owners read by name). Reads only; nothing is written.
 */
import * as k8s from '@kubernetes/client-node';
import { isNotFound } from '../kube/client.ts';
import type { RuntimeClassSelectors } from '../webhook/pod-os.ts';
import {
  type Workload,
  type WorkloadKind,
  type WorkloadObjects,
  workloadKinds,
} from './workload-plan.ts';

/** The workloads of `namespace`, or of every namespace when it is undefined. */
export async function readWorkloads(
  kc: k8s.KubeConfig,
  namespace: string | undefined,
): Promise<WorkloadObjects> {
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const batch = kc.makeApiClient(k8s.BatchV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const [deployments, statefulSets, daemonSets, jobs, cronJobs, pods] = await Promise.all(
    namespace === undefined
      ? [
          apps.listDeploymentForAllNamespaces(),
          apps.listStatefulSetForAllNamespaces(),
          apps.listDaemonSetForAllNamespaces(),
          batch.listJobForAllNamespaces(),
          batch.listCronJobForAllNamespaces(),
          core.listPodForAllNamespaces(),
        ]
      : [
          apps.listNamespacedDeployment({ namespace }),
          apps.listNamespacedStatefulSet({ namespace }),
          apps.listNamespacedDaemonSet({ namespace }),
          batch.listNamespacedJob({ namespace }),
          batch.listNamespacedCronJob({ namespace }),
          core.listNamespacedPod({ namespace }),
        ],
  );
  return {
    deployments: (deployments as k8s.V1DeploymentList).items,
    statefulSets: (statefulSets as k8s.V1StatefulSetList).items,
    daemonSets: (daemonSets as k8s.V1DaemonSetList).items,
    jobs: (jobs as k8s.V1JobList).items,
    cronJobs: (cronJobs as k8s.V1CronJobList).items,
    pods: (pods as k8s.V1PodList).items,
  };
}

/** The node selector of each RuntimeClass, by name. */
export async function readRuntimeClassSelectors(
  kc: k8s.KubeConfig,
): Promise<RuntimeClassSelectors> {
  const list = await kc.makeApiClient(k8s.NodeV1Api).listRuntimeClass();
  const selectors = new Map(
    list.items.map((rc) => [rc.metadata?.name ?? '', rc.scheduling?.nodeSelector ?? {}]),
  );
  return (name) => selectors.get(name);
}

/** The workload (its template as a pod) a pod belongs to, by its controller owner. */
async function workloadOfPod(
  kc: k8s.KubeConfig,
  pod: k8s.V1Pod,
  namespace: string,
): Promise<Workload | undefined> {
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const batch = kc.makeApiClient(k8s.BatchV1Api);
  const asPod = (): Workload => ({
    kind: 'Pod',
    namespace,
    name: pod.metadata?.name ?? '',
    pod: { metadata: { ...pod.metadata, namespace }, ...(pod.spec ? { spec: pod.spec } : {}) },
  });
  const fromTemplate = (
    kind: WorkloadKind,
    name: string,
    template: k8s.V1PodTemplateSpec | undefined,
  ): Workload => ({
    kind,
    namespace,
    name,
    pod: {
      metadata: { ...template?.metadata, namespace },
      ...(template?.spec ? { spec: template.spec } : {}),
    },
  });
  const owner = controllerOf(pod);
  if (!owner) return asPod();
  try {
    switch (owner.kind) {
      case 'DaemonSet':
        // A drain leaves DaemonSet pods where they are: not the migration's to move.
        return undefined;
      case 'ReplicaSet': {
        const rs = await apps.readNamespacedReplicaSet({ name: owner.name, namespace });
        const deployment = controllerOf(rs);
        if (deployment?.kind !== 'Deployment') return asPod();
        const d = await apps.readNamespacedDeployment({ name: deployment.name, namespace });
        return fromTemplate('Deployment', deployment.name, d.spec?.template);
      }
      case 'StatefulSet': {
        const s = await apps.readNamespacedStatefulSet({ name: owner.name, namespace });
        return fromTemplate('StatefulSet', owner.name, s.spec?.template);
      }
      case 'Job': {
        const job = await batch.readNamespacedJob({ name: owner.name, namespace });
        const cron = controllerOf(job);
        if (cron?.kind === 'CronJob') {
          const c = await batch.readNamespacedCronJob({ name: cron.name, namespace });
          return fromTemplate('CronJob', cron.name, c.spec?.jobTemplate?.spec?.template);
        }
        return fromTemplate('Job', owner.name, job.spec?.template);
      }
      default:
        return asPod();
    }
  } catch (error) {
    // The owner went (or is not readable): judge the pod as it is.
    if (isNotFound(error)) return asPod();
    throw error;
  }
}

function controllerOf(o: k8s.KubernetesObject): k8s.V1OwnerReference | undefined {
  return o.metadata?.ownerReferences?.find((r) => r.controller === true);
}

/**
 * The workloads with running (or pending) pods on `nodeNames`, each once, sorted by namespace,
 * kind and name: what a drain of those nodes would move. DaemonSet and mirror pods, and
 * finished pods, are left out (a drain leaves them). Each workload's pod is its template (a
 * Deployment's, a CronJob's job template), or the pod itself for a pod no known controller owns.
 */
export async function workloadsOnNodes(
  kc: k8s.KubeConfig,
  nodeNames: readonly string[],
): Promise<Workload[]> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const byKey = new Map<string, Workload>();
  const seenOwners = new Set<string>();
  for (const nodeName of nodeNames) {
    const pods = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` });
    for (const pod of pods.items) {
      const phase = pod.status?.phase;
      if (phase === 'Succeeded' || phase === 'Failed') continue;
      if (pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) continue;
      const namespace = pod.metadata?.namespace ?? '';
      const owner = controllerOf(pod);
      const ownerKey = owner ? `${namespace}/${owner.kind}/${owner.name}` : undefined;
      if (ownerKey && seenOwners.has(ownerKey)) continue;
      if (ownerKey) seenOwners.add(ownerKey);
      const workload = await workloadOfPod(kc, pod, namespace);
      if (workload) byKey.set(`${workload.namespace}/${workload.kind}/${workload.name}`, workload);
    }
  }
  return [...byKey.values()].sort(
    (a, b) =>
      a.namespace.localeCompare(b.namespace) ||
      workloadKinds.indexOf(a.kind) - workloadKinds.indexOf(b.kind) ||
      a.name.localeCompare(b.name),
  );
}

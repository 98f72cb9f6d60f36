/**
 * What a migration plan reads from the API server: the workloads of one namespace or all, and
 * each RuntimeClass's node selector (by name). Lists only; nothing is written.
 */
import * as k8s from '@kubernetes/client-node';
import type { RuntimeClassSelectors } from '../webhook/pod-os.ts';
import type { WorkloadObjects } from './workload-plan.ts';

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

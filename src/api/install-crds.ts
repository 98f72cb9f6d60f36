/** Installs (server-side applies) winfleet's CRDs and waits until the API server serves them. */
import * as k8s from '@kubernetes/client-node';
import { waitFor } from '../kube/wait-for.ts';
import { winfleetCrds } from './crds.ts';

export async function installCrds(kc: k8s.KubeConfig): Promise<void> {
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  for (const crd of winfleetCrds) {
    await objects.patch(
      crd,
      undefined,
      undefined,
      'winfleet',
      true,
      k8s.PatchStrategy.ServerSideApply,
    );
    await waitFor(
      async () => {
        const current = await ext.readCustomResourceDefinition({ name: crd.metadata!.name! });
        return current.status?.conditions?.some(
          (c) => c.type === 'Established' && c.status === 'True',
        );
      },
      { description: `CRD ${crd.metadata!.name} to be established`, timeoutMs: 30_000 },
    );
  }
}

/**
 * The services manifest publisher against the real API server: a published version is
 * immutable, so a ConfigMap of that version holding another manifest is refused.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { sharedCluster, testNamespace } from '../../../sim/testkit/test-cluster.ts';
import { servicesManifestConfigMapName, servicesManifestKey } from '../../api/node-annotations.ts';
import { errorCode } from '../../errors/catalog.ts';
import type { ServicesManifest } from '../../servicesmanifest/services-manifest.ts';
import { createManifestPublisher } from './manifest-publisher.ts';

test('a version whose ConfigMap holds another manifest is WF_MANIFEST_VERSION_REUSED, and the ConfigMap stays', async () => {
  const { kc } = await sharedCluster();
  const namespace = await testNamespace(kc, 'manifest-reuse');
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const manifest = { version: '1.36.5-wf.1', services: [] } as unknown as ServicesManifest;
  const name = servicesManifestConfigMapName(manifest.version);
  // The version published before, with other content (an earlier build of the same version).
  const earlier = JSON.stringify({ ...manifest, services: [{ name: 'kubelet' }] });
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name, namespace }, data: { [servicesManifestKey]: earlier } },
  });

  const error = await createManifestPublisher(
    kc,
    namespace,
  )(manifest).then(
    () => assert.fail('the reused version was published'),
    (e: unknown) => e,
  );
  assert.equal(errorCode(error), 'WF_MANIFEST_VERSION_REUSED');
  assert.match(
    (error as Error).message,
    new RegExp(
      `ConfigMap ${namespace}/${name} already holds a different manifest for version 1\\.36\\.5-wf\\.1; .*give the payload a new version`,
    ),
  );
  const kept = await core.readNamespacedConfigMap({ name, namespace });
  assert.equal(kept.data?.[servicesManifestKey], earlier);
  await core.deleteNamespace({ name: namespace });
});

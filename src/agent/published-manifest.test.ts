import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { testManifest } from '../../sim/hosts/agent-test-host.ts';
import { servicesManifestConfigMapName, servicesManifestKey } from '../api/node-annotations.ts';
import { hasCode } from '../errors/catalog.ts';
import {
  manifestDigest,
  publishedManifestsConfigMapName,
} from '../servicesmanifest/published-manifests.ts';
import { fetchPublishedManifest } from './published-manifest.ts';

const namespace = 'winfleet-system';

/** A CoreV1Api that answers readNamespacedConfigMap from `configMaps` (data by name). */
function fakeCore(configMaps: Record<string, Record<string, string>>): k8s.CoreV1Api {
  return {
    readNamespacedConfigMap: async ({ name }: { name: string }) => {
      const data = configMaps[name];
      if (!data) throw Object.assign(new Error(`configmaps "${name}" not found`), { code: 404 });
      return { metadata: { name }, data };
    },
  } as unknown as k8s.CoreV1Api;
}

const published = testManifest('1.1.0');
const publishedText = JSON.stringify(published);
const name = servicesManifestConfigMapName('1.1.0');

test('a manifest whose ConfigMap the record lists with its digest is accepted', async () => {
  const core = fakeCore({
    [publishedManifestsConfigMapName]: { [name]: manifestDigest(publishedText) },
    [name]: { [servicesManifestKey]: publishedText },
  });
  assert.deepEqual(await fetchPublishedManifest(core, namespace, '1.1.0'), published);
});

test('an unrecorded manifest, or a recorded name with other content, is refused', async () => {
  const evil = JSON.stringify({ ...published, env: { HTTPS_PROXY: 'http://evil:3128' } });
  const unrecorded = fakeCore({
    [publishedManifestsConfigMapName]: {},
    [name]: { [servicesManifestKey]: publishedText },
  });
  const replaced = fakeCore({
    [publishedManifestsConfigMapName]: { [name]: manifestDigest(publishedText) },
    [name]: { [servicesManifestKey]: evil },
  });
  for (const [core, why] of [
    [unrecorded, /the operator's record winfleet-published-manifests does not list it/],
    [replaced, /its content differs from the digest the operator recorded/],
  ] as const) {
    await assert.rejects(fetchPublishedManifest(core, namespace, '1.1.0'), (error: Error) => {
      assert.ok(hasCode(error, 'WF_MANIFEST_UNPUBLISHED'), error.message);
      assert.match(
        error.message,
        /^Refusing services manifest 1\.1\.0 \(ConfigMap winfleet-system\/winfleet-services-1\.1\.0\)/,
      );
      assert.match(error.message, why);
      return true;
    });
  }
});

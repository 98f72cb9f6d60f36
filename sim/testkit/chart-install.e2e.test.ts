/**
 * helmInstall's `reuseValues` (what the lab's payload upgrade uses): a value a person set on
 * the release with `helm upgrade --reuse-values --set …` survives the next upgrade that gives
 * only the lab's own values. A throwaway one-ConfigMap chart, so nothing of winfleet's is
 * installed into the shared cluster.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { helmInstall, helmUninstall } from './chart-install.ts';
import { runHelm } from './helm.ts';
import { sharedCluster, testNamespace } from './test-cluster.ts';

const { kc, kubeconfigPath } = await sharedCluster();

test('an upgrade with reuseValues keeps what a person set; one without drops it', async (t) => {
  const namespace = await testNamespace(kc, 'chart-reuse');
  const chart = await mkdtemp(join(tmpdir(), 'chart-reuse-'));
  t.after(() => rm(chart, { recursive: true, force: true }));
  await mkdir(join(chart, 'templates'));
  await writeFile(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: reuse\nversion: 0.1.0\n');
  await writeFile(join(chart, 'values.yaml'), 'lab: ""\nproxy: ""\n');
  await writeFile(
    join(chart, 'templates', 'config.yaml'),
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: reuse\ndata:\n  lab: {{ .Values.lab | quote }}\n  proxy: {{ .Values.proxy | quote }}\n',
  );
  const release = { kubeconfig: kubeconfigPath, namespace, chart };
  t.after(() => helmUninstall(release).catch(() => {}));
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const data = async () => (await core.readNamespacedConfigMap({ name: 'reuse', namespace })).data;

  await helmInstall({ ...release, values: { lab: 'one' } });
  // A person's own upgrade, as docs/lab.md shows it.
  await runHelm([
    'upgrade',
    'winfleet',
    chart,
    '--namespace',
    namespace,
    '--kubeconfig',
    kubeconfigPath,
    '--reuse-values',
    '--set',
    'proxy=http://proxy.lab.example:3128',
  ]);
  assert.deepEqual(await data(), { lab: 'one', proxy: 'http://proxy.lab.example:3128' });

  await helmInstall({ ...release, values: { lab: 'two' }, reuseValues: true }, 'upgrade');
  assert.deepEqual(await data(), { lab: 'two', proxy: 'http://proxy.lab.example:3128' });

  // The control: without it, the person's setting is gone.
  await helmInstall({ ...release, values: { lab: 'three' } }, 'upgrade');
  assert.deepEqual(await data(), { lab: 'three', proxy: '' });
});

/**
 * winfleet migrate plan against a real API server and a real docker-registry (the lab's mirror
 * of mcr.microsoft.com with synthetic Windows images), with the seed samples applied unchanged:
 * each workload's verdict for 2022 and 2025, the exit code, and the webhook's address policy
 * on an image a workload names at a private address (never fetched).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { startMirrorRegistry } from '../../../sim/registry/mirror-registry.ts';
import { loadFixture } from '../../../sim/testkit/fixtures.ts';
import { freshCluster, testNamespace } from '../../../sim/testkit/test-cluster.ts';
import { runWinfleet } from '../../../sim/testkit/winfleet-cli.ts';
import { applyManifests } from '../../kube/manifests.ts';
import type { MigrationPlan } from './migrate.ts';

const winfleet = runWinfleet;

test('migrate plan: each seed sample’s verdict for 2022 and 2025, exit 1 when one cannot move', async (t) => {
  const cluster = await freshCluster(t);
  const { kc } = cluster;
  const registry = await startMirrorRegistry();
  t.after(() => registry.stop());
  const operatorNamespace = await testNamespace(kc, 'winfleet');
  await kc.makeApiClient(k8s.CoreV1Api).createNamespacedConfigMap({
    namespace: operatorNamespace,
    body: {
      metadata: { name: 'winfleet-config' },
      data: { 'config.yaml': stringify({ images: { mirrors: registry.mirrors } }) },
    },
  });
  const namespace = await testNamespace(kc, 'apps');
  await applyManifests(kc, loadFixture('seed-001-runtimeclasses.yml'), { fieldManager: 'kubectl' });
  for (const fixture of [
    'seed-000-iis.yaml',
    'seed-001-win-webserver.yaml',
    'seed-001-iis-2019.yaml',
    'seed-003-runtimeclass-deployment.yaml',
  ])
    for (const object of loadFixture(fixture)) {
      if (object.kind === 'Service') continue; // the seeds' Services are not workloads (000's is invalid)
      await applyManifests(kc, [object], { namespace, fieldManager: 'kubectl' });
    }
  // A Linux workload (not listed) and one naming a registry at a private address.
  await applyManifests(
    kc,
    [
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'linux-web' },
        spec: {
          selector: { matchLabels: { app: 'linux-web' } },
          template: {
            metadata: { labels: { app: 'linux-web' } },
            spec: { containers: [{ name: 'c', image: 'nginx' }] },
          },
        },
      } as k8s.KubernetesObject,
    ],
    { namespace, fieldManager: 'kubectl' },
  );
  const base = [
    '--kubeconfig',
    cluster.kubeconfigPath,
    '-n',
    namespace,
    '--operator-namespace',
    operatorNamespace,
  ];

  const to2025 = await winfleet(['migrate', 'plan', '--to', '2025', ...base, '-o', 'json']);
  assert.equal(to2025.code, 1, to2025.stderr);
  const plan2025 = JSON.parse(to2025.stdout) as MigrationPlan;
  const verdicts = (plan: MigrationPlan) =>
    Object.fromEntries(plan.workloads.map((w) => [`${w.kind}/${w.name}`, w.verdict]));
  assert.deepEqual(verdicts(plan2025), {
    // servercore/iis: an index of 2019 and 2022 variants; 2025 runs the 2022 one.
    'Deployment/iis': 'ready',
    // The user's windows-2019 RuntimeClass pins it to 17763.
    'Deployment/iis-2019': 'blocked',
    // seed 003's windows2022 RuntimeClass pins it to 20348.
    'Deployment/win-pwsh': 'blocked',
    // servercore:ltsc2019 only: 2025 runs it only under Hyper-V isolation.
    'Deployment/win-webserver': 'hyperv',
  });
  const iis = plan2025.workloads.find((w) => w.name === 'iis')!;
  assert.equal(iis.images[0]!.osVersion?.startsWith('10.0.20348'), true);
  assert.match(
    plan2025.workloads.find((w) => w.name === 'win-pwsh')!.blockers.join('\n'),
    /runtimeClassName windows2022 \(node\.kubernetes\.io\/windows-build\) pins it to 10\.0\.20348: set it to 10\.0\.26100/,
  );

  const to2022 = await winfleet(['migrate', 'plan', '--to', '2022', ...base]);
  assert.equal(to2022.code, 1);
  assert.match(
    to2022.stdout,
    /4 workload\(s\) with Windows pods; 2 ready, 1 only under Hyper-V isolation, 1 blocked, 0 unknown/,
  );
  assert.match(to2022.stdout, /Deployment\/win-pwsh\s+ready/);
  assert.doesNotMatch(to2022.stdout, /linux-web/);

  // Attacker side: an image at a private address is looked up by no one (the webhook's address
  // policy), and the workload is unknown, naming why; the plan exits 1.
  await applyManifests(
    kc,
    [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'metadata-grab' },
        spec: {
          nodeSelector: { 'kubernetes.io/os': 'windows' },
          containers: [{ name: 'c', image: '169.254.169.254/latest/meta-data:v1' }],
        },
      } as k8s.KubernetesObject,
    ],
    { namespace, fieldManager: 'kubectl' },
  );
  const wide = await winfleet(['migrate', 'plan', '--to', '2022', ...base, '-o', 'wide']);
  assert.equal(wide.code, 1);
  assert.match(
    wide.stdout,
    /Pod\/metadata-grab\s+spec\.containers\[0\]\s+169\.254\.169\.254\/latest\/meta-data:v1\s+unknown: .*link-local/,
  );
});

/**
 * The webhook end to end, through the real API server and scheduler: kwok nodes for Linux and
 * Windows 2019, 2022 and 2025, a real docker-registry mirroring mcr.microsoft.com with
 * synthetic images, and every seed sample applied unchanged.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { startMirrorRegistry } from '../../sim/registry/mirror-registry.ts';
import { loadFixture } from '../../sim/testkit/fixtures.ts';
import { kubectl as runKubectl } from '../../sim/testkit/kubectl.ts';
import { createLinuxNode, createWindowsNode } from '../../sim/testkit/nodes.ts';
import { freshCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { startTestOperator, writeOperatorConfig } from '../../sim/testkit/test-operator.ts';
import { applyManifests, objectClient } from '../kube/manifests.ts';
import { waitFor } from '../kube/wait-for.ts';
import { mutationsAnnotation } from './mutate-pod.ts';

const run = promisify(execFile);
const buildOf: Record<string, string> = {
  'linux-1': 'linux',
  'win-2019': '10.0.17763',
  'win-2022': '10.0.20348',
  'win-2025': '10.0.26100',
};

test('seed samples land on nodes that can run their images; Linux pods never on Windows', async (t) => {
  const cluster = await freshCluster(t);
  const { kc } = cluster;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const registry = await startMirrorRegistry();
  t.after(() => registry.stop());
  const config = { images: { mirrors: registry.mirrors, compatibility: 'warn' } };
  const operator = await startTestOperator(kc, { config });
  t.after(() => operator.stop());

  // The seed's own RuntimeClass, created by the user before any 2019 node joins.
  await applyManifests(kc, loadFixture('seed-001-runtimeclasses.yml'), { fieldManager: 'kubectl' });
  await createLinuxNode(kc, { name: 'linux-1' });
  await createWindowsNode(kc, { name: 'win-2019', release: '2019', revision: 6054 });
  await createWindowsNode(kc, { name: 'win-2022', release: '2022', revision: 2582 });
  await createWindowsNode(kc, { name: 'win-2025', release: '2025', revision: 1742 });
  const namespace = await testNamespace(kc, 'seeds');

  const podsOf = async (app: string) =>
    (await core.listNamespacedPod({ namespace, labelSelector: `app=${app}` })).items.filter(
      (p) => !p.metadata?.deletionTimestamp,
    );
  const runningOn = (app: string, replicas: number) =>
    waitFor(
      async () => {
        const pods = await podsOf(app);
        return pods.length === replicas && pods.every((p) => p.status?.phase === 'Running')
          ? pods
          : undefined;
      },
      { description: `${replicas} running ${app} pod(s)`, timeoutMs: 60_000 },
    );
  const apply = async (fixture: string) => {
    const failures: string[] = [];
    for (const object of loadFixture(fixture)) {
      try {
        await applyManifests(kc, [object], { namespace, fieldManager: 'kubectl' });
      } catch (error) {
        failures.push(
          `${object.kind}/${object.metadata?.name}: ${(error as { body?: string }).body ?? error}`,
        );
      }
    }
    return failures;
  };

  await t.test(
    'seed 001 win-webserver (servercore:ltsc2019) runs only on the 2019 node',
    async () => {
      assert.deepEqual(await apply('seed-001-win-webserver.yaml'), []);
      const pods = await runningOn('win-webserver', 2);
      for (const pod of pods) {
        assert.equal(pod.spec?.nodeName, 'win-2019');
        assert.deepEqual(
          pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
            ?.nodeSelectorTerms?.[0]?.matchExpressions?.[0]?.values,
          ['10.0.17763'],
        );
        assert.equal(pod.spec?.os?.name, 'windows');
        assert.match(
          pod.metadata?.annotations?.[mutationsAnnotation] ?? '',
          /added toleration os=windows:NoSchedule/,
        );
      }
    },
  );

  await t.test(
    'seed 000 iis (index of 2019 and 2022 variants) may run on any of the three builds',
    async () => {
      const failures = await apply('seed-000-iis.yaml');
      // The seed's placeholder loadBalancerIP makes its Service invalid; the Deployment applies.
      assert.equal(failures.length, 1);
      assert.match(failures[0]!, /^Service\/iis: .*loadBalancerIP/s);
      const [pod] = await runningOn('iis', 1);
      const affinity =
        pod!.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
          ?.nodeSelectorTerms?.[0]?.matchExpressions?.[0];
      assert.deepEqual(affinity?.values, ['10.0.17763', '10.0.20348', '10.0.26100']);
      assert.ok(['win-2019', 'win-2022', 'win-2025'].includes(pod!.spec!.nodeName!));
    },
  );

  await t.test(
    "seed 001 iis-2019 with the user's windows-2019 RuntimeClass gets exactly what the seed describes",
    async () => {
      const rc = await kc.makeApiClient(k8s.NodeV1Api).readRuntimeClass({ name: 'windows-2019' });
      assert.equal(
        rc.handler,
        'example-container-runtime-handler',
        'the user-created class was left alone',
      );
      assert.deepEqual(await apply('seed-001-iis-2019.yaml'), []);
      const [pod] = await runningOn('iis-2019', 1);
      assert.equal(pod!.spec?.nodeName, 'win-2019');
      assert.equal(pod!.spec?.nodeSelector?.['node.kubernetes.io/windows-build'], '10.0.17763');
      assert.equal(
        pod!.spec?.affinity,
        undefined,
        'the build was pinned by the RuntimeClass; no affinity added',
      );
    },
  );

  await t.test(
    'seed 003 RuntimeClass + Deployment (powershell ltsc2022) runs on the 2022 node',
    async () => {
      assert.deepEqual(await apply('seed-003-runtimeclass-deployment.yaml'), []);
      const [pod] = await runningOn('win-pwsh', 1);
      assert.equal(pod!.spec?.nodeName, 'win-2022');
    },
  );

  await t.test(
    'winfleet keeps a RuntimeClass per Windows build, except the one the user owns',
    async () => {
      const node = kc.makeApiClient(k8s.NodeV1Api);
      for (const name of ['windows-2022', 'windows-2025']) {
        const rc = await waitFor(() => node.readRuntimeClass({ name }), { description: name });
        assert.equal(rc.metadata?.labels?.['app.kubernetes.io/managed-by'], 'winfleet');
      }
    },
  );

  await t.test('Linux pods never land on Windows nodes', async () => {
    const objects = objectClient(kc, namespace);
    await objects.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace },
      spec: {
        replicas: 6,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'nginx', image: 'nginx' }] },
        },
      },
    } as k8s.KubernetesObject);
    const pods = await runningOn('web', 6);
    for (const pod of pods) assert.equal(pod.spec?.nodeName, 'linux-1');
    for (const pod of pods)
      assert.equal(pod.metadata?.annotations?.[mutationsAnnotation], undefined);
  });

  await t.test('every pod is on a node whose build can run it', async () => {
    const pods = (await core.listNamespacedPod({ namespace })).items;
    for (const pod of pods) {
      const node = pod.spec?.nodeName;
      assert.ok(node, `${pod.metadata?.name} is scheduled`);
      const isWindows = pod.spec?.os?.name === 'windows';
      assert.equal(buildOf[node] === 'linux', !isWindows, `${pod.metadata?.name} on ${node}`);
    }
  });

  await t.test('rejections name the field', async () => {
    const bad = {
      metadata: { name: 'bad-windows', namespace },
      spec: {
        nodeSelector: { 'kubernetes.io/os': 'windows' },
        hostPID: true,
        containers: [
          {
            name: 'c',
            image: 'mcr.microsoft.com/windows/nanoserver:ltsc2022',
            resources: { limits: { 'hugepages-2Mi': '64Mi', memory: '64Mi' } },
          },
        ],
      },
    };
    await assert.rejects(
      core.createNamespacedPod({ namespace, body: bad }),
      (error: { body?: string }) => {
        const body = String(error.body);
        assert.match(body, /spec\.hostPID/);
        return true;
      },
    );
  });

  await t.test(
    'enforce mode rejects an image no Ready Windows node can run; warn mode admits it with a warning',
    async () => {
      await core.patchNode(
        { name: 'win-2019', body: { spec: { unschedulable: true } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      const pod = `apiVersion: v1
kind: Pod
metadata: { name: old-app, namespace: ${namespace} }
spec:
  nodeSelector: { kubernetes.io/os: windows }
  containers: [{ name: app, image: mcr.microsoft.com/windows/servercore:ltsc2019 }]
`;
      const kubectl = (args: string[], input: string) =>
        runKubectl(cluster.kubeconfigPath, args, input);
      // warn (the default): admitted, with a warning naming the image field
      await waitFor(
        async () => {
          const r = await kubectl(['create', '--dry-run=server', '-o', 'yaml', '-f', '-'], pod);
          return (
            r.code === 0 &&
            // With 2019 cordoned, 2022 and 2025 run the 2019 image only under Hyper-V isolation,
            // which no pool allows here: the warning names the option first.
            /Warning: spec\.containers\[0\]\.image: set spec\.isolation\.hyperV: true on a WindowsNodePool of the 10\.0\.20348 \(Windows Server 2022\), 10\.0\.26100 \(Windows Server 2025\) nodes/.test(
              r.stderr,
            )
          );
        },
        {
          description: 'a warning in warn mode (once the cordon reached the webhook)',
          timeoutMs: 15_000,
        },
      );
      await writeOperatorConfig(kc, operator.namespace, {
        ...config,
        images: { ...config.images, compatibility: 'enforce' },
      });
      await waitFor(
        async () => {
          const r = await kubectl(['create', '--dry-run=server', '-f', '-'], pod);
          return (
            r.code !== 0 &&
            /spec\.containers\[0\]\.image: set spec\.isolation\.hyperV: true [^;\n]*; Ready Windows nodes run mcr\.microsoft\.com\/windows\/servercore:ltsc2019 \(built for 10\.0\.17763\.6054\) only under Hyper-V isolation/.test(
              r.stderr,
            )
          );
        },
        { description: 'a rejection naming the image in enforce mode', timeoutMs: 15_000 },
      );
      await writeOperatorConfig(kc, operator.namespace, config);
      await core.patchNode(
        { name: 'win-2019', body: { spec: { unschedulable: false } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
    },
  );

  await t.test('kubectl create --dry-run=server shows what the webhook adds', async () => {
    const { stdout } = await run('kubectl', [
      '--kubeconfig',
      cluster.kubeconfigPath,
      'run',
      'probe',
      '-n',
      namespace,
      '--image=mcr.microsoft.com/windows/servercore:ltsc2022',
      '--overrides={"spec":{"nodeSelector":{"kubernetes.io/os":"windows"}}}',
      '--dry-run=server',
      '-o',
      'yaml',
    ]);
    assert.match(stdout, /winfleet\.io\/mutations: .*added toleration os=windows:NoSchedule/);
    assert.match(stdout, /- 10\.0\.20348\n\s+- 10\.0\.26100/);
  });
});

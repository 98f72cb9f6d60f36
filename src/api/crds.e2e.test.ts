/**
 * The WindowsHost CRD against the real API server: a bad spec is refused with the field named,
 * and kubectl shows the printer columns (the Ready condition's reason among them).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { sharedCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { installCrds } from './install-crds.ts';
import { ConditionReason, ConditionType } from './reasons.ts';

const run = promisify(execFile);

test('WindowsHost: bad specs are refused naming the field; kubectl shows the columns', async () => {
  const { kc, kubeconfigPath } = await sharedCluster();
  await installCrds(kc);
  const namespace = await testNamespace(kc, 'crd');
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const host = (spec: Record<string, unknown>) => ({
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name: `h-${Math.random().toString(36).slice(2, 8)}`, namespace },
    spec,
  });
  const refused = async (spec: Record<string, unknown>, field: RegExp) => {
    await assert.rejects(objects.create(host(spec)), (error: { body?: string }) => {
      assert.match((JSON.parse(String(error.body)) as { message: string }).message, field);
      return true;
    });
  };
  const good = { address: '10.1.42.1', username: 'Administrator', sshKeySecretRef: { name: 'k' } };
  await refused({ ...good, address: 'not an address!' }, /spec\.address/);
  await refused({ ...good, port: 70000 }, /spec\.port/);
  await refused(
    { address: '10.1.42.1', username: 'Administrator' },
    /spec: Invalid value: .*SSH mode needs spec\.address, spec\.username and spec\.sshKeySecretRef/,
  );
  await refused(
    { mode: 'SSH', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
    /SSH mode needs/,
  );
  // Pull mode: a host that joined by itself; no SSH key, and its node name.
  await refused(
    { mode: 'Pull', nodeName: 'web-1', sshKeySecretRef: { name: 'k' } },
    /Pull mode takes no spec\.sshKeySecretRef/,
  );
  await refused({ mode: 'Pull' }, /Pull mode needs spec\.nodeName/);
  // spec.hostKey: exactly what ssh-keygen -lf prints, SSH mode only.
  await refused({ ...good, hostKey: 'SHA256:short' }, /spec\.hostKey/);
  await refused({ ...good, hostKey: `MD5:${'a'.repeat(43)}` }, /spec\.hostKey/);
  await refused(
    { mode: 'Pull', nodeName: 'web-1', hostKey: `SHA256:${'a'.repeat(43)}` },
    /Pull mode takes no spec\.hostKey/,
  );
  await refused({ mode: 'Push', nodeName: 'web-1' }, /spec\.mode: Unsupported value: "Push"/);
  const pull = await objects.create(host({ mode: 'Pull', pool: 'web', nodeName: 'web-1' }));
  assert.equal((pull as { spec?: { mode?: string } }).spec?.mode, 'Pull');
  const switched = {
    ...pull,
    spec: {
      ...(pull as { spec: object }).spec,
      mode: 'SSH',
      address: '10.1.42.2',
      username: 'a',
      sshKeySecretRef: { name: 'k' },
    },
  };
  await assert.rejects(objects.replace(switched), (error: { body?: string }) => {
    assert.match(String(error.body), /spec\.mode cannot change/);
    return true;
  });
  await objects.delete(pull);
  await refused({ ...good, nodeName: 'Not_A_Node' }, /spec\.nodeName/);
  await refused(
    { ...good, taints: [{ key: 'a', effect: 'Sometimes' }] },
    /spec\.taints\[0\]\.effect: Unsupported value: "Sometimes"/,
  );

  const created = await objects.create(host(good));
  assert.equal(
    (created as { spec?: { mode?: string } }).spec?.mode,
    'SSH',
    'spec.mode defaults to SSH',
  );
  // The schema's defaults reach the API server (the client's model once dropped `default`).
  const spec = (created as { spec?: { port?: number; sshKeySecretRef?: { key?: string } } }).spec;
  assert.equal(spec?.port, 22, 'spec.port defaults to 22');
  assert.equal(spec?.sshKeySecretRef?.key, 'ssh-privatekey', 'the key defaults to ssh-privatekey');
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  await custom.patchNamespacedCustomObjectStatus(
    {
      group: 'winfleet.io',
      version: 'v1alpha1',
      namespace,
      plural: 'windowshosts',
      name: created.metadata!.name!,
      body: {
        status: {
          conditions: [
            {
              type: ConditionType.Ready,
              status: 'False',
              reason: ConditionReason.SecretNotFound,
              message: 'Secret k does not exist',
              lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
            },
          ],
        },
      },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
  const { stdout } = await run('kubectl', [
    '--kubeconfig',
    kubeconfigPath,
    'get',
    'windowshosts',
    '-n',
    namespace,
  ]);
  const [header, row] = stdout.split('\n');
  assert.match(header!, /^NAME\s+ADDRESS\s+NODE\s+BUILD\s+READY\s+REASON\s+VERSION\s+AGE$/);
  assert.match(row!, /^h-\w+\s+10\.1\.42\.1\s+False\s+SecretNotFound\s/);
});

test('WindowsHost: the installed schema keeps the Kubernetes extensions (list-map conditions, CEL rules)', async () => {
  const { kc } = await sharedCluster();
  await installCrds(kc);
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const crd = await ext.readCustomResourceDefinition({ name: 'windowshosts.winfleet.io' });
  const schema = crd.spec.versions[0]?.schema?.openAPIV3Schema?.properties;
  const conditions = schema?.status?.properties?.conditions;
  assert.equal(conditions?.x_kubernetes_list_type, 'map');
  assert.deepEqual(conditions?.x_kubernetes_list_map_keys, ['type']);
  assert.ok(schema?.spec?.properties?.labels?.x_kubernetes_validations?.length);
});

test('WindowsNodePool: spec.join.nodeNamePattern must be anchored RE2 (the API server compiles it)', async () => {
  const { kc } = await sharedCluster();
  await installCrds(kc);
  const namespace = await testNamespace(kc, 'crd-pool');
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  let n = 0;
  const pool = (nodeNamePattern: string) =>
    objects.create({
      apiVersion: 'winfleet.io/v1alpha1',
      kind: 'WindowsNodePool',
      metadata: { name: `p-${++n}`, namespace },
      spec: { selector: {}, join: { nodeNamePattern } },
    });
  await pool('^web-[0-9]{1,4}$');
  // RE2 takes nested quantifiers (it matches in linear time); the operator uses RE2 too.
  await pool('^(a+)+$');
  for (const [pattern, message] of [
    ['web-.*', /must be anchored/],
    ['^(web$', /must be a valid RE2 regular expression/],
    ['^(?=web)[a-z]+$', /must be a valid RE2 regular expression/],
    ['^a{1,1001}$', /must be a valid RE2 regular expression/],
    [`^${'a'.repeat(300)}$`, /Too long|may not be more than 256/],
  ] as const) {
    await assert.rejects(pool(pattern), (error: { body?: string }) => {
      assert.match(
        (JSON.parse(String(error.body)) as { message: string }).message,
        message,
        pattern,
      );
      return true;
    });
  }
});

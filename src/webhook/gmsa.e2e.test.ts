/**
 * gMSA end to end, through the real API server, its Node authorizer and NodeRestriction, and
 * the scheduler: the GMSACredentialSpec CRD installed with two credential specs, kwok Windows
 * nodes whose gMSA readiness the agent's own module reports with each node's identity (from a
 * domain-joined and a workgroup simulated host), a pod whose ServiceAccount may not use the
 * credential spec it names refused with the missing RBAC named, and allowed pods placed only
 * on the gMSA-ready node.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { SimHostOS } from '../../sim/hosts/sim-host-os.ts';
import { createTestMachine } from '../../sim/hosts/test-machine.ts';
import { startMirrorRegistry } from '../../sim/registry/mirror-registry.ts';
import { loadFixture } from '../../sim/testkit/fixtures.ts';
import { createLinuxNode, createWindowsNode } from '../../sim/testkit/nodes.ts';
import { freshCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { startTestOperator } from '../../sim/testkit/test-operator.ts';
import type { AgentContext } from '../agent/agent-context.ts';
import { syncGmsaReadiness } from '../agent/gmsa-readiness.ts';
import { gmsaReadinessAnnotation, gmsaReadyLabel } from '../api/node-annotations.ts';
import { kubeRequest, statusMessage } from '../cli/check/kube-request.ts';
import { applyManifests, objectClient } from '../kube/manifests.ts';
import { waitFor } from '../kube/wait-for.ts';
import { mutationsAnnotation } from './mutate-pod.ts';

const image = 'mcr.microsoft.com/windows/nanoserver:ltsc2022';

test('gMSA pods: refused without the RBAC to use their credential spec, placed only on gMSA-ready nodes', async (t) => {
  const cluster = await freshCluster(t);
  const { kc } = cluster;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  const registry = await startMirrorRegistry();
  t.after(() => registry.stop());
  const operator = await startTestOperator(kc, {
    config: { images: { mirrors: registry.mirrors, compatibility: 'warn' } },
  });
  t.after(() => operator.stop());

  const fixture = loadFixture('gmsa-credentialspec-crd.yaml');
  await applyManifests(
    kc,
    fixture.filter((o) => o.kind === 'CustomResourceDefinition'),
    { fieldManager: 'kubectl' },
  );
  // Errors are retried until the CRD is established.
  await waitFor(
    async () =>
      (await applyManifests(
        kc,
        fixture.filter((o) => o.kind === 'GMSACredentialSpec'),
        { fieldManager: 'kubectl' },
      )) && true,
    {
      description: 'the GMSACredentialSpec CRD established and the specs created',
      timeoutMs: 30_000,
    },
  );

  await createLinuxNode(kc, { name: 'linux-1' });
  await createWindowsNode(kc, { name: 'win-joined', release: '2022', revision: 2582 });
  await createWindowsNode(kc, { name: 'win-workgroup', release: '2022', revision: 2582 });

  /** A merge patch of Node `target` sent with node `asNode`'s identity; the HTTP status. */
  const patchNodeAs = async (asNode: string, target: string, metadata: unknown) => {
    const response = await kubeRequest(kc, 'PATCH', `/api/v1/nodes/${target}`, {
      body: { metadata },
      headers: {
        'content-type': 'application/merge-patch+json',
        'Impersonate-User': `system:node:${asNode}`,
        'Impersonate-Group': 'system:nodes',
      },
    });
    return { status: response.status, message: statusMessage(response.body) };
  };
  /** The agent's report for node `name` from a simulated host, with that node's identity. */
  const report = async (name: string, domain: string | undefined) => {
    const machine = await createTestMachine(t, domain ? { domain } : {});
    const context: AgentContext = {
      hostOS: new SimHostOS(machine),
      stdout: () => {},
      stderr: () => {},
    };
    const node = await core.readNode({ name });
    return syncGmsaReadiness(context, node, {
      patchMetadata: async (metadata) => {
        const { status, message } = await patchNodeAs(name, name, metadata);
        assert.equal(status, 200, message);
      },
    });
  };

  await t.test('each agent labels its own Node with the host’s gMSA readiness', async () => {
    assert.equal((await report('win-joined', 'corp.winfleet.test')).ready, true);
    assert.equal((await report('win-workgroup', undefined)).ready, false);
    const joined = await core.readNode({ name: 'win-joined' });
    assert.equal(joined.metadata?.labels?.[gmsaReadyLabel], 'true');
    assert.match(joined.metadata?.annotations?.[gmsaReadinessAnnotation] ?? '', /^DomainJoined: /);
    const workgroup = await core.readNode({ name: 'win-workgroup' });
    assert.equal(workgroup.metadata?.labels?.[gmsaReadyLabel], 'false');
    assert.match(
      workgroup.metadata?.annotations?.[gmsaReadinessAnnotation] ?? '',
      /^NotDomainJoined: /,
    );
  });

  await t.test('attacker side: one node’s credentials cannot label another Node', async () => {
    const forged = await patchNodeAs('win-workgroup', 'win-joined', {
      labels: { [gmsaReadyLabel]: 'false' },
    });
    assert.equal(forged.status, 403, forged.message);
    // NodeRestriction's answer, not a missing right to impersonate.
    assert.match(forged.message, /node "win-workgroup" is not allowed to modify node "win-joined"/);
    const lured = await patchNodeAs('win-joined', 'win-workgroup', {
      labels: { [gmsaReadyLabel]: 'true' },
    });
    assert.equal(lured.status, 403, lured.message);
    assert.equal(
      (await core.readNode({ name: 'win-joined' })).metadata?.labels?.[gmsaReadyLabel],
      'true',
    );
    assert.equal(
      (await core.readNode({ name: 'win-workgroup' })).metadata?.labels?.[gmsaReadyLabel],
      'false',
    );
  });

  const namespace = await testNamespace(kc, 'gmsa');
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'app' } } });
  const grant = async (credspec: string) => {
    const name = `use-gmsa-${credspec}-${namespace}`;
    await rbac.createClusterRole({
      body: {
        metadata: { name },
        rules: [
          {
            apiGroups: ['windows.k8s.io'],
            resources: ['gmsacredentialspecs'],
            verbs: ['use'],
            resourceNames: [credspec],
          },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ kind: 'ServiceAccount', name: 'app', namespace }],
      },
    });
  };
  await grant('webapp-a');

  const pod = (name: string, credspec: string): k8s.V1Pod => ({
    metadata: { name, namespace, labels: { app: name } },
    spec: {
      serviceAccountName: 'app',
      // Only the container names it: the pod-level securityContext says nothing.
      containers: [
        {
          name: 'app',
          image,
          securityContext: { windowsOptions: { gmsaCredentialSpecName: credspec } },
        },
      ],
    },
  });
  /** The refusal of creating `body`, or undefined when it was created. */
  const refusal = (body: k8s.V1Pod) =>
    core.createNamespacedPod({ namespace, body }).then(
      () => undefined,
      (error: { code?: number; body?: string }) => ({
        code: error.code,
        message: statusMessage(String(error.body)),
      }),
    );

  await t.test(
    'a pod naming a credential spec its ServiceAccount may not use is refused, naming the missing RBAC',
    async () => {
      const refused = await waitFor(
        async () => {
          const r = await refusal(pod('web-b', 'webapp-b'));
          if (!r) await core.deleteNamespacedPod({ namespace, name: 'web-b' });
          return r && /may not use/.test(r.message) ? r : undefined;
        },
        { description: 'the webhook refusing the pod (once it is registered)', timeoutMs: 30_000 },
      );
      assert.equal(refused.code, 403);
      assert.ok(
        refused.message.includes(
          `spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpecName: ServiceAccount ${namespace}/app may not use GMSACredentialSpec "webapp-b"`,
        ),
        refused.message,
      );
      assert.ok(
        refused.message.includes(
          '{apiGroups: [windows.k8s.io], resources: [gmsacredentialspecs], verbs: [use], resourceNames: [webapp-b]}',
        ),
        refused.message,
      );
      assert.ok(refused.message.includes(`bound to ServiceAccount app in namespace ${namespace}`));
    },
  );

  await t.test('allowed gMSA pods land only on the gMSA-ready node', async () => {
    await waitFor(async () => (await refusal(pod('web-a-0', 'webapp-a'))) === undefined, {
      description: 'the allowed pod admitted (once RBAC has the binding)',
      timeoutMs: 30_000,
    });
    await objectClient(kc, namespace).create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web-a', namespace },
      spec: {
        replicas: 4,
        selector: { matchLabels: { app: 'web-a' } },
        template: { metadata: { labels: { app: 'web-a' } }, spec: pod('x', 'webapp-a').spec },
      },
    } as k8s.KubernetesObject);
    const pods = await waitFor(
      async () => {
        const items = (await core.listNamespacedPod({ namespace })).items.filter(
          (p) => p.metadata?.labels?.app?.startsWith('web-a') && !p.metadata.deletionTimestamp,
        );
        return items.length === 5 && items.every((p) => p.status?.phase === 'Running')
          ? items
          : undefined;
      },
      { description: 'five running gMSA pods', timeoutMs: 60_000 },
    );
    for (const p of pods) {
      assert.equal(p.spec?.nodeName, 'win-joined', p.metadata?.name);
      assert.equal(p.spec?.nodeSelector?.[gmsaReadyLabel], 'true');
      assert.match(
        p.metadata?.annotations?.[mutationsAnnotation] ?? '',
        /added nodeSelector winfleet\.io\/gmsa-ready=true \(gMSA credential spec webapp-a\)/,
      );
    }
  });

  await t.test(
    'attacker: an ephemeral container (kubectl debug) cannot name a credential spec the ServiceAccount may not use (issue 33)',
    async () => {
      /** Adds an ephemeral container naming `credspec` to web-a-0; the refusal, if any. */
      const debug = async (name: string, credspec: string) => {
        const current = await core.readNamespacedPod({ namespace, name: 'web-a-0' });
        current.spec!.ephemeralContainers = [
          ...(current.spec!.ephemeralContainers ?? []),
          {
            name,
            image,
            securityContext: { windowsOptions: { gmsaCredentialSpecName: credspec } },
          },
        ];
        return core
          .replaceNamespacedPodEphemeralcontainers({ namespace, name: 'web-a-0', body: current })
          .then(
            () => undefined,
            (error: { code?: number; body?: string }) => ({
              code: error.code,
              message: statusMessage(String(error.body)),
            }),
          );
      };
      const refused = await debug('debugger-b', 'webapp-b');
      assert.equal(refused?.code, 403, refused?.message);
      assert.ok(
        refused!.message.includes(
          `spec.ephemeralContainers[0].securityContext.windowsOptions.gmsaCredentialSpecName: ServiceAccount ${namespace}/app may not use GMSACredentialSpec "webapp-b"`,
        ),
        refused!.message,
      );
      const pod = await core.readNamespacedPod({ namespace, name: 'web-a-0' });
      assert.equal(pod.spec?.ephemeralContainers, undefined, 'no ephemeral container was added');
      // The credential spec the ServiceAccount may use is still fine for an ephemeral container.
      assert.equal(await debug('debugger-a', 'webapp-a'), undefined);
    },
  );

  await t.test('granting exactly the RBAC the refusal named admits the pod', async () => {
    await grant('webapp-b');
    await waitFor(
      async () => (await refusal(pod('web-b', 'webapp-b'))) === undefined || undefined,
      {
        description: 'the pod admitted once the binding is in',
        timeoutMs: 30_000,
      },
    );
    const placed = await waitFor(
      async () => (await core.readNamespacedPod({ namespace, name: 'web-b' })).spec?.nodeName,
      { description: 'web-b scheduled', timeoutMs: 30_000 },
    );
    assert.equal(placed, 'win-joined');
  });
});

/**
 * The chart's RBAC against the real control plane. kwok runs no containers, so the chart is
 * installed with `helm install` and its operator and webhook run here, as the chart's two
 * Deployments would run them (their rendered args), each with nothing but a TokenRequest token
 * of its own ServiceAccount (the webhook's certificate written to files as the kubelet mounts
 * its Secret). The API server's audit log counts every request both ServiceAccounts make:
 *
 * - a full join → upgrade → removal cycle of simulated Windows hosts (one in the release
 *   namespace, one in a namespace the values opt in; a Windows pod whose pull secret the
 *   webhook reads, evicted by the removal; the dashboard's host detail of each, which lists
 *   the Events about the host and its Node) gets zero 403 answers;
 * - what it must never do (read other namespaces' Secrets, create Pods, bind or escalate
 *   roles, touch other webhook configurations, create webhook configurations, watch, delete
 *   or list Events beyond the dashboard's namespaces) is refused;
 * - `helm upgrade` keeps every WindowsHost, and `helm uninstall` leaves no webhook
 *   configuration behind (pods are admitted as before) but keeps the CRDs and WindowsHosts.
 */
import assert from 'node:assert/strict';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { freePort } from '../../../sim/cluster/free-port.ts';
import {
  auditLogUpTo,
  describeAuditEvent,
  forbiddenRequests,
  readAuditLog,
  requestsBy,
  serviceAccountsAuditPolicy,
} from '../../../sim/testkit/audit-log.ts';
import {
  type ChartOperator,
  chartDir,
  chartServiceAccount,
  chartWebhookServiceAccount,
  helmInstall,
  helmUninstall,
  releaseName,
  startChartOperator,
} from '../../../sim/testkit/chart-install.ts';
import { installFlannelObjects } from '../../../sim/testkit/cluster-cni.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { stopProcess } from '../../../sim/testkit/operator-process.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import { createPool } from '../../../sim/testkit/pools.ts';
import { serviceAccountKubeconfig } from '../../../sim/testkit/service-account.ts';
import { testNamespace } from '../../../sim/testkit/test-cluster.ts';
import {
  createWindowsHosts,
  csrDecision,
  hostReady,
  listWindowsHosts,
  readWindowsHost,
  windowsHostFor,
  writeSshKeySecret,
} from '../../../sim/testkit/windows-hosts.ts';
import { servicesVersionAnnotation } from '../../../src/api/node-annotations.ts';
import {
  bootstrapTokenAuthentication,
  tokenKubeConfig,
} from '../../../src/join/bootstrap-token-auth.ts';
import { joinInfoConfigMapName } from '../../../src/join/join-info.ts';
import { createJoinToken } from '../../../src/join/join-tokens.ts';
import { httpStatus } from '../../../src/kube/client.ts';
import { waitFor } from '../../../src/kube/wait-for.ts';
import { createCsrPem, generateKeyPair } from '../../../src/pki/certificates.ts';
import { hostPaths } from '../../../src/servicesmanifest/host-paths.ts';

const windowsImage = 'mcr.microsoft.com/windows/nanoserver:ltsc2022';
const windowsToleration = { key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' };
const crdName = 'windowshosts.winfleet.io';
/** The Role and RoleBinding the operator applies so nodes can read its published manifests. */
const nodeManifestsRbac = 'winfleet:node-manifests';

/** The request's HTTP status: 0 when it succeeded. */
async function statusOf(request: Promise<unknown>): Promise<number> {
  try {
    await request;
    return 0;
  } catch (error) {
    const code = httpStatus(error);
    if (code === undefined) throw error;
    return code;
  }
}

test('the chart’s ServiceAccount is exactly enough for winfleet, and no more', async (t) => {
  const world = await joinWorld(t, {
    releases: ['2022', '2019'],
    startOperator: false,
    cluster: { auditPolicy: serviceAccountsAuditPolicy },
  });
  const { kc, namespace, cluster } = world;
  const auditLog = cluster.auditLogPath!;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const webhookPort = await freePort();
  const statusPort = await freePort();
  const dashboardPort = await freePort();
  // The second host lives in a namespace the values opt in (config.hosts.namespaces), with
  // its own SSH key Secret there: the chart's Role in that namespace is exercised too.
  const teamNamespace = await testNamespace(kc, 'team-hosts');
  await writeSshKeySecret(kc, teamNamespace, world.key.privateKey);
  const hostNamespaces = [namespace, teamNamespace];
  // The Windows pod's namespace, whose image pull secrets the values let the webhook read
  // (webhook.pullSecretNamespaces).
  const apps = await testNamespace(kc, 'rbac-app');
  await core.createNamespacedSecret({
    namespace: apps,
    body: {
      metadata: { name: 'regcred' },
      type: 'kubernetes.io/dockerconfigjson',
      stringData: {
        '.dockerconfigjson': JSON.stringify({
          auths: { 'mcr.microsoft.com': { auth: Buffer.from('user:pass').toString('base64') } },
        }),
      },
    },
  });
  const values = {
    crds: { install: true },
    webhook: { url: `https://127.0.0.1:${webhookPort}`, pullSecretNamespaces: [apps] },
    config: {
      hosts: {
        agentCheckIntervalSeconds: 1,
        joinTimeoutSeconds: 120,
        namespaces: [teamNamespace],
      },
      // Flannel runs in the cluster: the hosts join with flanneld, whose Node reads the
      // operator grants through the chart's ClusterRole (with zero 403s too).
      network: { mode: 'flannel-vxlan' },
    },
  };
  await installFlannelObjects(kc);
  const allHosts = async () =>
    (await Promise.all(hostNamespaces.map((ns) => listWindowsHosts(kc, ns)))).flat();
  const release = { kubeconfig: cluster.kubeconfigPath, namespace, values, chart: chartDir };
  t.diagnostic((await helmInstall(release)).trim().split('\n').slice(0, 6).join(' | '));

  const sa = await serviceAccountKubeconfig(kc, {
    namespace,
    name: chartServiceAccount,
    server: cluster.server,
    caFile: cluster.pki.caCert,
    path: join(cluster.dir, 'winfleet-sa.kubeconfig'),
  });
  const saConfig = parse(await readFile(sa.path, 'utf8')) as {
    users: { user: Record<string, string> }[];
  };
  assert.deepEqual(
    Object.keys(saConfig.users[0]!.user),
    ['token'],
    'the operator’s kubeconfig holds a token and nothing else',
  );
  // The webhook's own ServiceAccount, as its Deployment runs it.
  const webhookSa = await serviceAccountKubeconfig(kc, {
    namespace,
    name: chartWebhookServiceAccount,
    server: cluster.server,
    caFile: cluster.pki.caCert,
    path: join(cluster.dir, 'winfleet-webhook-sa.kubeconfig'),
  });
  const operatorLog = join(cluster.dir, 'logs', 'operator.log');
  const webhookLog = join(cluster.dir, 'logs', 'webhook.log');
  const webhookStatusPort = await freePort();
  /** What explains a failed start or a stuck cycle: the 403s so far and the logs' tails. */
  const logTail = async () => {
    const events = await readAuditLog(auditLog);
    const lines: string[] = [];
    for (const user of [sa.username, webhookSa.username]) {
      const refused = forbiddenRequests(requestsBy(events, user));
      lines.push(`\n--- 403 answers to ${user} so far: ${refused.length} ---`);
      lines.push(...refused.map(describeAuditEvent));
    }
    for (const [name, file] of [
      ['operator', operatorLog],
      ['webhook', webhookLog],
    ] as const) {
      const log = (await readFile(file, 'utf8').catch(() => '')).split('\n').slice(-25);
      lines.push(`--- ${name} log (last 25 lines) ---`, ...log);
    }
    return lines.join('\n');
  };

  let operator: ChartOperator | undefined = await withOperatorLog(
    () =>
      startChartOperator({
        kubeconfig: sa.path,
        namespace,
        values,
        chart: chartDir,
        webhookPort,
        statusPort,
        dashboardPort,
        payloadDir: world.payloadDir,
        logFile: operatorLog,
        webhook: {
          kubeconfig: webhookSa.path,
          admin: kc,
          certDir: join(cluster.dir, 'webhook-tls'),
          statusPort: webhookStatusPort,
          logFile: webhookLog,
        },
      }),
    logTail,
  );
  t.after(async () => {
    if (operator) {
      await operator.webhook?.stop();
      await stopProcess(operator.child);
    }
  });
  t.diagnostic(`operator args (from helm template): ${operator.args.join(' ')}`);
  assert.ok(operator.webhook, 'the chart runs the webhook in its own process');
  t.diagnostic(`webhook args (from helm template): ${operator.webhook.args.join(' ')}`);
  await t.test('join → upgrade → removal as the ServiceAccount gets zero 403 answers', async () => {
    const hosts = await withOperatorLog(async () => {
      const [first, second] = world.fleet.hosts;
      await createWindowsHosts(kc, namespace, [first!]);
      await createWindowsHosts(kc, teamNamespace, [second!]);
      return waitFor(
        async () => {
          const list = await allHosts();
          return list.length === 2 && list.every(hostReady) ? list : undefined;
        },
        { description: 'both hosts Ready', timeoutMs: 120_000 },
      );
    }, logTail);
    for (const host of hosts) {
      const node = await core.readNode({ name: host.status!.nodeName! });
      assert.equal(
        node.status?.conditions?.find((c) => c.type === 'Ready')?.status,
        'True',
        `node ${node.metadata?.name} Ready`,
      );
    }
    // flanneld's Node reads: bound to these two nodes' users, no one else.
    const readers = await waitFor(
      async () => {
        const binding = await kc
          .makeApiClient(k8s.RbacAuthorizationV1Api)
          .readClusterRoleBinding({ name: 'winfleet:flanneld-node-reader' });
        return (binding.subjects?.length ?? 0) === 2 ? binding : undefined;
      },
      { description: 'the flanneld readers binding with both nodes' },
    );
    assert.deepEqual(
      readers.subjects!.map((s) => `${s.kind}/${s.name}`).sort(),
      hosts.map((h) => `User/system:node:${h.status!.nodeName}`).sort(),
    );
    // A host joining by command, as the ServiceAccount sees it: cluster-info and winfleet-join
    // made, the CSR of a real join token approved with a Pull WindowsHost created and the
    // token's last use taken (its Secret deleted). The Pull host goes again at once (it has no
    // finalizer) so that the cycle below counts only the SSH hosts.
    await withOperatorLog(async () => {
      for (const [ns, name] of [
        ['kube-public', 'cluster-info'],
        [namespace, joinInfoConfigMapName],
      ] as const) {
        await waitFor(() => core.readNamespacedConfigMap({ namespace: ns, name }), {
          description: `${ns}/${name}`,
          timeoutMs: 30_000,
        });
      }
      await createPool(kc, namespace, 'pulled', {
        selector: { matchLabels: { pool: 'pulled' } },
        join: { nodeNamePattern: '^pulled-[0-9]+$' },
      });
      const { id, token } = await createJoinToken(kc, {
        operatorNamespace: namespace,
        pool: 'pulled',
        namespace,
        uses: 1,
        ttlMs: 10 * 60_000,
        labels: { pool: 'pulled' },
      });
      await waitFor(
        async () =>
          (await bootstrapTokenAuthentication(kc, token, { timeoutMs: 0 })).outcome ===
          'authenticated',
        { description: 'the join token to authenticate', timeoutMs: 20_000 },
      );
      const request = Buffer.from(
        await createCsrPem(
          { commonName: 'system:node:pulled-1', organizations: ['system:nodes'] },
          await generateKeyPair(),
        ),
      ).toString('base64');
      await tokenKubeConfig(kc, token)
        .makeApiClient(k8s.CertificatesV1Api)
        .createCertificateSigningRequest({
          body: {
            metadata: { name: 'pulled-1' },
            spec: {
              request,
              signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
              usages: ['digital signature', 'key encipherment', 'client auth'],
            },
          },
        });
      assert.match(
        await csrDecision(kc.makeApiClient(k8s.CertificatesV1Api), 'pulled-1'),
        /^Approved: .*WindowsHost .*\/pulled-1 created in Pull mode; 0 uses left$/,
      );
      await waitFor(
        async () =>
          httpStatus(
            await core
              .readNamespacedSecret({ namespace: 'kube-system', name: `bootstrap-token-${id}` })
              .catch((e: unknown) => e),
          ) === 404,
        { description: 'the used-up join token Secret deleted', timeoutMs: 20_000 },
      );
      await objects.delete(await readWindowsHost(kc, namespace, 'pulled-1'));
    }, logTail);

    // Each host's kube-proxy has its own certificate: the operator, as the ServiceAccount,
    // approved it for the kubernetes.io/kube-apiserver-client signer.
    for (const sim of world.fleet.hosts) {
      await waitFor(() => sim.hostOS().readFile(hostPaths.kubeProxyKubeconfig), {
        description: `kube-proxy's kubeconfig on ${sim.name}`,
        timeoutMs: 30_000,
      });
    }

    // The dashboard's host detail, as a person opens it: the operator lists, as the
    // ServiceAccount, the Events about the host (in its namespace) and about its Node (in
    // default, where core/v1 Events of cluster-scoped objects live; one written here, since
    // the simulated kubelet writes none).
    for (const host of hosts) {
      const nodeName = host.status!.nodeName!;
      await core.createNamespacedEvent({
        namespace: 'default',
        body: {
          metadata: { generateName: `${nodeName}.` },
          involvedObject: { apiVersion: 'v1', kind: 'Node', name: nodeName, uid: nodeName },
          type: 'Normal',
          reason: 'RbacTestNodeEvent',
          message: `an Event about node ${nodeName}`,
          source: { component: 'rbac-e2e' },
          firstTimestamp: new Date(),
          lastTimestamp: new Date(),
          count: 1,
        },
      });
    }
    for (const host of hosts) {
      const { namespace: ns, name } = host.metadata;
      const url = `${operator!.dashboardUrl}/api/hosts/${ns}/${name}`;
      // The operator records its Events without waiting: the host's NodeReady may follow.
      const detail = await withOperatorLog(
        () =>
          waitFor(
            async () => {
              const res = await fetch(url);
              assert.equal(res.status, 200, `GET ${url}`);
              const body = (await res.json()) as {
                events: { object: string; reason: string }[];
                eventsError?: string;
              };
              assert.equal(body.eventsError, undefined, `${url}: the Events could not be read`);
              const kinds = new Set(body.events.map((e) => e.object));
              return kinds.has('WindowsHost') && kinds.has('Node') ? body : undefined;
            },
            { description: `Events about ${ns}/${name} and its Node in ${url}`, timeoutMs: 30_000 },
          ),
        logTail,
      );
      assert.ok(
        detail.events.some((e) => e.object === 'Node' && e.reason === 'RbacTestNodeEvent'),
        `${url}: the Event about the host's Node`,
      );
    }

    // A Windows pod (through the webhook, which reads its pull secret) on the first host, for
    // the removal to evict.
    const target = hosts[0]!.status!.nodeName!;
    await kc.makeApiClient(k8s.AppsV1Api).createNamespacedDeployment({
      namespace: apps,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: {
              // Declared Windows, so the webhook looks its image up (with the pull secret).
              nodeSelector: { 'kubernetes.io/os': 'windows', 'kubernetes.io/hostname': target },
              tolerations: [windowsToleration],
              imagePullSecrets: [{ name: 'regcred' }],
              containers: [{ name: 'app', image: windowsImage }],
            },
          },
        },
      },
    });
    await waitFor(
      async () =>
        (await core.listNamespacedPod({ namespace: apps })).items.some(
          (p) => p.status?.phase === 'Running' && p.spec?.nodeName === target,
        ),
      { description: 'the Windows pod running on the first host', timeoutMs: 60_000 },
    );
    // The API server called the webhook's own process: it trusts the CA the operator patched
    // in, which signed the certificate the webhook serves from its files.
    const metrics = await (await fetch(`${operator!.webhook!.statusUrl}/metrics`)).text();
    assert.match(
      metrics,
      /^winfleet_webhook_admissions_total\{webhook="mutate"[^}]*\} [1-9]/m,
      'the webhook admitted the Windows pod',
    );

    const next = await writeStandInPayload(world.payloadDir, {
      kubernetesVersion: 'v1.36.6',
      version: '1.36.6-wf.1',
    });
    const upgraded = await withOperatorLog(
      () =>
        waitFor(
          async () => {
            const list = await allHosts();
            return list.length === 2 &&
              list.every(
                (h) =>
                  hostReady(h) &&
                  // flannel-vxlan's manifests are the payload's version and the network's hash.
                  new RegExp(`^${next.version.replaceAll('.', '\\.')}-n[0-9a-f]{8}$`).test(
                    h.status?.servicesVersion ?? '',
                  ),
              )
              ? list
              : undefined;
          },
          { description: `both hosts on ${next.version}`, timeoutMs: 120_000 },
        ),
      logTail,
    );
    for (const host of upgraded) {
      const node = await core.readNode({ name: host.status!.nodeName! });
      assert.equal(
        node.metadata?.annotations?.[servicesVersionAnnotation],
        host.status!.servicesVersion,
      );
      assert.equal(node.status?.nodeInfo?.kubeletVersion, 'v1.36.6');
    }

    for (const host of upgraded) await objects.delete(host);
    await withOperatorLog(
      () =>
        waitFor(async () => (await allHosts()).length === 0, {
          description: 'both hosts removed',
          timeoutMs: 120_000,
        }),
      logTail,
    );
    const nodes = (await core.listNode()).items.map((n) => n.metadata?.name);
    for (const host of upgraded)
      assert.ok(!nodes.includes(host.status!.nodeName!), `node ${host.status!.nodeName} deleted`);
    for (const sim of world.fleet.hosts)
      assert.equal(
        await sim.hostOS().queryService('kubelet'),
        undefined,
        `${sim.name} deconfigured`,
      );
    const pods = (await core.listNamespacedPod({ namespace: apps })).items;
    assert.ok(
      !pods.some((p) => p.spec?.nodeName === target && !p.metadata?.deletionTimestamp),
      'the Windows pod was evicted from the removed host',
    );

    // A graceful stop (it releases its Lease) is part of the cycle, then the count.
    await operator!.webhook?.stop();
    await stopProcess(operator!.child);
    operator = undefined;
    const audit = await auditLogUpTo(auditLog, sa.kc);
    const requests = requestsBy(audit, sa.username);
    const refused = forbiddenRequests(requests);
    const webhookRequests = requestsBy(audit, webhookSa.username);
    const webhookRefused = forbiddenRequests(webhookRequests);
    const summary = `${requests.length} requests by ${sa.username}; ${refused.length} answered 403; ${webhookRequests.length} by ${webhookSa.username}; ${webhookRefused.length} answered 403`;
    t.diagnostic(summary);
    console.log(`[rbac] ${summary}`);
    assert.ok(requests.length > 0, `the audit log holds the operator’s requests (${summary})`);
    assert.ok(
      webhookRequests.length > 0,
      `the audit log holds the webhook’s requests (${summary})`,
    );
    assert.equal(
      refused.length + webhookRefused.length,
      0,
      `403 answers to the chart's ServiceAccounts:\n${[...refused, ...webhookRefused].map(describeAuditEvent).join('\n')}`,
    );
    const webhookDid = (verb: string, resource: string, ns?: string) =>
      webhookRequests.some(
        (e) =>
          e.verb === verb &&
          e.objectRef?.resource === resource &&
          (ns === undefined || e.objectRef?.namespace === ns) &&
          (e.responseStatus?.code ?? 0) < 300,
      );
    assert.ok(webhookDid('get', 'secrets', apps), 'the webhook read the Windows pod’s pull secret');
    assert.ok(
      !webhookRequests.some(
        (e) => e.objectRef?.resource === 'secrets' && e.objectRef.namespace !== apps,
      ),
      'the webhook touched no other Secret',
    );
    // The operator really did the cycle's writes as the ServiceAccount.
    const did = (verb: string, resource: string, ns?: string) =>
      requests.some(
        (e) =>
          e.verb === verb &&
          `${e.objectRef?.resource}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}` ===
            resource &&
          (ns === undefined || e.objectRef?.namespace === ns) &&
          (e.responseStatus?.code ?? 0) < 300,
      );
    assert.ok(did('create', 'secrets', 'kube-system'), 'created a bootstrap token Secret');
    assert.ok(did('create', 'configmaps', 'kube-public'), 'created cluster-info');
    assert.ok(did('create', 'configmaps', namespace), 'created winfleet-join');
    assert.ok(did('update', 'configmaps', namespace), 'took a use of the join token');
    assert.ok(did('create', 'windowshosts', namespace), 'created the Pull host of a join');
    assert.ok(did('delete', 'secrets', 'kube-system'), 'deleted the used-up join token');
    assert.ok(did('delete', 'nodes'), 'deleted a removed host’s Node');
    assert.ok(did('create', 'pods/eviction'), 'evicted the Windows pod');
    assert.ok(did('patch', 'mutatingwebhookconfigurations'), 'set the webhook’s caBundle');
    assert.ok(did('update', 'leases', namespace), 'held the leader Lease');
    assert.ok(did('patch', 'windowshosts/status', teamNamespace), 'reported on the team’s host');
    assert.ok(
      !requests.some((e) => e.objectRef?.resource === 'secrets' && e.objectRef.namespace === apps),
      'the operator reads no pull secret: the webhook does',
    );
    for (const ns of [...hostNamespaces, 'default'])
      assert.ok(did('list', 'events', ns), `listed Events in ${ns} for the dashboard`);
  });

  await t.test('the ServiceAccount cannot do what winfleet never needs', async () => {
    const as = sa.kc;
    const saCore = as.makeApiClient(k8s.CoreV1Api);
    const saRbac = as.makeApiClient(k8s.RbacAuthorizationV1Api);
    const saAdmission = as.makeApiClient(k8s.AdmissionregistrationV1Api);
    const other = await testNamespace(kc, 'rbac-other');
    const secretNamespaces = ['default', 'kube-system', other];
    for (const ns of secretNamespaces)
      await core.createNamespacedSecret({
        namespace: ns,
        body: { metadata: { name: 'private' }, stringData: { password: 'not-for-winfleet' } },
      });
    const foreign = {
      metadata: { name: 'not-winfleet' },
      webhooks: [
        {
          name: 'not-winfleet.example.com',
          clientConfig: { url: 'https://127.0.0.1:1/never' },
          rules: [
            {
              apiGroups: ['example.com'],
              apiVersions: ['v1'],
              operations: ['CREATE' as const],
              resources: ['nothing'],
            },
          ],
          failurePolicy: 'Ignore',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    };
    const admission = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
    await admission.createMutatingWebhookConfiguration({ body: foreign });
    await admission.createValidatingWebhookConfiguration({ body: foreign });
    const ownClusterRoles = (
      await kc.makeApiClient(k8s.RbacAuthorizationV1Api).listClusterRoleBinding()
    ).items
      .filter((b) =>
        b.subjects?.some(
          (s) =>
            s.kind === 'ServiceAccount' &&
            s.name === chartServiceAccount &&
            s.namespace === namespace,
        ),
      )
      .map((b) => b.roleRef.name);
    assert.ok(ownClusterRoles.length > 0, 'the chart binds the ServiceAccount to a ClusterRole');
    // An Event the dashboard may list but the operator must never delete.
    const event = await core.createNamespacedEvent({
      namespace,
      body: {
        metadata: { generateName: 'rbac-e2e.' },
        involvedObject: { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', namespace },
        type: 'Normal',
        reason: 'RbacTestKeep',
        message: 'not for winfleet to delete',
        source: { component: 'rbac-e2e' },
      },
    });
    const podBody = {
      metadata: { name: 'sneaky' },
      spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
    };
    const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
    const saObjects = k8s.KubernetesObjectApi.makeApiClient(as);
    const saApply = (o: k8s.V1Role | k8s.V1RoleBinding | k8s.V1ClusterRoleBinding) =>
      saObjects.patch(
        o,
        undefined,
        undefined,
        'rbac-test',
        true,
        k8s.PatchStrategy.ServerSideApply,
      );
    const bindAdmin = (kind: 'RoleBinding' | 'ClusterRoleBinding') => ({
      metadata: { name: 'winfleet-escalated', namespace },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'cluster-admin',
      },
      subjects: [{ kind: 'ServiceAccount', name: chartServiceAccount, namespace, apiGroup: '' }],
      kind,
    });
    // The dashboard lists Events when a detail is opened; it never watches or deletes them,
    // and never reads them outside the hosts' namespaces and default.
    const eventFieldSelector = 'involvedObject.kind=WindowsHost,involvedObject.name=x';
    const attempts: [string, () => Promise<unknown>][] = [
      ...[namespace, 'default'].map((ns): [string, () => Promise<unknown>] => [
        `watch events in ${ns}`,
        () =>
          saCore.listNamespacedEvent({
            namespace: ns,
            fieldSelector: eventFieldSelector,
            watch: true,
            timeoutSeconds: 1,
          }),
      ]),
      [
        `delete event ${namespace}/${event.metadata!.name}`,
        () => saCore.deleteNamespacedEvent({ namespace, name: event.metadata!.name! }),
      ],
      [
        `delete all events in ${namespace}`,
        () => saCore.deleteCollectionNamespacedEvent({ namespace }),
      ],
      [
        'list events in every namespace',
        () => saCore.listEventForAllNamespaces({ fieldSelector: eventFieldSelector, limit: 1 }),
      ],
      [
        `list events in ${other}`,
        () => saCore.listNamespacedEvent({ namespace: other, fieldSelector: eventFieldSelector }),
      ],
      ...secretNamespaces.flatMap((ns): [string, () => Promise<unknown>][] => [
        [`list secrets in ${ns}`, () => saCore.listNamespacedSecret({ namespace: ns })],
        [
          `get secret ${ns}/private`,
          () => saCore.readNamespacedSecret({ namespace: ns, name: 'private' }),
        ],
      ]),
      [
        `create a pod in ${namespace}`,
        () => saCore.createNamespacedPod({ namespace, body: podBody }),
      ],
      [
        `create a pod in ${other}`,
        () => saCore.createNamespacedPod({ namespace: other, body: podBody }),
      ],
      [
        `bind cluster-admin in ${namespace} (RoleBinding)`,
        () => saRbac.createNamespacedRoleBinding({ namespace, body: bindAdmin('RoleBinding') }),
      ],
      [
        'bind cluster-admin (ClusterRoleBinding)',
        () => saRbac.createClusterRoleBinding({ body: bindAdmin('ClusterRoleBinding') }),
      ],
      [
        `create a Role in ${namespace} granting more than it has`,
        () =>
          saRbac.createNamespacedRole({
            namespace,
            body: {
              metadata: { name: 'winfleet-more' },
              rules: [{ apiGroups: [''], resources: ['pods', 'secrets'], verbs: ['*'] }],
            },
          }),
      ],
      // The one Role and RoleBinding it may write (by name): not with more than it holds,
      // and not bound to another role.
      [
        `apply Role ${namespace}/${nodeManifestsRbac} granting more than it has`,
        () =>
          saApply({
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'Role',
            metadata: { name: nodeManifestsRbac, namespace },
            rules: [{ apiGroups: [''], resources: ['secrets', 'pods'], verbs: ['get', 'create'] }],
          }),
      ],
      [
        `apply RoleBinding ${namespace}/${nodeManifestsRbac} to cluster-admin`,
        () =>
          saApply({
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'RoleBinding',
            metadata: { name: nodeManifestsRbac, namespace },
            roleRef: {
              apiGroup: 'rbac.authorization.k8s.io',
              kind: 'ClusterRole',
              name: 'cluster-admin',
            },
            subjects: [{ kind: 'ServiceAccount', name: chartServiceAccount, namespace }],
          }),
      ],
      // The one ClusterRoleBinding it may write (by name, for flanneld's Node reads): not to
      // another role, and no other binding.
      [
        'apply ClusterRoleBinding winfleet:flanneld-node-reader to cluster-admin',
        () =>
          saApply({
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRoleBinding',
            metadata: { name: 'winfleet:flanneld-node-reader' },
            roleRef: {
              apiGroup: 'rbac.authorization.k8s.io',
              kind: 'ClusterRole',
              name: 'cluster-admin',
            },
            subjects: [{ kind: 'ServiceAccount', name: chartServiceAccount, namespace }],
          }),
      ],
      [
        'apply ClusterRoleBinding winfleet:kube-proxies with the ServiceAccount added',
        () =>
          saApply({
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRoleBinding',
            metadata: { name: 'winfleet:kube-proxies' },
            roleRef: {
              apiGroup: 'rbac.authorization.k8s.io',
              kind: 'ClusterRole',
              name: 'system:node-proxier',
            },
            subjects: [{ kind: 'ServiceAccount', name: chartServiceAccount, namespace }],
          }),
      ],
      // kube-public: cluster-info only.
      [
        'update kube-public/kube-root-ca.crt',
        () =>
          saCore.patchNamespacedConfigMap(
            { namespace: 'kube-public', name: 'kube-root-ca.crt', body: { data: { x: 'y' } } },
            mergePatch,
          ),
      ],
      [
        'get kube-public/kube-root-ca.crt',
        () =>
          saCore.readNamespacedConfigMap({ namespace: 'kube-public', name: 'kube-root-ca.crt' }),
      ],
      [
        'delete kube-public/cluster-info',
        () => saCore.deleteNamespacedConfigMap({ namespace: 'kube-public', name: 'cluster-info' }),
      ],
      [
        'create a Role in kube-public',
        () =>
          saRbac.createNamespacedRole({
            namespace: 'kube-public',
            body: {
              metadata: { name: 'winfleet-more' },
              rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
            },
          }),
      ],
      [
        'create a ClusterRole granting everything',
        () =>
          saRbac.createClusterRole({
            body: {
              metadata: { name: 'winfleet-more' },
              rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
            },
          }),
      ],
      ...ownClusterRoles.map((name): [string, () => Promise<unknown>] => [
        `add a rule to its own ClusterRole ${name}`,
        () =>
          saRbac.patchClusterRole(
            {
              name,
              body: {
                rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
              },
            },
            mergePatch,
          ),
      ]),
      [
        'patch a MutatingWebhookConfiguration that is not winfleet’s',
        () =>
          saAdmission.patchMutatingWebhookConfiguration(
            { name: 'not-winfleet', body: { metadata: { labels: { touched: 'yes' } } } },
            mergePatch,
          ),
      ],
      [
        'delete a MutatingWebhookConfiguration that is not winfleet’s',
        () => saAdmission.deleteMutatingWebhookConfiguration({ name: 'not-winfleet' }),
      ],
      [
        'patch a ValidatingWebhookConfiguration that is not winfleet’s',
        () =>
          saAdmission.patchValidatingWebhookConfiguration(
            { name: 'not-winfleet', body: { metadata: { labels: { touched: 'yes' } } } },
            mergePatch,
          ),
      ],
      [
        'delete a ValidatingWebhookConfiguration that is not winfleet’s',
        () => saAdmission.deleteValidatingWebhookConfiguration({ name: 'not-winfleet' }),
      ],
      [
        'create a MutatingWebhookConfiguration',
        () =>
          saAdmission.createMutatingWebhookConfiguration({
            body: { ...foreign, metadata: { name: 'winfleet-new' } },
          }),
      ],
      [
        'create a ValidatingWebhookConfiguration',
        () =>
          saAdmission.createValidatingWebhookConfiguration({
            body: { ...foreign, metadata: { name: 'winfleet-new' } },
          }),
      ],
    ];
    // The webhook's ServiceAccount: no Secret (but by name in the opted-in namespace), no CSR,
    // no webhook configuration, no Node write, no bootstrap token.
    const wh = webhookSa.kc;
    const whCore = wh.makeApiClient(k8s.CoreV1Api);
    const whCsr = wh.makeApiClient(k8s.CertificatesV1Api);
    const whAdmission = wh.makeApiClient(k8s.AdmissionregistrationV1Api);
    const csrBody = {
      metadata: { name: 'webhook-escalation' },
      spec: {
        request: Buffer.from(
          await createCsrPem(
            { commonName: 'x', organizations: ['kubeadm:cluster-admins'] },
            await generateKeyPair(),
          ),
        ).toString('base64'),
        signerName: 'kubernetes.io/kube-apiserver-client',
        usages: ['digital signature' as const, 'key encipherment' as const, 'client auth' as const],
      },
    };
    attempts.push(
      ...[namespace, 'kube-system', 'default', apps].map((ns): [string, () => Promise<unknown>] => [
        `webhook: list secrets in ${ns}`,
        () => whCore.listNamespacedSecret({ namespace: ns }),
      ]),
      [
        `webhook: get the webhook certificate Secret ${namespace}/winfleet-webhook-tls`,
        () => whCore.readNamespacedSecret({ namespace, name: 'winfleet-webhook-tls' }),
      ],
      [
        `webhook: get secret ${other}/private`,
        () => whCore.readNamespacedSecret({ namespace: other, name: 'private' }),
      ],
      [
        'webhook: create a bootstrap token Secret in kube-system',
        () =>
          whCore.createNamespacedSecret({
            namespace: 'kube-system',
            body: {
              metadata: { name: 'bootstrap-token-abcdef' },
              type: 'bootstrap.kubernetes.io/token',
              stringData: { 'token-id': 'abcdef', 'token-secret': '0123456789abcdef' },
            },
          }),
      ],
      [
        'webhook: create a kube-apiserver-client CSR for kubeadm:cluster-admins',
        () => whCsr.createCertificateSigningRequest({ body: csrBody }),
      ],
      ['webhook: list CSRs', () => whCsr.listCertificateSigningRequest()],
      [
        'webhook: patch winfleet’s MutatingWebhookConfiguration',
        () =>
          whAdmission.patchMutatingWebhookConfiguration(
            { name: 'winfleet-pods', body: { metadata: { labels: { touched: 'yes' } } } },
            mergePatch,
          ),
      ],
      [
        'webhook: patch a Node',
        () =>
          whCore.patchNode(
            { name: world.fleet.hosts[0]!.name, body: { metadata: { labels: { x: 'y' } } } },
            mergePatch,
          ),
      ],
      [
        `webhook: create an Event in ${namespace}`,
        () =>
          whCore.createNamespacedEvent({
            namespace,
            body: {
              metadata: { generateName: 'webhook.' },
              involvedObject: { kind: 'ConfigMap', name: 'x', namespace },
            },
          }),
      ],
    );
    const allowed: string[] = [];
    for (const [what, request] of attempts) {
      const code = await statusOf(request());
      t.diagnostic(`${what}: ${code === 0 ? 'ALLOWED' : code}`);
      if (code !== 403) allowed.push(`${what}: ${code === 0 ? 'allowed' : `answered ${code}`}`);
    }
    assert.deepEqual(allowed, [], 'each attempt is answered 403 Forbidden');
    // The foreign configurations are untouched.
    const mutating = await admission.readMutatingWebhookConfiguration({ name: 'not-winfleet' });
    assert.equal(mutating.metadata?.labels?.touched, undefined);
    await core.readNamespacedEvent({ namespace, name: event.metadata!.name! });
    // The audit log counted every refusal: the counter the cycle relies on is real.
    const audit = await auditLogUpTo(auditLog, sa.kc);
    const refused = [
      ...forbiddenRequests(requestsBy(audit, sa.username)),
      ...forbiddenRequests(requestsBy(audit, webhookSa.username)),
    ];
    assert.ok(
      refused.length >= attempts.length,
      `the audit log holds ${refused.length} 403s for ${attempts.length} refused attempts`,
    );
    await admission.deleteMutatingWebhookConfiguration({ name: 'not-winfleet' });
    await admission.deleteValidatingWebhookConfiguration({ name: 'not-winfleet' });
  });

  await t.test(
    'helm upgrade keeps every WindowsHost; helm uninstall leaves no webhook behind',
    async () => {
      // Objects only: the operator is stopped, so nothing joins them.
      const kept = [0, 1, 2].map((i) =>
        windowsHostFor({ name: `kept-${i}`, address: `192.0.2.${10 + i}`, port: 22 }, namespace),
      );
      for (const host of kept) await objects.create(host);
      const snapshot = async () =>
        new Map(
          (await listWindowsHosts(kc, namespace)).map((h) => [
            h.metadata.name,
            { uid: h.metadata.uid, spec: h.spec },
          ]),
        );
      const before = await snapshot();
      for (const host of kept) assert.ok(before.has(host.metadata.name), host.metadata.name);
      const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
      const crdUid = (await ext.readCustomResourceDefinition({ name: crdName })).metadata?.uid;

      // "The previous version" is the chart as committed (0.1.0, the first one); the next is a
      // copy with its version bumped and changed values.
      const nextChart = join(cluster.dir, 'winfleet-next');
      await cp(chartDir, nextChart, { recursive: true });
      const chartYaml = parse(await readFile(join(nextChart, 'Chart.yaml'), 'utf8')) as {
        version: string;
      };
      const previousVersion = chartYaml.version;
      chartYaml.version = bumpPatch(previousVersion);
      await writeFile(join(nextChart, 'Chart.yaml'), stringify(chartYaml));
      t.diagnostic(`helm upgrade ${previousVersion} → ${chartYaml.version}`);
      const changed = {
        ...values,
        config: { hosts: { agentCheckIntervalSeconds: 2, joinTimeoutSeconds: 300 } },
      };
      await helmInstall({ ...release, chart: nextChart, values: changed }, 'upgrade');
      assert.deepEqual(await snapshot(), before, 'every WindowsHost kept (uid and spec)');

      await helmInstall(
        { ...release, chart: nextChart, values: { ...changed, crds: { install: false } } },
        'upgrade',
      );
      assert.equal(
        (await ext.readCustomResourceDefinition({ name: crdName })).metadata?.uid,
        crdUid,
        'crds.install=false leaves the CRD in place (keep policy)',
      );
      assert.deepEqual(await snapshot(), before, 'every WindowsHost kept after crds.install=false');

      await helmUninstall(release);
      const admission = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
      const leftovers = [
        ...(await admission.listMutatingWebhookConfiguration()).items,
        ...(await admission.listValidatingWebhookConfiguration()).items,
      ]
        .filter(
          (c) =>
            c.metadata?.name?.includes(releaseName) ||
            c.webhooks?.some(
              (w) =>
                w.clientConfig.url?.includes(`127.0.0.1:${webhookPort}`) ||
                w.clientConfig.service?.namespace === namespace,
            ),
        )
        .map((c) => c.metadata?.name);
      assert.deepEqual(leftovers, [], 'no winfleet webhook configuration after helm uninstall');
      assert.equal(
        (await ext.readCustomResourceDefinition({ name: crdName })).metadata?.uid,
        crdUid,
        'the CRD is kept',
      );
      assert.deepEqual(await snapshot(), before, 'every WindowsHost kept after helm uninstall');
      const sas = await core.listNamespacedServiceAccount({ namespace });
      assert.ok(
        !sas.items.some((s) => s.metadata?.name === chartServiceAccount),
        'the ServiceAccount is gone',
      );

      // Pods are admitted as before: a Linux one and a Windows-looking one.
      const apps = await testNamespace(kc, 'after-uninstall');
      await core.createNamespacedPod({
        namespace: apps,
        body: {
          metadata: { name: 'linux' },
          spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
        },
      });
      await core.createNamespacedPod({
        namespace: apps,
        body: {
          metadata: { name: 'windows' },
          spec: {
            nodeSelector: { 'kubernetes.io/os': 'windows' },
            tolerations: [windowsToleration],
            containers: [{ name: 'c', image: windowsImage }],
          },
        },
      });
      const names = (await core.listNamespacedPod({ namespace: apps })).items.map(
        (p) => p.metadata?.name,
      );
      assert.deepEqual(names.sort(), ['linux', 'windows']);
      // The removed ServiceAccount's token gets nothing: 401 once the API server's token
      // cache forgets it, 403 (no RBAC left) until then.
      const after = await statusOf(sa.kc.makeApiClient(k8s.CoreV1Api).listNode());
      assert.ok(after === 401 || after === 403, `listing nodes with the old token: ${after}`);
    },
  );
});

/** 0.1.0 → 0.1.1 */
function bumpPatch(version: string): string {
  const match = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  assert.ok(match, `Chart.yaml version ${version} is not MAJOR.MINOR.PATCH`);
  return `${match[1]}.${match[2]}.${Number(match[3]) + 1}`;
}

/** Runs `wait`; on failure, adds the operator log's tail to the error. */
async function withOperatorLog<T>(wait: () => Promise<T>, tail: () => Promise<string>): Promise<T> {
  try {
    return await wait();
  } catch (error) {
    (error as Error).message += await tail();
    throw error;
  }
}

/**
 * The chart's workload as rendered: lint, the objects of a default install, the restricted pod
 * security, probes, the operator's command line (the contract the chart e2e runs the operator
 * with), payload mounts, the optional ServiceMonitor and the NetworkPolicy.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { parse } from 'yaml';
import { runHelm } from '../../../sim/testkit/helm.ts';
import {
  chartDir,
  type K8sObject,
  namespace,
  only,
  operatorContainer,
  render,
  renderError,
} from './render.ts';

test('helm lint --strict passes with the default values and with every option on', async () => {
  const { stdout } = await runHelm(['lint', '--strict', chartDir]);
  assert.match(stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  const all = await runHelm(
    [
      'lint',
      '--strict',
      chartDir,
      '--set',
      'webhook.certManager.enabled=true,metrics.serviceMonitor.enabled=true',
      '--set',
      'payload.source=persistentVolumeClaim,payload.persistentVolumeClaim.claimName=payload',
      '--set',
      'webhook.pullSecretNamespaces={apps},config.hosts.namespaces={team-a}',
    ],
    {},
  );
  assert.match(all.stdout, /0 chart\(s\) failed/);
});

test('Chart.yaml: apiVersion v2, appVersion is package.json’s version, a kubeVersion range', async () => {
  const chart = parse(await readFile(`${chartDir}/Chart.yaml`, 'utf8'));
  const pkg = JSON.parse(await readFile(new URL('../../../package.json', import.meta.url), 'utf8'));
  assert.equal(chart.apiVersion, 'v2');
  assert.equal(chart.appVersion, pkg.version);
  assert.match(chart.version, /^\d+\.\d+\.\d+$/);
  assert.equal(chart.kubeVersion, '>=1.30.0-0');
});

test('a default install renders each object once, in the release namespace', async () => {
  const objects = await render();
  const names = objects.map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`);
  assert.deepEqual(
    names.sort(),
    [
      'ClusterRole//winfleet',
      'ClusterRole//winfleet:flanneld-node-reader',
      'ClusterRoleBinding//winfleet',
      'ClusterRoleBinding//winfleet:kube-proxies',
      'ClusterRoleBinding//winfleet:node-bootstrapper',
      `ConfigMap/${namespace}/winfleet-config`,
      'CustomResourceDefinition//windowshosts.winfleet.io',
      'CustomResourceDefinition//windowsnodepools.winfleet.io',
      `Deployment/${namespace}/winfleet`,
      'MutatingWebhookConfiguration//winfleet-pods',
      `NetworkPolicy/${namespace}/winfleet`,
      `PodDisruptionBudget/${namespace}/winfleet`,
      `Role/${namespace}/winfleet`,
      'Role/default/winfleet-events',
      'Role/kube-system/winfleet-bootstrap-tokens',
      'Role/kube-public/winfleet-cluster-info',
      'Role/kube-public/winfleet:cluster-info-reader',
      `RoleBinding/${namespace}/winfleet`,
      'RoleBinding/default/winfleet-events',
      'RoleBinding/kube-system/winfleet-bootstrap-tokens',
      'RoleBinding/kube-public/winfleet-cluster-info',
      'RoleBinding/kube-public/winfleet:cluster-info-reader',
      `Service/${namespace}/winfleet`,
      `ServiceAccount/${namespace}/winfleet`,
      'ValidatingWebhookConfiguration//winfleet-pods',
      // The webhook's own Deployment, ServiceAccount and RBAC.
      'ClusterRole//winfleet-webhook',
      'ClusterRoleBinding//winfleet-webhook',
      `Deployment/${namespace}/winfleet-webhook`,
      `NetworkPolicy/${namespace}/winfleet-webhook`,
      `PodDisruptionBudget/${namespace}/winfleet-webhook`,
      `Role/${namespace}/winfleet-webhook`,
      `RoleBinding/${namespace}/winfleet-webhook`,
      `Service/${namespace}/winfleet-webhook`,
      `ServiceAccount/${namespace}/winfleet-webhook`,
    ].sort(),
  );
  for (const o of objects) {
    assert.equal(o.metadata.labels?.['app.kubernetes.io/instance'], 'winfleet', `${o.kind} labels`);
  }
});

test('the Deployment: 2 replicas, Linux nodes, soft anti-affinity, the ServiceAccount, a grace period', async () => {
  const objects = await render();
  const deployment = only(objects, 'Deployment', 'winfleet');
  const pod = deployment.spec.template.spec;
  assert.equal(deployment.spec.replicas, 2);
  assert.deepEqual(pod.nodeSelector, { 'kubernetes.io/os': 'linux' });
  assert.equal(pod.serviceAccountName, 'winfleet');
  assert.equal(only(objects, 'ServiceAccount', 'winfleet').metadata.name, 'winfleet');
  assert.equal(pod.terminationGracePeriodSeconds, 30);
  const soft = pod.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution;
  assert.equal(soft[0].podAffinityTerm.topologyKey, 'kubernetes.io/hostname');
  assert.equal(
    pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution,
    undefined,
  );
  assert.ok(operatorContainer(objects).resources.requests.memory);
  const pdb = only(objects, 'PodDisruptionBudget', 'winfleet');
  assert.equal(pdb.spec.maxUnavailable, 1);
  assert.deepEqual(pdb.spec.selector.matchLabels, deployment.spec.selector.matchLabels);
});

test('restricted Pod Security: non-root 65532, RuntimeDefault seccomp, no privilege escalation, no capabilities, read-only root, /tmp an emptyDir', async () => {
  const objects = await render();
  const pod = only(objects, 'Deployment', 'winfleet').spec.template.spec;
  const container = operatorContainer(objects);
  assert.equal(pod.securityContext.runAsNonRoot, true);
  assert.equal(pod.securityContext.runAsUser, 65532);
  assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault');
  const sc = container.securityContext;
  assert.equal(sc.runAsNonRoot, true);
  assert.equal(sc.runAsUser, 65532);
  assert.equal(sc.allowPrivilegeEscalation, false);
  assert.deepEqual(sc.capabilities, { drop: ['ALL'] });
  assert.equal(sc.readOnlyRootFilesystem, true);
  assert.equal(sc.seccompProfile.type, 'RuntimeDefault');
  assert.equal(sc.privileged, undefined);
  assert.deepEqual(container.volumeMounts, [{ name: 'tmp', mountPath: '/tmp' }]);
  assert.deepEqual(pod.volumes, [{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }]);
  for (const field of ['hostNetwork', 'hostPID', 'hostIPC']) assert.equal(pod[field], undefined);
});

test('probes: liveness /healthz and readiness /readyz on the status port, which listens on all addresses', async () => {
  const container = operatorContainer(await render());
  const status = container.ports.find((p: { name: string }) => p.name === 'status');
  assert.equal(status.containerPort, 8080);
  assert.deepEqual(container.livenessProbe.httpGet, { path: '/healthz', port: 'status' });
  assert.deepEqual(container.readinessProbe.httpGet, { path: '/readyz', port: 'status' });
  assert.deepEqual(container.startupProbe.httpGet, { path: '/healthz', port: 'status' });
  assert.ok(container.args.includes('--status-host=0.0.0.0'));
  assert.ok(container.args.includes('--status-port=8080'));
});

test('the operator’s command line: its namespace, nothing it may not create, the webhook through the Service', async () => {
  const container = operatorContainer(await render());
  assert.equal(container.command, undefined, 'the image’s entrypoint is the operator');
  assert.deepEqual(container.args, [
    `--namespace=${namespace}`,
    '--no-create-namespace',
    '--no-install-crds',
    '--no-cluster-bindings',
    '--status-host=0.0.0.0',
    '--status-port=8080',
    '--dashboard-port=8081',
    '--mode=controllers',
    `--webhook-service=${namespace}/winfleet-webhook:443`,
    '--webhook-configurations=patch',
    '--no-pull-secrets',
  ]);
  assert.deepEqual(container.env, [{ name: 'WINFLEET_LOG_LEVEL', value: 'info' }]);
});

test('the webhook’s command line: its own mode, its certificate from the mounted Secret, V8’s default young generation', async () => {
  const objects = await render({ webhook: { pullSecretNamespaces: ['apps'] } });
  const pod = only(objects, 'Deployment', 'winfleet-webhook').spec.template.spec;
  const [container] = pod.containers;
  assert.equal(pod.containers.length, 1);
  // Tuned for latency: the image's entrypoint without --max-semi-space-size=2.
  assert.deepEqual(container.command, ['/nodejs/bin/node', '/app/winfleet-operator.cjs']);
  assert.deepEqual(container.args, [
    '--mode=webhook',
    `--namespace=${namespace}`,
    '--webhook-port=9443',
    '--tls-cert-file=/var/run/winfleet/webhook-tls/tls.crt',
    '--tls-key-file=/var/run/winfleet/webhook-tls/tls.key',
    '--status-host=0.0.0.0',
    '--status-port=8080',
    '--pull-secret-namespace=apps',
  ]);
  assert.deepEqual(
    container.volumeMounts.find((m: { name: string }) => m.name === 'webhook-tls'),
    { name: 'webhook-tls', mountPath: '/var/run/winfleet/webhook-tls', readOnly: true },
  );
  assert.equal(container.securityContext.readOnlyRootFilesystem, true);
  const service = only(objects, 'Service', 'winfleet-webhook');
  assert.deepEqual(service.spec.ports, [
    { name: 'webhook', port: 443, targetPort: 'webhook', protocol: 'TCP' },
    { name: 'metrics', port: 8080, targetPort: 'status', protocol: 'TCP' },
  ]);
  const webhook = only(objects, 'Deployment', 'winfleet-webhook');
  assert.deepEqual(service.spec.selector, webhook.spec.selector.matchLabels);
  // The two Deployments never select each other's pods.
  const operator = only(objects, 'Deployment', 'winfleet');
  const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
    Object.entries(selector).every(([k, v]) => labels[k] === v);
  assert.ok(!matches(operator.spec.selector.matchLabels, webhook.spec.template.metadata.labels));
  assert.ok(!matches(webhook.spec.selector.matchLabels, operator.spec.template.metadata.labels));
  assert.equal(
    (await render({ webhook: { enabled: false } })).filter(
      (o) => o.metadata.name === 'winfleet-webhook',
    ).length,
    0,
  );
});

test('the command line follows the values: webhook URL, no leader election, pull secret namespaces, no webhook', async () => {
  const url = 'https://127.0.0.1:9443';
  const args = (objects: K8sObject[]) => operatorContainer(objects).args as string[];
  const withUrl = args(await render({ webhook: { url } }));
  assert.ok(withUrl.includes(`--webhook-url=${url}`));
  assert.ok(!withUrl.some((a) => a.startsWith('--webhook-service')));
  const single = args(await render({ replicaCount: 1, leaderElection: { enabled: false } }));
  assert.ok(single.includes('--no-leader-elect'));
  // Pull secrets are the webhook's to read, never the operator's.
  const pulls = args(await render({ webhook: { pullSecretNamespaces: ['apps', 'web'] } }));
  assert.ok(!pulls.some((a) => a.startsWith('--pull-secret-namespace')));
  assert.ok(pulls.includes('--no-pull-secrets'));
  const off = await render({ webhook: { enabled: false } });
  assert.ok(args(off).includes('--no-webhook'));
  assert.ok(!args(off).some((a) => a.startsWith('--webhook-')));
  assert.equal(off.filter((o) => o.kind.endsWith('WebhookConfiguration')).length, 0);
  assert.deepEqual(
    only(off, 'Service', 'winfleet').spec.ports.map((p: { name: string }) => p.name),
    ['metrics'],
  );
});

test('leader election off with two replicas is refused, naming both keys', async () => {
  const error = await renderError({ leaderElection: { enabled: false } });
  assert.match(error, /leaderElection\.enabled=false needs replicaCount: 1/);
});

test('the Service: metrics to the operator’s status port (the webhook has its own Service)', async () => {
  const objects = await render();
  const service = only(objects, 'Service', 'winfleet');
  assert.deepEqual(service.spec.ports, [
    { name: 'metrics', port: 8080, targetPort: 'status', protocol: 'TCP' },
  ]);
  assert.equal(
    operatorContainer(objects).ports.find((p: { name: string }) => p.name === 'webhook'),
    undefined,
  );
  assert.deepEqual(
    service.spec.selector,
    only(objects, 'Deployment', 'winfleet').spec.selector.matchLabels,
  );
});

test('the image: repository:appVersion, or the digest when given', async () => {
  assert.equal(operatorContainer(await render()).image, 'winfleet-operator:0.1.0');
  const digest = `sha256:${'a'.repeat(64)}`;
  const pinned = operatorContainer(
    await render({ image: { repository: 'registry.example/winfleet', tag: 'x', digest } }),
  );
  assert.equal(pinned.image, `registry.example/winfleet@${digest}`);
});

test('payload: an image volume or a PVC mounted read-only at --payload-dir; none by default', async () => {
  const mounted = async (values: Record<string, unknown>) => {
    const objects = await render({ payload: values });
    const pod = only(objects, 'Deployment', 'winfleet').spec.template.spec;
    const container = operatorContainer(objects);
    return {
      volume: pod.volumes.find((v: { name: string }) => v.name === 'payload'),
      mount: container.volumeMounts.find((m: { name: string }) => m.name === 'payload'),
      args: container.args as string[],
    };
  };
  const none = await mounted({});
  assert.equal(none.volume, undefined);
  assert.ok(!none.args.some((a) => a.startsWith('--payload-dir')));
  const image = await mounted({
    source: 'image',
    image: { reference: 'registry.example/winfleet-payload:1.36.5' },
  });
  assert.deepEqual(image.volume, {
    name: 'payload',
    image: { reference: 'registry.example/winfleet-payload:1.36.5', pullPolicy: 'IfNotPresent' },
  });
  assert.deepEqual(image.mount, { name: 'payload', mountPath: '/payload', readOnly: true });
  assert.ok(image.args.includes('--payload-dir=/payload'));
  const pvc = await mounted({
    source: 'persistentVolumeClaim',
    persistentVolumeClaim: { claimName: 'winfleet-payload' },
    mountPath: '/data/payload',
  });
  assert.deepEqual(pvc.volume.persistentVolumeClaim, {
    claimName: 'winfleet-payload',
    readOnly: true,
  });
  assert.ok(pvc.args.includes('--payload-dir=/data/payload'));
  assert.match(
    await renderError({ payload: { source: 'persistentVolumeClaim' } }),
    /payload\.persistentVolumeClaim\.claimName/,
  );
});

test('payload: a registry artifact by digest, a cache emptyDir, and the pull secret; a tag alone is refused', async () => {
  const reference = `registry.example/winfleet/payload:1.36.5-wf.1@sha256:${'b'.repeat(64)}`;
  const objects = await render({
    payload: { source: 'registry', registry: { reference, pullSecret: 'payload-pull' } },
  });
  const pod = only(objects, 'Deployment', 'winfleet').spec.template.spec;
  const container = operatorContainer(objects);
  const args = container.args as string[];
  assert.ok(args.includes(`--payload-image=${reference}`), args.join(' '));
  assert.ok(args.includes('--payload-pull-secret=payload-pull'));
  assert.ok(args.includes('--payload-cache-dir=/var/cache/winfleet-payload'));
  assert.ok(!args.some((a) => a.startsWith('--payload-dir')), 'not both');
  assert.deepEqual(
    pod.volumes.find((v: { name: string }) => v.name === 'payload-cache'),
    { name: 'payload-cache', emptyDir: { sizeLimit: '1Gi' } },
  );
  assert.deepEqual(
    container.volumeMounts.find((m: { name: string }) => m.name === 'payload-cache'),
    { name: 'payload-cache', mountPath: '/var/cache/winfleet-payload' },
  );
  assert.equal(
    pod.volumes.find((v: { name: string }) => v.name === 'payload'),
    undefined,
  );
  // Without a pull secret: anonymous pulls, no flag.
  const anonymous = operatorContainer(
    await render({ payload: { source: 'registry', registry: { reference } } }),
  );
  assert.ok(!(anonymous.args as string[]).some((a) => a.startsWith('--payload-pull-secret')));

  assert.match(
    await renderError({ payload: { source: 'registry' } }),
    /payload\.source=registry needs payload\.registry\.reference: registry\/repository@sha256:…, as winfleet payload push prints it/,
  );
  assert.match(
    await renderError({
      payload: {
        source: 'registry',
        registry: { reference: 'registry.example/winfleet/payload:1' },
      },
    }),
    /payload\.registry\.reference "registry\.example\/winfleet\/payload:1" names no sha256 digest; a tag can be moved, so give the payload by digest/,
  );
  assert.match(
    await renderError({
      payload: { source: 'none', registry: { pullSecret: 'payload-pull' } },
    }),
    /payload\.registry\.pullSecret is for payload\.source=registry/,
  );
});

test('the ServiceMonitor is rendered only when metrics.serviceMonitor.enabled', async () => {
  assert.equal((await render()).filter((o) => o.kind === 'ServiceMonitor').length, 0);
  const objects = await render({
    metrics: { serviceMonitor: { enabled: true, labels: { release: 'prom' } } },
  });
  const monitor = only(objects, 'ServiceMonitor');
  assert.equal(monitor.apiVersion, 'monitoring.coreos.com/v1');
  assert.equal(monitor.metadata.labels?.release, 'prom');
  assert.deepEqual(monitor.spec.endpoints, [
    { port: 'metrics', path: '/metrics', interval: '30s' },
  ]);
  // Both Services (the operator's and the webhook's) carry these labels.
  for (const name of ['winfleet', 'winfleet-webhook'])
    for (const [key, value] of Object.entries(monitor.spec.selector.matchLabels))
      assert.equal(only(objects, 'Service', name).metadata.labels?.[key], value, name);
});

test('the NetworkPolicies: the webhook port open to the API server wherever it is; the status port only to the monitoring namespace; egress only to DNS, API server, registries (and SSH for the operator)', async () => {
  const objects = await render();
  const policy = only(objects, 'NetworkPolicy', 'winfleet');
  const monitoring = [
    { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
  ];
  assert.deepEqual(policy.spec.policyTypes, ['Ingress', 'Egress']);
  // The attacker's side: a pod elsewhere gets no rule that lets it reach /metrics.
  assert.deepEqual(policy.spec.ingress, [
    { ports: [{ port: 'status', protocol: 'TCP' }], from: monitoring },
  ]);
  const egressPorts = (p: K8sObject) =>
    [
      ...new Set(
        p.spec.egress.flatMap((r: { ports: { port: number }[] }) => r.ports.map((x) => x.port)),
      ),
    ].sort();
  assert.deepEqual(egressPorts(policy), [22, 443, 53, 6443].sort());
  const webhook = only(objects, 'NetworkPolicy', 'winfleet-webhook');
  assert.deepEqual(webhook.spec.podSelector.matchLabels, {
    'app.kubernetes.io/name': 'winfleet-webhook',
    'app.kubernetes.io/instance': 'winfleet',
  });
  assert.deepEqual(webhook.spec.ingress, [
    { ports: [{ port: 'webhook', protocol: 'TCP' }] },
    { ports: [{ port: 'status', protocol: 'TCP' }], from: monitoring },
  ]);
  assert.deepEqual(egressPorts(webhook), [443, 53, 6443].sort(), 'no SSH from the webhook');
  // Every rule naming the status port has peers: none is open to every pod.
  for (const p of [policy, webhook])
    for (const rule of p.spec.ingress)
      if (rule.ports.some((x: { port: string }) => x.port === 'status'))
        assert.ok(rule.from?.length > 0, `${p.metadata.name}: status open to every pod`);
  const restricted = await render({
    networkPolicy: {
      statusFrom: [
        {
          namespaceSelector: { matchLabels: { name: 'obs' } },
          podSelector: { matchLabels: { app: 'prometheus' } },
        },
      ],
      egress: { hosts: { cidrs: ['10.1.0.0/16'], ports: [22, 2222] } },
    },
  });
  const operatorPolicy = only(restricted, 'NetworkPolicy', 'winfleet');
  assert.deepEqual(operatorPolicy.spec.ingress[0].from, [
    {
      namespaceSelector: { matchLabels: { name: 'obs' } },
      podSelector: { matchLabels: { app: 'prometheus' } },
    },
  ]);
  assert.ok(
    operatorPolicy.spec.egress.some(
      (r: { to?: { ipBlock: { cidr: string } }[]; ports: { port: number }[] }) =>
        r.to?.[0]?.ipBlock.cidr === '10.1.0.0/16' && r.ports.map((p) => p.port).includes(2222),
    ),
  );
  // No peers: the status port is closed to every pod (probes come from the node).
  const closed = await render({ networkPolicy: { statusFrom: [] } });
  assert.deepEqual(only(closed, 'NetworkPolicy', 'winfleet').spec.ingress, []);
  assert.deepEqual(only(closed, 'NetworkPolicy', 'winfleet-webhook').spec.ingress, [
    { ports: [{ port: 'webhook', protocol: 'TCP' }] },
  ]);
  assert.equal(
    (await render({ networkPolicy: { enabled: false } })).filter((o) => o.kind === 'NetworkPolicy')
      .length,
    0,
  );
});

test('the configuration ConfigMap holds config as config.yaml, with the webhook failure policy', async () => {
  const objects = await render({
    webhook: { failurePolicy: 'Fail' },
    config: {
      images: { compatibility: 'enforce' },
      hosts: { apiServer: 'https://k8s.example:6443' },
    },
  });
  const config = parse(only(objects, 'ConfigMap', 'winfleet-config').data['config.yaml']);
  assert.deepEqual(config, {
    images: { compatibility: 'enforce' },
    hosts: { apiServer: 'https://k8s.example:6443' },
    webhook: { validationFailurePolicy: 'Fail' },
  });
  assert.match(
    await renderError({ config: { webhook: { validationFailurePolicy: 'Fail' } } }),
    /config\.webhook\.validationFailurePolicy: set webhook\.failurePolicy=Fail instead/,
  );
});

test('changing config.hosts.namespaces rolls the pods (the operator reads it at start-up)', async () => {
  const annotation = async (namespaces: string[]) =>
    only(await render({ config: { hosts: { namespaces } } }), 'Deployment', 'winfleet').spec
      .template.metadata.annotations['winfleet.io/host-namespaces'];
  assert.equal(await annotation([]), await annotation([]));
  assert.notEqual(await annotation([]), await annotation(['team-a']));
});

test('the dashboard listens on the pod’s loopback only: no container port, no Service port; it can be turned off', async () => {
  const objects = await render();
  const container = operatorContainer(objects);
  assert.ok(container.args.includes('--dashboard-port=8081'));
  assert.ok(
    !container.args.some((a: string) => a.startsWith('--dashboard-host')),
    'the operator’s default, 127.0.0.1',
  );
  assert.ok(!container.ports.some((p: { containerPort: number }) => p.containerPort === 8081));
  for (const service of objects.filter((o) => o.kind === 'Service'))
    assert.ok(!service.spec.ports.some((p: { port: number }) => p.port === 8081));
  const off = operatorContainer(await render({ dashboard: { enabled: false } }));
  assert.ok(off.args.includes('--no-dashboard'));
  assert.ok(!off.args.some((a: string) => a.startsWith('--dashboard-port')));
  assert.match(
    await renderError({ dashboard: { port: 80 } }),
    /dashboard.port|minimum/,
    'a privileged port is refused by the values schema',
  );
});

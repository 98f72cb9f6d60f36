/**
 * The chart's RBAC as rendered, under every combination of options: no wildcard, no escalate,
 * bind or impersonate; Secrets only in the release namespace, kube-system (create and delete
 * only) and the namespaces the values opt in; webhook configurations only by name; every rule
 * has its row in the chart README's table.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { kubeProxyBindingName } from '../../../src/api/kube-proxy-identity.ts';
import {
  clusterInfoReaderRbac,
  joinClusterBindings,
  joinInfoRbacName,
  nodeManifestsRbacName,
} from '../../../src/controllers/hosts/cluster-rbac.ts';
import { networkReaderRules } from '../../../src/network/read-cluster-network.ts';
import { chartDir, type K8sObject, namespace, only, render } from './render.ts';

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
  nonResourceURLs?: string[];
}

/**
 * Each rule the ServiceAccount `account` gets (the operator's by default; the webhook's is
 * winfleet-webhook), with where it applies ("cluster" or a namespace).
 */
function grants(
  objects: K8sObject[],
  account = 'winfleet',
): { scope: string; role: string; rule: Rule }[] {
  const roles = objects.filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole');
  const bindings = objects.filter(
    (o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding',
  );
  const out: { scope: string; role: string; rule: Rule }[] = [];
  for (const binding of bindings) {
    const toOperator = (
      binding.subjects as { kind: string; name: string; namespace?: string }[]
    ).some((s) => s.kind === 'ServiceAccount' && s.name === account && s.namespace === namespace);
    if (!toOperator) continue;
    const role = roles.find(
      (r) =>
        r.kind === binding.roleRef.kind &&
        r.metadata.name === binding.roleRef.name &&
        (r.kind === 'ClusterRole' || r.metadata.namespace === binding.metadata.namespace),
    );
    assert.ok(
      role,
      `${binding.kind} ${binding.metadata.name} binds a role the chart does not render`,
    );
    const scope = binding.kind === 'ClusterRoleBinding' ? 'cluster' : binding.metadata.namespace!;
    for (const rule of role.rules as Rule[]) {
      out.push({ scope, role: `${role.kind}/${role.metadata.name}`, rule });
    }
  }
  return out;
}

const webhookAccount = 'winfleet-webhook';

const everything = {
  webhook: {
    pullSecretNamespaces: ['apps'],
  },
  config: { hosts: { namespaces: ['team-a', 'team-b'] } },
  metrics: { serviceMonitor: { enabled: true } },
};
const variants: [string, Record<string, unknown>][] = [
  ['defaults', {}],
  ['opt-in namespaces', everything],
  ['cert-manager', { webhook: { certManager: { enabled: true } } }],
  ['no webhook', { webhook: { enabled: false } }],
  ['one replica', { replicaCount: 1, leaderElection: { enabled: false } }],
];

test('no wildcard, no escalate/bind/impersonate, no non-resource URLs, in any variant', async () => {
  for (const [name, values] of variants) {
    const objects = await render(values);
    for (const { role, rule } of [...grants(objects), ...grants(objects, webhookAccount)]) {
      const where = `${name}: ${role} ${JSON.stringify(rule)}`;
      for (const list of [rule.apiGroups, rule.resources, rule.verbs, rule.resourceNames]) {
        assert.ok(!list?.includes('*'), `wildcard in ${where}`);
      }
      for (const verb of ['escalate', 'bind', 'impersonate']) {
        assert.ok(!rule.verbs.includes(verb), `${verb} in ${where}`);
      }
      assert.equal(rule.nonResourceURLs, undefined, where);
      assert.ok(rule.resources && rule.resources.length > 0, `no resources in ${where}`);
    }
  }
});

test('Secrets: read only in the release namespace and the opted-in ones; in kube-system create and delete only', async () => {
  for (const [name, values] of variants) {
    const allowed = new Set([
      namespace,
      'kube-system',
      ...(name === 'opt-in namespaces' ? ['team-a', 'team-b'] : []),
    ]);
    for (const { scope, rule } of grants(await render(values))) {
      if (!rule.resources?.includes('secrets')) continue;
      assert.notEqual(scope, 'cluster', `${name}: a cluster-wide rule on Secrets`);
      assert.ok(allowed.has(scope), `${name}: Secrets in ${scope}`);
      if (scope === 'kube-system') assert.deepEqual(rule.verbs, ['create', 'delete']);
    }
  }
  // By default nothing outside the release namespace and kube-system.
  const scopes = grants(await render())
    .filter((g) => g.rule.resources?.includes('secrets'))
    .map((g) => g.scope);
  assert.deepEqual([...new Set(scopes)].sort(), ['kube-system', namespace].sort());
});

test('no create on webhook configurations, and get/patch only on winfleet’s by name', async () => {
  for (const [name, values] of variants) {
    for (const { rule } of grants(await render(values))) {
      const webhooks = (rule.resources ?? []).filter((r) => r.endsWith('webhookconfigurations'));
      if (webhooks.length === 0) continue;
      assert.deepEqual(rule.resourceNames, ['winfleet-pods'], name);
      assert.deepEqual(rule.verbs, ['get', 'patch'], name);
    }
  }
  const certManager = grants(await render({ webhook: { certManager: { enabled: true } } }));
  assert.ok(
    !certManager.some((g) => g.rule.resources?.some((r) => r.endsWith('webhookconfigurations'))),
    'with cert-manager the CA injector keeps the caBundle: the operator needs no rule',
  );
});

test('cluster-wide rules are limited to what has no namespace or spans all of them', async () => {
  const clusterResources = grants(await render(everything))
    .filter((g) => g.scope === 'cluster')
    .flatMap((g) => g.rule.resources ?? []);
  assert.deepEqual([...new Set(clusterResources)].sort(), [
    'certificatesigningrequests',
    'certificatesigningrequests/approval',
    'clusterrolebindings',
    'configmaps',
    'cronjobs',
    'daemonsets',
    'deployments',
    'installations',
    'jobs',
    'mutatingwebhookconfigurations',
    'namespaces',
    'networks',
    'nodes',
    'pods',
    'pods/eviction',
    'replicasets',
    'runtimeclasses',
    'signers',
    'statefulsets',
    'subjectaccessreviews',
    'validatingwebhookconfigurations',
  ]);
  const signers = grants(await render()).find((g) => g.rule.resources?.includes('signers'));
  assert.deepEqual(signers?.rule.resourceNames, [
    'kubernetes.io/kube-apiserver-client',
    'kubernetes.io/kube-apiserver-client-kubelet',
    'kubernetes.io/kubelet-serving',
  ]);
  assert.deepEqual(signers?.rule.verbs, ['approve']);
  const pods = grants(await render()).find((g) => g.rule.resources?.includes('pods'));
  assert.deepEqual(pods?.rule.verbs, ['list'], 'pods are listed to drain, never created');
  // A pool migration reads workloads by name (their pods' owners), and writes none.
  for (const resource of ['replicasets', 'deployments', 'statefulsets', 'jobs', 'cronjobs'])
    assert.deepEqual(
      grants(await render())
        .filter((g) => g.rule.resources?.includes(resource))
        .map((g) => g.rule.verbs),
      [['get']],
      resource,
    );
});

test('roles and rolebindings: only the node-manifests and join-info pairs, by name, in the release namespace', async () => {
  const rules = grants(await render(everything)).filter(({ rule }) =>
    rule.resources?.some((r) => r === 'roles' || r === 'rolebindings'),
  );
  assert.equal(rules.length, 1);
  for (const { scope, rule } of rules) {
    assert.equal(scope, namespace);
    assert.deepEqual(rule.resourceNames, [nodeManifestsRbacName, joinInfoRbacName]);
    assert.deepEqual(rule.verbs, ['create', 'patch']);
  }
});

test('kube-public: create ConfigMaps, and only cluster-info watched and updated by name; anyone may get cluster-info, nothing else', async () => {
  for (const [name, values] of variants) {
    const objects = await render(values);
    const kubePublic = grants(objects).filter((g) => g.scope === 'kube-public');
    assert.deepEqual(
      kubePublic.map((g) => g.rule),
      [
        { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] },
        {
          apiGroups: [''],
          resources: ['configmaps'],
          resourceNames: ['cluster-info'],
          verbs: ['list', 'watch', 'update'],
        },
      ],
      name,
    );
    // The anonymous read Role the operator applies itself without the chart (cluster-rbac.ts).
    for (const expected of clusterInfoReaderRbac({})) {
      const rendered = only(objects, expected.kind!, expected.metadata!.name!);
      const { labels: _labels, ...metadata } = rendered.metadata;
      const { labels: _expectedLabels, ...expectedMetadata } = expected.metadata!;
      assert.deepEqual({ ...rendered, metadata }, { ...expected, metadata: expectedMetadata });
    }
  }
});

test('the opted-in namespaces get a Role each; the bootstrapper and kube-proxy bindings are the chart’s', async () => {
  const objects = await render(everything);
  for (const ns of ['team-a', 'team-b']) {
    const role = objects.find((o) => o.kind === 'Role' && o.metadata.namespace === ns);
    assert.equal(role?.metadata.name, 'winfleet-hosts', ns);
    assert.ok(objects.some((o) => o.kind === 'RoleBinding' && o.metadata.namespace === ns));
  }
  assert.ok(
    !grants(objects).some((g) => g.scope === 'apps'),
    'the pull secret namespaces are the webhook’s, not the operator’s',
  );
  const bootstrapper = only(objects, 'ClusterRoleBinding', 'winfleet:node-bootstrapper');
  assert.deepEqual(bootstrapper.roleRef.name, 'system:node-bootstrapper');
  assert.deepEqual(bootstrapper.subjects, [
    { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:bootstrappers:winfleet' },
  ]);
  // The same bindings the operator applies without the chart (cluster-rbac.ts).
  for (const expected of joinClusterBindings({})) {
    const rendered = only(objects, 'ClusterRoleBinding', expected.metadata!.name!);
    const { labels: _labels, ...metadata } = rendered.metadata;
    assert.deepEqual(
      { ...rendered, metadata },
      { ...expected, metadata: { name: expected.metadata!.name } },
    );
  }
  assert.ok(joinClusterBindings({}).some((b) => b.metadata?.name === kubeProxyBindingName));
});

test('leases only with leader election; the operator’s webhook Secret rules only without cert-manager', async () => {
  const has = (objects: K8sObject[], resource: string, verb: string) =>
    grants(objects).some(
      (g) => g.rule.resources?.includes(resource) && g.rule.verbs.includes(verb),
    );
  assert.ok(has(await render(), 'leases', 'update'));
  assert.ok(!has(await render(variants[4]![1]), 'leases', 'update'));
  assert.ok(has(await render(), 'secrets', 'update'));
  const certManager = await render({ webhook: { certManager: { enabled: true } } });
  assert.ok(!has(certManager, 'secrets', 'update'));
  // Create stays, for the key that signs commands to agents (src/api/node-commands.ts), made
  // once in the release namespace; nothing updates a Secret there with cert-manager.
  assert.deepEqual(
    grants(certManager)
      .filter((g) => g.rule.resources?.includes('secrets') && g.rule.verbs.includes('create'))
      .map((g) => [g.scope, g.rule.verbs]),
    [
      [namespace, ['create']],
      ['kube-system', ['create', 'delete']],
    ],
  );
});

test('the webhook’s ServiceAccount: no CSR, Secret, Node-write or webhook-configuration right; read-only; pull secrets only where opted in', async () => {
  for (const [name, values] of variants) {
    const objects = await render(values);
    const webhook = grants(objects, webhookAccount);
    if (name === 'no webhook') {
      assert.deepEqual(webhook, [], 'no webhook, no ServiceAccount rules');
      continue;
    }
    for (const { scope, rule } of webhook) {
      const where = `${name}: ${scope} ${JSON.stringify(rule)}`;
      for (const resource of rule.resources ?? []) {
        assert.ok(!resource.startsWith('certificatesigningrequests'), `CSRs: ${where}`);
        assert.ok(!resource.endsWith('webhookconfigurations'), `webhook configurations: ${where}`);
        assert.notEqual(resource, 'signers', where);
        assert.ok(!['roles', 'rolebindings', 'clusterrolebindings'].includes(resource), where);
      }
      const writes = rule.verbs.filter((v) => !['get', 'list', 'watch'].includes(v));
      // The one create: a SubjectAccessReview (the gMSA `use` check), which writes nothing.
      if (writes.length > 0) assert.deepEqual(rule.resources, ['subjectaccessreviews'], where);
      if (rule.resources?.includes('secrets')) {
        assert.equal(name, 'opt-in namespaces', `Secrets by default: ${where}`);
        assert.equal(scope, 'apps', where);
        assert.deepEqual(rule.verbs, ['get'], where);
      }
    }
    // The kubelet mounts its certificate: tls.crt and tls.key, not the CA key.
    const deployment = only(objects, 'Deployment', 'winfleet-webhook');
    const tls = deployment.spec.template.spec.volumes.find(
      (v: { name: string }) => v.name === 'webhook-tls',
    );
    assert.deepEqual(
      tls.secret.items.map((i: { key: string }) => i.key),
      ['tls.crt', 'tls.key'],
      name,
    );
    assert.equal(deployment.spec.template.spec.serviceAccountName, webhookAccount);
  }
  // Without opt-in namespaces, the webhook's ServiceAccount cannot read a single Secret.
  assert.ok(
    !grants(await render(), webhookAccount).some((g) => g.rule.resources?.includes('secrets')),
  );
  // The operator no longer lists gMSA specs or reads pull secrets: only the webhook does.
  assert.ok(!grants(await render(everything)).some((g) => g.scope === 'apps'));
});

/** The RBAC table's rows, cell by cell (Scope, API group, Resource, Verbs, Names, Why). */
function readmeRows(readme: string, heading = '## RBAC'): { line: string; cells: string[] }[] {
  const start = readme.indexOf(`\n${heading}\n`);
  const end = readme.indexOf('\n## ', start + 1);
  return readme
    .slice(start, end === -1 ? undefined : end)
    .split('\n')
    .filter((line) => line.startsWith('| ') && line.includes('`'))
    .map((line) => ({
      line,
      cells: line.split(' | ').map((c) => c.replace(/^\| |\|$/g, '').trim()),
    }));
}

/** The table's Scope cell for a grant's scope. */
function scopeMatches(cell: string, scope: string): boolean {
  if (scope === 'cluster') return cell === 'cluster';
  if (scope === namespace) return cell === 'release namespace';
  if (scope === 'kube-system' || scope === 'default' || scope === 'kube-public') {
    return cell === scope;
  }
  return cell.startsWith('opted-in');
}

test('the chart README has a row for every rule (scope, resource and exactly its verbs), and no other', async () => {
  const rows = readmeRows(await readFile(`${chartDir}/README.md`, 'utf8'));
  assert.ok(rows.length > 20, `README.md: the RBAC table has only ${rows.length} rows`);
  const used = new Set<string>();
  for (const { scope, rule } of grants(await render(everything))) {
    for (const resource of rule.resources ?? []) {
      const row = rows.find(
        ({ cells: [where, , resources, verbs] }) =>
          scopeMatches(where ?? '', scope) &&
          (resources ?? '').split(', ').includes(`\`${resource}\``) &&
          verbs === rule.verbs.join(', '),
      );
      assert.ok(
        row,
        `README.md: no table row for ${resource} [${rule.verbs.join(', ')}] in ${scope}`,
      );
      used.add(row.line);
    }
  }
  const extra = rows.filter((r) => !used.has(r.line)).map((r) => r.line);
  assert.deepEqual(extra, [], 'README.md: rows for rules the chart does not render');
  // The webhook's own table.
  const webhookRows = readmeRows(
    await readFile(`${chartDir}/README.md`, 'utf8'),
    '## RBAC of the webhook',
  );
  const webhookUsed = new Set<string>();
  for (const { scope, rule } of grants(await render(everything), webhookAccount)) {
    for (const resource of rule.resources ?? []) {
      const row = webhookRows.find(
        ({ cells: [where, , resources, verbs] }) =>
          scopeMatches(where ?? '', scope) &&
          (resources ?? '').split(', ').includes(`\`${resource}\``) &&
          verbs === rule.verbs.join(', '),
      );
      assert.ok(
        row,
        `README.md (RBAC of the webhook): no row for ${resource} [${rule.verbs.join(', ')}] in ${scope}`,
      );
      webhookUsed.add(row.line);
    }
  }
  assert.deepEqual(
    webhookRows.filter((r) => !webhookUsed.has(r.line)).map((r) => r.line),
    [],
    'README.md: rows of the webhook for rules the chart does not render',
  );
});

test('events: namespaced only; list (the dashboard’s host detail) wherever hosts live and in default; never watch or delete', async () => {
  for (const [name, values] of variants) {
    const optedIn = name === 'opt-in namespaces' ? ['team-a', 'team-b'] : [];
    const events = grants(await render(values)).filter((g) => g.rule.resources?.includes('events'));
    for (const { scope, rule } of events) {
      const where = `${name}: events in ${scope} ${JSON.stringify(rule)}`;
      assert.notEqual(scope, 'cluster', `${where}: a cluster-wide rule on Events`);
      assert.deepEqual(rule.resources, ['events'], where);
      assert.equal(rule.resourceNames, undefined, where);
      for (const verb of ['watch', 'delete', 'deletecollection', 'update'])
        assert.ok(!rule.verbs.includes(verb), `${where}: ${verb}`);
    }
    const verbsIn = (ns: string) =>
      [...new Set(events.filter((g) => g.scope === ns).flatMap((g) => g.rule.verbs))].sort();
    const scopes = [...new Set(events.map((g) => g.scope))].sort();
    assert.deepEqual(scopes, [namespace, 'default', ...optedIn].sort(), name);
    for (const ns of scopes)
      assert.deepEqual(verbsIn(ns), ['create', 'get', 'list', 'patch'], `${name}: ${ns}`);
  }
});

test('the pod network reader: exactly its read-only rules, cluster-wide; ConfigMaps only by Flannel’s configured name', async () => {
  const reader = (objects: K8sObject[]) =>
    grants(objects)
      .filter(
        (g) =>
          g.scope === 'cluster' &&
          g.rule.resources?.some((r) =>
            ['daemonsets', 'configmaps', 'installations', 'networks'].includes(r),
          ),
      )
      .map((g) => g.rule);
  for (const [name, values] of variants)
    assert.deepEqual(reader(await render(values)), networkReaderRules('kube-flannel-cfg'), name);
  const renamed = await render({
    config: { network: { flannel: { configMap: { name: 'my-flannel-cfg' } } } },
  });
  assert.deepEqual(reader(renamed), networkReaderRules('my-flannel-cfg'));
  for (const rule of networkReaderRules('x'))
    for (const verb of rule.verbs) assert.ok(['get', 'list'].includes(verb), `${verb}: read-only`);
  // No ConfigMap is readable cluster-wide but by that name.
  for (const { scope, rule } of grants(await render(everything))) {
    if (scope !== 'cluster' || !rule.resources?.includes('configmaps')) continue;
    assert.deepEqual(rule.resourceNames, ['kube-flannel-cfg']);
    assert.deepEqual(rule.verbs, ['get']);
  }
});

/**
 * The join RBAC applied to the real API server by a ServiceAccount that may create and patch
 * only the objects' own names (as the chart grants the Role and RoleBinding), in a private
 * cluster (the ClusterRoleBinding is cluster-wide) whose audit log lists its requests. What
 * the objects grant is checked with the authorizer itself.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { type AuditEvent, serviceAccountsAuditPolicy } from '../../../sim/testkit/audit-log.ts';
import {
  type Grant,
  limitedServiceAccount,
  requestsMadeBy,
} from '../../../sim/testkit/limited-service-account.ts';
import { freshCluster, testNamespace } from '../../../sim/testkit/test-cluster.ts';
import { kubeProxyBindingName, kubeProxyGroup } from '../../api/kube-proxy-identity.ts';
import { bootstrapGroup } from '../../join/bootstrap-tokens.ts';
import { waitFor } from '../../kube/wait-for.ts';
import {
  applyClusterInfoReaderRbac,
  applyJoinInfoRbac,
  applyJoinRbac,
  clusterInfoReaderRbacName,
  joinInfoRbacName,
  nodeBootstrapperBindingName,
  nodeManifestsRbacName,
} from './cluster-rbac.ts';

const cluster = await freshCluster(undefined, { auditPolicy: serviceAccountsAuditPolicy });
after(() => cluster.stop());
const { kc: admin } = cluster;
const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
const authorization = admin.makeApiClient(k8s.AuthorizationV1Api);
const rbacGroup = 'rbac.authorization.k8s.io';
const manifests = ['winfleet-services-1', 'winfleet-published-manifests'];

/** The chart's rights in the operator's namespace: the two names, and what the Role grants. */
const namespaceGrant = (namespace: string): Grant => ({
  namespace,
  rules: [
    {
      apiGroups: [rbacGroup],
      resources: ['roles', 'rolebindings'],
      resourceNames: [nodeManifestsRbacName],
      verbs: ['create', 'patch'],
    },
    { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
  ],
});

/** Without the chart, the operator also binds the bootstrap group and kube-proxies, only those. */
const clusterGrant: Grant = {
  rules: [
    {
      apiGroups: [rbacGroup],
      resources: ['clusterrolebindings'],
      resourceNames: [nodeBootstrapperBindingName, kubeProxyBindingName],
      verbs: ['create', 'patch'],
    },
    {
      apiGroups: [rbacGroup],
      resources: ['clusterroles'],
      resourceNames: ['system:node-bootstrapper', 'system:node-proxier'],
      verbs: ['bind'],
    },
  ],
};

const described = (requests: AuditEvent[]) =>
  requests.map(
    (e) =>
      `${e.verb} ${e.objectRef?.resource} ${e.objectRef?.namespace ?? '-'}/${e.objectRef?.name} ${e.responseStatus?.code}`,
  );

/** Whether the authorizer lets `user` (in `groups`) do it, once its RBAC cache has caught up. */
async function eventually(
  expected: boolean,
  user: string,
  groups: readonly string[],
  attributes: k8s.V1ResourceAttributes,
): Promise<void> {
  await waitFor(
    async () =>
      (
        await authorization.createSubjectAccessReview({
          body: {
            spec: {
              user,
              groups: [...groups, 'system:authenticated'],
              resourceAttributes: attributes,
            },
          },
        })
      ).status?.allowed === expected,
    {
      description: `${user} ${expected ? '' : 'not '}allowed ${JSON.stringify(attributes)}`,
      timeoutMs: 20_000,
    },
  );
}

/** The client's model objects as plain JSON, to compare with literals. */
const plain = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

const appliedBy = (o: { metadata?: k8s.V1ObjectMeta }) =>
  (o.metadata?.managedFields ?? []).map((f) => `${f.manager} ${f.operation}`);

test('by default the bootstrapper and kube-proxy ClusterRoleBindings and the node-manifests Role and RoleBinding are applied, by name', async (t) => {
  const namespace = await testNamespace(admin, 'winfleet');
  const sa = await limitedServiceAccount(admin, {
    namespace,
    name: 'winfleet',
    grants: [clusterGrant, namespaceGrant(namespace)],
  });
  t.after(() => sa.remove());

  await applyJoinRbac(sa.kc, namespace, manifests);
  assert.deepEqual(described(await requestsMadeBy(sa, cluster.auditLogPath!)), [
    `patch clusterrolebindings -/${nodeBootstrapperBindingName} 201`,
    `patch clusterrolebindings -/${kubeProxyBindingName} 201`,
    `patch roles ${namespace}/${nodeManifestsRbacName} 201`,
    `patch rolebindings ${namespace}/${nodeManifestsRbacName} 201`,
  ]);

  const binding = await rbac.readClusterRoleBinding({ name: nodeBootstrapperBindingName });
  assert.deepEqual(plain(binding.roleRef), {
    apiGroup: rbacGroup,
    kind: 'ClusterRole',
    name: 'system:node-bootstrapper',
  });
  assert.deepEqual(plain(binding.subjects), [
    { apiGroup: rbacGroup, kind: 'Group', name: bootstrapGroup },
  ]);
  const role = await rbac.readNamespacedRole({ namespace, name: nodeManifestsRbacName });
  assert.deepEqual(plain(role.rules), [
    {
      apiGroups: [''],
      resources: ['configmaps'],
      verbs: ['get'],
      // The published manifests, and the public key agents check commands with.
      resourceNames: [
        'winfleet-command-key',
        'winfleet-published-manifests',
        'winfleet-services-1',
      ],
    },
  ]);
  const roleBinding = await rbac.readNamespacedRoleBinding({
    namespace,
    name: nodeManifestsRbacName,
  });
  assert.deepEqual(plain(roleBinding.roleRef), {
    apiGroup: rbacGroup,
    kind: 'Role',
    name: nodeManifestsRbacName,
  });
  assert.deepEqual(plain(roleBinding.subjects), [
    { apiGroup: rbacGroup, kind: 'Group', name: 'system:nodes' },
    { apiGroup: rbacGroup, kind: 'Group', name: bootstrapGroup },
  ]);
  const proxies = await rbac.readClusterRoleBinding({ name: kubeProxyBindingName });
  assert.deepEqual(plain(proxies.roleRef), {
    apiGroup: rbacGroup,
    kind: 'ClusterRole',
    name: 'system:node-proxier',
  });
  assert.deepEqual(plain(proxies.subjects), [
    { apiGroup: rbacGroup, kind: 'Group', name: kubeProxyGroup },
  ]);
  for (const object of [binding, proxies, role, roleBinding])
    assert.deepEqual(
      appliedBy(object),
      ['winfleet Apply'],
      'server-side apply, field manager winfleet',
    );

  // What they grant: winfleet's bootstrap tokens may ask for node certificates; nodes may read
  // the published manifests by name, and no other ConfigMap.
  await eventually(true, 'system:bootstrap:abcdef', [bootstrapGroup], {
    verb: 'create',
    group: 'certificates.k8s.io',
    resource: 'certificatesigningrequests',
  });
  // winfleet's kube-proxies may watch EndpointSlices, which nodes may not.
  const endpointSlices = {
    verb: 'watch',
    group: 'discovery.k8s.io',
    resource: 'endpointslices',
  };
  await eventually(true, 'winfleet:kube-proxy:win-1', [kubeProxyGroup], endpointSlices);
  await eventually(false, 'system:node:win-1', ['system:nodes'], endpointSlices);
  const node = ['system:node:win-1', ['system:nodes']] as const;
  const configMap = (name: string) => ({ namespace, verb: 'get', resource: 'configmaps', name });
  await eventually(true, ...node, configMap('winfleet-services-1'));
  await eventually(false, ...node, configMap('winfleet-other'));
  // A host joining by command reads them with its token, before it is a node.
  const joining = ['system:bootstrap:abcdef', ['system:bootstrappers', bootstrapGroup]] as const;
  await eventually(true, joining[0], [...joining[1]], configMap('winfleet-services-1'));
  await eventually(false, joining[0], [...joining[1]], configMap('winfleet-other'));
  await eventually(
    false,
    'system:bootstrap:kubeadm',
    ['system:bootstrappers'],
    configMap('winfleet-services-1'),
  );

  // A newly published manifest replaces the names.
  await applyJoinRbac(sa.kc, namespace, ['winfleet-services-2', 'winfleet-published-manifests']);
  const updated = await rbac.readNamespacedRole({ namespace, name: nodeManifestsRbacName });
  assert.deepEqual(updated.rules?.[0]?.resourceNames, [
    'winfleet-command-key',
    'winfleet-published-manifests',
    'winfleet-services-2',
  ]);
  await eventually(false, ...node, configMap('winfleet-services-1'));
});

test('installed by the chart, the ClusterRoleBinding is left to it: only the two names in the namespace', async (t) => {
  const namespace = await testNamespace(admin, 'winfleet-chart');
  // No right on ClusterRoleBindings at all: an attempt would be answered 403.
  const sa = await limitedServiceAccount(admin, {
    namespace,
    name: 'winfleet',
    grants: [namespaceGrant(namespace)],
  });
  t.after(() => sa.remove());

  await applyJoinRbac(sa.kc, namespace, manifests, { clusterBindings: false });
  assert.deepEqual(described(await requestsMadeBy(sa, cluster.auditLogPath!)), [
    `patch roles ${namespace}/${nodeManifestsRbacName} 201`,
    `patch rolebindings ${namespace}/${nodeManifestsRbacName} 201`,
  ]);
  const role = await rbac.readNamespacedRole({ namespace, name: nodeManifestsRbacName });
  assert.deepEqual(role.rules?.[0]?.resourceNames, [
    'winfleet-command-key',
    'winfleet-published-manifests',
    'winfleet-services-1',
  ]);
});

test('winfleet:join-info: joining hosts and nodes get winfleet-join and the payload’s pull Secret by name, nothing else', async (t) => {
  const namespace = await testNamespace(admin, 'winfleet-join-info');
  // The chart's rights: these two names, and get on ConfigMaps and Secrets (what the Role grants).
  const sa = await limitedServiceAccount(admin, {
    namespace,
    name: 'winfleet',
    grants: [
      {
        namespace,
        rules: [
          {
            apiGroups: [rbacGroup],
            resources: ['roles', 'rolebindings'],
            resourceNames: [joinInfoRbacName],
            verbs: ['create', 'patch'],
          },
          { apiGroups: [''], resources: ['configmaps', 'secrets'], verbs: ['get'] },
        ],
      },
    ],
  });
  t.after(() => sa.remove());
  const get = (resource: string, name: string) => ({ namespace, verb: 'get', resource, name });
  const joining = ['system:bootstrap:abcdef', ['system:bootstrappers', bootstrapGroup]] as const;
  const node = ['system:node:win-1', ['system:nodes']] as const;

  await applyJoinInfoRbac(sa.kc, namespace, undefined);
  for (const [user, groups] of [joining, node]) {
    await eventually(true, user, [...groups], get('configmaps', 'winfleet-join'));
    await eventually(false, user, [...groups], get('configmaps', 'winfleet-config'));
    await eventually(false, user, [...groups], get('secrets', 'registry-pull'));
  }
  await applyJoinInfoRbac(sa.kc, namespace, 'registry-pull');
  for (const [user, groups] of [joining, node]) {
    await eventually(true, user, [...groups], get('secrets', 'registry-pull'));
    await eventually(false, user, [...groups], get('secrets', 'winfleet-ssh-key'));
    await eventually(false, user, [...groups], { namespace, verb: 'list', resource: 'secrets' });
  }
  await eventually(
    false,
    'system:bootstrap:kubeadm',
    ['system:bootstrappers'],
    get('secrets', 'registry-pull'),
  );
  // The pull Secret named no more: its rule goes.
  await applyJoinInfoRbac(sa.kc, namespace, undefined);
  await eventually(false, joining[0], [...joining[1]], get('secrets', 'registry-pull'));
  assert.deepEqual(described(await requestsMadeBy(sa, cluster.auditLogPath!)), [
    `patch roles ${namespace}/${joinInfoRbacName} 201`,
    `patch rolebindings ${namespace}/${joinInfoRbacName} 201`,
    `patch roles ${namespace}/${joinInfoRbacName} 200`,
    `patch rolebindings ${namespace}/${joinInfoRbacName} 200`,
    `patch roles ${namespace}/${joinInfoRbacName} 200`,
    `patch rolebindings ${namespace}/${joinInfoRbacName} 200`,
  ]);
});

test('winfleet:cluster-info-reader: anyone, anonymous included, may get kube-public/cluster-info and nothing else', async () => {
  await applyClusterInfoReaderRbac(admin);
  const role = await rbac.readNamespacedRole({
    namespace: 'kube-public',
    name: clusterInfoReaderRbacName,
  });
  assert.deepEqual(plain(role.rules), [
    { apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames: ['cluster-info'] },
  ]);
  const get = (name: string) => ({
    namespace: 'kube-public',
    verb: 'get',
    resource: 'configmaps',
    name,
  });
  const anonymous = (allowed: boolean, attributes: k8s.V1ResourceAttributes) =>
    waitFor(
      async () =>
        (
          await authorization.createSubjectAccessReview({
            body: {
              spec: {
                user: 'system:anonymous',
                groups: ['system:unauthenticated'],
                resourceAttributes: attributes,
              },
            },
          })
        ).status?.allowed === allowed,
      {
        description: `anonymous ${allowed ? '' : 'not '}allowed ${JSON.stringify(attributes)}`,
        timeoutMs: 20_000,
      },
    );
  await anonymous(true, get('cluster-info'));
  await anonymous(false, get('kube-root-ca.crt'));
  await anonymous(false, {
    namespace: 'kube-public',
    verb: 'update',
    resource: 'configmaps',
    name: 'cluster-info',
  });
  await anonymous(false, { namespace: 'kube-public', verb: 'list', resource: 'configmaps' });
});

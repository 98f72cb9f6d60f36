/**
 * The reader against a stand-in API server on loopback: exactly the read-only requests its
 * RBAC rules allow (and no ConfigMap outside the namespaces configured), paging, and what a
 * 404 or 403 becomes.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type TestContext, test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { networkConfig } from './cluster-fixtures.ts';
import { networkReaderRules, readClusterNetwork, readClusterView } from './read-cluster-network.ts';

type Answer = { status: number; body?: unknown };

async function apiServer(
  t: TestContext,
  answer: (path: string, query: URLSearchParams) => Answer | undefined,
): Promise<{ kc: k8s.KubeConfig; requests: string[] }> {
  const requests: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push(
      `${req.method} ${url.pathname}${url.searchParams.get('continue') ? ` continue=${url.searchParams.get('continue')}` : ''}`,
    );
    const a = answer(url.pathname, url.searchParams) ?? { status: 404 };
    const body =
      a.body ??
      (a.status === 200
        ? {}
        : {
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            code: a.status,
            reason: a.status === 404 ? 'NotFound' : 'Forbidden',
          });
    res.writeHead(a.status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'c',
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
    ],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return { kc, requests };
}

const ds = (namespace: string, name: string) => ({
  metadata: { namespace, name },
  spec: { selector: {}, template: { spec: { containers: [{ name: 'c', image: `${name}:1` }] } } },
});

test('reads every DaemonSet (paged), Flannel’s ConfigMap in kube-flannel then kube-system, and the two custom resources; GETs only', async (t) => {
  const netConf = JSON.stringify({
    Network: '10.244.0.0/16',
    Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 },
  });
  const { kc, requests } = await apiServer(t, (path, query) => {
    if (path === '/apis/apps/v1/daemonsets')
      return query.get('continue') === 'page-2'
        ? {
            status: 200,
            body: { kind: 'DaemonSetList', metadata: {}, items: [ds('kube-system', 'kube-proxy')] },
          }
        : {
            status: 200,
            body: {
              kind: 'DaemonSetList',
              metadata: { continue: 'page-2' },
              items: [ds('kube-flannel', 'kube-flannel-ds')],
            },
          };
    if (path === '/api/v1/namespaces/kube-system/configmaps/kube-flannel-cfg')
      return {
        status: 200,
        body: {
          metadata: { name: 'kube-flannel-cfg', namespace: 'kube-system' },
          data: { 'net-conf.json': netConf },
        },
      };
    if (path === '/apis/operator.tigera.io/v1/installations/default') return { status: 403 };
    return undefined;
  });
  const config = networkConfig();
  const view = await readClusterView(kc, config);
  assert.deepEqual(
    view.daemonSets.map((d) => `${d.namespace}/${d.name}`),
    ['kube-flannel/kube-flannel-ds', 'kube-system/kube-proxy'],
  );
  assert.deepEqual(view.flannelConfigMaps, [
    { namespace: 'kube-system', name: 'kube-flannel-cfg', data: { 'net-conf.json': netConf } },
  ]);
  assert.equal(view.tigeraInstallation.state, 'unreadable');
  assert.equal(view.openshiftNetwork.state, 'absent');
  assert.deepEqual([...requests].sort(), [
    'GET /api/v1/namespaces/kube-flannel/configmaps/kube-flannel-cfg',
    'GET /api/v1/namespaces/kube-system/configmaps/kube-flannel-cfg',
    'GET /apis/apps/v1/daemonsets',
    'GET /apis/apps/v1/daemonsets continue=page-2',
    'GET /apis/operator.openshift.io/v1/networks/cluster',
    'GET /apis/operator.tigera.io/v1/installations/default',
  ]);
  // Each request is one the RBAC rules allow.
  const rules = networkReaderRules('kube-flannel-cfg');
  assert.deepEqual(rules.flatMap((r) => r.verbs).sort(), ['get', 'get', 'get', 'list']);
  const { resolution } = await readClusterNetwork(kc, config);
  assert.ok(resolution.ok);
  assert.equal(resolution.network.mode, 'flannel-vxlan');
  assert.equal(
    resolution.network.detected,
    'Flannel VXLAN (ConfigMap kube-system/kube-flannel-cfg)',
  );
});

test('a configured namespace is the only one asked; a refused DaemonSet list fails the read', async (t) => {
  const { kc, requests } = await apiServer(t, (path) =>
    path === '/apis/apps/v1/daemonsets'
      ? { status: 200, body: { items: [], metadata: {} } }
      : undefined,
  );
  const config = networkConfig({ flannel: { configMap: { namespace: 'net', name: 'flannel' } } });
  await readClusterView(kc, config);
  assert.deepEqual(
    requests.filter((r) => r.includes('configmaps')),
    ['GET /api/v1/namespaces/net/configmaps/flannel'],
  );
  const refused = await apiServer(t, (path) =>
    path === '/apis/apps/v1/daemonsets' ? { status: 403 } : undefined,
  );
  await assert.rejects(
    readClusterView(refused.kc, networkConfig()),
    (error: unknown) => (error as { code?: number }).code === 403,
  );
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requestKind } from './request-kind.ts';

const cases: [method: string, path: string, verb: string, resource: string][] = [
  // core group, cluster-scoped
  ['GET', '/api/v1/nodes', 'list', 'nodes'],
  ['GET', '/api/v1/nodes?labelSelector=a%3Db&limit=500', 'list', 'nodes'],
  ['GET', '/api/v1/nodes?watch=true&resourceVersion=12', 'watch', 'nodes'],
  ['GET', '/api/v1/nodes?allowWatchBookmarks=true&watch=1', 'watch', 'nodes'],
  ['GET', '/api/v1/nodes?watch=false', 'list', 'nodes'],
  ['GET', '/api/v1/nodes/win-1', 'get', 'nodes'],
  ['PATCH', '/api/v1/nodes/win-1/status', 'patch', 'nodes/status'],
  ['DELETE', '/api/v1/nodes/win-1', 'delete', 'nodes'],
  ['GET', '/api/v1/watch/nodes', 'watch', 'nodes'],
  // core group, namespaced
  ['GET', '/api/v1/namespaces/ns/pods', 'list', 'pods'],
  ['GET', '/api/v1/namespaces/ns/pods/p', 'get', 'pods'],
  ['POST', '/api/v1/namespaces/ns/pods', 'create', 'pods'],
  ['POST', '/api/v1/namespaces/ns/pods/p/eviction', 'create', 'pods/eviction'],
  ['PUT', '/api/v1/namespaces/ns/configmaps/c', 'update', 'configmaps'],
  ['DELETE', '/api/v1/namespaces/ns/secrets', 'deletecollection', 'secrets'],
  ['GET', '/api/v1/watch/namespaces/ns/pods', 'watch', 'pods'],
  [
    'GET',
    '/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dx&watch=true',
    'watch',
    'configmaps',
  ],
  // Namespaces themselves
  ['GET', '/api/v1/namespaces', 'list', 'namespaces'],
  ['GET', '/api/v1/namespaces/ns', 'get', 'namespaces'],
  ['POST', '/api/v1/namespaces', 'create', 'namespaces'],
  ['PUT', '/api/v1/namespaces/ns/finalize', 'update', 'namespaces/finalize'],
  ['GET', '/api/v1/namespaces/ns/status', 'get', 'namespaces/status'],
  // named groups
  ['GET', '/apis/coordination.k8s.io/v1/namespaces/ns/leases/l', 'get', 'leases'],
  ['PUT', '/apis/coordination.k8s.io/v1/namespaces/ns/leases/l', 'update', 'leases'],
  [
    'GET',
    '/apis/winfleet.io/v1alpha1/namespaces/ns/windowshosts?watch=true',
    'watch',
    'windowshosts',
  ],
  [
    'PATCH',
    '/apis/winfleet.io/v1alpha1/namespaces/ns/windowshosts/h/status',
    'patch',
    'windowshosts/status',
  ],
  ['GET', '/apis/node.k8s.io/v1/runtimeclasses', 'list', 'runtimeclasses'],
  [
    'PUT',
    '/apis/certificates.k8s.io/v1/certificatesigningrequests/c/approval',
    'update',
    'certificatesigningrequests/approval',
  ],
  ['POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', 'create', 'subjectaccessreviews'],
  ['DELETE', '/apis/apps/v1/namespaces/ns/daemonsets/d', 'delete', 'daemonsets'],
  // non-resource and discovery
  ['GET', '/version', 'get', 'version'],
  ['GET', '/healthz?verbose', 'get', 'healthz'],
  ['GET', '/', 'get', '/'],
  ['GET', '/api', 'get', 'api'],
  ['GET', '/apis/coordination.k8s.io/v1', 'get', 'apis/coordination.k8s.io/v1'],
];

test('the verb and resource of an API request, as the API server names them', () => {
  for (const [method, path, verb, resource] of cases) {
    assert.deepEqual(requestKind(method, path), { verb, resource }, `${method} ${path}`);
  }
});

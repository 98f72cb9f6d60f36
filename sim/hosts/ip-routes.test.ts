import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IpRoutes, sameRoute } from './ip-routes.ts';

test('the route table: add refuses a route that exists, remove says whether one went, to() by interface and prefix', () => {
  const routes = new IpRoutes();
  const route = { destinationPrefix: '10.244.1.0/24', nextHop: '192.0.2.11', interfaceIndex: 18 };
  routes.add(route);
  assert.throws(() => routes.add({ ...route }), /already exists/);
  routes.add({ ...route, nextHop: '192.0.2.12' });
  assert.equal(routes.to(18, '10.244.1.0/24').length, 2);
  assert.equal(routes.to(4, '10.244.1.0/24').length, 0);
  assert.equal(routes.remove(route), true);
  assert.equal(routes.remove(route), false);
  assert.ok(sameRoute(routes.list()[0]!, { ...route, nextHop: '192.0.2.12' }));
  routes.clear();
  assert.deepEqual(routes.list(), []);
});

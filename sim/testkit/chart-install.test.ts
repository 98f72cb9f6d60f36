/** The chart's operator command line, reproduced outside the cluster as the kubelet would. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { expand, operatorCommand, type RenderedObject } from './chart-install.ts';

function deployment(container: Record<string, unknown>): RenderedObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'winfleet' },
    spec: { template: { spec: { serviceAccountName: 'winfleet', containers: [container] } } },
  };
}

test('$(VAR) references expand from the container env; $$ escapes; unknown ones stay', () => {
  const env = { NS: 'winfleet-system' };
  assert.equal(expand('--namespace=$(NS)', env), '--namespace=winfleet-system');
  assert.equal(expand('$$(NS) $(MISSING)', env), '$(NS) $(MISSING)');
});

test('args and env come from the Deployment, fieldRefs from the release', () => {
  const command = operatorCommand(
    [
      { kind: 'ServiceAccount', metadata: { name: 'winfleet' } },
      deployment({
        name: 'operator',
        env: [
          { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
          { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'WINFLEET_LOG_LEVEL', value: 'info' },
        ],
        args: ['--namespace=$(POD_NAMESPACE)', '--webhook-url', 'https://127.0.0.1:9443'],
      }),
    ],
    { namespace: 'ns-1' },
  );
  assert.deepEqual(command.args, ['--namespace=ns-1', '--webhook-url', 'https://127.0.0.1:9443']);
  assert.deepEqual(command.env, {
    POD_NAMESPACE: 'ns-1',
    POD_NAME: 'winfleet-local',
    WINFLEET_LOG_LEVEL: 'info',
  });
});

test('what cannot be reproduced outside a cluster is refused, named', () => {
  assert.throws(
    () => operatorCommand([], { namespace: 'n' }),
    /renders 0 Deployments named winfleet/,
  );
  assert.throws(
    () =>
      operatorCommand([deployment({ name: 'a' }), deployment({ name: 'b' })], { namespace: 'n' }),
    /renders 2 Deployments named winfleet/,
  );
  assert.throws(
    () =>
      operatorCommand(
        [
          deployment({
            name: 'operator',
            env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
          }),
        ],
        { namespace: 'n' },
      ),
    /env X: only value and fieldRef/,
  );
  assert.throws(
    () =>
      operatorCommand(
        [
          deployment({
            name: 'operator',
            env: [{ name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
          }),
        ],
        { namespace: 'n' },
      ),
    /env IP: fieldRef status\.podIP has no local equivalent/,
  );
});

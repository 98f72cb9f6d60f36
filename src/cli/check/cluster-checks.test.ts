import assert from 'node:assert/strict';
import { test } from 'node:test';
import { probePod } from './cluster-checks.ts';

test('the webhook probe is a HostProcess Windows pod (no image lookups)', () => {
  const pod = probePod('default');
  assert.equal(pod.spec?.os?.name, 'windows');
  assert.equal(pod.spec?.securityContext?.windowsOptions?.hostProcess, true);
  assert.equal(pod.metadata?.namespace, 'default');
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allowedNodeLabels, nodeLabelProblem, nodeLabelRules } from './node-labels.ts';

test('attacker: labels NodeRestriction keeps from kubelets are refused (issue 33)', () => {
  for (const key of [
    'node-restriction.kubernetes.io/tier',
    'pci.node-restriction.kubernetes.io/zone',
    'node-role.kubernetes.io/control-plane',
    'node-role.kubernetes.io/master',
    'kubernetes.io/role',
    'k8s.io/anything',
    'cloud.k8s.io/x',
    'topology.kubernetes.io/rack',
  ]) {
    assert.ok(nodeLabelProblem(key), key);
  }
  assert.match(
    nodeLabelProblem('node-restriction.kubernetes.io/tier')!,
    /^node-restriction\.kubernetes\.io\/tier: labels under node-restriction\.kubernetes\.io\/ are for administrators/,
  );
  assert.match(
    nodeLabelProblem('node-role.kubernetes.io/control-plane')!,
    /a label under kubernetes\.io or k8s\.io that a kubelet may not set on its own Node \(NodeRestriction allows only kubernetes\.io\/hostname, /,
  );
});

test('labels a kubelet may set, and everyone else’s domains, pass', () => {
  for (const key of [
    'team',
    'example.com/tier',
    'evilkubernetes.io/x',
    'kubernetes.io.example.com/x',
    'kubernetes.io/os',
    'topology.kubernetes.io/zone',
    'node.kubernetes.io/instance-type',
    'node.kubernetes.io/exclude-from-external-load-balancers',
    'kubelet.kubernetes.io/x',
    'a.b.node.kubernetes.io/x',
    'winfleet.io/pool',
  ]) {
    assert.equal(nodeLabelProblem(key), undefined, key);
  }
  assert.deepEqual(
    allowedNodeLabels({ team: 'web', 'node-role.kubernetes.io/worker': '' }).labels,
    { team: 'web' },
  );
  assert.equal(allowedNodeLabels(undefined).refused.length, 0);
});

test('the CRD’s CEL rules say the same in RE2 (the API server runs them: crds.e2e and pull-node-labels.e2e)', () => {
  // CEL's matches() is RE2; these patterns use nothing JavaScript reads differently.
  const [restriction, kubernetes] = nodeLabelRules.map((r) =>
    r.rule.match(/'(\^[^']+)'/g)!.map((p) => new RegExp(p.slice(1, -1).replaceAll('\\\\', '\\'))),
  );
  const refusedByCel = (key: string) =>
    restriction!.some((re) => re.test(key)) ||
    (kubernetes![0]!.test(key) &&
      !nodeLabelRules[1]!.rule.includes(`'${key}'`) &&
      !kubernetes![1]!.test(key));
  for (const key of [
    'node-restriction.kubernetes.io/tier',
    'node-role.kubernetes.io/control-plane',
    'k8s.io/x',
    'team',
    'kubernetes.io/os',
    'a.node.kubernetes.io/x',
    'evilkubernetes.io/x',
  ]) {
    assert.equal(refusedByCel(key), nodeLabelProblem(key) !== undefined, key);
  }
});

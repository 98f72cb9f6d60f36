/**
 * The start-up warning for a cluster that auto-approves node client CSRs of every bootstrap
 * token, against the real API server (a private cluster: the binding would let the controller
 * manager approve every other test's bootstrap CSRs).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { freshCluster } from '../../../sim/testkit/test-cluster.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import { EventReason } from '../../api/reasons.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { createLogger } from '../../log/logger.ts';
import { nodeClientRole } from './bootstrap-auto-approval.ts';

interface LogRecord {
  level: string;
  msg: string;
}

/** Starts the operator, returns what it logged during start-up, and stops it. */
async function startUpLog(kc: k8s.KubeConfig, namespace: string): Promise<LogRecord[]> {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', write: (line) => lines.push(line) });
  const operator = await startTestOperator(kc, { namespace, webhook: false, log });
  await operator.stop();
  return lines.map((line) => JSON.parse(line) as LogRecord);
}

const autoApproval = /approves node client certificates for every bootstrap token/;

test('the operator warns at start-up when every bootstrap token’s node client CSRs are auto-approved (issue 8)', async (t) => {
  const { kc } = await freshCluster(t);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const namespace = 'winfleet-autoapprove';

  await t.test('without the binding: checked, no warning', async () => {
    const records = await startUpLog(kc, namespace);
    // Positive signal: the check ran (start-up awaits it) and found nothing.
    assert.ok(
      records.some(
        (r) => r.msg === 'bootstrap tokens are not auto-approved for node client certificates',
      ),
      'the check ran',
    );
    assert.ok(
      records.some((r) => r.msg === 'operator running'),
      'start-up finished',
    );
    assert.deepEqual(
      records.filter((r) => autoApproval.test(r.msg)),
      [],
    );
  });

  await t.test(
    'with nodeclient bound to system:bootstrappers: a warning and an Event',
    async () => {
      await kc.makeApiClient(k8s.RbacAuthorizationV1Api).createClusterRoleBinding({
        body: {
          metadata: { name: 'e2e-auto-approve-bootstrappers' },
          roleRef: {
            apiGroup: 'rbac.authorization.k8s.io',
            kind: 'ClusterRole',
            name: nodeClientRole,
          },
          subjects: [
            { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:bootstrappers' },
          ],
        },
      });
      const records = await startUpLog(kc, namespace);
      const [warning] = records.filter((r) => autoApproval.test(r.msg));
      assert.equal(warning?.level, 'warn');
      // The authorizer's reason names the binding.
      assert.match(warning!.msg, /e2e-auto-approve-bootstrappers/);
      const event = await waitFor(
        async () =>
          (
            await core.listEventForAllNamespaces({
              fieldSelector: `involvedObject.kind=Namespace,involvedObject.name=${namespace},reason=${EventReason.BootstrapAutoApproval}`,
            })
          ).items[0],
        {
          description: 'the BootstrapAutoApproval Event on the operator’s Namespace',
          timeoutMs: 10_000,
        },
      );
      assert.equal(event.type, 'Warning');
      assert.match(event.message!, autoApproval);
    },
  );
});

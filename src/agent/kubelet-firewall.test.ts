import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAgentTestHost, prepareAsOperator } from '../../sim/hosts/agent-test-host.ts';
import { kubeletFirewallRule, kubeletPort } from './kubelet-firewall.ts';
import { runAgent } from './run-agent.ts';

test('bootstrap opens the kubelet port before the kubelet starts; cleanup closes it', async (t) => {
  const { machine, context, stdout, calls } = await createAgentTestHost(t);
  assert.equal(machine.firewall.allowsInbound('TCP', kubeletPort), false, 'closed by default');
  await prepareAsOperator(machine);
  assert.equal(await runAgent(['bootstrap'], context), 0, stdout.join(''));
  assert.equal(machine.firewall.allowsInbound('TCP', kubeletPort), true);
  assert.deepEqual(machine.firewall.rule('winfleet-kubelet'), {
    name: 'winfleet-kubelet',
    displayName: 'winfleet kubelet API (TCP 10250)',
    description: kubeletFirewallRule.description,
    direction: 'Inbound',
    action: 'Allow',
    protocol: 'TCP',
    localPorts: [10250],
    enabled: true,
  });
  const opened = calls.indexOf('ensureInboundFirewallRule winfleet-kubelet');
  assert.ok(opened >= 0 && opened < calls.indexOf('startService kubelet'), calls.join(', '));

  // Someone disables it; a bootstrap again brings it back, and still only one rule.
  machine.firewall.set('winfleet-kubelet', { enabled: false });
  assert.equal(machine.firewall.allowsInbound('TCP', kubeletPort), false);
  assert.equal(await runAgent(['bootstrap'], context), 0, stdout.join(''));
  assert.equal(machine.firewall.allowsInbound('TCP', kubeletPort), true);
  assert.equal(machine.firewall.rules().filter((r) => r.name === 'winfleet-kubelet').length, 1);

  assert.equal(await runAgent(['cleanup'], context), 0, stdout.join(''));
  assert.equal(machine.firewall.rule('winfleet-kubelet'), undefined);
  assert.equal(machine.firewall.allowsInbound('TCP', kubeletPort), false);
  assert.ok(machine.firewall.rule('OpenSSH-Server-In-TCP'), 'the host’s own rules stay');
  // Idempotent: a second cleanup (after a dropped session) finds nothing to remove.
  assert.equal(await runAgent(['cleanup'], context), 0, stdout.join(''));
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type FirewallRule, openSshServerRule, WindowsFirewall } from './firewall.ts';
import { createTestMachine } from './test-machine.ts';

const allow10250: FirewallRule = {
  name: 'kubelet',
  displayName: 'kubelet',
  description: '',
  direction: 'Inbound',
  action: 'Allow',
  protocol: 'TCP',
  localPorts: [10250],
  enabled: true,
};

test('inbound is blocked unless an enabled inbound Allow rule covers the protocol and port', () => {
  const firewall = new WindowsFirewall();
  assert.deepEqual(firewall.rules(), [openSshServerRule]);
  assert.equal(firewall.allowsInbound('TCP', 22), true);
  assert.equal(firewall.allowsInbound('TCP', 10250), false);
  firewall.add({ ...allow10250, direction: 'Outbound' });
  assert.equal(firewall.allowsInbound('TCP', 10250), false, 'an outbound rule does not count');
  firewall.remove('KUBELET');
  firewall.add(allow10250);
  assert.equal(firewall.allowsInbound('TCP', 10250), true);
  assert.equal(firewall.allowsInbound('UDP', 10250), false);
  firewall.set('kubelet', { enabled: false });
  assert.equal(firewall.allowsInbound('TCP', 10250), false, 'a disabled rule does not count');
  firewall.set('kubelet', { enabled: true });
  firewall.add({
    ...allow10250,
    name: 'deny',
    action: 'Block',
    protocol: 'Any',
    localPorts: 'Any',
  });
  assert.equal(firewall.allowsInbound('TCP', 10250), false, 'Block wins over Allow');
});

test('the cmdlets’ errors: a taken Name, a missing rule', () => {
  const firewall = new WindowsFirewall([]);
  firewall.add(allow10250);
  assert.throws(() => firewall.add({ ...allow10250, name: 'Kubelet' }), {
    cmdlet: 'New-NetFirewallRule',
    message: 'Cannot create a file when that file already exists.',
  });
  assert.throws(() => firewall.set('missing', { enabled: true }), {
    message: /No MSFT_NetFirewallRule objects found with property 'InstanceID' equal to 'missing'/,
  });
  assert.equal(firewall.remove('missing'), false);
});

test('rules persist across a reboot', async (t) => {
  const machine = await createTestMachine(t);
  machine.firewall.add(allow10250);
  await machine.reboot();
  assert.equal(machine.firewall.allowsInbound('TCP', 10250), true);
});

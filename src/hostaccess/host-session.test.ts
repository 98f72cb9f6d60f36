/**
 * Which host key a session insists on: an admin's spec.hostKey, pinned before first contact,
 * wins over the trust annotation and over the key pinned on first use; a host presenting
 * another key is refused even on first contact, and the message says to change spec.hostKey.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startSimulatedHosts } from '../../sim/hosts/fleet.ts';
import { generateTestKey } from '../../sim/hosts/ssh-test-client.ts';
import type { WindowsHost } from '../api/windows-host.ts';
import { errorCode } from '../errors/catalog.ts';
import { expectedHostKey } from './host-session.ts';
import { SshSession } from './ssh-session.ts';

const key = (c: string) => `SHA256:${c.repeat(43)}`;

function hostWith(pins: { spec?: string; trusted?: string; status?: string }): WindowsHost {
  return {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: {
      name: 'a',
      namespace: 'ns',
      ...(pins.trusted ? { annotations: { 'winfleet.io/trust-host-key': pins.trusted } } : {}),
    },
    spec: {
      address: '127.0.0.191',
      username: 'Administrator',
      sshKeySecretRef: { name: 'k' },
      ...(pins.spec ? { hostKey: pins.spec } : {}),
    },
    ...(pins.status ? { status: { hostKeyFingerprint: pins.status } } : {}),
  };
}

test('spec.hostKey wins over the trust annotation and the first-use pin; none: trust on first use', () => {
  assert.equal(
    expectedHostKey(hostWith({ spec: key('a'), trusted: key('b'), status: key('c') })),
    key('a'),
  );
  assert.equal(expectedHostKey(hostWith({ trusted: key('b'), status: key('c') })), key('b'));
  assert.equal(expectedHostKey(hostWith({ status: key('c') })), key('c'));
  assert.equal(expectedHostKey(hostWith({})), undefined);
});

test('attacker side: a host presenting a key other than spec.hostKey is refused on first contact, whatever the annotation trusts', async (t) => {
  const client = generateTestKey();
  const fleet = await startSimulatedHosts({
    count: 1,
    baseAddress: '127.0.0.191',
    authorizedKeys: [client.publicKey],
  });
  t.after(() => fleet.stop());
  const sim = fleet.hosts[0]!;
  // The attacker's machine answers at the address; the annotation names its key.
  const host = hostWith({ spec: key('a'), trusted: sim.hostKeyFingerprint });
  const error = await SshSession.connect({
    host: sim.address,
    port: sim.port,
    username: 'Administrator',
    privateKey: client.privateKey,
    pinnedFingerprint: expectedHostKey(host),
  }).then(
    (s) => {
      s.close();
      return assert.fail('connected to a host whose key is not spec.hostKey');
    },
    (e: unknown) => e,
  );
  assert.equal(errorCode(error), 'WF_SSH_HOST_KEY_CHANGED');
  // With the right pin the same host is reached.
  const session = await SshSession.connect({
    host: sim.address,
    port: sim.port,
    username: 'Administrator',
    privateKey: client.privateKey,
    pinnedFingerprint: expectedHostKey(hostWith({ spec: sim.hostKeyFingerprint })),
  });
  assert.equal(session.fingerprint, sim.hostKeyFingerprint);
  session.close();
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { azureKeyVaultCcgPlugin } from '../../sim/hosts/container-credential-guard.ts';
import { SimHostOS } from '../../sim/hosts/sim-host-os.ts';
import { createTestMachine } from '../../sim/hosts/test-machine.ts';
import { gmsaReadinessAnnotation, gmsaReadyLabel } from '../api/node-annotations.ts';
import type { AgentContext } from './agent-context.ts';
import { gmsaReadiness, gmsaRecheckMs, syncGmsaReadiness } from './gmsa-readiness.ts';

const facts = {
  partOfDomain: false,
  domain: 'WORKGROUP',
  ccgAvailable: true,
  ccgPlugins: [] as { clsid: string; comClassRegistered: boolean }[],
};

test('ready: CCG there and domain-joined or a registered plug-in; each other case says why', () => {
  const joined = gmsaReadiness({ ...facts, partOfDomain: true, domain: 'corp.winfleet.test' });
  assert.deepEqual(joined, {
    ready: true,
    reason: 'DomainJoined',
    message: 'joined to domain "corp.winfleet.test"; Container Credential Guard available',
  });
  const plugin = gmsaReadiness({
    ...facts,
    ccgPlugins: [{ clsid: azureKeyVaultCcgPlugin, comClassRegistered: true }],
  });
  assert.equal(plugin.ready, true);
  assert.equal(plugin.reason, 'CcgPluginRegistered');

  const workgroup = gmsaReadiness(facts);
  assert.equal(workgroup.ready, false);
  assert.equal(workgroup.reason, 'NotDomainJoined');
  assert.match(workgroup.message, /workgroup "WORKGROUP".*join the host to the domain/);

  const unregistered = gmsaReadiness({
    ...facts,
    ccgPlugins: [{ clsid: azureKeyVaultCcgPlugin, comClassRegistered: false }],
  });
  assert.equal(unregistered.ready, false);
  assert.equal(unregistered.reason, 'CcgPluginNotRegistered');
  assert.ok(unregistered.message.includes(`HKEY_CLASSES_ROOT\\CLSID\\${azureKeyVaultCcgPlugin}`));

  // Joined, but without Container Credential Guard nothing fetches the gMSA password.
  const noCcg = gmsaReadiness({ ...facts, partOfDomain: true, ccgAvailable: false });
  assert.equal(noCcg.ready, false);
  assert.equal(noCcg.reason, 'CcgUnavailable');
  assert.match(noCcg.message, /Install-WindowsFeature Containers/);
});

async function world(
  t: Parameters<typeof createTestMachine>[0],
  options: Parameters<typeof createTestMachine>[1] = {},
) {
  const machine = await createTestMachine(t, options);
  const hostOS = new SimHostOS(machine);
  const context: AgentContext = { hostOS, stdout: () => {}, stderr: () => {} };
  const node: k8s.V1Node = {
    metadata: { name: 'win-1', labels: {}, annotations: {} },
    status: { nodeInfo: { bootID: machine.bootId } as k8s.V1NodeSystemInfo },
  };
  const patches: { labels: Record<string, string>; annotations: Record<string, string> }[] = [];
  let clock = Date.parse('2026-11-27T12:00:00Z');
  const pass = () => {
    node.status!.nodeInfo!.bootID = machine.bootId;
    return syncGmsaReadiness(context, node, {
      patchMetadata: async (metadata) => {
        patches.push(metadata);
        Object.assign(node.metadata!.labels!, metadata.labels);
        Object.assign(node.metadata!.annotations!, metadata.annotations);
      },
      now: () => clock,
    });
  };
  return { machine, node, patches, pass, tick: (ms: number) => (clock += ms) };
}

test('a workgroup host is labelled not ready, then ready once joined and rebooted; only changes are written', async (t) => {
  const w = await world(t);
  await w.pass();
  assert.deepEqual(w.patches, [
    {
      labels: { [gmsaReadyLabel]: 'false' },
      annotations: {
        [gmsaReadinessAnnotation]:
          'NotDomainJoined: not joined to an Active Directory domain (workgroup "WORKGROUP") and no CCG plug-in is registered under HKLM:\\SYSTEM\\CurrentControlSet\\Control\\CCG\\COMClasses; join the host to the domain or install a CCG plug-in',
      },
    },
  ]);
  await w.pass();
  assert.equal(w.patches.length, 1, 'nothing changed: nothing written');

  // The domain join (not this module's) takes a reboot; the new boot is read at once.
  w.machine.domain = 'corp.winfleet.test';
  await w.machine.reboot({ reason: 'domain join' });
  await w.pass();
  assert.equal(w.patches.length, 2);
  assert.equal(w.node.metadata!.labels![gmsaReadyLabel], 'true');
  assert.match(w.node.metadata!.annotations![gmsaReadinessAnnotation]!, /^DomainJoined: /);
});

test('a plug-in installed without a reboot is seen at the next recheck', async (t) => {
  const w = await world(t);
  await w.pass();
  w.machine.ccg.registerPlugin(azureKeyVaultCcgPlugin);
  w.tick(gmsaRecheckMs - 1000);
  await w.pass();
  assert.equal(w.node.metadata!.labels![gmsaReadyLabel], 'false', 'not read again yet');
  w.tick(1000);
  await w.pass();
  assert.equal(w.node.metadata!.labels![gmsaReadyLabel], 'true');
  assert.match(w.node.metadata!.annotations![gmsaReadinessAnnotation]!, /^CcgPluginRegistered: /);
});

test('a domain-joined host without the Containers feature is not ready', async (t) => {
  const w = await world(t, { domain: 'corp.winfleet.test', features: { Containers: 'Available' } });
  const readiness = await w.pass();
  assert.equal(readiness.reason, 'CcgUnavailable');
  assert.equal(w.node.metadata!.labels![gmsaReadyLabel], 'false');
});

test('facts that cannot be read report the host not ready (CheckFailed), never ready', async (t) => {
  const w = await world(t, { domain: 'corp.winfleet.test' });
  const context: AgentContext = {
    hostOS: Object.assign(Object.create(new SimHostOS(w.machine)), {
      gmsaHostFacts: () => Promise.reject(new SyntaxError('Cannot read the host’s gMSA facts: x')),
    }),
    stdout: () => {},
    stderr: () => {},
  };
  const patches: unknown[] = [];
  const readiness = await syncGmsaReadiness(context, w.node, {
    patchMetadata: async (metadata) => {
      patches.push(metadata);
    },
  });
  assert.equal(readiness.ready, false);
  assert.equal(readiness.reason, 'CheckFailed');
  assert.deepEqual(patches, [
    {
      labels: { [gmsaReadyLabel]: 'false' },
      annotations: {
        [gmsaReadinessAnnotation]:
          "CheckFailed: cannot read the host's gMSA facts: Cannot read the host’s gMSA facts: x",
      },
    },
  ]);
});

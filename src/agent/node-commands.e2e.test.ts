/**
 * Node annotations are not commands for whoever may patch Nodes (security review 3, item 6).
 * A ServiceAccount bound only to a ClusterRole with get, list and patch of nodes — what
 * cluster-autoscaler, kured or a CNI agent holds — writes every annotation the agent obeys on a
 * joined host's Node: a reboot request, an install of updates, a desired services version and
 * a deconfigure request, unsigned, with a forged signature, and with the operator's own
 * signature of another command copied over. The operator is stopped, so the agent alone must
 * refuse: it logs each refusal, does not reboot, install, change its services or remove
 * itself. Then the same reboot request signed with the operator's key is obeyed (the control).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { serviceLog } from '../../sim/hosts/service-logs.ts';
import { sampleCatalog } from '../../sim/hosts/windows-update.ts';
import { annotateAsOperator, joinThenStopOperator } from '../../sim/testkit/agent-alone.ts';
import { joinWorld } from '../../sim/testkit/join-fixture.ts';
import { nodePatcher } from '../../sim/testkit/node-patcher.ts';
import {
  deconfigureRequestAnnotation,
  desiredServicesVersionAnnotation,
  installUpdatesAnnotation,
  rebootRequestAnnotation,
} from '../api/node-annotations.ts';
import { signatureAnnotation } from '../api/node-commands.ts';
import { httpStatus } from '../kube/client.ts';
import { waitFor } from '../kube/wait-for.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';
import { agentServiceName } from './converge.ts';

test('a principal that may only patch Nodes cannot make the agent reboot, install, upgrade or remove itself', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const sim = world.fleet.hosts[0]!;
  sim.machine.windowsUpdate.publish(...sampleCatalog(2700));
  const nodeName = await joinThenStopOperator(world);

  // The attacker: a ServiceAccount with get, list and patch of nodes, nothing else.
  const patcher = await nodePatcher(t, kc, world.namespace);
  const attackerCore = patcher.kc.makeApiClient(k8s.CoreV1Api);
  const annotate = (annotations: Record<string, string | null>) =>
    patcher.annotate(nodeName, annotations);
  // It cannot read the operator's signing key.
  const secretRead = await attackerCore
    .readNamespacedSecret({ name: 'winfleet-command-signing-key', namespace: world.namespace })
    .then(
      () => 200,
      (error: unknown) => httpStatus(error),
    );
  assert.equal(secretRead, 403);

  const bootBefore = sim.machine.bootId;
  let shutdowns = 0;
  sim.machine.onShutdown(() => {
    shutdowns++;
  });
  const manifestBefore = (await sim.machine.fs.readFile(hostPaths.servicesManifest)).toString();
  // The operator's own signature of the desired version it wrote at the join (checked below).
  const signedAtJoin = (await core.readNode({ name: nodeName })).metadata?.annotations?.[
    signatureAnnotation(desiredServicesVersionAnnotation)
  ];
  let operatorSignature = 'none yet';
  const forged = `v1.${Math.floor(Date.now() / 1000)}.${'A'.repeat(86)}`;
  const logged = (annotation: string, value: string) =>
    waitFor(
      async () =>
        (await serviceLog(sim.machine, agentServiceName)).some(
          (line) =>
            line.includes(`Ignoring ${annotation}=${JSON.stringify(value)}`) &&
            !line.includes(forged) &&
            !line.includes(operatorSignature),
        ),
      { description: `the agent to log that it ignores ${annotation}=${value}`, timeoutMs: 30_000 },
    );

  const attack = async (attacks: [string, string, string | null][]) => {
    for (const [annotation, value, signature] of attacks) {
      await annotate({
        [annotation]: value,
        [signatureAnnotation(annotation as typeof rebootRequestAnnotation)]: signature,
      });
      await logged(annotation, value);
    }
  };
  await attack([
    [rebootRequestAnnotation, 'attack-1', null],
    [rebootRequestAnnotation, 'attack-2', forged],
    [installUpdatesAnnotation, 'All', null],
    [desiredServicesVersionAnnotation, 'v9.9.9', null],
    [deconfigureRequestAnnotation, 'f0e1d2c3-0000-4000-8000-000000000001', null],
    [deconfigureRequestAnnotation, 'f0e1d2c3-0000-4000-8000-000000000002', forged],
  ]);
  // The operator's own signature, copied onto other commands and values.
  operatorSignature = signedAtJoin ?? '';
  assert.match(operatorSignature, /^v1\./, 'the operator signed the desired version it wrote');
  await attack([
    [rebootRequestAnnotation, 'attack-3', operatorSignature],
    [installUpdatesAnnotation, 'Security', operatorSignature],
    [desiredServicesVersionAnnotation, 'v9.9.8', operatorSignature],
  ]);

  // Nothing was done: no reboot, no install, the same services manifest, the agent in place.
  assert.equal(shutdowns, 0, 'no reboot');
  assert.equal(sim.machine.bootId, bootBefore);
  assert.equal(sim.machine.rebootScheduled, false);
  assert.deepEqual(sim.machine.windowsUpdate.installed(), []);
  assert.equal(
    (await sim.machine.fs.readFile(hostPaths.servicesManifest)).toString(),
    manifestBefore,
  );
  assert.ok(await sim.machine.fs.stat(hostPaths.agentConfig), 'agent.json is still there');
  assert.equal(sim.machine.scm.query(agentServiceName)?.state, 'running');
  assert.equal(sim.machine.scm.isMarkedForDeletion(agentServiceName), false);

  // The control: the operator's signed request is obeyed (the attacker's values are gone).
  await annotateAsOperator(kc, world.namespace, nodeName, {
    [installUpdatesAnnotation]: null,
    [desiredServicesVersionAnnotation]: null,
    [deconfigureRequestAnnotation]: null,
  });
  await annotateAsOperator(kc, world.namespace, nodeName, { [rebootRequestAnnotation]: 'real-1' });
  await waitFor(() => shutdowns === 1, {
    description: 'the reboot the operator asked for',
    timeoutMs: 60_000,
  });
});

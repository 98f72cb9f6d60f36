import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  createAgentTestHost,
  prepareAsOperator,
  testNodeName,
} from '../../sim/hosts/agent-test-host.ts';
import type { DeconfigureReport } from '../api/deconfigure-report.ts';
import { parseAgentConfig, paths } from './agent-config.ts';
import { agentServiceName } from './converge.ts';
import {
  deconfigureRecordPath,
  deconfigureRequest,
  deconfigureSelf,
  readDeconfigureRecord,
} from './deconfigure-self.ts';
import { runAgent } from './run-agent.ts';
import { checkOnce, deconfigurePass } from './run-loop.ts';

const request = '6f1c1b9e-2d41-4c4e-9b0f-1a2b3c4d5e6f';

/** A joined host: bootstrapped, one check, and the node's credentials as the kubelet writes them. */
async function joinedHost(t: Parameters<typeof createAgentTestHost>[0]) {
  const host = await createAgentTestHost(t);
  const { machine, context, stdout } = host;
  const before = await machine.snapshot();
  await prepareAsOperator(machine);
  assert.equal(await runAgent(['bootstrap'], context), 0, stdout.join(''));
  await checkOnce(
    context,
    parseAgentConfig((await machine.fs.readFile(paths.agentConfig)).toString()),
  );
  await machine.fs.writeFileAtomic(paths.kubeconfig, 'apiVersion: v1\nkind: Config\n');
  await machine.fs.writeFileAtomic(`${paths.certDir}\\kubelet-client-current.pem`, 'cert');
  machine.hns.ensure('winfleet', 'Overlay');
  return { ...host, before };
}

test('the agent deconfigures its own host: the report while the credentials exist, its service and what runs last', async (t) => {
  const { machine, context, before } = await joinedHost(t);
  // The agent service runs its shim, which holds winfleet-service.exe as its image.
  assert.equal(machine.scm.query(agentServiceName)?.state, 'running');
  let reported: DeconfigureReport | undefined;
  let credentialsAtReport: boolean | undefined;
  const result = await deconfigureSelf(context, { request, nodeName: testNodeName }, async (r) => {
    reported = r;
    credentialsAtReport = (await machine.fs.stat(paths.kubeconfig)) !== undefined;
  });
  assert.deepEqual(result, reported);
  assert.equal(credentialsAtReport, true, 'reported before the credentials went');
  assert.equal(await machine.fs.stat(paths.kubeconfig), undefined, 'then they went');
  assert.equal(await machine.fs.stat(paths.certDir), undefined);
  assert.deepEqual(result.removedServices, [
    'csi-proxy',
    'kube-proxy',
    'kubelet',
    'containerd',
    agentServiceName,
  ]);
  // The shim runs: its image is deleted at the next boot, with the directories holding it.
  assert.deepEqual(result.left, [paths.serviceExe, 'C:\\k\\winfleet', 'C:\\k']);
  assert.equal(machine.hns.list().length, 0);
  assert.equal(machine.scm.isMarkedForDeletion(agentServiceName), true, 'marked, not stopped');
  assert.equal(machine.scm.query(agentServiceName)?.state, 'running');
  assert.equal(await readDeconfigureRecord(context.hostOS), undefined, 'the record went last');
  assert.deepEqual(
    (await machine.fs.allPaths()).filter((p) => p.toLowerCase().startsWith('c:\\k')),
    ['C:\\k', 'C:\\k\\winfleet', paths.serviceExe],
  );
  assert.ok(machine.windowsUpdate.registry.pendingFileRenameOperations.length > 0);
  assert.equal(machine.windowsUpdate.rebootPending(), false, 'a deletion at boot is no servicing');

  // The agent exits (here: its shim stops), the SCM deletes the service; the boot deletes the rest.
  await context.hostOS.stopService(agentServiceName);
  assert.equal(machine.scm.query(agentServiceName), undefined);
  await machine.reboot();
  const after = await machine.snapshot();
  assert.deepEqual(after, before, 'nothing of winfleet is left after the boot');
});

test('a deconfigure goes on from its record after a restart, without credentials or agent.json', async (t) => {
  const { machine, context } = await joinedHost(t);
  await machine.fs.writeFileAtomic(
    deconfigureRecordPath,
    JSON.stringify({ request, nodeName: testNodeName, removedServices: ['csi-proxy'] }),
  );
  await machine.fs.remove(paths.kubeconfig);
  await machine.fs.remove(paths.agentConfig);
  // No kubeconfig: nothing to report with, and nothing read from the Node.
  assert.equal(await deconfigurePass(context, undefined), 'done');
  assert.equal(machine.scm.isMarkedForDeletion(agentServiceName), true);
  assert.deepEqual(
    machine.scm.names().filter((n) => n !== agentServiceName),
    [],
    'every node service went',
  );
});

test('only a well-formed request token is acted on', () => {
  const node = (value: string) => ({
    metadata: { annotations: { 'winfleet.io/deconfigure-requested': value } },
  });
  const refused: string[] = [];
  assert.equal(
    deconfigureRequest(node(request), (v) => refused.push(v)),
    request,
  );
  assert.equal(deconfigureRequest({ metadata: {} }), undefined);
  for (const bad of ['', 'UPPER', 'a b', '-leading', 'x'.repeat(64), 'a;rm -rf']) {
    assert.equal(
      deconfigureRequest(node(bad), (v) => refused.push(v)),
      undefined,
      bad,
    );
  }
  assert.equal(refused.length, 6);
});

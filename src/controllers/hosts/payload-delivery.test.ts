/**
 * The operator's decision on how a registry payload reaches an SSH host, against a simulated
 * host over real SSH whose agent is a stand-in printing what the real `pull-payload` prints:
 * pulled (only the agent and its shim copied), the host cannot reach the registry while the
 * operator can (everything pushed, a Warning Event), nobody reaches it
 * (WF_PAYLOAD_REGISTRY_UNAVAILABLE naming it, nothing pushed), and another refusal (it stands).
 * From the attacker's side: a host whose report lies is not believed.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { defaultPrograms } from '../../../sim/hosts/programs.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import { connectedSimHost } from '../../../sim/testkit/ssh-host.ts';
import { EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import { errorCode, WinfleetError } from '../../errors/catalog.ts';
import type { LoadedPayload } from '../../payload/loaded-payload.ts';
import { servicesManifestFor } from '../../payload/node-services.ts';
import { payloadFileOnDisk } from '../../payload/payload-file.ts';
import { hostPaths } from '../../servicesmanifest/host-paths.ts';
import { copyOperatorFiles, deliverRest, readPullReport } from './payload-delivery.ts';

const registry = {
  repository: '127.0.0.1:5999/winfleet/payload',
  digest: `sha256:${'a'.repeat(64)}`,
};

test('pulled by the host, pushed when only it cannot reach the registry, waited for when nobody can', async (t) => {
  // What the stand-in agent prints for pull-payload next, and the arguments it was run with.
  let answer: { code: number; line: unknown } = { code: 0, line: {} };
  const runs: string[][] = [];
  const { host, remote } = await connectedSimHost(t, {
    address: '127.0.0.161',
    programs: () =>
      defaultPrograms().register('winfleet-agent.exe', {
        run: async (context) => {
          runs.push(context.argv);
          context.stdout(`${JSON.stringify(answer.line)}\n`);
          return answer.code;
        },
        neverReportsToScm: true,
      }),
  });
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-delivery-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const payload = await writeStandInPayload(dir);
  let operatorReaches = true;
  const loaded: LoadedPayload = {
    payload,
    manifest: servicesManifestFor(payload),
    totalBytes: 10_000,
    fileOnDisk: (f) => payloadFileOnDisk(dir, f),
    registry,
    reachRegistry: async () => {
      if (!operatorReaches)
        throw new WinfleetError('WF_PAYLOAD_DOWNLOAD', 'Cannot get payload artifact: refused');
    },
  };
  const events: { type: string; reason: string; message: string }[] = [];
  const recorder: EventRecorder = {
    record: (_subject, type, reason, message) => events.push({ type, reason, message }),
  };
  const windowsHost = {
    metadata: { name: 'h', namespace: 'ns' },
    spec: { address: host.address },
  } as unknown as WindowsHost;
  const staged = async () =>
    ((await host.machine.fs.list(hostPaths.payload).catch(() => [])) ?? []).map((e) => e.name);

  // The agent and its shim first; nothing else.
  const copied = await copyOperatorFiles(remote, loaded);
  assert.deepEqual(copied, [hostPaths.serviceExe, hostPaths.agentExe]);
  assert.deepEqual(await staged(), []);

  await t.test('the host pulls: nothing more is copied, an Event says so', async () => {
    answer = { code: 0, line: { downloaded: ['kubelet.exe', 'kube-proxy.exe'], bytes: 120 } };
    const delivery = await deliverRest(recorder, windowsHost, remote, loaded, '1.36.5-wf.1');
    assert.deepEqual(delivery, {
      way: 'pull',
      registry: `${registry.repository}@${registry.digest}`,
      downloaded: 2,
      bytes: 120,
    });
    assert.deepEqual(runs.at(-1), ['pull-payload', '--services-version', '1.36.5-wf.1']);
    assert.deepEqual(await staged(), [], 'the operator pushed nothing');
    assert.equal(events.at(-1)?.reason, EventReason.PayloadPulled);
    assert.match(events.at(-1)!.message, /pulled 2 payload files \(120 bytes\)/);
  });

  await t.test('another refusal of the registry stands: nothing pushed', async () => {
    answer = {
      code: 1,
      line: {
        error: 'HTTP 401 from registry',
        step: 'pull-payload',
        code: 'WF_PAYLOAD_DOWNLOAD',
        reason: 'unauthorized',
      },
    };
    await assert.rejects(deliverRest(recorder, windowsHost, remote, loaded), /HTTP 401/);
    assert.deepEqual(runs.at(-1), ['pull-payload'], 'joining: no version');
    assert.deepEqual(await staged(), []);
  });

  await t.test('nobody reaches the registry: the join waits, naming it', async () => {
    operatorReaches = false;
    answer = {
      code: 1,
      line: {
        error: 'connect ECONNREFUSED',
        step: 'pull-payload',
        code: 'WF_PAYLOAD_DOWNLOAD',
        reason: 'unreachable',
      },
    };
    const error = await deliverRest(recorder, windowsHost, remote, loaded).catch((e) => e);
    assert.equal(errorCode(error), 'WF_PAYLOAD_REGISTRY_UNAVAILABLE');
    assert.match(error.message, /127\.0\.0\.1:5999\/winfleet\/payload/);
    assert.deepEqual(await staged(), []);
  });

  await t.test(
    'only the host cannot reach it: the operator pushes, a Warning says so',
    async () => {
      operatorReaches = true;
      const delivery = await deliverRest(recorder, windowsHost, remote, loaded);
      assert.equal(delivery.way, 'push-fallback');
      const expected = payload.files
        .map((f) => f.name)
        .filter((n) => !n.startsWith('winfleet-'))
        .sort();
      assert.deepEqual((await staged()).sort(), expected);
      assert.equal(events.at(-1)?.type, 'Warning');
      assert.equal(events.at(-1)?.reason, EventReason.PayloadPushFallback);
      assert.match(events.at(-1)!.message, /connect ECONNREFUSED/);
    },
  );

  await t.test('any other failure of the agent stands', async () => {
    answer = {
      code: 1,
      line: {
        error: 'bootstrap.json is invalid',
        step: 'pull-payload',
        code: 'WF_AGENT_CONFIG_INVALID',
      },
    };
    const error = await deliverRest(recorder, windowsHost, remote, loaded).catch((e) => e);
    assert.equal(errorCode(error), 'WF_REMOTE_COMMAND_FAILED');
  });

  await t.test('a payload directory: nothing for the agent to pull', async () => {
    const before = runs.length;
    const { registry: _r, reachRegistry: _p, ...fromDirectory } = loaded;
    assert.deepEqual(await deliverRest(recorder, windowsHost, remote, fromDirectory), {
      way: 'push',
    });
    assert.equal(runs.length, before, 'the agent was not asked');
  });
});

test("a host's report of its pull is read strictly", () => {
  const payload = {
    version: '1',
    kubernetesVersion: 'v1.36.5',
    files: [
      {
        name: 'kubelet.exe',
        version: 'v1.36.5',
        sha256: 'b'.repeat(64),
        source: { path: 'kubelet.exe' },
      },
    ],
  };
  const loaded = { payload, totalBytes: 1000 } as unknown as LoadedPayload;
  assert.deepEqual(readPullReport({ downloaded: ['kubelet.exe'], bytes: 1000 }, loaded), {
    downloaded: ['kubelet.exe'],
    bytes: 1000,
  });
  for (const lie of [
    { downloaded: ['..\\..\\evil.exe'], bytes: 1 },
    { downloaded: ['kubelet.exe', 'kubelet.exe'], bytes: 1 },
    { downloaded: ['kubelet.exe'], bytes: 1001 },
    { downloaded: ['kubelet.exe'], bytes: -1 },
    { downloaded: ['kubelet.exe'], bytes: 1.5 },
    { downloaded: 'kubelet.exe', bytes: 1 },
    { bytes: 1 },
  ]) {
    assert.throws(
      () => readPullReport(lie, loaded),
      (e: unknown) => errorCode(e) === 'WF_REMOTE_COMMAND_FAILED',
      JSON.stringify(lie),
    );
  }
});

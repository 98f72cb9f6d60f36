import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { type HostCall, recordingHostOS } from '../../sim/hosts/agent-test-host.ts';
import { SimLongOperations } from '../../sim/hosts/long-operations.ts';
import { SimHostOS } from '../../sim/hosts/sim-host-os.ts';
import { createTestMachine } from '../../sim/hosts/test-machine.ts';
import { sampleCatalog, standInMsu } from '../../sim/hosts/windows-update.ts';
import {
  installUpdatesAnnotation,
  rebootRequestAnnotation,
  windowsUpdatesAnnotation,
} from '../api/node-annotations.ts';
import { parseWindowsUpdateReport } from '../api/windows-updates.ts';
import { waitFor } from '../kube/wait-for.ts';
import { type AgentConfig, parseAgentConfig } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import { readState, writeState } from './agent-state.ts';
import { maxRebootTokens, mergeWindowsUpdateState } from './windows-update-state.ts';
import {
  reportableUpdates,
  syncWindowsUpdates,
  type WindowsUpdateSync,
  windowsUpdateWatchKey,
} from './windows-updates.ts';

const catalog = sampleCatalog();

const config = {
  nodeName: 'win-1',
  checkIntervalSeconds: 1,
  updateSearchIntervalSeconds: 3600,
} as AgentConfig;

async function world(
  t: Parameters<typeof createTestMachine>[0],
  updates = catalog,
  machineOptions: Parameters<typeof createTestMachine>[1] = {},
  syncOptions: Partial<WindowsUpdateSync> = {},
) {
  const machine = await createTestMachine(t, { windowsUpdates: updates, ...machineOptions });
  const calls: HostCall[] = [];
  const stderr: string[] = [];
  const context: AgentContext = {
    hostOS: recordingHostOS(new SimHostOS(machine), calls),
    stdout: () => {},
    stderr: (text) => stderr.push(text),
  };
  const node: k8s.V1Node = {
    metadata: { name: 'win-1', annotations: {} },
    status: { nodeInfo: { bootID: machine.bootId } as k8s.V1NodeSystemInfo },
  };
  const patches: Record<string, string>[] = [];
  let clock = Date.parse('2026-11-23T01:00:00Z');
  const sync = {
    patchAnnotations: async (annotations: Record<string, string>) => {
      patches.push(annotations);
      Object.assign(node.metadata!.annotations!, annotations);
    },
    now: () => clock,
    ...syncOptions,
  };
  const pass = async () => {
    node.status!.nodeInfo!.bootID = machine.bootId;
    await syncWindowsUpdates(context, config, node, sync);
  };
  const report = () =>
    parseWindowsUpdateReport(node.metadata!.annotations![windowsUpdatesAnnotation]!);
  const count = (method: string) => calls.filter((c) => c.startsWith(`${method} `)).length;
  return {
    machine,
    context,
    node,
    patches,
    stderr,
    pass,
    report,
    count,
    advance: (seconds: number) => {
      clock += seconds * 1000;
    },
  };
}

test('a deletion pending at boot (Defender’s and installers’ housekeeping) is no pending reboot; a servicing key is', async (t) => {
  const w = await world(t);
  // What a Defender platform update leaves: MoveFileEx(..., MOVEFILE_DELAY_UNTIL_REBOOT).
  w.machine.deleteAtBoot(
    'C:\\ProgramData\\Microsoft\\Windows Defender\\Platform\\old\\MsMpEng.exe',
  );
  await w.pass();
  assert.equal(w.report().rebootPending, false, 'nothing for the rollout to drain and reboot');
  w.machine.windowsUpdate.registry.componentBasedServicingRebootPending = true;
  w.advance(3600);
  await w.pass();
  assert.equal(w.report().rebootPending, true);
});

test('searches at start, reports once, and searches again only after the interval', async (t) => {
  const w = await world(t);
  await w.pass();
  assert.equal(w.count('searchUpdates'), 1);
  assert.equal(w.patches.length, 1);
  const report = w.report();
  assert.equal(report.bootId, w.machine.bootId);
  assert.equal(report.searchedAt, '2026-11-23T01:00:00Z');
  assert.deepEqual(
    report.available.map((u) => u.kb),
    ['KB5040437', 'KB5041160', 'KB890830'],
  );
  assert.equal(report.rebootPending, false);

  await w.pass();
  w.advance(3599);
  await w.pass();
  assert.equal(w.count('searchUpdates'), 1, 'no search before the interval');
  assert.equal(w.patches.length, 1, 'an unchanged report is not written again');
  assert.equal(w.count('installUpdates'), 0, 'nothing installed without the annotation');

  w.advance(1);
  await w.pass();
  assert.equal(w.count('searchUpdates'), 2);
  assert.equal(w.report().searchedAt, '2026-11-23T02:00:00Z');
});

test('installs the policy’s updates once, searches right after, and reports the pending reboot', async (t) => {
  const w = await world(t, [
    ...catalog,
    {
      kb: 'KB5039999',
      title: 'Broken',
      categories: ['Security Updates'],
      rebootRequired: false,
      failsWith: '0x80240022',
    },
  ]);
  await w.pass();
  w.node.metadata!.annotations![installUpdatesAnnotation] = 'Security';
  await w.pass();
  assert.equal(w.count('installUpdates'), 1);
  assert.equal(w.count('searchUpdates'), 2, 'searched again right after installing');
  const report = w.report();
  assert.deepEqual(report.installed, ['KB5040437', 'KB5041160']);
  assert.deepEqual(
    report.available.map((u) => u.kb),
    ['KB890830', 'KB5039999'],
  );
  assert.equal(report.failed.length, 1);
  assert.equal(report.failed[0]!.kb, 'KB5039999');
  assert.match(report.failed[0]!.error, /0x80240022 \(WU_E_ALL_UPDATES_FAILED/);
  assert.equal(report.rebootPending, true);
  assert.deepEqual((await readState(w.context.hostOS)).windowsUpdates?.installed, [
    'KB5040437',
    'KB5041160',
  ]);

  await w.pass();
  assert.equal(w.count('installUpdates'), 1, 'a failed KB is not retried in the same search cycle');
  w.advance(3600);
  await w.pass();
  assert.equal(w.count('installUpdates'), 2, 'but is after the next periodic search');

  // "All" installs the rest of what the search found.
  w.node.metadata!.annotations![installUpdatesAnnotation] = 'All';
  await w.pass();
  assert.ok(w.report().installed.includes('KB890830'));
});

test('reboots once per token, recording the token first; a bad token is logged once and ignored', async (t) => {
  const w = await world(t);
  const host = w.context.hostOS;
  let recordedBeforeReboot: string[] | undefined;
  const reboots: string[] = [];
  w.context.hostOS = new Proxy(host, {
    get(target, property, receiver) {
      if (property === 'reboot') {
        return async (reason: string) => {
          recordedBeforeReboot = (await readState(target)).windowsUpdates?.rebootTokens;
          reboots.push(reason);
          await target.reboot(reason);
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
  w.node.metadata!.annotations![rebootRequestAnnotation] = 't1';
  await w.pass();
  assert.deepEqual(reboots, ['winfleet: rollout reboot t1']);
  assert.deepEqual(recordedBeforeReboot, ['t1'], 'the token is in state.json before the reboot');
  const bootId = w.machine.bootId;
  await waitFor(() => w.machine.bootId !== bootId && w.machine.powerState === 'up', {
    description: 'the reboot',
    timeoutMs: 10_000,
  });
  await w.pass();
  await w.pass();
  assert.equal(reboots.length, 1, 'the same token never reboots again');

  w.node.metadata!.annotations![rebootRequestAnnotation] = 'Bad_Token\n';
  await w.pass();
  await w.pass();
  assert.equal(reboots.length, 1);
  const logged = w.stderr.filter((l) => l.includes('is not a reboot token'));
  assert.equal(logged.length, 1, 'logged once');
  assert.match(
    logged[0]!,
    /^Ignoring winfleet\.io\/reboot-request on Node win-1: "Bad_Token\\n" is not a reboot token .*remove the annotation or set a valid token\n$/,
  );

  w.node.metadata!.annotations![rebootRequestAnnotation] = 't2';
  await w.pass();
  assert.equal(reboots.length, 2, 'a new token reboots');
});

test('a new boot means a new search and a report under the new boot id', async (t) => {
  const w = await world(t);
  await w.pass();
  w.node.metadata!.annotations![installUpdatesAnnotation] = 'Security';
  await w.pass();
  assert.equal(w.report().rebootPending, true);
  delete w.node.metadata!.annotations![installUpdatesAnnotation];
  await w.machine.reboot();
  await w.pass();
  const report = w.report();
  assert.equal(report.bootId, w.machine.bootId);
  assert.equal(report.rebootPending, false);
  assert.equal(w.machine.kernelVersion, '10.0.20348.2700');
  assert.deepEqual(report.installed, ['KB5040437', 'KB5041160'], 'kept across the reboot');
});

test('a failed search is reported, keeping the previous updates', async (t) => {
  const w = await world(t);
  await w.pass();
  const host = w.context.hostOS;
  w.context.hostOS = new Proxy(host, {
    get(target, property, receiver) {
      if (property === 'searchUpdates') {
        return async () => {
          throw new Error(
            'Cannot search for Windows updates: …failed with 0x8024402C (WU_E_PT_WINHTTP_NAME_NOT_RESOLVED)\r\n',
          );
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
  w.advance(3600);
  await w.pass();
  const report = w.report();
  assert.match(report.error!, /0x8024402C/);
  assert.doesNotMatch(report.error!, /[\r\n]/);
  assert.equal(report.available.length, 3);
});

test('the report carries what the search found, cleaned to the contract', () => {
  const updates = reportableUpdates([
    {
      kb: 'KB5040437',
      title: 'A\u202Eb\nc',
      categories: ['Microsoft Server operating system-21H2', 'Security Updates'],
    },
    { kb: 'KB5040437', title: 'dup', categories: ['Critical Updates'], rebootRequired: true },
    { kb: 'KB1', title: 'no', categories: [] },
    {
      kb: 'KB890830',
      title: 'x'.repeat(300),
      categories: Array.from({ length: 12 }, (_, i) => `C${i}`),
    },
  ]);
  assert.deepEqual(updates[0], {
    kb: 'KB5040437',
    title: 'A b c',
    categories: ['Security Updates', 'Critical Updates', 'Microsoft Server operating system-21H2'],
    rebootRequired: true,
  });
  assert.equal(updates.length, 2);
  assert.equal(updates[1]!.title.length, 256);
  assert.equal(updates[1]!.categories.length, 8);
});

test('state merges keep every token and installed KB, bounded', () => {
  const merged = mergeWindowsUpdateState(
    {
      rebootTokens: ['a', 'b'],
      installed: ['KB1000000'],
      failed: [{ kb: 'KB1000001', error: 'x' }],
    },
    { rebootTokens: ['b', 'c'] },
  );
  assert.deepEqual(merged, {
    rebootTokens: ['a', 'b', 'c'],
    installed: ['KB1000000'],
    failed: [{ kb: 'KB1000001', error: 'x' }],
  });
  const many = Array.from({ length: maxRebootTokens + 5 }, (_, i) => `t${i}`);
  assert.deepEqual(
    mergeWindowsUpdateState(undefined, { rebootTokens: many })!.rebootTokens,
    many.slice(5),
  );
});

test('state.json written by an older agent (no windowsUpdates) still reads and merges', async (t) => {
  const machine = await createTestMachine(t);
  const host = new SimHostOS(machine);
  await writeState(host, {
    version: '1',
    services: [],
    files: [],
    env: [],
    createdDirectories: [],
  });
  assert.equal((await readState(host)).windowsUpdates, undefined);
  const state = await readState(host);
  state.windowsUpdates = { rebootTokens: ['t1'], installed: [], failed: [] };
  await writeState(host, state);
  await writeState(host, { ...(await readState(host)), windowsUpdates: undefined });
  assert.deepEqual((await readState(host)).windowsUpdates?.rebootTokens, ['t1'], 'not forgotten');
});

test('the watch key changes with the annotations and the boot id', () => {
  const node = (a: Record<string, string>, bootID: string) =>
    ({ metadata: { annotations: a }, status: { nodeInfo: { bootID } } }) as k8s.V1Node;
  const base = windowsUpdateWatchKey(node({}, 'b1'));
  assert.notEqual(
    windowsUpdateWatchKey(node({ [installUpdatesAnnotation]: 'Security' }, 'b1')),
    base,
  );
  assert.notEqual(windowsUpdateWatchKey(node({ [rebootRequestAnnotation]: 't1' }, 'b1')), base);
  assert.notEqual(windowsUpdateWatchKey(node({}, 'b2')), base);
  assert.equal(windowsUpdateWatchKey(node({ other: 'x' }, 'b1')), base);
});

test('updateSearchIntervalSeconds is optional and validated', () => {
  const base = {
    nodeName: 'win-1',
    nodeIP: '127.0.0.200',
    hostname: 'SIMTEST',
    apiServer: 'https://127.0.0.1:6443',
    clusterDNS: '10.96.0.10',
    clusterDomain: 'cluster.local',
    serviceCIDR: '10.96.0.0/12',
    podCIDR: '10.244.5.0/24',
    labels: {},
    taints: [],
    kubelet: { systemReserved: {}, priorityClass: 'NORMAL_PRIORITY_CLASS', maxPods: 110 },
    operatorNamespace: 'winfleet-system',
    checkIntervalSeconds: 1,
  };
  assert.equal(parseAgentConfig(JSON.stringify(base)).updateSearchIntervalSeconds, undefined);
  assert.equal(
    parseAgentConfig(JSON.stringify({ ...base, updateSearchIntervalSeconds: 600 }))
      .updateSearchIntervalSeconds,
    600,
  );
  assert.throws(
    () => parseAgentConfig(JSON.stringify({ ...base, updateSearchIntervalSeconds: 0 })),
    /updateSearchIntervalSeconds/,
  );
});

test('an air-gapped host: the payload’s .msu is reported, installed for Security, and applied at the next boot', async (t) => {
  const w = await world(t, []);
  w.machine.windowsUpdate.online = false;
  await w.machine.fs.writeFileAtomic(
    'C:\\k\\winfleet\\payload\\windows10.0-kb5040437-x64.msu',
    standInMsu({ kb: 'KB5040437', build: 20348, ubr: 2700 }),
  );
  await w.pass();
  let report = w.report();
  assert.equal(report.error, undefined, 'no Windows Update server is not an error here');
  assert.deepEqual(report.available, [
    {
      kb: 'KB5040437',
      title: 'windows10.0-kb5040437-x64.msu (from the payload)',
      categories: ['Security Updates'],
      rebootRequired: true,
    },
  ]);
  w.node.metadata!.annotations![installUpdatesAnnotation] = 'Security';
  await w.pass();
  report = w.report();
  assert.deepEqual(report.installed, ['KB5040437']);
  assert.deepEqual(report.available, []);
  assert.equal(report.rebootPending, true);
  await w.machine.reboot();
  await w.pass();
  assert.equal(w.report().rebootPending, false);
  assert.equal(w.machine.kernelVersion, '10.0.20348.2700');
});

test('a bad install policy installs nothing and is logged once, beside a bad token', async (t) => {
  const w = await world(t);
  w.node.metadata!.annotations![installUpdatesAnnotation] = 'Everything';
  w.node.metadata!.annotations![rebootRequestAnnotation] = 'NOPE';
  await w.pass();
  await w.pass();
  assert.equal(w.count('installUpdates'), 0);
  assert.equal(w.count('reboot'), 0);
  const policyLines = w.stderr.filter((l) => l.startsWith('winfleet.io/install-updates'));
  assert.deepEqual(policyLines, [
    'winfleet.io/install-updates on Node win-1 is "Everything"; expected "Security" or "All" (the operator\'s rollout engine writes it): installing nothing\n',
  ]);
  assert.equal(w.stderr.filter((l) => l.includes('is not a reboot token')).length, 1);
});

test('a damaged windowsUpdates record in state.json does not stop the reports', () => {
  const merged = mergeWindowsUpdateState(
    {
      rebootTokens: ['t1', 'BAD TOKEN', 7 as unknown as string],
      installed: ['KB5040437', 'not-a-kb', 'KB5040437\n'],
      failed: [
        { kb: 'KB5041160', error: 'x\r\ny' },
        { kb: 'nope', error: 'x' },
        null as unknown as { kb: string; error: string },
      ],
    },
    undefined,
  );
  assert.deepEqual(merged, {
    rebootTokens: ['t1'],
    installed: ['KB5040437'],
    failed: [{ kb: 'KB5041160', error: 'x y' }],
  });
});

test('a cumulative update that takes 25 simulated minutes installs, and no pass waits for it (issue 32)', async (t) => {
  // 25 min of LCU + 1 min of SSU at 500 simulated ms per real ms: 3.1 s. The install runs with
  // the agent's own timeout (long-operations.ts); the runner's 2-minute default would kill it.
  const minute = 60_000;
  let woken = 0;
  const w = await world(
    t,
    catalog,
    {
      timings: {
        longOperationScale: 500,
        updateSearchMs: 5_000,
        cumulativeUpdateInstallMs: 25 * minute,
        updateInstallMs: minute,
      },
    },
    { foregroundMs: 100, wake: () => woken++ },
  );
  await w.pass();
  assert.equal(w.report().available.length, 3);
  w.node.metadata!.annotations![installUpdatesAnnotation] = 'Security';
  w.node.metadata!.annotations![rebootRequestAnnotation] = 'after-patch-1';
  const started = Date.now();
  // The loop's passes (each with its health check) go on while the install runs.
  let passes = 0;
  let longest = 0;
  while (w.report().installed.length === 0) {
    assert.ok(Date.now() - started < 20_000, 'the install ends');
    const before = Date.now();
    await w.pass();
    longest = Math.max(longest, Date.now() - before);
    passes++;
    if (w.report().installed.length === 0) {
      assert.equal(w.machine.longOperations.running.size, 1, 'the install is under way');
      assert.equal(w.machine.powerState, 'up', 'a reboot request waits for the install');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const elapsedMs = Date.now() - started;
  assert.ok(elapsedMs * 500 > 2 * minute, `longer than 2 simulated minutes (${elapsedMs} ms)`);
  assert.ok(passes >= 10, `the loop kept running: ${passes} passes during the install`);
  assert.ok(longest < 1_000, `no pass waited for the install: the longest took ${longest} ms`);
  assert.ok(woken >= 1, 'the end of the install woke the loop');
  assert.deepEqual(w.report().installed, ['KB5040437', 'KB5041160']);
  assert.deepEqual(w.report().failed, []);
  assert.equal(w.report().rebootPending, true);
  assert.ok(
    w.stderr.some((l) => /KB5040437, KB5041160 are still installing/.test(l)),
    w.stderr.join(''),
  );
});

test('a simulated operation longer than its timeout is killed as the runner kills it', async () => {
  const ops = new SimLongOperations({ longOperationScale: 60_000 });
  let ran = false;
  await assert.rejects(
    ops.run('powershell.exe', ['install'], {}, 5 * 60_000, () => {
      ran = true;
    }),
    { code: 'WF_TIMEOUT', message: /did not finish within 120000 ms and was killed/ },
  );
  assert.equal(ran, false, 'a killed install installed nothing');
  assert.equal(
    await ops.run('Dism.exe', [], { timeoutMs: Number.POSITIVE_INFINITY }, 60 * 60_000, () => 3010),
    3010,
  );
});

test('a reboot something else waits for (a proxy Windows read at boot) is reported as pending', async (t) => {
  let besides = false;
  const w = await world(t, catalog, {}, { rebootPendingBesides: () => besides });
  await w.pass();
  assert.equal(w.report().rebootPending, false);
  besides = true;
  await w.pass();
  assert.equal(w.report().rebootPending, true);
});

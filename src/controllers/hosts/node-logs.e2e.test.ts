/**
 * A joined node keeps its services' logs: a Windows service has no console, so the kubelet and
 * kube-proxy (which log only to standard error) run under kube-log-runner.exe with a log file
 * in C:\k\logs, and windows_exporter logs to its --log.file. Before kube-log-runner was in the
 * payload, no kubelet log existed anywhere on the host.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serviceLog, serviceLogFile } from '../../../sim/hosts/service-logs.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { waitFor } from '../../kube/wait-for.ts';

test('after a join the kubelet, kube-proxy and windows_exporter logs are files on the host', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const sim = world.fleet.hosts[0]!;
  await createWindowsHosts(world.kc, world.namespace, world.fleet.hosts);
  await waitFor(
    async () => {
      const list = await listWindowsHosts(world.kc, world.namespace);
      return list.length === 1 && list.every(hostReady) ? list : undefined;
    },
    { description: 'a Ready WindowsHost', timeoutMs: 120_000, intervalMs: 500 },
  );

  const kubelet = sim.machine.scm.query('kubelet');
  assert.match(
    kubelet?.commandLine ?? '',
    /^"C:\\k\\kube-log-runner\.exe" -log-file=C:\\k\\logs\\kubelet\.log -log-file-size=100M -log-file-age=168h C:\\k\\kubelet\.exe /,
  );
  assert.equal(serviceLogFile(sim.machine, 'kubelet'), 'C:\\k\\logs\\kubelet.log');
  const kubeletLog = await sim.machine.fs.readFile('C:\\k\\logs\\kubelet.log');
  assert.match(kubeletLog.toString(), /kubelet\.go\] Starting kubelet v1\.36\.5 for node/);

  for (const [service, file, line] of [
    ['kube-proxy', 'C:\\k\\logs\\kube-proxy.log', /Starting kube-proxy/],
    ['windows_exporter', 'C:\\k\\logs\\windows_exporter.log', /msg="Enabled collectors: /],
  ] as const) {
    await waitFor(async () => (await serviceLog(sim.machine, service)).some((l) => line.test(l)), {
      description: `${service} output in ${file}`,
      timeoutMs: 60_000,
      intervalMs: 500,
    });
    assert.equal(serviceLogFile(sim.machine, service), file);
    assert.equal(sim.machine.scm.query(service)?.state, 'running', service);
  }
});

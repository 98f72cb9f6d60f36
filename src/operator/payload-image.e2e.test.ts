/**
 * The operator with its payload in a registry (--payload-image): payload.json read from the
 * registry with the payload pull secret; one host joined over SSH that pulls the payload files
 * itself with the same Secret (read with its bootstrap token), and one that cannot reach the
 * registry, whose files the operator fetched into its download cache (once each) and copied
 * over SFTP, streamed.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { startTestRegistry } from '../../sim/registry/registry-process.ts';
import { joinWorld } from '../../sim/testkit/join-fixture.ts';
import { startTestOperator } from '../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
} from '../../sim/testkit/windows-hosts.ts';
import { waitFor } from '../kube/wait-for.ts';
import { pushPayload } from '../payload/oci/push-payload.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';

test('hosts join with a payload the operator reads from a registry with its pull secret', async (t) => {
  const world = await joinWorld(t, { releases: ['2022', '2022'], startOperator: false });
  const { kc, namespace, payload } = world;
  const registry = await startTestRegistry({ auth: 'htpasswd' });
  t.after(() => registry.stop());
  const { username, password } = registry.credentials!;
  const pushed = await pushPayload(
    world.payloadDir,
    { registry: registry.host, repository: 'winfleet/payload', tag: payload.version },
    { plainHttp: true, credentials: { username, password } },
  );
  // The payload directory is gone: the registry is the only place the operator can read it.
  await rm(world.payloadDir, { recursive: true, force: true });
  const auth = Buffer.from(`${username}:${password}`).toString('base64');
  await kc.makeApiClient(k8s.CoreV1Api).createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: 'payload-pull', namespace },
      type: 'kubernetes.io/dockerconfigjson',
      stringData: { '.dockerconfigjson': JSON.stringify({ auths: { [registry.host]: { auth } } }) },
    },
  });
  const cacheDir = await mkdtemp(join(tmpdir(), 'winfleet-payload-cache-'));
  t.after(() => rm(cacheDir, { recursive: true, force: true }));
  const operator = await startTestOperator(kc, {
    namespace,
    payloadImage: {
      reference: pushed.reference,
      pullSecret: 'payload-pull',
      plainHttp: true,
      cacheDir,
    },
    config: { hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 } },
  });
  t.after(() => operator.stop());

  // The second host cannot reach the registry: the operator pushes its files.
  const [pulling, cutOff] = world.fleet.hosts;
  cutOff!.faults.blockOutbound({ host: '127.0.0.1', port: Number(registry.host.split(':')[1]) });
  await createWindowsHosts(kc, namespace, world.fleet.hosts);
  const hosts = await waitFor(
    async () => {
      const list = await listWindowsHosts(kc, namespace);
      return list.length === 2 && list.every(hostReady) ? list : undefined;
    },
    { description: 'two Ready WindowsHosts', timeoutMs: 180_000, intervalMs: 500 },
  );
  const kubelet = payload.files.find((f) => f.name === 'kubelet.exe')!;
  for (const host of hosts) assert.equal(host.status?.servicesVersion, payload.version);
  for (const sim of [pulling!, cutOff!]) {
    assert.equal(await sim.machine.fs.sha256('C:\\k\\kubelet.exe'), kubelet.sha256);
    assert.equal(
      await sim.machine.fs.sha256(hostPaths.agentExe),
      payload.files.find((f) => f.name === 'winfleet-agent.exe')!.sha256,
    );
  }
  const how = (sim: typeof pulling) =>
    hosts
      .find((h) => h.metadata.name === sim!.name.toLowerCase())!
      .status?.conditions?.find((c) => c.type === 'Bootstrapped')?.message ?? '';
  assert.match(how(pulling), /payload pulled by the host/);
  assert.match(how(cutOff), /payload pushed over SFTP \(14 files\): the host cannot reach/);
  // Each file fetched once into the cache, by its SHA-256, and nothing half-fetched left.
  assert.deepEqual((await readdir(cacheDir)).sort(), payload.files.map((f) => f.sha256).sort());
});

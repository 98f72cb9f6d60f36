/**
 * What lands on a joined host and what its agent agrees to run, tried from an attacker's side
 * against a real API server (Node authorizer, NodeRestriction) and a simulated host:
 * - a local account that is not an administrator cannot read the node's key or plant files in
 *   C:\k, not even in folders of C:\k it made its own before the join, and the bootstrap
 *   token's files are gone once the node has joined;
 * - holding the node's own credentials (read from the host's files), the attacker points the
 *   Node's desired-version annotation at ConfigMaps they created with winfleet's label: the
 *   agent ignores the unsigned annotation (src/api/node-commands.ts); signed with the
 *   operator's key it still refuses them, as the node cannot read them; each with a log line,
 *   and no service changes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import ssh2 from 'ssh2';
import { wellKnownSid } from '../../sim/hosts/file-security.ts';
import { serviceLog } from '../../sim/hosts/service-logs.ts';
import { connect, generateTestKey, openSftp, sftpCall } from '../../sim/hosts/ssh-test-client.ts';
import { annotateAsOperator } from '../../sim/testkit/agent-alone.ts';
import { joinWorld } from '../../sim/testkit/join-fixture.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
} from '../../sim/testkit/windows-hosts.ts';
import {
  desiredServicesVersionAnnotation,
  servicesManifestConfigMapName,
  servicesManifestKey,
} from '../api/node-annotations.ts';
import { manifestLabel } from '../controllers/hosts/manifest-publisher.ts';
import { httpStatus } from '../kube/client.ts';
import { waitFor } from '../kube/wait-for.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';
import { publishedManifestsConfigMapName } from '../servicesmanifest/published-manifests.ts';
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import { agentServiceName } from './converge.ts';
import { nodeKubeConfig } from './node-client.ts';

const { STATUS_CODE } = ssh2.utils.sftp;

/** Manifests an attacker publishes under winfleet's label; `sha256` is a real payload file's. */
function attackerManifests(sha256: string): ServicesManifest[] {
  const evil = (version: string, binary: string): ServicesManifest => ({
    version,
    services: [
      {
        name: 'evil',
        displayName: 'evil',
        binary,
        args: [],
        dependencies: [],
        priority: 0,
        bootstrap: false,
      },
    ],
    files: [{ payload: 'kubelet.exe', path: binary, sha256 }],
  });
  return [
    // Well formed, inside C:\k: only the publication record stops it.
    evil('evil-valid', 'C:\\k\\evil.exe'),
    evil('evil-cmd', 'C:\\Windows\\System32\\cmd.exe'),
    evil('evil-dotdot', 'C:\\k\\..\\evil.exe'),
  ];
}

test('a joined host keeps its key from users and its agent runs only manifests the operator published', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const { kc, namespace } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const sim = world.fleet.hosts[0]!;
  const kubelet = world.payload.files.find((f) => f.name.toLowerCase() === 'kubelet.exe')!;
  const attacks = attackerManifests(kubelet.sha256);
  // A user who may create ConfigMaps in winfleet's namespace, but is not the operator, labels
  // theirs as winfleet does; they exist before the operator publishes anything.
  for (const manifest of attacks) {
    await core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: {
          name: servicesManifestConfigMapName(manifest.version),
          labels: { [manifestLabel]: 'true' },
        },
        data: { [servicesManifestKey]: JSON.stringify(manifest) },
      },
    });
  }

  // A local account that is only in Users. Before the join it made C:\k\pki and
  // C:\k\winfleet its own (Authenticated Users may create folders in C:\ and below), with a
  // protected DACL that lets it in: the operator must not inherit them as they are.
  const aliceKey = generateTestKey();
  const alice = sim.ssh.addStandardUser('alice', aliceKey.publicKey);
  for (const path of [hostPaths.certDir, 'C:\\k\\winfleet']) {
    await sim.machine.fs.mkdir(path, { recursive: true });
    await sim.machine.fs.setSecurity(path, {
      owner: alice.sids[0]!,
      protected: true,
      entries: [
        { sid: alice.sids[0]!, read: true, write: true },
        { sid: wellKnownSid.system, read: true, write: true },
        { sid: wellKnownSid.administrators, read: true, write: true },
      ],
    });
  }

  await createWindowsHosts(kc, namespace, world.fleet.hosts);
  const [host] = await waitFor(
    async () => {
      const list = await listWindowsHosts(kc, namespace);
      return list.length === 1 && list.every(hostReady) ? list : undefined;
    },
    { description: 'the WindowsHost to be Ready', timeoutMs: 120_000, intervalMs: 500 },
  );
  const nodeName = host!.status!.nodeName!;

  // Item 4: the bootstrap files go once the node's own credentials work.
  await waitFor(
    async () =>
      !(await sim.machine.fs.stat(hostPaths.bootstrapConfig)) &&
      !(await sim.machine.fs.stat(hostPaths.bootstrapKubeconfig)),
    { description: 'bootstrap.json and the bootstrap kubeconfig to be deleted', timeoutMs: 30_000 },
  );

  const { client } = await connect(sim, { key: aliceKey, username: 'alice' });
  t.after(() => client.end());
  const sftp = await openSftp(client);
  const pki = (await sim.machine.fs.list(hostPaths.certDir)).map((e) => e.name);
  assert.ok(
    pki.some((name) => /^kubelet-client.*\.pem$/.test(name)),
    `the node key is there: ${pki.join(', ')}`,
  );
  for (const name of pki) {
    await assert.rejects(
      sftpCall<Buffer>((d) => sftp.readFile(`/C:/k/pki/${name}`, d)),
      { code: STATUS_CODE.PERMISSION_DENIED },
      `alice reads C:\\k\\pki\\${name}`,
    );
  }
  // kube-proxy's own kubeconfig holds its private key inline (issue 11).
  await waitFor(() => sim.machine.fs.stat(hostPaths.kubeProxyKubeconfig), {
    description: 'kube-proxy’s kubeconfig on the host',
    timeoutMs: 60_000,
  });
  for (const path of [
    '/C:/k/kubeconfig',
    '/C:/k/winfleet/agent.json',
    '/C:/k/kube-proxy.kubeconfig',
  ]) {
    await assert.rejects(
      sftpCall<Buffer>((d) => sftp.readFile(path, d)),
      {
        code: STATUS_CODE.PERMISSION_DENIED,
      },
    );
  }
  for (const path of ['/C:/k/evil.exe', '/C:/k/winfleet/evil.exe', '/C:/k/cni/bin/evil.exe']) {
    await assert.rejects(
      sftpCall((d) => sftp.writeFile(path, 'MZ', d as never)),
      { code: STATUS_CODE.PERMISSION_DENIED },
      `alice writes ${path}`,
    );
  }
  const kubeDirSecurity = await sim.machine.fs.security('C:\\k');
  assert.deepEqual(
    {
      owner: kubeDirSecurity.owner,
      protected: kubeDirSecurity.protected,
      sids: kubeDirSecurity.entries.map((e) => e.sid),
    },
    { owner: 'S-1-5-32-544', protected: true, sids: ['S-1-5-18', 'S-1-5-32-544'] },
  );
  // What alice made before the join is Administrators' now, and inherits only C:\k's DACL.
  for (const path of [hostPaths.certDir, 'C:\\k\\winfleet', hostPaths.agentExe]) {
    const security = await sim.machine.fs.security(path);
    assert.deepEqual(
      {
        owner: security.owner,
        protected: security.protected,
        sids: security.entries.map((e) => e.sid),
      },
      { owner: 'S-1-5-32-544', protected: false, sids: ['S-1-5-18', 'S-1-5-32-544'] },
      `${path} after the join`,
    );
  }

  // Item 8. The operator is stopped so that it does not put the annotation back: the agent
  // alone must refuse.
  await world.operator!.stop();
  world.operator = undefined;
  const nodeKc = await nodeKubeConfig(sim.hostOS());
  assert.ok(nodeKc, 'the node credentials are on the host');
  const nodeCore = nodeKc.makeApiClient(k8s.CoreV1Api);
  // The node reads what the operator published ...
  for (const name of [
    servicesManifestConfigMapName(world.payload.version),
    publishedManifestsConfigMapName,
  ])
    await nodeCore.readNamespacedConfigMap({ name, namespace });
  // ... and nothing else, whatever its label.
  for (const manifest of attacks) {
    const name = servicesManifestConfigMapName(manifest.version);
    const status = await nodeCore.readNamespacedConfigMap({ name, namespace }).then(
      () => 200,
      (error: unknown) => httpStatus(error),
    );
    assert.equal(status, 403, `the node reads ${name}`);
  }
  const services = () =>
    sim.machine.scm
      .names()
      .sort()
      .map((name) => {
        const s = sim.machine.scm.query(name)!;
        return { name, commandLine: s.commandLine, state: s.state, pid: s.pid };
      });
  const before = services();
  const manifestBefore = (await sim.machine.fs.readFile(hostPaths.servicesManifest)).toString();
  for (const manifest of attacks) {
    // A node may write its own Node's annotations.
    await nodeCore.patchNode(
      {
        name: nodeName,
        body: {
          metadata: { annotations: { [desiredServicesVersionAnnotation]: manifest.version } },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    // Unsigned: not the operator's command (src/api/node-commands.ts).
    await waitFor(
      async () =>
        (await serviceLog(sim.machine, agentServiceName)).some((line) =>
          line.includes(
            `Ignoring ${desiredServicesVersionAnnotation}=${JSON.stringify(manifest.version)}`,
          ),
        ),
      { description: `the agent to ignore the node's ${manifest.version}`, timeoutMs: 20_000 },
    );
    // Even signed with the operator's key (an operator tricked into naming it), the manifest
    // is taken only when the operator's record lists it.
    await annotateAsOperator(kc, namespace, nodeName, {
      [desiredServicesVersionAnnotation]: manifest.version,
    });
    await waitFor(
      async () =>
        (await serviceLog(sim.machine, agentServiceName)).some((line) =>
          line.includes(`Refusing services manifest ${manifest.version}`),
        ),
      { description: `the agent to refuse ${manifest.version}`, timeoutMs: 20_000 },
    );
  }
  assert.deepEqual(services(), before, 'no service changed');
  assert.equal(
    (await sim.machine.fs.readFile(hostPaths.servicesManifest)).toString(),
    manifestBefore,
  );
  assert.equal(await sim.machine.fs.stat('C:\\k\\evil.exe'), undefined);
});

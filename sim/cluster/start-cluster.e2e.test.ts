import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { waitFor } from '../../src/kube/wait-for.ts';
import { cidrContains, parseIpv4, parseIpv4Cidr } from '../../src/net/ipv4-cidr.ts';
import { createCsrPem, generateKeyPair } from '../../src/pki/certificates.ts';
import { createLinuxNode } from '../testkit/nodes.ts';
import {
  freshCluster,
  sharedCluster,
  testNamespace,
  uniqueSuffix,
} from '../testkit/test-cluster.ts';
import { ComponentStartError } from './health.ts';
import { podCidr, startCluster } from './start-cluster.ts';

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('two clusters run side by side on their own ports and stop without leftovers', async () => {
  const [a, b] = await Promise.all([startCluster(), startCluster()]);
  try {
    assert.notEqual(a.server, b.server);
    assert.notEqual(a.dir, b.dir);
    for (const cluster of [a, b]) {
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(cluster.kubeconfigPath);
      const version = await kc.makeApiClient(k8s.VersionApi).getCode();
      assert.match(
        version.gitVersion,
        /^v1\.36\.\d+$/,
        'the API server reports the pinned version',
      );
      assert.deepEqual(
        cluster.components.map((c) => c.name),
        [
          'etcd',
          'kube-apiserver',
          'kube-controller-manager',
          'kube-scheduler',
          'kwok',
          'kwok-hosts',
        ],
      );
    }
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
  for (const component of [...a.components, ...b.components]) {
    assert.equal(
      processAlive(component.pid!),
      false,
      `${component.name} (pid ${component.pid}) is gone`,
    );
  }
});

test('kwok-only nodes get their own pod CIDR from the controller manager, and their pods addresses inside it', async (t) => {
  const { kc } = await sharedCluster();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const names = [`cidr-a-${uniqueSuffix()}`, `cidr-b-${uniqueSuffix()}`];
  t.after(async () => {
    for (const name of names) await core.deleteNode({ name }).catch(() => {});
  });
  const cluster = parseIpv4Cidr(podCidr)!;
  const cidrs = new Map<string, string>();
  for (const name of names) {
    // Ready only once it has a pod CIDR (kwok-stages.yaml).
    const node = await createLinuxNode(kc, { name });
    const cidr = node.spec?.podCIDR ?? '';
    assert.ok(cidrContains(cluster, parseIpv4Cidr(cidr)?.network ?? -1), `${name}: ${cidr}`);
    cidrs.set(name, cidr);
  }
  assert.equal(new Set(cidrs.values()).size, 2);
  const namespace = await testNamespace(kc, 'kwokip');
  for (const name of names) {
    for (const i of [1, 2]) {
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: `${name}-${i}` },
          spec: {
            nodeName: name,
            containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }],
          },
        },
      });
    }
  }
  const pods = await waitFor(
    async () => {
      const list = (await core.listNamespacedPod({ namespace })).items;
      return list.length === 4 && list.every((p) => p.status?.phase === 'Running' && p.status.podIP)
        ? list
        : undefined;
    },
    { description: 'four pods Running with IPs', timeoutMs: 30_000 },
  );
  const ips = pods.map((p) => p.status!.podIP!);
  assert.equal(new Set(ips).size, 4, ips.join(', '));
  for (const pod of pods) {
    const cidr = parseIpv4Cidr(cidrs.get(pod.spec!.nodeName!)!)!;
    assert.ok(
      cidrContains(cidr, parseIpv4(pod.status!.podIP!)!),
      `${pod.metadata?.name}: ${pod.status?.podIP}`,
    );
  }
});

test('a component that fails to start is reported with the tail of its log', async () => {
  const binDir = await mkdtemp(join(tmpdir(), 'winfleet-badbin-'));
  const etcd = join(binDir, 'etcd');
  await writeFile(
    etcd,
    '#!/bin/sh\necho "etcdmain: listen tcp: address already in use" >&2\nexit 3\n',
  );
  await chmod(etcd, 0o755);
  await assert.rejects(startCluster({ binDir }), (error: unknown) => {
    assert.ok(error instanceof ComponentStartError);
    assert.equal(error.component, 'etcd');
    assert.match(error.message, /exited with code 3/);
    assert.match(error.message, /address already in use/);
    return true;
  });
});

test('the controller manager signs approved CSRs with the cluster CA', async (t) => {
  const cluster = await freshCluster(t);
  const certificates = cluster.kc.makeApiClient(k8s.CertificatesV1Api);
  const keys = await generateKeyPair();
  const csr = await createCsrPem(
    { commonName: 'winfleet-test-user', organizations: ['winfleet-testers'] },
    keys,
  );
  const name = 'winfleet-signing-check';
  await certificates.createCertificateSigningRequest({
    body: {
      metadata: { name },
      spec: {
        request: Buffer.from(csr).toString('base64'),
        signerName: 'kubernetes.io/kube-apiserver-client',
        usages: ['client auth', 'digital signature'],
      },
    },
  });
  await certificates.patchCertificateSigningRequestApproval(
    {
      name,
      body: [
        {
          op: 'add',
          path: '/status/conditions',
          value: [
            { type: 'Approved', status: 'True', reason: 'Test', message: 'approved by test' },
          ],
        },
      ],
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
  );
  let certificate: string | undefined;
  for (let i = 0; i < 100 && !certificate; i++) {
    certificate = (await certificates.readCertificateSigningRequest({ name })).status?.certificate;
    if (!certificate) await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(certificate, 'the CSR was signed within 20 s');
  const issued = new X509Certificate(Buffer.from(certificate, 'base64'));
  const ca = new X509Certificate(await readFile(cluster.pki.caCert));
  assert.ok(issued.checkIssued(ca), 'signed by the cluster CA');
  assert.match(issued.subject, /CN=winfleet-test-user/);
});

function processesUsing(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(dir)) pids.push(Number(entry));
    } catch {
      // Exited while we looked.
    }
  }
  return pids;
}

test('a launcher killed with SIGKILL takes its components with it; the next start sweeps its files', async () => {
  const cli = fileURLToPath(new URL('./cli.ts', import.meta.url));
  const child = spawn(process.execPath, [cli], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk;
  });
  const kubeconfig = await waitFor(() => /export KUBECONFIG=(\S+)/.exec(out)?.[1], {
    description: 'the launcher to print its kubeconfig',
    timeoutMs: 120_000,
  });
  const dir = dirname(kubeconfig);
  assert.equal(processesUsing(dir).length, 6, 'six components run (two kwok)');
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  // Until this process reaps it, the killed launcher is a zombie whose pid still answers.
  await exited;
  await waitFor(() => processesUsing(dir).length === 0, {
    description: 'the components to die with their launcher',
    timeoutMs: 10_000,
  });
  assert.ok(existsSync(dir), 'a SIGKILLed launcher cannot remove its files itself');
  const next = await startCluster();
  await next.stop();
  assert.equal(existsSync(dir), false, 'the stale directory was swept');
});

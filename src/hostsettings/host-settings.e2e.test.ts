/**
 * Host settings end to end (issue 16), with a real control plane, the lab's mirror registry and
 * simulated hosts: a proxy change reaches every node service's environment (NO_PROXY with
 * commas, WinHTTP's bypass list with semicolons) through the pools' rollout, never more than
 * maxUnavailable hosts at a time; a CA put in the bundle is added to every host's Root store and
 * removed from every host when it leaves the bundle; and each node's containerd routes
 * mcr.microsoft.com to the lab mirror, exactly as the webhook's resolver does.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { machineRegistryHosts, pullUrls } from '../../sim/hosts/containerd-registry-hosts.ts';
import type { SimMachine } from '../../sim/hosts/machine.ts';
import { startMirrorRegistry } from '../../sim/registry/mirror-registry.ts';
import { joinWorld } from '../../sim/testkit/join-fixture.ts';
import { createPool, labelHosts, readPool, sampleRollout } from '../../sim/testkit/pools.ts';
import { writeOperatorConfig } from '../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  listWindowsHosts,
  waitForReadyHosts,
} from '../../sim/testkit/windows-hosts.ts';
import { servicesVersionAnnotation } from '../api/node-annotations.ts';
import { EventReason } from '../api/reasons.ts';
import { parseConfig } from '../config/winfleet-config.ts';
import { parseImageReference } from '../images/image-reference.ts';
import { compileRegistryRouting, lookupTargets } from '../images/registry-mirrors.ts';
import { waitFor } from '../kube/wait-for.ts';
import { createCertificateAuthority, issueCertificate } from '../pki/certificates.ts';
import { caBundleKey, parseCaBundle } from '../pki/trusted-ca-bundle.ts';
import { resolverFor } from '../webhook/pod-images.ts';

const hostCount = 4;
const maxUnavailable = 2;
const nodeServices = ['containerd', 'kubelet', 'kube-proxy'];
const proxyUrl = 'http://proxy.corp.example:3128';

test('proxy, trusted CAs and registry mirrors reach every host through the pool rollout', async (t) => {
  const registry = await startMirrorRegistry();
  t.after(() => registry.stop());
  const baseHosts = { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 };
  const images = { mirrors: registry.mirrors };
  const world = await joinWorld(t, {
    releases: ['2022', '2022', '2019', '2022'],
    config: { hosts: baseHosts, images },
  });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const joined = await waitForReadyHosts(kc, world.namespace, hostCount);
  const nodeNames = joined.map((h) => h.status!.nodeName!);
  const machines: SimMachine[] = world.fleet.hosts.map((h) => h.machine);
  await labelHosts(kc, world.namespace, { pool: 'web' });
  await createPool(kc, world.namespace, 'web', {
    selector: { matchLabels: { pool: 'web' } },
    maxUnavailable,
    drainTimeout: '2m',
    readyTimeout: '2m',
  });
  await waitFor(
    async () => (await readPool(kc, world.namespace, 'web')).status?.readyHosts === hostCount,
    { description: `the pool counting its ${hostCount} Ready hosts` },
  );

  /** Writes the ConfigMap and waits for every node and WindowsHost on a new services version. */
  const rollOut = async (config: object, extraData: Record<string, string> = {}) => {
    const before = (await core.readNode({ name: nodeNames[0]! })).metadata?.annotations?.[
      servicesVersionAnnotation
    ];
    const sampler = sampleRollout(kc, { nodeNames: () => nodeNames });
    const started = Date.now();
    await writeOperatorConfig(kc, world.namespace, config, extraData);
    let version: string;
    try {
      version = await waitFor(
        async () => {
          const nodes = (await core.listNode()).items.filter((n) =>
            nodeNames.includes(n.metadata!.name!),
          );
          const versions = new Set(
            nodes.map((n) => n.metadata?.annotations?.[servicesVersionAnnotation]),
          );
          const [only] = versions;
          const pool = await readPool(kc, world.namespace, 'web');
          return versions.size === 1 &&
            only !== before &&
            nodes.every((n) => !n.spec?.unschedulable) &&
            pool.status?.updatedHosts === hostCount
            ? only
            : undefined;
        },
        { description: 'every node on the new services version, uncordoned', timeoutMs: 240_000 },
      );
    } finally {
      await sampler.stop();
    }
    const worst = Math.max(...sampler.samples.map((s) => s.unavailable.length));
    t.diagnostic(
      `${before} → ${version!}: ${Date.now() - started} ms, at most ${worst} of ${hostCount} hosts down`,
    );
    assert.ok(
      worst <= maxUnavailable,
      `at most ${maxUnavailable} hosts down at once; saw ${worst}`,
    );
    assert.ok(
      sampler.samples.some((s) => s.cordoned.length > 0),
      'the change went through the rollout engine (hosts were cordoned)',
    );
    for (const host of await listWindowsHosts(kc, world.namespace)) {
      assert.equal(host.status?.servicesVersion, version, `${host.metadata.name} status shows it`);
    }
    return { version: version!, worst };
  };

  await t.test("every node's containerd routes mcr.microsoft.com as the webhook does", async () => {
    const config = parseConfig(stringify({ images }));
    const routing = compileRegistryRouting({
      mirrors: config.images.mirrors,
      fallbackToUpstream: config.images.fallbackToUpstream,
    });
    const image = 'mcr.microsoft.com/windows/nanoserver:ltsc2022';
    const ref = parseImageReference(image);
    const webhookUrls = lookupTargets(ref, routing).map(
      (target) => `${target.endpoint.origin}/v2/${target.repository}`,
    );
    assert.equal(webhookUrls[0], `${registry.registry.url}/v2/windows/nanoserver`);
    // The webhook's own resolver finds the image (the lab mirror serves it).
    const resolver = resolverFor(config);
    try {
      const result = await resolver.resolveImagePlatforms(image);
      assert.equal(result.status, 'resolved', JSON.stringify(result));
      assert.equal(result.status === 'resolved' && result.endpoint, registry.registry.url);
    } finally {
      resolver.close();
    }
    for (const machine of machines) {
      const node = await machineRegistryHosts(machine, 'mcr.microsoft.com');
      assert.equal(node.decodeError, undefined, machine.hostname);
      const urls = pullUrls(node, ref.repository);
      assert.deepEqual(urls, webhookUrls, `${machine.hostname} pulls where the webhook looks`);
      // What the node's first host serves: the image, from the lab mirror.
      const response = await fetch(`${urls[0]}/manifests/ltsc2022`, {
        method: 'HEAD',
        headers: {
          accept:
            'application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json',
        },
      });
      assert.equal(response.status, 200, `${urls[0]} serves the image`);
    }
  });

  await t.test(
    'a proxy change reaches every service in both list formats, 2 hosts at a time',
    async () => {
      const hosts = {
        ...baseHosts,
        proxy: { httpProxy: proxyUrl, httpsProxy: proxyUrl, noProxy: ['.corp.example'] },
      };
      const bootIds = async () =>
        (await core.listNode()).items
          .filter((n) => nodeNames.includes(n.metadata!.name!))
          .map((n) => n.status?.nodeInfo?.bootID);
      const booted = await bootIds();
      const { version } = await rollOut({ hosts, images });
      assert.deepEqual(await bootIds(), booted, 'no host rebooted: the services restarted');
      const cluster = parseConfig('').hosts;
      for (const machine of machines) {
        for (const service of nodeServices) {
          const env = machine.scm.config(service)?.environment ?? {};
          assert.equal(env.HTTPS_PROXY, proxyUrl, `${machine.hostname} ${service}`);
          const noProxy = env.NO_PROXY ?? '';
          assert.doesNotMatch(noProxy, /;/, 'Go programs read commas');
          const entries = noProxy.split(',');
          for (const always of ['.corp.example', cluster.serviceCIDR, cluster.podCIDR, '127.0.0.1'])
            assert.ok(entries.includes(always), `${service} NO_PROXY has ${always}: ${noProxy}`);
          // The running process has it: the service restarted, the host did not reboot.
          const process = machine
            .processes()
            .find((p) => p.alive && p.imageName.toLowerCase() === `${service}.exe`);
          assert.equal(
            process?.environment.NO_PROXY,
            noProxy,
            `${machine.hostname} ${service} runs with it`,
          );
        }
        const agent = machine.scm.config('winfleet-agent')?.environment ?? {};
        assert.equal(agent.HTTPS_PROXY, proxyUrl, 'the agent service has it');
        assert.equal(agent.NODE_USE_ENV_PROXY, '1');
        // The agent restarts itself to take its new environment (a process never reads its
        // environment block again).
        await waitFor(
          () =>
            machine
              .processes()
              .find((p) => p.alive && p.imageName.toLowerCase() === 'winfleet-agent.exe')
              ?.environment.HTTPS_PROXY === proxyUrl,
          {
            description: `${machine.hostname}: the running agent has the proxy`,
            timeoutMs: 60_000,
          },
        );
        const winHttp = machine.winHttpProxy;
        assert.equal(
          winHttp?.proxyServer,
          'http=proxy.corp.example:3128;https=proxy.corp.example:3128',
        );
        assert.doesNotMatch(winHttp?.bypassList ?? '', /,/, 'WinHTTP reads semicolons');
        const bypass = (winHttp?.bypassList ?? '').split(';');
        for (const pattern of ['*.corp.example', '10.96.*', '10.244.*'])
          assert.ok(
            bypass.includes(pattern),
            `WinHTTP bypasses ${pattern}: ${winHttp?.bypassList}`,
          );
      }
      assert.match(version, /-h[0-9a-f]{10}$/);
    },
  );

  await t.test(
    'a CA added to the bundle reaches every host, and leaves every host when removed',
    async () => {
      const ca = await createCertificateAuthority('Corp Registry Root CA');
      const [cert] = parseCaBundle(ca.certPem).certificates;
      const hosts = {
        ...baseHosts,
        proxy: { httpProxy: proxyUrl, httpsProxy: proxyUrl, noProxy: ['.corp.example'] },
      };
      await rollOut({ hosts, images }, { [caBundleKey]: ca.certPem });
      for (const machine of machines)
        assert.ok(machine.rootCertificates.has(cert!.thumbprint), `${machine.hostname} trusts it`);

      // Attacker side: a bundle with a server certificate in it is refused whole, the key and
      // block named, and the trust in force stays as it was.
      const leaf = await issueCertificate(ca, { commonName: 'evil.corp.example', usage: 'server' });
      await writeOperatorConfig(
        kc,
        world.namespace,
        { hosts, images },
        { [caBundleKey]: `${ca.certPem}${leaf.certPem}` },
      );
      const refused = await waitFor(
        async () =>
          (await core.listNamespacedEvent({ namespace: world.namespace })).items.find(
            (e) => e.reason === EventReason.InvalidConfig && /ca-bundle\.crt/.test(e.message ?? ''),
          ),
        { description: 'the bad bundle reported', timeoutMs: 30_000 },
      );
      assert.match(
        refused.message ?? '',
        /ca-bundle\.crt block 2: "CN=evil\.corp\.example" is not a certificate authority/,
      );
      for (const machine of machines) {
        const thumbprints = machine.rootCertificates.list().map((c) => c.thumbprint);
        assert.deepEqual(thumbprints, [cert!.thumbprint], `${machine.hostname}: the CA alone`);
      }

      await rollOut({ hosts, images }, { [caBundleKey]: '' });
      for (const machine of machines)
        assert.ok(
          !machine.rootCertificates.has(cert!.thumbprint),
          `${machine.hostname} dropped it`,
        );
    },
  );
});

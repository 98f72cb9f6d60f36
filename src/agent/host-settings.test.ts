import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  createAgentTestHost,
  prepareAsOperator,
  testManifest,
} from '../../sim/hosts/agent-test-host.ts';
import { machineRegistryHosts, pullUrls } from '../../sim/hosts/containerd-registry-hosts.ts';
import { defaultConfig, type WinfleetConfig } from '../config/winfleet-config.ts';
import { nodeHostSettings, withHostSettings } from '../hostsettings/node-host-settings.ts';
import { createCertificateAuthority } from '../pki/certificates.ts';
import { parseCaBundle } from '../pki/trusted-ca-bundle.ts';
import { paths } from './agent-config.ts';
import { readState } from './agent-state.ts';
import { agentServiceName } from './converge.ts';
import { applyHostSettings, removeHostSettings } from './host-settings.ts';
import { runAgent } from './run-agent.ts';
import { pemToDer } from './windows/root-certificates.ts';

const apiServer = 'https://10.0.0.1:6443';

function configWith(change: (config: WinfleetConfig) => void): WinfleetConfig {
  const config = defaultConfig();
  change(config);
  return config;
}

test('bootstrap applies the host settings: CAs, hosts.toml, WinHTTP and the proxy in every service', async (t) => {
  const { machine, context, stdout } = await createAgentTestHost(t);
  const ca = await createCertificateAuthority('Corp Root CA');
  const [trusted] = parseCaBundle(ca.certPem).certificates;
  const config = configWith((c) => {
    c.hosts.proxy = { httpProxy: 'http://proxy.corp.example:3128', noProxy: ['.corp.example'] };
    c.trustedCAs = [trusted!];
    c.images.mirrors = {
      'mcr.microsoft.com': [{ endpoint: 'http://127.0.0.1:5000', insecure: true }],
    };
  });
  const manifest = withHostSettings(testManifest(), nodeHostSettings(config, apiServer));
  assert.match(manifest.version, /^1\.0\.0-h[0-9a-f]{10}$/);
  await prepareAsOperator(machine, manifest);
  assert.equal(await runAgent(['bootstrap'], context), 0, stdout.join(''));

  assert.ok(machine.rootCertificates.has(trusted!.thumbprint), 'the CA is in LocalMachine\\Root');
  const mcr = await machineRegistryHosts(machine, 'mcr.microsoft.com');
  assert.equal(mcr.decodeError, undefined);
  assert.deepEqual(pullUrls(mcr, 'windows/nanoserver'), [
    'http://127.0.0.1:5000/v2/windows/nanoserver',
    'https://mcr.microsoft.com/v2/windows/nanoserver',
  ]);
  assert.deepEqual(machine.winHttpProxy, {
    proxyServer: 'http=proxy.corp.example:3128',
    bypassList:
      '*.corp.example;127.0.0.1;localhost;*.localhost;10.96.*;10.97.*;10.98.*;10.99.*;10.100.*;10.101.*;10.102.*;10.103.*;10.104.*;10.105.*;10.106.*;10.107.*;10.108.*;10.109.*;10.110.*;10.111.*;10.244.*;10.0.0.1',
  });
  for (const service of ['containerd', 'kubelet', 'kube-proxy', 'csi-proxy']) {
    const env = machine.scm.config(service)?.environment ?? {};
    assert.equal(env.HTTP_PROXY, 'http://proxy.corp.example:3128', service);
    assert.equal(
      env.NO_PROXY,
      '.corp.example,127.0.0.1,localhost,10.96.0.0/12,10.244.0.0/16,10.0.0.1',
      service,
    );
  }
  assert.equal(machine.env.get('HTTP_PROXY'), 'http://proxy.corp.example:3128', 'machine-wide');
  const agentEnv = machine.scm.config(agentServiceName)?.environment ?? {};
  assert.equal(agentEnv.HTTP_PROXY, 'http://proxy.corp.example:3128');
  assert.equal(agentEnv.NODE_USE_ENV_PROXY, '1');
});

test('a CA removed from the bundle leaves the host; one winfleet did not add stays', async (t) => {
  const { machine, context } = await createAgentTestHost(t);
  const host = context.hostOS;
  const [ours, theirs] = await Promise.all([
    createCertificateAuthority('Corp Root CA'),
    createCertificateAuthority('Domain Policy Root CA'),
  ]);
  const [oursCert] = parseCaBundle(ours.certPem).certificates;
  const [theirsCert] = parseCaBundle(theirs.certPem).certificates;
  // A root a domain policy put there before winfleet came, and that the bundle lists too.
  machine.rootCertificates.add(pemToDer(theirs.certPem));
  const state = await readState(host);
  const both = withHostSettings(
    testManifest(),
    nodeHostSettings(
      configWith((c) => (c.trustedCAs = [oursCert!, theirsCert!])),
      apiServer,
    ),
  );
  await applyHostSettings(host, both, state);
  assert.ok(machine.rootCertificates.has(oursCert!.thumbprint));
  assert.ok(machine.rootCertificates.has(theirsCert!.thumbprint));

  await applyHostSettings(host, testManifest(), state);
  assert.ok(!machine.rootCertificates.has(oursCert!.thumbprint), 'the CA winfleet added is gone');
  assert.ok(machine.rootCertificates.has(theirsCert!.thumbprint), "the domain's root stays");
});

test('mirrors removed from the config leave certs.d; the WinHTTP proxy is reset when the proxy goes', async (t) => {
  const { machine, context } = await createAgentTestHost(t);
  const host = context.hostOS;
  const state = await readState(host);
  const mirrored = withHostSettings(
    testManifest(),
    nodeHostSettings(
      configWith((c) => {
        c.hosts.proxy = { httpsProxy: 'http://proxy:3128' };
        c.images.mirrors = {
          'docker.io': [{ endpoint: 'https://hub.corp.example' }],
          '127.0.0.1:5001': [{ endpoint: 'http://127.0.0.1:5000', insecure: true }],
        };
      }),
      apiServer,
    ),
  );
  await applyHostSettings(host, mirrored, state, { machineEnvironment: true });
  assert.equal(machine.env.get('HTTPS_PROXY'), 'http://proxy:3128');
  assert.deepEqual((await host.listDirectory(paths.containerdCertsDir))?.sort(), [
    '127.0.0.1_5001_',
    'docker.io',
  ]);
  assert.equal(machine.winHttpProxy?.proxyServer, 'https=proxy:3128');
  await applyHostSettings(host, testManifest(), state, { machineEnvironment: true });
  assert.deepEqual(await host.listDirectory(paths.containerdCertsDir), []);
  assert.equal(machine.winHttpProxy, undefined);
  assert.equal(machine.env.get('HTTPS_PROXY'), undefined, 'the proxy variable went too');

  // Deconfigure takes back what is left.
  await applyHostSettings(host, mirrored, state);
  await removeHostSettings(host, state);
  assert.deepEqual(await host.listDirectory(paths.containerdCertsDir), []);
  assert.equal(machine.winHttpProxy, undefined);
});

test('a WinHTTP proxy the host had, and winfleet never set, is left alone', async (t) => {
  const { machine, context } = await createAgentTestHost(t);
  machine.winHttpProxy = { proxyServer: 'corp-proxy:8080', bypassList: '<local>' };
  const state = await readState(context.hostOS);
  await applyHostSettings(context.hostOS, testManifest(), state);
  assert.deepEqual(machine.winHttpProxy, { proxyServer: 'corp-proxy:8080', bypassList: '<local>' });
});

test('an old config.toml gets config_path (and containerd a restart) only when there are registry hosts', async (t) => {
  const { machine, context } = await createAgentTestHost(t);
  const host = context.hostOS;
  const old = 'version = 2\n';
  await machine.fs.writeFileAtomic(paths.containerdConfig, old);
  const state = await readState(host);
  assert.deepEqual([...(await applyHostSettings(host, testManifest(), state)).restart], []);
  assert.equal((await machine.fs.readFile(paths.containerdConfig)).toString(), old);
  const mirrored = withHostSettings(
    testManifest(),
    nodeHostSettings(
      configWith((c) => {
        c.images.mirrors = { 'mcr.microsoft.com': [{ endpoint: 'https://m.corp.example' }] };
      }),
      apiServer,
    ),
  );
  assert.deepEqual([...(await applyHostSettings(host, mirrored, state)).restart], ['containerd']);
  assert.match((await machine.fs.readFile(paths.containerdConfig)).toString(), /config_path = /);
  assert.deepEqual([...(await applyHostSettings(host, mirrored, state)).restart], [], 'once');
});

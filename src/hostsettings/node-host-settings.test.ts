import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testManifest } from '../../sim/hosts/agent-test-host.ts';
import { defaultConfig } from '../config/winfleet-config.ts';
import { parseServicesManifest } from '../servicesmanifest/services-manifest.ts';
import { agentEnvironment, nodeHostSettings, withHostSettings } from './node-host-settings.ts';

const apiServer = 'https://10.0.0.1:6443';

test('no host settings: the payload manifest, version and all, unchanged', () => {
  const manifest = testManifest('1.36.5-wf.1');
  assert.equal(nodeHostSettings(defaultConfig(), apiServer), undefined);
  assert.equal(withHostSettings(manifest, undefined), manifest);
  assert.deepEqual(agentEnvironment(manifest), {});
});

test('each set of settings is its own services version, which the agent accepts', () => {
  const config = defaultConfig();
  config.hosts.proxy = { httpProxy: 'http://proxy:3128' };
  const one = withHostSettings(testManifest('1.36.5-wf.1'), nodeHostSettings(config, apiServer));
  config.hosts.proxy = { httpProxy: 'http://proxy:3129' };
  const two = withHostSettings(testManifest('1.36.5-wf.1'), nodeHostSettings(config, apiServer));
  assert.match(one.version, /^1\.36\.5-wf\.1-h[0-9a-f]{10}$/);
  assert.notEqual(
    one.version,
    two.version,
    'a proxy change is a new version: the pools roll it out',
  );
  assert.equal(
    withHostSettings(testManifest('1.36.5-wf.1'), nodeHostSettings(config, apiServer)).version,
    two.version,
    'the same settings, the same version',
  );
  assert.equal(parseServicesManifest(two).version, two.version);
  assert.equal(two.env?.KUBE_NETWORK, 'winfleet', "the payload's own environment stays");
  assert.equal(two.env?.HTTP_PROXY, 'http://proxy:3129');
  assert.deepEqual(agentEnvironment(two), {
    HTTP_PROXY: 'http://proxy:3129',
    NO_PROXY: two.env?.NO_PROXY,
    NODE_USE_ENV_PROXY: '1',
  });
});

test('mirrors alone (the webhook routing) reach the nodes as registry hosts', () => {
  const config = defaultConfig();
  config.images.mirrors = {
    'mcr.microsoft.com': [{ endpoint: 'http://127.0.0.1:5000', insecure: true }],
  };
  const settings = nodeHostSettings(config, apiServer);
  assert.deepEqual(settings?.env, {});
  assert.equal(settings?.hostSettings.registryHosts?.[0]?.directory, 'mcr.microsoft.com');
  assert.equal(settings?.hostSettings.winHttpProxy, undefined);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { offlineInformer } from '../../../sim/testkit/synthetic-nodes.ts';
import { parseConfig } from '../../config/winfleet-config.ts';
import { resources } from '../../controller-runtime/informer-factory.ts';
import { joinInfoKey, parseJoinInfo } from '../../join/join-info.ts';
import { silentLogger } from '../../log/logger.ts';
import type { LoadedPayload } from '../../payload/loaded-payload.ts';
import { type JoinInfoState, joinInfoFor, reconcileJoinInfo } from './join-info-controller.ts';

const loaded = (registry?: LoadedPayload['registry']) =>
  ({
    fileOnDisk: () => assert.fail('winfleet-join never reads payload files'),
    payload: { version: '1.36.5-wf.1', kubernetesVersion: 'v1.36.5', files: [] },
    manifest: { version: '1.36.5-wf.1', services: [], files: [] },
    totalBytes: 0,
    ...(registry ? { registry } : {}),
  }) as LoadedPayload;

test('winfleet-join from the configuration: what agents read, valid by the contract', () => {
  const config = parseConfig(
    'hosts:\n  apiServer: https://api.example.com:6443\n  agentCheckIntervalSeconds: 7\nplacement:\n  windowsTaint: {key: os, value: "", effect: NoExecute}\n',
  );
  const info = joinInfoFor(config, 'https://10.96.0.1:443', loaded());
  assert.deepEqual(parseJoinInfo(JSON.stringify(info)), info);
  assert.equal(
    info.apiServer,
    'https://api.example.com:6443',
    'hosts.apiServer wins over the operator’s own',
  );
  assert.deepEqual(
    info.windowsTaint,
    { key: 'os', effect: 'NoExecute' },
    'an empty value is left out',
  );
  assert.equal(info.checkIntervalSeconds, 7);
  assert.equal(info.servicesVersion, '1.36.5-wf.1');
  assert.equal(info.payload, undefined, 'a payload directory: nothing to pull');
  assert.equal(
    joinInfoFor(parseConfig(''), 'https://127.0.0.1:6443', loaded()).apiServer,
    'https://127.0.0.1:6443',
  );
});

test('a registry payload: its repository and digest, the mirrors of its registry host, its pull Secret', () => {
  const config = parseConfig(
    'images:\n  mirrors:\n    "registry.example.com:5000": [{endpoint: "https://mirror.example.com", pathPrefix: "cache"}]\n    other.example.com: [{endpoint: "https://elsewhere.example.com"}]\n',
  );
  const digest = `sha256:${'a'.repeat(64)}`;
  const info = joinInfoFor(
    config,
    'https://127.0.0.1:6443',
    loaded({
      repository: 'registry.example.com:5000/winfleet/payload',
      digest,
      pullSecretName: 'payload-pull',
    }),
  );
  assert.deepEqual(info.payload, {
    repository: 'registry.example.com:5000/winfleet/payload',
    digest,
    mirrors: [{ endpoint: 'https://mirror.example.com', pathPrefix: 'cache' }],
    pullSecretName: 'payload-pull',
  });
  assert.deepEqual(parseJoinInfo(JSON.stringify(info)), info);
});

test('hosts.agentHealth reaches winfleet-join only when tuned (an older agent refuses the field)', () => {
  const untuned = joinInfoFor(parseConfig(''), 'https://127.0.0.1:6443', loaded());
  assert.equal('agentHealth' in untuned, false);
  const tuned = joinInfoFor(
    parseConfig('hosts:\n  agentHealth:\n    restartLoop: { stableSeconds: 15 }\n'),
    'https://127.0.0.1:6443',
    loaded(),
  );
  assert.deepEqual(tuned.agentHealth, {
    restartLoop: { count: 5, windowSeconds: 600, stableSeconds: 15 },
    clockSkewSeconds: 60,
  });
  assert.deepEqual(parseJoinInfo(JSON.stringify(tuned)), tuned, 'valid by the contract');
  // staleEndpointSeconds only when it is tuned itself: an older agent refuses the field.
  const stale = joinInfoFor(
    parseConfig('hosts:\n  agentHealth:\n    staleEndpointSeconds: 5\n'),
    'https://127.0.0.1:6443',
    loaded(),
  );
  assert.equal(stale.agentHealth?.staleEndpointSeconds, 5);
  assert.deepEqual(parseJoinInfo(JSON.stringify(stale)), stale);
});

// reconcileJoinInfo over a stated cache: an offline informer, recorders for publish and writes.

function joinInfoWorld(existing?: k8s.V1ConfigMap) {
  const cache = offlineInformer<k8s.V1ConfigMap>(resources.configMaps);
  cache.replace(existing ? [existing] : []);
  const calls: [string, unknown][] = [];
  const state: JoinInfoState = {
    namespace: 'winfleet',
    joinInfo: cache,
    config: () => parseConfig(''),
    cluster: { apiServer: 'https://10.96.0.1:443' },
    payload: async () => loaded(),
    publish: async (manifest) => {
      calls.push(['publish', manifest.version]);
      return 'digest';
    },
    log: silentLogger,
    memory: {},
    writes: {
      applyRbac: async (pullSecret) => {
        calls.push(['applyRbac', pullSecret]);
      },
      writeConfigMap: async (body, exists) => calls.push([exists ? 'replace' : 'create', body]) > 0,
    },
  };
  return { state, calls };
}

test('winfleet-join: the payload published and the Role applied once, the ConfigMap written when it differs', async () => {
  const { state, calls } = joinInfoWorld();
  await reconcileJoinInfo(state);
  assert.deepEqual(
    calls.map(([w, d]) => (w === 'create' ? w : [w, d])),
    [['publish', '1.36.5-wf.1'], ['applyRbac', undefined], 'create'],
  );
  const body = calls[2]![1] as k8s.V1ConfigMap;
  assert.equal(body.metadata?.namespace, 'winfleet');
  assert.equal(body.metadata?.labels?.['app.kubernetes.io/managed-by'], 'winfleet');
  const text = body.data?.[joinInfoKey] ?? '';
  assert.equal(parseJoinInfo(text).servicesVersion, '1.36.5-wf.1');

  const same = joinInfoWorld({ ...body, metadata: { ...body.metadata, resourceVersion: '2' } });
  same.state.memory = { publishedVersion: '1.36.5-wf.1', rbacFor: '' };
  await reconcileJoinInfo(same.state);
  assert.deepEqual(same.calls, [], 'nothing written when the cache already holds it');
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { nodeCacheOf, syntheticNode } from '../../../sim/testkit/synthetic-nodes.ts';
import { EventReason } from '../../api/reasons.ts';
import { servingAddressesAnnotation, type WindowsHost } from '../../api/windows-host.ts';
import type { WinfleetConfig } from '../../config/winfleet-config.ts';
import { everythingKey } from '../../controller-runtime/controller.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import type { Informer } from '../../controller-runtime/informer.ts';
import { silentLogger } from '../../log/logger.ts';
import { apiServerNameSource, apiServerNamesOf } from './api-server-names.ts';
import { nodeHoldingAddress } from './node-addresses.ts';
import {
  createServingAddressController,
  type HostPatchApi,
  servingAddressChange,
} from './serving-address-controller.ts';

const network = {
  serviceCIDR: '10.96.0.0/12',
  podCIDR: '10.244.0.0/16',
  clusterDomain: 'cluster.local',
  servingDnsSuffixes: ['example.com'],
};
const linux: k8s.V1Node = {
  metadata: { name: 'linux-1' },
  status: { addresses: [{ type: 'InternalIP', address: '10.1.9.9' }] },
};
const linuxHolds = (address: string) => nodeHoldingAddress(nodeCacheOf([linux]))(address, 'win-a');

function hostWith(annotation: string | undefined, servingAddresses?: string[]): WindowsHost {
  return {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: {
      name: 'win-a',
      namespace: 'winfleet-system',
      uid: 'uid-a',
      resourceVersion: '10',
      annotations: annotation === undefined ? {} : { [servingAddressesAnnotation]: annotation },
    },
    spec: { address: '10.1.2.2', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
    status: { nodeName: 'win-a', addresses: ['10.1.2.2'], hostname: 'WIN-A', servingAddresses },
  } as WindowsHost;
}

test('the annotation’s addresses become the pin, with the change described', () => {
  const empty = servingAddressChange(hostWith(undefined), ' , ', {
    network,
    nodeHolding: linuxHolds,
  });
  // A host that joined before pins existed shows its last report as its pin.
  assert.deepEqual(empty, {
    kind: 'refuse',
    message: `${servingAddressesAnnotation} " , " refused: it names no address. The serving addresses stay 10.1.2.2, win-a; set the annotation again without the refused addresses`,
  });
  const set = servingAddressChange(
    hostWith(undefined, ['10.1.2.2', 'win-a']),
    ' 10.1.2.3 , Win-A.Example.com,10.1.2.3',
    { network, nodeHolding: linuxHolds },
  );
  assert.deepEqual(set, {
    kind: 'set',
    addresses: ['10.1.2.3', 'win-a.example.com'],
    message: `Serving addresses changed by ${servingAddressesAnnotation} from 10.1.2.2, win-a to 10.1.2.3, win-a.example.com`,
  });
  assert.deepEqual(
    servingAddressChange(hostWith(undefined, ['10.1.2.3']), '10.1.2.3', {
      network,
      nodeHolding: () => undefined,
    }),
    { kind: 'unchanged' },
  );
});

test('an annotation naming a refused address changes nothing and says why for each', () => {
  const change = servingAddressChange(
    hostWith(undefined, ['10.1.2.2']),
    '10.1.2.3,10.96.0.1,10.1.9.9,169.254.169.254,127.0.0.1',
    { network, nodeHolding: linuxHolds },
  );
  assert.equal(change.kind, 'refuse');
  assert.ok(change.kind === 'refuse');
  for (const reason of [
    /10\.96\.0\.1 is in the service CIDR 10\.96\.0\.0\/12/,
    /10\.1\.9\.9 is held by Node linux-1/,
    /169\.254\.169\.254 is a link-local address/,
    /127\.0\.0\.1 is a loopback address/,
    /The serving addresses stay 10\.1\.2\.2/,
  ]) {
    assert.match(change.message, reason);
  }
  assert.doesNotMatch(change.message, /10\.1\.2\.3 is/);
});

test('attacker: an annotation cannot add a name or address of the API server, nor a DNS name outside the suffixes (issue 33)', () => {
  // A Pull host whose Node reported the API server's VIP as its InternalIP: its pin starts with
  // that address, which is the host's vouched address, so loopback or not it is "its own".
  const apiServer = apiServerNamesOf({
    '10.1.0.100': 'a name in the certificate the API server presents',
    'k8s-api.example.com': 'the server of kube-public/cluster-info',
  });
  const change = servingAddressChange(
    hostWith(undefined, ['10.1.0.100']),
    '10.1.0.100,k8s-api.example.com,k8s-api.corp.example,win-a',
    {
      network,
      nodeHolding: linuxHolds,
      nodeName: 'win-a',
      apiServerName: (address) => apiServerNameSource(apiServer, address),
    },
  );
  assert.ok(change.kind === 'refuse');
  assert.match(change.message, /10\.1\.0\.100 is the API server's \(a name in the certificate/);
  assert.match(
    change.message,
    /k8s-api\.example\.com is the API server's \(the server of kube-public\/cluster-info\)/,
  );
  assert.match(change.message, /k8s-api\.corp\.example is a DNS name other than the node name/);
  assert.doesNotMatch(change.message, /win-a is/);
});

type Patch =
  | { kind: 'status'; body: { status: { servingAddresses: string[] } } }
  | { kind: 'metadata'; body: { op: string; path: string; value?: string }[] };

/** The annotation's removal, only while it holds `value`. */
const removal = (value: string): Patch => ({
  kind: 'metadata',
  body: [
    { op: 'test', path: '/metadata/annotations/winfleet.io~1allow-serving-addresses', value },
    { op: 'remove', path: '/metadata/annotations/winfleet.io~1allow-serving-addresses' },
  ],
});

/** The controller over one host, with the API's patches recorded and scripted. */
function harness(
  host: WindowsHost,
  answers: { metadata?: () => void } = {},
  nodes = nodeCacheOf([linux]),
) {
  const patches: Patch[] = [];
  const events: { type: string; reason: string; message: string }[] = [];
  const api = {
    async patchNamespacedCustomObjectStatus(request: { body: unknown }) {
      patches.push({ kind: 'status', body: request.body } as Patch);
      return host;
    },
    async patchNamespacedCustomObject(request: { body: unknown }) {
      patches.push({ kind: 'metadata', body: request.body } as Patch);
      answers.metadata?.();
      return host;
    },
  } as unknown as HostPatchApi;
  const informer = <T>(objects: T[]) =>
    ({
      get: (key: string) =>
        objects.find((o) => {
          const m = (o as { metadata: { namespace?: string; name: string } }).metadata;
          return (m.namespace ? `${m.namespace}/${m.name}` : m.name) === key;
        }),
      list: () => objects,
      on() {
        return this;
      },
    }) as unknown as Informer<T & k8s.KubernetesObject>;
  const recorder: EventRecorder = {
    record: (_subject, type, reason, message) => events.push({ type, reason, message }),
  };
  const controller = createServingAddressController({
    kc: undefined as unknown as k8s.KubeConfig,
    hosts: informer([host]) as Informer<WindowsHost>,
    nodes,
    config: () => ({ hosts: network }) as unknown as WinfleetConfig,
    apiServerNames: async () => apiServerNamesOf(),
    events: recorder,
    log: silentLogger,
    api,
  });
  return { controller, patches, events };
}

/** Waits until `done` holds: the controller made the writes a test expects. */
async function settle(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('the controller did not act within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('an applied annotation: the pin is written, an Event recorded, then the annotation removed while it holds that value', async () => {
  const h = harness(hostWith('10.1.2.3', ['10.1.2.2']));
  h.controller.enqueue('winfleet-system/win-a');
  await settle(() => h.patches.length === 2);
  h.controller.stop();
  assert.deepEqual(h.patches, [
    { kind: 'status', body: { status: { servingAddresses: ['10.1.2.3'] } } },
    removal('10.1.2.3'),
  ]);
  assert.deepEqual(
    h.events.map((e) => [e.type, e.reason]),
    [['Normal', EventReason.ServingAddressesChanged]],
  );
});

test('a refused annotation: no status write, a Warning Event, the annotation removed', async () => {
  const h = harness(hostWith('10.96.0.1', ['10.1.2.2']));
  h.controller.enqueue(everythingKey);
  await settle(() => h.patches.length === 1);
  h.controller.stop();
  assert.deepEqual(h.patches, [removal('10.96.0.1')]);
  assert.deepEqual(
    h.events.map((e) => [e.type, e.reason]),
    [['Warning', EventReason.ServingAddressesRefused]],
  );
  assert.match(h.events[0]!.message, /10\.96\.0\.1 is in the service CIDR/);
});

test('an annotation edited meanwhile (the removal’s test fails) is decided again, not lost', async () => {
  let edited = 1;
  const h = harness(hostWith('10.1.2.3', ['10.1.2.2']), {
    metadata: () => {
      if (edited-- > 0) throw Object.assign(new Error('test failed'), { code: 422 });
    },
  });
  h.controller.enqueue('winfleet-system/win-a');
  // status, removal (refused: the value changed), then the next pass decides again.
  await settle(() => h.patches.filter((p) => p.kind === 'metadata').length === 2);
  h.controller.stop();
  assert.deepEqual(
    h.patches.map((p) => p.kind),
    ['status', 'metadata', 'status', 'metadata'],
  );
});

test('the annotation is decided among 10,000 Nodes without reading the whole Node cache', async () => {
  const nodes = nodeCacheOf([
    ...Array.from({ length: 10_000 }, (_, i) =>
      syntheticNode(`node-${i}`, { addresses: ['127.0.0.1'] }),
    ),
    linux,
  ]);
  let reads = 0;
  const list = nodes.list.bind(nodes);
  nodes.list = () => {
    reads++;
    return list();
  };
  const h = harness(hostWith('10.1.2.3,10.1.9.9,node-42', ['10.1.2.2']), {}, nodes);
  h.controller.enqueue('winfleet-system/win-a');
  await settle(() => h.patches.length === 1);
  h.controller.stop();
  assert.match(
    h.events[0]!.message,
    /10\.1\.9\.9 is held by Node linux-1; node-42 is held by Node node-42/,
  );
  assert.equal(reads, 0);
});

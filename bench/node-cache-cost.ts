/**
 * npm run bench:node-cost — what one cached Node costs the operator, without a cluster: N
 * kwok Windows Nodes exactly as the API server sends them (bench/kwok-node.json, taken from
 * bench:scale's control plane with `kubectl get node -o json`; names, uids, resource versions
 * and builds varied per node) go into an offline Node informer through the path the operator's
 * informer takes, with the indexes the operator's controllers and webhook add. The V8 heap
 * after a full collection, before and after, divided by N, is the cost per Node. Each way of
 * caching is measured in the same run against the whole Node (no slimming) as the baseline.
 *
 *   npm run bench:node-cost [-- --nodes 10000 --via watch|list --per-second 50 --boot-ids]
 *
 * `--per-second N`: Nodes created in the same second (their conditions then have the same
 * times); `--boot-ids`: each Node its own boot id, as real kubelets report (kwok reports none).
 *
 * `--via list`: the objects client-node's list returns (typed models, timestamps as Date);
 * `--via watch` (default): the watch's (JSON.parse of each event; timestamps as strings). The
 * informer lists once at start and re-lists on 410 Gone, so a large fleet's Nodes are mostly
 * the list's at start, then the watch's one by one as each Node changes.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type * as k8s from '@kubernetes/client-node';
import { Informer } from '../src/controller-runtime/informer.ts';
import { resources, slimNode } from '../src/controller-runtime/informer-factory.ts';
import { nodeHoldingAddress } from '../src/controllers/csr/node-addresses.ts';
import {
  runtimeClassIndex,
  runtimeClassOf,
} from '../src/controllers/runtimeclasses/runtime-class-controller.ts';
import { readyWindowsBuildIndex, readyWindowsBuildOf } from '../src/webhook/cluster-facts.ts';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '10000' },
    via: { type: 'string', default: 'watch' },
    'per-second': { type: 'string', default: '50' },
    'boot-ids': { type: 'boolean', default: false },
  },
});
const count = Number(values.nodes);
const via = values.via === 'list' ? 'list' : 'watch';
const perSecond = Number(values['per-second']);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const require = createRequire(import.meta.url);
const { ObjectSerializer } = require('@kubernetes/client-node/dist/serializer.js') as {
  ObjectSerializer: { deserialize(data: unknown, type: string): unknown };
};

const template = readFileSync(new URL('./kwok-node.json', import.meta.url), 'utf8');
const builds = ['10.0.17763', '10.0.20348', '10.0.26100'];

/** Node i's JSON text, as the API server sends it. */
function nodeText(i: number): string {
  const name = `scale-${String(i).padStart(5, '0')}`;
  return template
    .replaceAll('scale-00001', name)
    .replace(/"uid": "[^"]+"/, `"uid": "${crypto.randomUUID()}"`)
    .replace(/"resourceVersion": "\d+"/, `"resourceVersion": "${1000 + i}"`)
    .replaceAll('10.0.20348', builds[i % builds.length]!)
    .replace('100.64.0.0/24', `100.64.${i >> 8}.${i & 255}/24`)
    .replace('"bootID": ""', `"bootID": "${values['boot-ids'] ? crypto.randomUUID() : ''}"`)
    .replaceAll(template.match(/"creationTimestamp": "([^"]+)"/)![1]!, createdAt(i));
}

/**
 * Node i's creation time, which kwok also gives its conditions' times: bench:scale creates
 * about 50 Nodes a second (`--per-second 1`: every Node its own second, as Nodes that joined
 * one by one).
 */
function createdAt(i: number): string {
  return new Date(Date.UTC(2026, 10, 27, 8) + Math.floor(i / perSecond) * 1000)
    .toISOString()
    .replace('.000Z', 'Z');
}

function parsed(i: number): k8s.V1Node {
  const raw = JSON.parse(nodeText(i));
  return via === 'list' ? (ObjectSerializer.deserialize(raw, 'V1Node') as k8s.V1Node) : raw;
}

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Bytes of heap per cached Node with `transform`, the operator's indexes added. */
function costPerNode(transform: ((node: k8s.V1Node) => k8s.V1Node) | undefined): number {
  const before = heapUsed();
  const informer = new Informer<k8s.V1Node>(undefined as unknown as k8s.KubeConfig, {
    resource: resources.nodes,
    ...(transform ? { transform } : {}),
  });
  informer.addIndex(readyWindowsBuildIndex, readyWindowsBuildOf);
  informer.addIndex(runtimeClassIndex, runtimeClassOf);
  nodeHoldingAddress(informer);
  for (let i = 0; i < count; i++) informer.apply('ADDED', parsed(i));
  const after = heapUsed();
  if (informer.size !== count) throw new Error('not every node was cached');
  return (after - before) / count;
}

/** slimNode as it was before the shared strings (f1492e2), for comparison in the same run. */
function slimNodeBefore(node: k8s.V1Node): k8s.V1Node {
  const m = node.metadata ?? {};
  const s = node.status;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: m.name,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      generation: m.generation,
      creationTimestamp: m.creationTimestamp,
      deletionTimestamp: m.deletionTimestamp,
      labels: m.labels,
      annotations: m.annotations,
    },
    spec: {
      taints: node.spec?.taints,
      unschedulable: node.spec?.unschedulable,
      providerID: node.spec?.providerID,
    },
    status: {
      conditions: s?.conditions?.map((c) => ({
        type: c.type,
        status: c.status,
        reason: c.reason,
        message: c.message,
        lastTransitionTime: c.lastTransitionTime,
      })),
      addresses: s?.addresses,
      nodeInfo: s?.nodeInfo,
    },
  };
}

const variants: [string, ((node: k8s.V1Node) => k8s.V1Node) | undefined][] = [
  ['whole Node (baseline)', undefined],
  ['slimNode before', slimNodeBefore],
  ['slimNode now', slimNode],
];
const rows = variants.map(([name, transform]) => [name, costPerNode(transform)] as const);
const [, baseline] = rows[0]!;
console.log(
  `\nHeap per cached kwok Windows Node, ${count} Nodes via the ${via} (${perSecond} created a second${values['boot-ids'] ? ', each its own boot id' : ''}), with the operator's Node indexes:\n`,
);
for (const [name, bytes] of rows) {
  console.log(
    `  ${name.padEnd(28)} ${bytes.toFixed(0).padStart(6)} B   ${(bytes / baseline).toFixed(2)} of the whole Node   ${((bytes * 10_000) / 2 ** 20).toFixed(1).padStart(5)} MiB per 10,000`,
  );
}

/**
 * A test world for host joins: a fresh cluster (or one given), a stand-in payload, simulated Windows hosts
 * that trust one SSH key, and the operator running in-process.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import type { Operator } from '../../src/operator/operator.ts';
import type { Payload } from '../../src/payload/payload.ts';
import type { Cluster, ClusterOptions } from '../cluster/start-cluster.ts';
import type { SimDomain } from '../hosts/active-directory.ts';
import { type SimulatedHosts, startSimulatedHosts } from '../hosts/fleet.ts';
import { generateTestKey, type TestKey } from '../hosts/ssh-test-client.ts';
import { nextBaseAddress } from './loopback-range.ts';
import { writeStandInPayload } from './payload.ts';
import { freshCluster, type TestCluster } from './test-cluster.ts';
import { startTestOperator } from './test-operator.ts';
import { writeSshKeySecret } from './windows-hosts.ts';

export interface JoinWorld {
  cluster: Cluster & TestCluster;
  kc: k8s.KubeConfig;
  key: TestKey;
  payloadDir: string;
  payload: Payload;
  fleet: SimulatedHosts;
  operator?: Operator;
  namespace: string;
}

export async function joinWorld(
  t: { after(fn: () => Promise<void> | void): void },
  options: {
    releases: string[];
    startOperator?: boolean;
    config?: Record<string, unknown>;
    /** Options of the fresh cluster (an audit policy, for one). */
    cluster?: ClusterOptions;
    /**
     * A cluster another fixture made and stops (flannelWorld's, whose lab carries packets), used
     * instead of a fresh one; `cluster` must then be unset.
     */
    existingCluster?: Cluster & TestCluster;
    /** The pools' rollout clock (OperatorOptions.rolloutClock). */
    rolloutClock?: () => Date;
    /** Simulated machine options for every host (timings, a patch catalog). */
    machine?: Parameters<typeof startSimulatedHosts>[0]['machine'];
    /** Host names (default simwin-<octets>). */
    names?: string[];
    /** The fake AD domain the hosts reach (sim/hosts/active-directory.ts). */
    activeDirectory?: SimDomain;
    /** Payload files beyond the stand-in set (hybrid-overlay-node.exe, as an admin adds it). */
    payloadExtraFiles?: string[];
  },
): Promise<JoinWorld> {
  if (options.existingCluster && options.cluster)
    throw new Error('joinWorld: cluster options apply to a fresh cluster, not an existing one');
  const cluster = options.existingCluster ?? (await freshCluster(t, options.cluster));
  const key = generateTestKey();
  const payloadDir = await mkdtemp(join(tmpdir(), 'winfleet-payload-'));
  const payload = await writeStandInPayload(
    payloadDir,
    options.payloadExtraFiles ? { extraFiles: options.payloadExtraFiles } : {},
  );
  const fleet = await startSimulatedHosts({
    count: options.releases.length,
    releases: options.releases,
    authorizedKeys: [key.publicKey],
    baseAddress: nextBaseAddress(),
    ...(options.machine ? { machine: options.machine } : {}),
    ...(options.names ? { names: options.names } : {}),
    ...(options.activeDirectory ? { activeDirectory: options.activeDirectory } : {}),
  });
  t.after(() => fleet.stop());
  const namespace = 'winfleet-system';
  const world: JoinWorld = { cluster, kc: cluster.kc, key, payloadDir, payload, fleet, namespace };
  if (options.startOperator ?? true) {
    world.operator = await startTestOperator(cluster.kc, {
      namespace,
      payloadDir,
      ...(options.rolloutClock ? { rolloutClock: options.rolloutClock } : {}),
      config: {
        hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 },
        ...options.config,
      },
    });
    t.after(() => world.operator?.stop());
  }
  await writeSshKeySecret(cluster.kc, namespace, key.privateKey);
  return world;
}

/**
 * Starts the winfleet operator in-process against a test cluster, with its webhook on a free
 * loopback port registered by URL, and an optional config.yaml.
 */
import * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { isAlreadyExists } from '../../src/kube/client.ts';
import { createLogger, type Logger, silentLogger } from '../../src/log/logger.ts';
import { configKey, configMapName } from '../../src/operator/config-source.ts';
import {
  type Operator,
  type PayloadImageOptions,
  startOperator,
} from '../../src/operator/operator.ts';
import { freePort } from '../cluster/free-port.ts';
import { refuseSharedCluster, uniqueSuffix } from './test-cluster.ts';

export interface TestOperatorOptions {
  /** config.yaml content (object or YAML text). */
  config?: unknown;
  namespace?: string;
  webhook?: boolean;
  certValidityMs?: number;
  caValidityMs?: number;
  log?: Logger;
  payloadDir?: string;
  /** A registry payload (OperatorOptions.payloadImage), instead of payloadDir. */
  payloadImage?: PayloadImageOptions;
  /** The pools' rollout clock (OperatorOptions.rolloutClock). */
  rolloutClock?: () => Date;
}

/**
 * The pod network of a test cluster: it runs no CNI (kwok plays its Linux nodes), so `auto`
 * finds none to join and refuses every host; a test operator says `routed` unless its test
 * sets `network` itself (the packet tests in sim/netlab run Flannel and say flannel-vxlan).
 */
export const testClusterNetwork = { mode: 'routed' } as const;

/** `config` with `network` set to testClusterNetwork when it has none (text is left as is). */
export function withTestClusterNetwork(config: unknown): unknown {
  if (typeof config !== 'object' || config === null || 'network' in config) return config;
  return { ...config, network: testClusterNetwork };
}

/**
 * Writes (creates or replaces) the operator's ConfigMap; `extraData` adds keys beside
 * config.yaml (ca-bundle.crt). An object without `network` gets the test cluster's.
 */
export async function writeOperatorConfig(
  kc: k8s.KubeConfig,
  namespace: string,
  config: unknown,
  extraData: Record<string, string> = {},
): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const text = typeof config === 'string' ? config : stringify(withTestClusterNetwork(config));
  const body = {
    metadata: { name: configMapName, namespace },
    data: { ...extraData, [configKey]: text },
  };
  try {
    await core.createNamespace({ body: { metadata: { name: namespace } } });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  try {
    await core.createNamespacedConfigMap({ namespace, body });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    await core.replaceNamespacedConfigMap({ name: configMapName, namespace, body });
  }
}

export async function startTestOperator(
  kc: k8s.KubeConfig,
  options: TestOperatorOptions = {},
): Promise<Operator> {
  refuseSharedCluster(kc, 'An operator');
  const namespace = options.namespace ?? `winfleet-${uniqueSuffix()}`;
  // Always a config: the test cluster's pod network is routed (testClusterNetwork).
  await writeOperatorConfig(kc, namespace, options.config ?? {});
  const port = await freePort();
  const log =
    options.log ??
    (process.env.WINFLEET_TEST_LOGS ? createLogger({ level: 'debug' }) : silentLogger);
  return startOperator({
    kc,
    namespace,
    log,
    leaderElection: false,
    payloadDir: options.payloadDir,
    ...(options.payloadImage ? { payloadImage: options.payloadImage } : {}),
    ...(options.rolloutClock ? { rolloutClock: options.rolloutClock } : {}),
    webhook:
      options.webhook === false
        ? false
        : {
            host: '127.0.0.1',
            port,
            endpoint: { url: `https://127.0.0.1:${port}` },
            dnsNames: ['localhost'],
            ipAddresses: ['127.0.0.1'],
            certValidityMs: options.certValidityMs,
            caValidityMs: options.caValidityMs,
          },
    status: { host: '127.0.0.1', port: 0 },
    dashboard: { host: '127.0.0.1', port: 0 },
  });
}

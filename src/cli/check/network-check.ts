/**
 * The `cni` check of `winfleet check`: the operator's `network` configuration (ConfigMap
 * winfleet-config in the operator's namespace, as the operator reads it; `--network-mode`
 * overrides its mode) resolved against the cluster exactly as the operator's join resolves it
 * (src/network/). It passes only when the mode joins what the cluster runs and nothing is left
 * unverified; what the operator would refuse fails, naming the mode, what was seen and the fix;
 * what joins but cannot be verified (routed, a CNI's directories not readable) warns. It also
 * tells the host checks whether the node's network is an HNS overlay (patch-level).
 */
import type * as k8s from '@kubernetes/client-node';
import {
  type ConfiguredNetworkMode,
  modeUsesHnsOverlay,
  type NetworkMode,
  type ResolvedNetwork,
  usesHnsOverlay,
} from '../../api/network-mode.ts';
import { defaultConfig, type NetworkConfig, parseConfig } from '../../config/winfleet-config.ts';
import { httpStatus } from '../../kube/client.ts';
import { isNotFoundStatus, isRefusedStatus } from '../../net/http-status.ts';
import type { ClusterNetworkReading } from '../../network/read-cluster-network.ts';
import { configKey, configMapName } from '../../operator/config-source.ts';
import { isDocumentError } from '../../schema/validator.ts';
import { type CheckResult, fail, pass, warn } from './check-report.ts';
import type { ClusterNetwork } from './host-checks.ts';

/** The network configuration the check holds the cluster against, and where it came from. */
export interface CheckNetworkConfig {
  config: NetworkConfig;
  /** "network.mode auto (ConfigMap winfleet-system/winfleet-config)", "--network-mode routed". */
  source: string;
  /** Why the operator's configuration could not be taken as it is, if so (a warn at best). */
  caveat?: string;
  /** The configuration is invalid: the operator would not take it (a fail). */
  invalid?: string[];
}

/**
 * The operator's `network` configuration: config.yaml of ConfigMap winfleet-config in
 * `operatorNamespace`, the defaults when there is none; `modeFlag` (--network-mode) replaces its mode.
 * @package
 */
export async function checkNetworkConfig(
  readConfigMap: (name: string, namespace: string) => Promise<k8s.V1ConfigMap>,
  operatorNamespace: string,
  modeFlag: ConfiguredNetworkMode | undefined,
): Promise<CheckNetworkConfig> {
  const where = `ConfigMap ${operatorNamespace}/${configMapName}`;
  let network = defaultConfig().network;
  let from: string;
  let caveat: string | undefined;
  let invalid: string[] | undefined;
  try {
    const cm = await readConfigMap(configMapName, operatorNamespace);
    const text = cm.data?.[configKey];
    if (text === undefined) {
      from = `the defaults: ${where} has no key ${configKey}`;
      caveat = `${where} has no key ${configKey}, so the operator reports it and keeps its last valid configuration, which the check cannot see`;
    } else {
      try {
        network = parseConfig(text, `${where} key ${configKey}`).network;
        from = where;
      } catch (error) {
        if (!isDocumentError(error, 'WF_CONFIG_INVALID')) throw error;
        from = `${where}, which is invalid`;
        invalid = error.details.problems;
      }
    }
  } catch (error) {
    const status = httpStatus(error);
    if (isNotFoundStatus(status)) from = `the defaults: no ${where}`;
    else if (isRefusedStatus(status)) {
      from = `the defaults: ${where} could not be read (${status})`;
      caveat = `${where} could not be read (${status}): the operator's network configuration is not known, the defaults were used`;
    } else throw error;
  }
  const config: NetworkConfig = modeFlag ? { ...network, mode: modeFlag } : network;
  const source = modeFlag
    ? `network.mode ${modeFlag} (--network-mode; the rest of network from ${from})`
    : `network.mode ${config.mode} (${from})`;
  return {
    config,
    source,
    ...(caveat ? { caveat } : {}),
    ...(invalid ? { invalid } : {}),
  };
}

/** What the resolved network is, in a few words for the pass message. */
function settings(network: ResolvedNetwork): string {
  if (network.flannel?.backend === 'vxlan')
    return `VNI ${network.flannel.vni}, UDP port ${network.flannel.port}, Network ${network.flannel.network}`;
  if (network.flannel)
    return `Network ${network.flannel.network}; every node must share one L2 segment`;
  if (network.external)
    return `CNI directories ${network.external.cniConfDir} and ${network.external.cniBinDir}; winfleet's kube-proxy ${network.external.kubeProxy ? `on${network.external.networkName ? ` (network ${network.external.networkName})` : ''}` : 'off'}`;
  if (network.ovnHybrid) return `hybrid overlay VNI ${network.ovnHybrid.hybridOverlayVni}`;
  return '';
}

/**
 * The cni check's result, and the network the host checks judge patch levels by, from the
 * configuration and the cluster's reading. Pure.
 * @package
 */
export function networkVerdict(
  configured: CheckNetworkConfig,
  reading: ClusterNetworkReading,
): { result: CheckResult; network: ClusterNetwork } {
  if (configured.invalid)
    return {
      result: fail(
        'cni',
        `${configured.source}: ${configured.invalid.join('; ')}`,
        'Fix the fields named in config.yaml of the operator’s ConfigMap winfleet-config (the operator keeps its last valid configuration until then)',
      ),
      network: { overlay: undefined, seen: 'the operator’s configuration is invalid' },
    };
  const resolution = reading.resolution;
  if (!resolution.ok)
    return {
      result: fail('cni', `${resolution.seen} [${configured.source}]`, resolution.fix),
      network: {
        overlay: undefined,
        seen: `the operator would not join this cluster's network with ${configured.source} (see the cni check)`,
      },
    };
  const resolved = resolution.network;
  const mode: NetworkMode = resolved.mode;
  const how = configured.config.mode === 'auto' ? `auto chose ${mode}` : `${mode} joins it`;
  const detail = settings(resolved);
  const seen = `${resolved.detected}: ${how}${detail ? ` (${detail})` : ''} [${configured.source}]`;
  const network: ClusterNetwork = { overlay: usesHnsOverlay(resolved), seen: resolved.detected };
  const doubts = [
    ...(resolution.warnings ?? []),
    ...(configured.caveat ? [configured.caveat] : []),
  ];
  if (doubts.length === 0) return { result: pass('cni', seen), network };
  const count = doubts.length === 1 ? 'one point' : `${doubts.length} points`;
  return {
    result: warn('cni', `${seen}; ${count} not verified or at risk (see fix)`, doubts.join('; ')),
    network,
  };
}

/** The network the host checks go by without the cluster: what --network-mode alone implies. */
export function networkWithoutCluster(
  modeFlag: ConfiguredNetworkMode | undefined,
  why: string,
): ClusterNetwork {
  if (modeFlag === undefined || modeFlag === 'auto') return { overlay: undefined, seen: why };
  return { overlay: modeUsesHnsOverlay(modeFlag), seen: `--network-mode ${modeFlag}` };
}

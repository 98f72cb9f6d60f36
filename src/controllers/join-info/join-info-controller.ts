/**
 * Keeps the ConfigMap winfleet-join (src/join/join-info.ts, the contract with joining agents)
 * in the operator's namespace current with winfleet-config and the payload in use, and what a
 * host joining by command reads alongside it: the payload's services manifest published (with
 * its record), and the Role `winfleet:join-info` that lets nodes and winfleet's bootstrap group
 * get winfleet-join and the payload's pull Secret by name.
 *
 * The document is checked with parseJoinInfo before it is written: the operator never writes
 * one an agent would refuse. Its `payload` part (where hosts pull the payload from) is there
 * only when the payload comes from a registry (LoadedPayload.registry); with a payload
 * directory hosts cannot pull it, and `winfleet join-command` says so.
 */
import * as k8s from '@kubernetes/client-node';
import { agentHealthDefaults, type WinfleetConfig } from '../../config/winfleet-config.ts';
import { Controller, everythingKey } from '../../controller-runtime/controller.ts';
import type { Informer } from '../../controller-runtime/informer.ts';
import { sameJson } from '../../controller-runtime/same-json.ts';
import {
  type JoinInfo,
  type JoinPayloadSource,
  joinInfoConfigMapName,
  joinInfoKey,
  parseJoinInfo,
} from '../../join/join-info.ts';
import { isAlreadyExists, isConflict } from '../../kube/client.ts';
import type { Logger } from '../../log/logger.ts';
import type { LoadedPayload, PayloadRegistrySource } from '../../payload/loaded-payload.ts';
import type { ServicesManifest } from '../../servicesmanifest/services-manifest.ts';
import { applyJoinInfoRbac } from '../hosts/cluster-rbac.ts';

export interface JoinInfoControllerDeps {
  kc: k8s.KubeConfig;
  /** The operator's namespace. */
  namespace: string;
  /** The winfleet-join ConfigMap alone (a field selector on its name). */
  joinInfo: Informer<k8s.V1ConfigMap>;
  config: () => WinfleetConfig;
  /** The operator's own API server URL (the kubeconfig it runs with). */
  cluster: { apiServer: string };
  payload: () => Promise<LoadedPayload>;
  publish: (manifest: ServicesManifest) => Promise<string>;
  log: Logger;
}

/** The registry host of "host[:port]/path". */
function registryHost(repository: string): string {
  return repository.split('/', 1)[0]!;
}

/** Where hosts pull the payload: the artifact, and winfleet-config's mirrors of its registry. */
export function joinPayloadSource(
  registry: PayloadRegistrySource,
  config: WinfleetConfig,
): JoinPayloadSource {
  return {
    repository: registry.repository,
    digest: registry.digest,
    mirrors: config.images.mirrors[registryHost(registry.repository)] ?? [],
    ...(registry.insecure ? { insecure: true } : {}),
    ...(registry.pullSecretName ? { pullSecretName: registry.pullSecretName } : {}),
  };
}

/** winfleet-join's document for this configuration and payload. */
export function joinInfoFor(
  config: WinfleetConfig,
  apiServer: string,
  loaded: LoadedPayload,
): JoinInfo {
  const { hosts, placement } = config;
  const taint = placement.windowsTaint;
  return {
    apiServer: hosts.apiServer ?? apiServer,
    clusterDNS: hosts.clusterDNS,
    clusterDomain: hosts.clusterDomain,
    serviceCIDR: hosts.serviceCIDR,
    podCIDR: hosts.podCIDR,
    windowsTaint: {
      key: taint.key,
      ...(taint.value ? { value: taint.value } : {}),
      effect: taint.effect,
    },
    kubelet: {
      systemReserved: hosts.kubelet.systemReserved,
      priorityClass: hosts.kubelet.priorityClass,
      maxPods: hosts.kubelet.maxPods,
    },
    checkIntervalSeconds: hosts.agentCheckIntervalSeconds,
    // Only when tuned: an agent older than the field refuses a join-info that has it, and a
    // join script may pin such an agent.
    ...(sameJson(hosts.agentHealth, agentHealthDefaults) ? {} : { agentHealth: hosts.agentHealth }),
    servicesVersion: loaded.manifest.version,
    ...(loaded.registry ? { payload: joinPayloadSource(loaded.registry, config) } : {}),
  };
}

/** What a pass writes, bound to the API server by the wiring (apiJoinInfoWrites). */
export interface JoinInfoWrites {
  /** The Role and RoleBinding that let joining hosts read winfleet-join (and the pull Secret). */
  applyRbac(pullSecret: string | undefined): Promise<void>;
  /** Replaces (existing) or creates winfleet-join; false when the cache was behind. */
  writeConfigMap(body: k8s.V1ConfigMap, existing: boolean): Promise<boolean>;
}

/** The explicit state a pass runs over. */
export interface JoinInfoState {
  namespace: string;
  joinInfo: Pick<Informer<k8s.V1ConfigMap>, 'get'>;
  config: () => WinfleetConfig;
  cluster: { apiServer: string };
  payload: () => Promise<LoadedPayload>;
  publish: (manifest: ServicesManifest) => Promise<string>;
  log: Logger;
  writes: JoinInfoWrites;
  /** What this replica made current: the published version, the Role's pull Secret. */
  memory: { publishedVersion?: string; rbacFor?: string };
}

/** The writes bound to the API server behind `kc`, in `namespace`. */
export function apiJoinInfoWrites(kc: k8s.KubeConfig, namespace: string): JoinInfoWrites {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  return {
    applyRbac: (pullSecret) => applyJoinInfoRbac(kc, namespace, pullSecret),
    async writeConfigMap(body, existing) {
      try {
        if (existing) {
          await core.replaceNamespacedConfigMap({ name: joinInfoConfigMapName, namespace, body });
        } else {
          await core.createNamespacedConfigMap({ namespace, body });
        }
        return true;
      } catch (error) {
        // The cache was behind: its event brings the current object back here.
        if (isConflict(error) || isAlreadyExists(error)) return false;
        throw error;
      }
    },
  };
}

/** One pass: publish the payload and the RBAC if they changed, then write winfleet-join. */
export async function reconcileJoinInfo(state: JoinInfoState): Promise<undefined> {
  const { memory } = state;
  const loaded = await state.payload();
  if (memory.publishedVersion !== loaded.manifest.version) {
    await state.publish(loaded.manifest);
    memory.publishedVersion = loaded.manifest.version;
  }
  const pullSecret = loaded.registry?.pullSecretName ?? '';
  if (memory.rbacFor !== pullSecret) {
    await state.writes.applyRbac(pullSecret || undefined);
    memory.rbacFor = pullSecret;
  }
  const text = JSON.stringify(joinInfoFor(state.config(), state.cluster.apiServer, loaded));
  // What an agent would refuse is never written (WF_JOIN_INFO_INVALID names the field).
  parseJoinInfo(text);
  const existing = state.joinInfo.get(`${state.namespace}/${joinInfoConfigMapName}`);
  if (existing?.data?.[joinInfoKey] === text) return undefined;
  const body: k8s.V1ConfigMap = {
    ...existing,
    metadata: {
      ...existing?.metadata,
      name: joinInfoConfigMapName,
      namespace: state.namespace,
      labels: { ...existing?.metadata?.labels, 'app.kubernetes.io/managed-by': 'winfleet' },
    },
    data: { [joinInfoKey]: text },
  };
  if (!(await state.writes.writeConfigMap(body, existing !== undefined))) return undefined;
  state.log.info('wrote winfleet-join for hosts joining by command', {
    servicesVersion: loaded.manifest.version,
    payloadSource: loaded.registry ? loaded.registry.repository : 'none (payload directory)',
  });
  return undefined;
}

/** Creates the controller: one key, enqueued by any event on winfleet-join. */
export function createJoinInfoController(deps: JoinInfoControllerDeps): Controller {
  const state: JoinInfoState = {
    namespace: deps.namespace,
    joinInfo: deps.joinInfo,
    config: deps.config,
    cluster: deps.cluster,
    payload: deps.payload,
    publish: deps.publish,
    log: deps.log.child({ controller: 'join-info' }),
    writes: apiJoinInfoWrites(deps.kc, deps.namespace),
    memory: {},
  };
  const controller = new Controller({
    name: 'join-info',
    log: deps.log,
    baseDelayMs: 1000,
    maxDelayMs: 5 * 60_000,
    reconcile: () => reconcileJoinInfo(state),
  });
  const enqueue = () => controller.enqueue(everythingKey);
  deps.joinInfo.on('add', enqueue).on('update', enqueue).on('delete', enqueue);
  return controller;
}

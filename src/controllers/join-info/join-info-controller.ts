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

export function createJoinInfoController(deps: JoinInfoControllerDeps): Controller {
  const core = deps.kc.makeApiClient(k8s.CoreV1Api);
  const log = deps.log.child({ controller: 'join-info' });
  const key = `${deps.namespace}/${joinInfoConfigMapName}`;
  /** What this replica made current: the published version, the Role's pull Secret. */
  let publishedVersion: string | undefined;
  let rbacFor: string | undefined;

  const controller = new Controller({
    name: 'join-info',
    log: deps.log,
    baseDelayMs: 1000,
    maxDelayMs: 5 * 60_000,
    async reconcile() {
      const loaded = await deps.payload();
      if (publishedVersion !== loaded.manifest.version) {
        await deps.publish(loaded.manifest);
        publishedVersion = loaded.manifest.version;
      }
      const pullSecret = loaded.registry?.pullSecretName ?? '';
      if (rbacFor !== pullSecret) {
        await applyJoinInfoRbac(deps.kc, deps.namespace, pullSecret || undefined);
        rbacFor = pullSecret;
      }
      const text = JSON.stringify(joinInfoFor(deps.config(), deps.cluster.apiServer, loaded));
      // What an agent would refuse is never written (WF_JOIN_INFO_INVALID names the field).
      parseJoinInfo(text);
      const existing = deps.joinInfo.get(key);
      if (existing?.data?.[joinInfoKey] === text) return undefined;
      const body: k8s.V1ConfigMap = {
        ...existing,
        metadata: {
          ...existing?.metadata,
          name: joinInfoConfigMapName,
          namespace: deps.namespace,
          labels: { ...existing?.metadata?.labels, 'app.kubernetes.io/managed-by': 'winfleet' },
        },
        data: { [joinInfoKey]: text },
      };
      try {
        if (existing) {
          await core.replaceNamespacedConfigMap({
            name: joinInfoConfigMapName,
            namespace: deps.namespace,
            body,
          });
        } else {
          await core.createNamespacedConfigMap({ namespace: deps.namespace, body });
        }
      } catch (error) {
        // The cache was behind: its event brings the current object back here.
        if (isConflict(error) || isAlreadyExists(error)) return undefined;
        throw error;
      }
      log.info('wrote winfleet-join for hosts joining by command', {
        servicesVersion: loaded.manifest.version,
        payloadSource: loaded.registry ? loaded.registry.repository : 'none (payload directory)',
      });
      return undefined;
    },
  });
  const enqueue = () => controller.enqueue(everythingKey);
  deps.joinInfo.on('add', enqueue).on('update', enqueue).on('delete', enqueue);
  return controller;
}

/**
 * The winfleet operator as a library. `startOperator` runs its lifecycle in order: the
 * namespace and CRDs, the shared informers and the configuration watch, the admission webhook,
 * the status server (health, metrics, /config) and the dashboard, leader election, then the
 * controllers and the payload watch; `stop` tears them down in reverse. main.ts is its command line.
 */

import { stat } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { installCrds } from '../api/install-crds.ts';
import { defaultOperatorNamespace } from '../api/operator-namespace.ts';
import type { WindowsHost } from '../api/windows-host.ts';
import { type WindowsNodePool, windowsNodePoolResource } from '../api/windows-node-pool.ts';
import { type Controller, everythingKey } from '../controller-runtime/controller.ts';
import { registerControllerMetrics } from '../controller-runtime/controller-metrics.ts';
import { createEventRecorder, type EventRecorder } from '../controller-runtime/events.ts';
import type { Informer } from '../controller-runtime/informer.ts';
import { InformerFactory, resources } from '../controller-runtime/informer-factory.ts';
import { acquireLeadership } from '../controller-runtime/leader-election.ts';
import { apiServerNamesReader } from '../controllers/csr/api-server-names.ts';
import { warnIfBootstrapTokensAutoApproved } from '../controllers/csr/bootstrap-auto-approval.ts';
import { createCsrController } from '../controllers/csr/csr-controller.ts';
import { createServingAddressController } from '../controllers/csr/serving-address-controller.ts';
import { createFlanneldReadersController } from '../controllers/hosts/flanneld-node-readers.ts';
import { createHostController } from '../controllers/hosts/host-controller.ts';
import {
  createHostInformer,
  hostNamespaces,
  namespacesInformer,
} from '../controllers/hosts/host-informer.ts';
import { createHostSecretInformer } from '../controllers/hosts/host-secrets.ts';
import { createManifestPublisher } from '../controllers/hosts/manifest-publisher.ts';
import { createWorkloadImages, type WorkloadImages } from '../controllers/hosts/pre-pull-auto.ts';
import { createPrePullSizes, type PrePullSizes } from '../controllers/hosts/pre-pull-sizes.ts';
import {
  createWindowsInstancesController,
  windowsInstancesName,
} from '../controllers/hosts/windows-instances.ts';
import { createClusterInfoController } from '../controllers/join-info/cluster-info-controller.ts';
import { createJoinInfoController } from '../controllers/join-info/join-info-controller.ts';
import { createPoolController } from '../controllers/pools/pool-controller.ts';
import { apiMigrationReads } from '../controllers/pools/pool-migration.ts';
import { createRuntimeClassController } from '../controllers/runtimeclasses/runtime-class-controller.ts';
import { apiEventLister, createDashboard } from '../dashboard/server.ts';
import { WinfleetError } from '../errors/catalog.ts';
import { ensureCommandSigner } from '../fleet/command-signer.ts';
import { registerBytesSent } from '../hostaccess/bytes-sent.ts';
import { prometheusLookupObserver } from '../images/lookup-metrics.ts';
import { clusterInfoName, clusterInfoNamespace } from '../join/cluster-info.ts';
import { joinInfoConfigMapName } from '../join/join-info.ts';
import { isAlreadyExists, WinfleetKubeConfig } from '../kube/client.ts';
import { clusterAccess } from '../kube/cluster-access.ts';
import { createLogger, type Logger } from '../log/logger.ts';
import { type NodeNetworkState, watchClusterNetwork } from '../network/cluster-network-watch.ts';
import type { LoadedPayload } from '../payload/loaded-payload.ts';
import {
  type PinnedPayloadReference,
  parsePinnedReference,
} from '../payload/oci/payload-reference.ts';
import { payloadSource } from '../payload/payload-source.ts';
import { registryPayloadSource } from '../payload/registry-payload-source.ts';
import { createHealthMetrics, type HealthMetrics } from '../remediation/health-metrics.ts';
import type { NodeNetwork } from '../servicesmanifest/node-network.ts';
import { clusterFacts, readyWindowsNodeCounts } from '../webhook/cluster-facts.ts';
import { createWebhookMetrics, type WebhookMetrics } from '../webhook/metrics.ts';
import { memoizeCompatibility } from '../webhook/placement.ts';
import { apiPullSecrets, podImageResolver } from '../webhook/pod-images.ts';
import type {
  WebhookConfigurationsMode,
  WebhookEndpoint,
} from '../webhook/webhook-configurations.ts';
import { startWebhookService, type WebhookService } from '../webhook/webhook-service.ts';
import { isCompatibleBuild } from '../windows/compatibility.ts';
import { type ConfigSource, configStatusRoute, watchConfig } from './config-source.ts';
import { payloadPullSecret } from './payload-pull-secret.ts';
import { registerProcessMetrics } from './process-metrics.ts';
import { type StatusServer, startHttpServer, startStatusServer } from './status-server.ts';
import { createImageResolvers, type ImageResolvers, slimNamespace } from './webhook-process.ts';

export { defaultOperatorNamespace };

/** @package */
export interface OperatorOptions {
  kc: k8s.KubeConfig;
  namespace?: string;
  log?: Logger;
  /** The admission webhook; false to run without it. */
  webhook?:
    | false
    | {
        host: string;
        port: number;
        endpoint: WebhookEndpoint;
        dnsNames: string[];
        ipAddresses: string[];
        certValidityMs?: number;
        caValidityMs?: number;
        /** Who keeps the webhook configurations (default create; webhook-configurations.ts). */
        configurations?: WebhookConfigurationsMode;
        /** Serve the certificate of this Secret (cert-manager) instead of the operator's CA. */
        certificateSecret?: string;
        /** Namespaces whose pods' image pull secrets are read (default all). */
        pullSecretNamespaces?: 'all' | string[];
        /**
         * Serve admissions here (default true). False when the webhook runs in its own process
         * (`--mode controllers`, the chart): this process keeps only the certificate Secret and
         * the webhook configurations (webhook-process.ts serves).
         */
        serve?: boolean;
      };
  /** /healthz, /readyz, /metrics and /config on this port; 0 picks one. */
  status?: { host: string; port: number };
  /**
   * The dashboard's own listener (loopback by default in the CLI and the chart: a person reaches
   * it with kubectl port-forward); 0 picks a port. Without it, no dashboard.
   */
  dashboard?: {
    host: string;
    port: number;
    /**
     * Names a request's Host may give besides localhost, 127.0.0.1, [::1] and the bound
     * address (DNS rebinding: dashboard/server.ts).
     */
    allowedHosts?: string[];
  };
  /** Elect a leader on a Lease before running controllers (default true). */
  leaderElection?: boolean;
  identity?: string;
  /**
   * Directory with payload.json and the Windows binaries. Without it or `payloadImage`, hosts
   * are not joined.
   */
  payloadDir?: string;
  /** The payload as an OCI artifact in a registry, pinned by digest (not with payloadDir). */
  payloadImage?: PayloadImageOptions;
  /**
   * What the operator sets up in the cluster itself (each default true). Installed by the Helm
   * chart, the chart does these and its RBAC does not let the operator: the namespace, the
   * CRDs, and the ClusterRoleBinding of the bootstrap group (cluster-rbac.ts).
   */
  createNamespace?: boolean;
  installCrds?: boolean;
  clusterBindings?: boolean;
  /**
   * The clock the pools' rollouts read (maintenance windows, step deadlines); default the
   * system clock. Tests move it into or out of a window.
   */
  rolloutClock?: () => Date;
}

/** Where the operator reads a registry payload from (--payload-image and its flags). */
export interface PayloadImageOptions {
  /** "registry/repository[:tag]@sha256:…". */
  reference: string;
  /** A kubernetes.io/dockerconfigjson Secret of the operator's namespace for the registry. */
  pullSecret?: string;
  /** Reach the registry itself over plain HTTP (loopback registries). */
  plainHttp?: boolean;
  /** PEM CA certificates trusted for the registry, besides the system roots. */
  caBundle?: string;
  /** Where fetched payload files are kept for SFTP copies (default: a directory in tmpdir). */
  cacheDir?: string;
}

export interface Operator {
  namespace: string;
  webhook?: WebhookService;
  status?: StatusServer;
  dashboard?: StatusServer;
  controllers: Controller[];
  stop(): Promise<void>;
}

/** What every step shares: the cluster, the operator's namespace, its log and events. */
interface OperatorContext {
  kc: k8s.KubeConfig;
  namespace: string;
  log: Logger;
  events: EventRecorder;
  /** The health metrics in the operator's /metrics registry; the health pass feeds them. */
  healthMetrics: HealthMetrics;
}

/** The shared informers and the configuration watch, created before the factory starts. */
interface Caches {
  factory: InformerFactory;
  config: ConfigSource;
  nodes: Informer<k8s.V1Node>;
  runtimeClasses: Informer<k8s.V1RuntimeClass>;
  namespaces: Informer<k8s.V1Namespace>;
  hosts: Informer<WindowsHost>;
  /** WindowsNodePools, in the same namespaces as the WindowsHosts (a pool selects its own). */
  pools: Informer<WindowsNodePool>;
  csrs: Informer<k8s.V1CertificateSigningRequest>;
  instances: Informer<k8s.V1ConfigMap>;
  /** kube-public/cluster-info alone. */
  clusterInfo: Informer<k8s.V1ConfigMap>;
  /** The operator's winfleet-join ConfigMap alone. */
  joinInfo: Informer<k8s.V1ConfigMap>;
}

type ManifestPublisher = ReturnType<typeof createManifestPublisher>;

/** The process's /metrics registry: process, API request and SFTP byte metrics. */
function processRegistry(kc: k8s.KubeConfig): Registry {
  const registry = new Registry();
  registerProcessMetrics(registry);
  // The API requests of the process's client (loadKubeConfig), by verb, resource and code.
  if (kc instanceof WinfleetKubeConfig) kc.requests.registerIn(registry);
  // What it sent to hosts over SFTP: the payload's cost in the operator's bandwidth.
  registerBytesSent(registry);
  return registry;
}

type ClusterNetworkWatch = Awaited<ReturnType<typeof watchClusterNetwork>>;

/**
 * The pod network nodes join (network.mode against the cluster): read now, on each
 * configuration change and every two minutes; a change looks at every host and pool again.
 */
async function watchNetwork(
  ctx: OperatorContext,
  caches: Caches,
  controllers: Controller[],
  webhook: WebhookService | undefined,
): Promise<ClusterNetworkWatch> {
  const clusterNetwork = await watchClusterNetwork({
    kc: ctx.kc,
    config: () => caches.config.current(),
    log: ctx.log,
    onChange: () => {
      for (const c of controllers) c.enqueue(everythingKey);
    },
  });
  caches.config.onChange(() => {
    webhook?.refresh();
    void clusterNetwork.refresh();
    for (const c of controllers) c.enqueue(everythingKey);
  });
  return clusterNetwork;
}

/** The dashboard on its own listener; pushes its stops (streams end, then the listener). */
async function startDashboard(
  ctx: OperatorContext,
  options: NonNullable<OperatorOptions['dashboard']>,
  caches: Caches,
  stops: (() => void | Promise<void>)[],
): Promise<StatusServer> {
  const { host: bound, allowedHosts = [] } = options;
  const pages = createDashboard(caches, apiEventLister(ctx.kc), {
    // The address it is bound to answers too, unless it is every address.
    allowedHosts: [
      ...allowedHosts,
      ...(bound === '0.0.0.0' || bound === '::'
        ? []
        : [bound.includes(':') ? `[${bound}]` : bound]),
    ],
  });
  const server = await startHttpServer({
    host: options.host,
    port: options.port,
    log: ctx.log,
    routes: [pages.route],
  });
  // Stops run last-first: the live streams end, then the listener closes.
  stops.push(() => server.close());
  stops.push(() => pages.close());
  return server;
}

/** What the controllers that need a payload are made from. */
interface PayloadControllersDeps {
  ctx: OperatorContext;
  caches: Caches;
  options: OperatorOptions;
  loadPayload: NonNullable<ReturnType<typeof payloadLoader>>;
  clusterNetwork: ClusterNetworkWatch;
  images: ImageResolvers;
}

/**
 * The controllers that need a payload (joining, join by command, flanneld readers), the
 * payload directory's watch, and a first read of the payload so that a refusal shows at once.
 */
async function startPayloadControllers(
  deps: PayloadControllersDeps,
  controllers: Controller[],
  stops: (() => void | Promise<void>)[],
): Promise<void> {
  const { ctx, caches, options, loadPayload, clusterNetwork, images } = deps;
  const { namespace, log } = ctx;
  const setup = { clusterBindings: options.clusterBindings };
  // One publisher for the host controller and winfleet-join: one view of what is published.
  const publish = createManifestPublisher(ctx.kc, namespace, setup);
  controllers.push(
    createJoiningController(ctx, caches, loadPayload, publish, {
      ...setup,
      network: () => clusterNetwork.current(),
      // spec.prePull's sizes through the webhook's resolver (mirrors, the address policy).
      prePullSizes: createPrePullSizes({ resolver: () => images.current(), log }),
      // spec.prePull.auto: the images of the pods on Windows nodes, one cluster-wide list.
      prePullWorkloads: createWorkloadImages({
        listPods: async () =>
          (
            await ctx.kc
              .makeApiClient(k8s.CoreV1Api)
              .listPodForAllNamespaces({ fieldSelector: 'status.phase=Running' })
          ).items,
        nodes: () => caches.nodes.list(),
        log,
      }),
    }),
  );
  controllers.push(...createJoinByCommandControllers(ctx, caches, loadPayload, publish, setup));
  controllers.push(
    createFlanneldReadersController({
      kc: ctx.kc,
      hosts: caches.hosts,
      network: () => clusterNetwork.lastGood(),
      clusterBindings: options.clusterBindings,
      log,
    }),
  );
  if (options.payloadDir) stops.push(await watchPayload(ctx, options.payloadDir, controllers));
  // Read the payload once now, so that a registry that refuses it shows in the log at once.
  loadPayload().then(
    (loaded) =>
      log.info('payload loaded', {
        version: loaded.manifest.version,
        registry: loaded.registry
          ? `${loaded.registry.repository}@${loaded.registry.digest}`
          : undefined,
      }),
    (error: unknown) =>
      log.warn('cannot load the payload yet; joins retry', { error: (error as Error).message }),
  );
}

/**
 * The shared informers, their metrics and the webhook's registered (in that order, as
 * /metrics lists them), the factory started, then the WindowsHost and WindowsNodePool caches.
 */
async function startCaches(
  ctx: OperatorContext,
  registry: Registry,
  controllers: Controller[],
  stops: (() => void | Promise<void>)[],
) {
  const shared = createCaches(ctx);
  registerControllerMetrics(registry, {
    controllers: () => controllers,
    informerObjects: () => shared.factory.objectCounts(),
    readyWindowsNodes: () => readyWindowsNodeCounts(shared.nodes),
  });
  const webhookMetrics = createWebhookMetrics(registry);
  const lookupObserver = prometheusLookupObserver(registry);
  await shared.factory.start();
  stops.push(() => shared.factory.stop());
  const caches: Caches = { ...shared, ...(await watchHosts(ctx, shared)) };
  return { caches, webhookMetrics, lookupObserver };
}

/** The status server (probes, /metrics, /config); pushes its stop. */
async function startStatus(
  ctx: OperatorContext,
  options: NonNullable<OperatorOptions['status']>,
  registry: Registry,
  caches: Caches,
  stops: (() => void | Promise<void>)[],
): Promise<StatusServer> {
  const status = await startStatusServer({
    ...options,
    registry,
    ready: () => true,
    log: ctx.log,
    routes: [configStatusRoute(caches.config)],
  });
  stops.push(() => status.close());
  return status;
}

/** Starts the operator and resolves once it is serving and its controllers run. */
export async function startOperator(options: OperatorOptions): Promise<Operator> {
  const namespace = options.namespace ?? defaultOperatorNamespace;
  const log = options.log ?? createLogger({}, { component: 'operator' });
  // Checked before anything starts: a bad payload option must not leave a half-started operator.
  const payloadReference = pinnedPayloadReference(options);
  const identity = options.identity ?? `${hostname()}-${process.pid}`;
  const registry = processRegistry(options.kc);
  const ctx: OperatorContext = {
    kc: options.kc,
    namespace,
    log,
    events: createEventRecorder(options.kc, 'winfleet-operator', log),
    healthMetrics: createHealthMetrics(registry),
  };
  // Each step that starts something pushes its stop; stop() runs them last-first.
  const stops: (() => void | Promise<void>)[] = [];
  const controllers: Controller[] = [];

  if (options.createNamespace ?? true) await ensureNamespace(ctx.kc, namespace);
  if (options.installCrds ?? true) await installCrds(ctx.kc);
  await warnIfBootstrapTokensAutoApproved(ctx);
  const { caches, webhookMetrics, lookupObserver } = await startCaches(
    ctx,
    registry,
    controllers,
    stops,
  );
  const images = createImageResolvers(caches.config, lookupObserver);
  stops.push(() => images.close());
  const webhook = options.webhook
    ? await startWebhook(ctx, options.webhook, caches, images, webhookMetrics)
    : undefined;
  if (webhook) stops.push(() => webhook.stop());
  const clusterNetwork = await watchNetwork(ctx, caches, controllers, webhook);
  stops.push(() => clusterNetwork.stop());
  const status = options.status
    ? await startStatus(ctx, options.status, registry, caches, stops)
    : undefined;
  const dashboard = options.dashboard
    ? await startDashboard(ctx, options.dashboard, caches, stops)
    : undefined;
  if (options.leaderElection ?? true) stops.push(await leadOrExit(ctx, identity));
  // The key that signs commands to agents (src/api/node-commands.ts), before any controller.
  await ensureCommandSigner(ctx.kc, namespace);
  const loadPayload = payloadLoader(ctx, caches, options, payloadReference, () =>
    clusterNetwork.lastGood(),
  );
  controllers.push(
    ...createControllers(ctx, caches, loadPayload, options, () => clusterNetwork.current(), images),
  );
  stops.push(() => {
    for (const c of controllers) c.stop();
  });
  if (loadPayload)
    await startPayloadControllers(
      { ctx, caches, options, loadPayload, clusterNetwork, images },
      controllers,
      stops,
    );
  else
    log.warn(
      'no payload given (--payload-dir or --payload-image): WindowsHosts will not be joined',
    );
  // Controllers start only once this replica leads; informer events before that are replayed
  // by enqueueing everything now.
  for (const c of controllers) c.enqueue(everythingKey);
  log.info('operator running', {
    namespace,
    identity,
    webhookPort: webhook?.port,
    statusPort: status?.port,
    dashboardPort: dashboard?.port,
  });
  const stop = async () => {
    for (const step of [...stops].reverse()) await step();
  };
  return { namespace, webhook, status, dashboard, controllers, stop };
}

async function ensureNamespace(kc: k8s.KubeConfig, name: string): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  try {
    await core.createNamespace({
      body: { metadata: { name, labels: { 'app.kubernetes.io/part-of': 'winfleet' } } },
    });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
}

/**
 * The WindowsHost and WindowsNodePool caches: the operator's namespace and those
 * hosts.namespaces opts in, as the configuration stood at start-up (it needs the
 * configuration, so they start after the factory's first lists). A later change to
 * hosts.namespaces is logged as needing a restart.
 */
async function watchHosts(
  { kc, namespace, log }: OperatorContext,
  { factory, config }: Omit<Caches, 'hosts' | 'pools'>,
): Promise<Pick<Caches, 'hosts' | 'pools'>> {
  const namespaces = hostNamespaces(namespace, config.current().hosts.namespaces);
  const hosts = createHostInformer(kc, factory, namespaces);
  const pools = namespacesInformer<WindowsNodePool>(
    kc,
    factory,
    windowsNodePoolResource,
    namespaces,
  );
  await Promise.all([hosts.start(), pools.start()]);
  log.info('watching WindowsHosts and WindowsNodePools', { namespaces });
  config.onChange((next) => {
    const wanted = hostNamespaces(namespace, next.hosts.namespaces);
    if (JSON.stringify(wanted) !== JSON.stringify(namespaces)) {
      log.warn('hosts.namespaces changed; restart the operator to watch the new namespaces', {
        watching: namespaces,
        configured: wanted,
      });
    }
  });
  return { hosts, pools };
}

/**
 * Registers every informer the operator uses with one factory, so each kind is watched once;
 * the WindowsHost cache follows once the configuration is read (watchHosts).
 */
function createCaches({
  kc,
  namespace,
  events,
  log,
}: OperatorContext): Omit<Caches, 'hosts' | 'pools'> {
  const factory = new InformerFactory(kc, log);
  return {
    factory,
    config: watchConfig(factory, namespace, events, log),
    nodes: factory.get<k8s.V1Node>(resources.nodes),
    runtimeClasses: factory.get<k8s.V1RuntimeClass>(resources.runtimeClasses),
    // The webhook needs only names and labels of namespaces; the rest is not kept.
    namespaces: factory.get<k8s.V1Namespace>(resources.namespaces, { transform: slimNamespace }),
    csrs: factory.get<k8s.V1CertificateSigningRequest>(resources.csrs),
    instances: factory.get<k8s.V1ConfigMap>(resources.configMaps, {
      namespace,
      fieldSelector: `metadata.name=${windowsInstancesName}`,
    }),
    clusterInfo: factory.get<k8s.V1ConfigMap>(resources.configMaps, {
      namespace: clusterInfoNamespace,
      fieldSelector: `metadata.name=${clusterInfoName}`,
    }),
    joinInfo: factory.get<k8s.V1ConfigMap>(resources.configMaps, {
      namespace,
      fieldSelector: `metadata.name=${joinInfoConfigMapName}`,
    }),
  };
}

async function startWebhook(
  { kc, namespace, log }: OperatorContext,
  options: Exclude<OperatorOptions['webhook'], false | undefined>,
  caches: Caches,
  images: ImageResolvers,
  metrics: WebhookMetrics,
): Promise<WebhookService> {
  const { config, nodes, runtimeClasses, namespaces } = caches;
  return startWebhookService({
    kc,
    operatorNamespace: namespace,
    config: () => config.current(),
    facts: clusterFacts(kc, { nodes, runtimeClasses, namespaces }, () => config.current()),
    // A malformed os.version from a registry runs nowhere.
    isCompatible: memoizeCompatibility(isCompatibleBuild),
    resolveImages: podImageResolver(
      () => images.current(),
      apiPullSecrets(kc, options.pullSecretNamespaces),
    ),
    host: options.host,
    port: options.port,
    endpoint: options.endpoint,
    dnsNames: options.dnsNames,
    ipAddresses: options.ipAddresses,
    certValidityMs: options.certValidityMs,
    caValidityMs: options.caValidityMs,
    configurations: options.configurations,
    certificateSecret: options.certificateSecret,
    serve: options.serve ?? true,
    metrics,
    log,
  });
}

/**
 * Waits to lead on the operator's Lease; returns the step that stops renewing it and releases
 * it, so that another replica takes over at once.
 */
async function leadOrExit(
  { kc, namespace, log }: OperatorContext,
  identity: string,
): Promise<() => Promise<void>> {
  const renewal = new AbortController();
  const leadership = await acquireLeadership(
    kc,
    { namespace, name: 'winfleet-operator', identity, log, signal: renewal.signal },
    () => {
      // Controller-runtime's rule: a replica that lost the lease exits and restarts clean.
      log.error('lost the leader lease; exiting');
      process.exit(1);
    },
  );
  return async () => {
    renewal.abort();
    await leadership.stopped;
  };
}

/**
 * The one source of the payload in use, shared by every controller: a payload directory, or a
 * registry artifact (read once, its files fetched into a cache only for SFTP copies).
 */
function payloadLoader(
  { kc, namespace }: OperatorContext,
  { config }: Caches,
  options: OperatorOptions,
  reference: PinnedPayloadReference | undefined,
  network: () => NodeNetwork | undefined,
): (() => Promise<LoadedPayload>) | undefined {
  // The API server the hosts use: always bypassed by their proxy (node-host-settings.ts).
  let own: string | undefined;
  const apiServer = () => {
    own ??= clusterAccess(kc).apiServer;
    return config.current().hosts.apiServer ?? own;
  };
  if (options.payloadDir)
    return payloadSource(options.payloadDir, () => config.current(), apiServer, network);
  const image = options.payloadImage;
  if (!image || !reference) return undefined;
  return registryPayloadSource({
    reference,
    config: () => config.current(),
    apiServer,
    network,
    cacheDir: image.cacheDir ?? join(tmpdir(), `winfleet-payload-cache-${process.pid}`),
    ...(image.plainHttp ? { plainHttp: true } : {}),
    ...(image.caBundle ? { caBundle: image.caBundle } : {}),
    ...(image.pullSecret
      ? {
          pullSecretName: image.pullSecret,
          pullSecret: payloadPullSecret(kc, namespace, image.pullSecret),
        }
      : {}),
  });
}

/** The pinned reference of `payloadImage`; throws WF_FLAG_INVALID for bad payload options. */
function pinnedPayloadReference(options: OperatorOptions): PinnedPayloadReference | undefined {
  if (options.payloadDir && options.payloadImage)
    throw new WinfleetError(
      'WF_FLAG_INVALID',
      'give the payload as --payload-dir or as --payload-image, not both',
    );
  if (!options.payloadImage) return undefined;
  try {
    return parsePinnedReference(options.payloadImage.reference);
  } catch (error) {
    throw new WinfleetError('WF_FLAG_INVALID', (error as Error).message);
  }
}

/** The controllers that run with or without a payload. */
function createControllers(
  ctx: OperatorContext,
  caches: Caches,
  loadPayload: (() => Promise<LoadedPayload>) | undefined,
  { rolloutClock, webhook }: Pick<OperatorOptions, 'rolloutClock' | 'webhook'>,
  network: () => NodeNetworkState,
  images: ImageResolvers,
): Controller[] {
  const { kc, namespace, events, log } = ctx;
  // Pull secrets only where the in-process webhook reads them (none without it).
  const pullSecretNamespaces = webhook ? webhook.pullSecretNamespaces : [];
  const { config, nodes, runtimeClasses, csrs, hosts, pools, instances, clusterInfo } = caches;
  // One reader for both: a serving certificate and an annotation are refused the same names.
  const apiServerNames = apiServerNamesReader({
    kc,
    clusterInfo,
    hostsApiServer: () => config.current().hosts.apiServer,
  });
  const payload = loadPayload
    ? async () => {
        const loaded = await loadPayload();
        return {
          servicesVersion: loaded.manifest.version,
          kubeletVersion: loaded.payload.kubernetesVersion,
        };
      }
    : undefined;
  return [
    createRuntimeClassController({
      kc,
      nodes,
      runtimeClasses,
      config: () => config.current(),
      events,
      log,
    }),
    createCsrController({
      kc,
      operatorNamespace: namespace,
      csrs,
      hosts,
      pools,
      nodes,
      clusterInfo,
      apiServerNames,
      config: () => config.current(),
      network,
      events,
      log,
    }),
    createServingAddressController({
      kc,
      hosts,
      nodes,
      config: () => config.current(),
      apiServerNames,
      events,
      log,
    }),
    createWindowsInstancesController({ kc, namespace, configMaps: instances, hosts, events, log }),
    createPoolController({
      kc,
      pools,
      hosts,
      nodes,
      events,
      log,
      healthMetrics: ctx.healthMetrics,
      ...(payload ? { payload } : {}),
      ...(rolloutClock ? { now: rolloutClock } : {}),
      // A pool's migration checks the workloads it would move as the webhook places them.
      migrationReads: apiMigrationReads(
        kc,
        podImageResolver(() => images.current(), apiPullSecrets(kc, pullSecretNamespaces)),
        (name) => runtimeClasses.get(name)?.scheduling?.nodeSelector,
      ),
    }),
  ];
}

/** The host controller, which joins WindowsHosts over SSH with the payload `payload` gives. */
function createJoiningController(
  { kc, namespace, events, log }: OperatorContext,
  { factory, config, hosts, nodes, pools }: Caches,
  payload: () => Promise<LoadedPayload>,
  publish: ManifestPublisher,
  setup: {
    clusterBindings?: boolean;
    network: () => NodeNetworkState;
    prePullSizes: PrePullSizes;
    prePullWorkloads: WorkloadImages;
  },
): Controller {
  // The hosts' SSH key Secrets (metadata only), so that creating or fixing one retries at once.
  const namespaces = hostNamespaces(namespace, config.current().hosts.namespaces);
  const secrets = createHostSecretInformer(kc, factory, namespaces);
  void secrets.start();
  return createHostController({
    kc,
    operatorNamespace: namespace,
    config: () => config.current(),
    hosts,
    nodes,
    pools,
    secrets,
    payload,
    publish,
    cluster: clusterAccess(kc),
    clusterBindings: setup.clusterBindings,
    network: setup.network,
    prePullSizes: setup.prePullSizes,
    prePullWorkloads: setup.prePullWorkloads,
    events,
    log,
  });
}

/**
 * What hosts joining by command (winfleet join-command) need from the operator besides CSR
 * approval: kube-public/cluster-info to discover the cluster with, and winfleet-join with the
 * published manifest to configure themselves from. They run wherever the operator has a payload.
 */
function createJoinByCommandControllers(
  { kc, namespace, log }: OperatorContext,
  { config, clusterInfo, joinInfo }: Caches,
  payload: () => Promise<LoadedPayload>,
  publish: ManifestPublisher,
  setup: { clusterBindings?: boolean },
): Controller[] {
  const cluster = clusterAccess(kc);
  return [
    createClusterInfoController({
      kc,
      clusterInfo,
      config: () => config.current(),
      cluster,
      clusterBindings: setup.clusterBindings,
      log,
    }),
    createJoinInfoController({
      kc,
      namespace,
      joinInfo,
      config: () => config.current(),
      cluster,
      payload,
      publish,
      log,
    }),
  ];
}

/**
 * Looks at a new payload (a changed payload.json) at once: the pools roll it out (their
 * rollout engine, maxUnavailable at a time) and joining hosts take it. Checks the file's mtime
 * and size every 2 s. Returns the step that stops the polling.
 */
async function watchPayload(
  { log }: OperatorContext,
  payloadDir: string,
  controllers: readonly Controller[],
): Promise<() => void> {
  const payloadFile = join(payloadDir, 'payload.json');
  const fingerprint = () =>
    stat(payloadFile).then(
      (s) => `${s.mtimeMs}:${s.size}`,
      () => undefined,
    );
  let seen = (await fingerprint()) ?? '';
  const poll = setInterval(() => {
    fingerprint().then((now) => {
      if (now === undefined || now === seen) return;
      seen = now;
      log.info('payload changed; rolling it out through the pools', { payload: payloadFile });
      for (const c of controllers) c.enqueue(everythingKey);
    });
  }, 2000);
  poll.unref();
  return () => clearInterval(poll);
}

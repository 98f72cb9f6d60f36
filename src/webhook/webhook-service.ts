/**
 * The webhook as a running service inside the operator: the HTTPS admission server, its
 * certificate kept fresh from the Secret (renewed before expiry without dropping requests),
 * and the webhook configurations kept pointing at it with the right caBundle.
 */
import { X509Certificate } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import { Controller } from '../controller-runtime/controller.ts';
import { waitFor } from '../kube/wait-for.ts';
import type { Logger } from '../log/logger.ts';
import { type AdmissionServer, createAdmissionServer } from './admission-server.ts';
import type { ClusterFacts } from './cluster-facts.ts';
import { gmsaUseReviewer } from './gmsa-authorization.ts';
import type { WebhookMetrics } from './metrics.ts';
import type { BuildCompatibility } from './placement.ts';
import {
  admitPodMutation,
  admitPodValidation,
  type PodAdmissionDeps,
  type PodImageResolver,
} from './pod-admission.ts';
import { readServingCertificateSecret } from './secret-certificate.ts';
import {
  ensureServingCertificate,
  issuedBy,
  type ServingCertificate,
  splitPems,
} from './serving-certificate.ts';
import {
  applyWebhookConfigurations,
  patchWebhookConfigurations,
  type WebhookConfigurationsMode,
  type WebhookEndpoint,
  webhookConfigurations,
} from './webhook-configurations.ts';

/** @package */
export interface WebhookServiceOptions {
  kc: k8s.KubeConfig;
  operatorNamespace: string;
  config: () => WinfleetConfig;
  facts: ClusterFacts;
  isCompatible: BuildCompatibility;
  resolveImages?: PodImageResolver;
  /** Where to listen. */
  host: string;
  port: number;
  /** How the API server reaches us (url for loopback clusters, service in-cluster). */
  endpoint: WebhookEndpoint;
  /** Names the serving certificate must cover. */
  dnsNames: string[];
  ipAddresses: string[];
  secretName?: string;
  /**
   * Serve the certificate in this Secret of the operator's namespace (tls.crt, tls.key, ca.crt;
   * issued by cert-manager) instead of the operator's own CA; it is read, never written.
   */
  certificateSecret?: string;
  /** Who keeps the webhook configurations (default create; webhook-configurations.ts). */
  configurations?: WebhookConfigurationsMode;
  /**
   * Whether this process serves admissions (default true). False in the controllers' process
   * when the webhook runs in its own (`--mode controllers`): the certificate Secret and the
   * webhook configurations are still kept here, and the webhook process serves the Secret's
   * tls.crt and tls.key from files (webhook-process.ts), with no Secret or configuration rights.
   */
  serve?: boolean;
  certValidityMs?: number;
  caValidityMs?: number;
  metrics: WebhookMetrics;
  log: Logger;
}

export interface WebhookService {
  /** The admission server; absent when another process serves (`serve: false`). */
  server?: AdmissionServer;
  /** Its port; 0 when another process serves. */
  port: number;
  /** Re-applies the webhook configurations (after a config change). */
  refresh(): void;
  stop(): Promise<void>;
}

/** The CAs of the bundle last published (by fingerprint), with when each was first published. */
export type PublishedCas = Map<string, { pem: string; since: number }>;

/**
 * The CAs of a newly published bundle, each keeping the time it was first in a bundle
 * published in a row (a CA dropped and added again starts over).
 * @package
 */
export function trackPublished(
  published: ReadonlyMap<string, { pem: string; since: number }>,
  bundle: string,
  now: number,
): PublishedCas {
  const next: PublishedCas = new Map();
  for (const pem of splitPems(bundle)) {
    const id = new X509Certificate(pem).fingerprint256;
    next.set(id, { pem, since: published.get(id)?.since ?? now });
  }
  return next;
}

/**
 * When `cert` may be served: once its issuing CA has been in the bundle this replica published
 * for the CA's promotion delay (defence in depth against a bundle the API server has not read
 * yet), at once when the certificate served now has the same CA. Never, while its CA is not in
 * that bundle; at once, when the certificate served now is no longer good either (expired or
 * its CA no longer published), or when the PKI is not ours.
 * @package
 */
export function whenServable(
  cert: ServingCertificate,
  servedCert: string,
  published: ReadonlyMap<string, { pem: string; since: number }>,
  now: number,
): number {
  if (cert.trustDelayMs === undefined) return now;
  const issuer = (pem: string) => [...published.values()].find((ca) => issuedBy(pem, ca.pem));
  const served = new X509Certificate(servedCert);
  const servedIssuer = issuer(servedCert);
  if (new Date(served.validTo).getTime() <= now || !servedIssuer) return now;
  const next = issuer(cert.certPem);
  if (!next) return Number.POSITIVE_INFINITY;
  // The CA of the certificate served now: the API server trusts it already.
  if (next === servedIssuer) return now;
  // Before the served certificate expires at the latest.
  return Math.min(next.since + cert.trustDelayMs, new Date(served.validTo).getTime());
}

/** What the pod admission handlers read, from the webhook's options. */
export function podAdmissionDeps(
  options: Pick<
    WebhookServiceOptions,
    'kc' | 'config' | 'operatorNamespace' | 'facts' | 'resolveImages' | 'isCompatible'
  >,
  log: Logger,
): PodAdmissionDeps {
  return {
    config: options.config,
    operatorNamespace: options.operatorNamespace,
    runtimeClasses: options.facts.runtimeClasses,
    readyWindowsBuilds: () => options.facts.readyWindowsBuilds(),
    readyHyperVBuilds: () => options.facts.readyHyperVBuilds(),
    resolveImages: options.resolveImages,
    isCompatible: options.isCompatible,
    gmsaCredentialSpecs: () => options.facts.gmsaCredentialSpecs(),
    reviewGmsaUse: gmsaUseReviewer(options.kc),
    namespaceOptedOut: (ns) => options.facts.namespaceOptedOut(ns),
    log,
  };
}

/** The webhook's two routes. */
export function podAdmissionRoutes(deps: PodAdmissionDeps) {
  return {
    '/mutate/pods': {
      name: 'mutate',
      handler: (r: Parameters<typeof admitPodMutation>[0]) => admitPodMutation(r, deps),
    },
    '/validate/pods': {
      name: 'validate',
      handler: (r: Parameters<typeof admitPodValidation>[0]) => admitPodValidation(r, deps),
    },
  };
}

/**
 * What the webhook-certificates reconcile reads and keeps between passes: the Secret's
 * certificate, the server it renews, and what this replica has served and published.
 * @package
 */
export interface WebhookCertificatesState {
  options: WebhookServiceOptions;
  log: Logger;
  /** The certificate as the Secret holds it now (winfleet's own PKI, or cert-manager's). */
  certificate: () => Promise<ServingCertificate>;
  /** Absent when another process serves. */
  server: AdmissionServer | undefined;
  servedCert: string;
  publishedBundle: string;
  /** The differences last warned about (patch mode), so that each is warned once. */
  reported: string;
  /** When each CA of the bundle last published was first in a bundle this replica published. */
  published: PublishedCas;
}

/** Starts the webhook: its certificate, admission server and webhook configurations. */
export async function startWebhookService(options: WebhookServiceOptions): Promise<WebhookService> {
  const log = options.log.child({ component: 'webhook' });
  const certificate = certificateSource(options);
  // cert-manager issues the Secret while the operator starts: wait for it a while.
  if (options.certificateSecret)
    log.info('reading the webhook certificate Secret', { secret: options.certificateSecret });
  const initial = options.certificateSecret
    ? await waitFor(certificate, {
        description: `Secret ${options.operatorNamespace}/${options.certificateSecret} with the webhook certificate`,
        timeoutMs: 120_000,
        intervalMs: 2000,
      })
    : await certificate();
  const deps = podAdmissionDeps(options, log);
  const server =
    (options.serve ?? true)
      ? createAdmissionServer({
          cert: initial.certPem,
          key: initial.keyPem,
          log,
          metrics: options.metrics,
          routes: podAdmissionRoutes(deps),
        })
      : undefined;
  const port = server ? await server.listen(options.port, options.host) : 0;
  const state: WebhookCertificatesState = {
    options,
    log,
    certificate,
    server,
    servedCert: initial.certPem,
    publishedBundle: '',
    reported: '',
    published: new Map(),
  };
  const reconcile = () => reconcileWebhookCertificates(state);
  const controller = new Controller({ name: 'webhook-certificates', reconcile, log });
  // Publish the webhook configurations before resolving, so that a started webhook is
  // registered (the API server's informer still takes a moment to see them). A failure is
  // the controller's to log and retry, from the enqueue below.
  await reconcile().catch(() => undefined);
  controller.enqueue('serving');
  return {
    server,
    port,
    refresh: () => controller.enqueue('serving'),
    async stop() {
      controller.stop();
      await server?.close();
    },
  };
}

/** Reads the serving certificate: from cert-manager's Secret, or winfleet's own PKI Secret. */
function certificateSource(options: WebhookServiceOptions): () => Promise<ServingCertificate> {
  const certOptions = {
    namespace: options.operatorNamespace,
    secretName: options.secretName ?? 'winfleet-webhook-tls',
    dnsNames: options.dnsNames,
    ipAddresses: options.ipAddresses,
    certValidityMs: options.certValidityMs,
    caValidityMs: options.caValidityMs,
  };
  return (): Promise<ServingCertificate> =>
    options.certificateSecret
      ? readServingCertificateSecret(
          options.kc,
          options.operatorNamespace,
          options.certificateSecret,
        )
      : ensureServingCertificate(options.kc, certOptions);
}

/**
 * One pass: publish the webhook configurations with the Secret's bundle, then serve a renewed
 * certificate once its CA is trusted; look again when renewal is due (at least hourly).
 * @package
 */
export async function reconcileWebhookCertificates(
  state: WebhookCertificatesState,
): Promise<{ requeueAfterMs: number }> {
  const { log, server } = state;
  const cert = await state.certificate();
  await publishConfigurations(state, cert);
  if (cert.caBundle !== state.publishedBundle) {
    if (state.publishedBundle) log.info('webhook caBundle updated');
    state.publishedBundle = cert.caBundle;
    state.published = trackPublished(state.published, cert.caBundle, Date.now());
  }
  let requeueAt = cert.renewAt.getTime();
  if (server && cert.certPem !== state.servedCert) {
    const servableAt = whenServable(cert, state.servedCert, state.published, Date.now());
    if (servableAt <= Date.now()) {
      server.updateCertificate(cert.certPem, cert.keyPem);
      state.servedCert = cert.certPem;
      log.info('serving certificate renewed', { renewAt: cert.renewAt.toISOString() });
    } else {
      // Its CA is too new in the bundle this replica published: serve it a little later.
      log.info('holding back a renewed serving certificate until its CA is trusted a while', {
        servableAt: new Date(servableAt).toISOString(),
      });
      requeueAt = Math.min(requeueAt, servableAt);
    }
  }
  // Look again at least hourly (the Secret may be edited), and when renewal is due.
  return {
    requeueAfterMs: Math.min(60 * 60_000, Math.max(1000, requeueAt - Date.now())),
  };
}

/**
 * Publishes the bundle read from the Secret first: the signing CA, the next one while one is
 * prepared, and older ones until they expire (serving-certificate.ts). In patch mode, warns
 * once of each set of differences from the configuration.
 */
async function publishConfigurations(
  state: WebhookCertificatesState,
  cert: ServingCertificate,
): Promise<void> {
  const { options } = state;
  const objects = webhookConfigurations(
    options.config(),
    options.operatorNamespace,
    options.endpoint,
    cert.caBundle,
  );
  const mode = options.configurations ?? 'create';
  if (mode === 'create') await applyWebhookConfigurations(options.kc, objects);
  if (mode === 'patch') {
    const differences = await patchWebhookConfigurations(options.kc, objects);
    if (differences.length > 0 && differences.join('\n') !== state.reported) {
      state.log.warn(
        'the webhook configurations differ from the configuration; they are the Helm chart’s: set these through its values (config.webhook, webhook.failurePolicy) and helm upgrade',
        { differences },
      );
    }
    state.reported = differences.join('\n');
  }
}

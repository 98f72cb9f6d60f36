/**
 * The webhook as a running service inside the operator: the HTTPS admission server, its
 * certificate kept fresh from the Secret (renewed before expiry without dropping requests),
 * and the webhook configurations kept pointing at it with the right caBundle.
 */
import type * as k8s from '@kubernetes/client-node';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import { Controller } from '../controller/controller.ts';
import { waitFor } from '../kube/wait-for.ts';
import type { Logger } from '../log/logger.ts';
import { type AdmissionServer, createAdmissionServer } from './admission-server.ts';
import type { ClusterFacts } from './cluster-facts.ts';
import type { WebhookMetrics } from './metrics.ts';
import type { BuildCompatibility } from './placement.ts';
import {
  admitPodMutation,
  admitPodValidation,
  type PodAdmissionDeps,
  type PodImageResolver,
} from './pod-admission.ts';
import { readServingCertificateSecret } from './secret-certificate.ts';
import { ensureServingCertificate, type ServingCertificate } from './serving-certificate.ts';
import {
  applyWebhookConfigurations,
  patchWebhookConfigurations,
  type WebhookConfigurationsMode,
  type WebhookEndpoint,
  webhookConfigurations,
} from './webhook-configurations.ts';

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
  certValidityMs?: number;
  caValidityMs?: number;
  metrics: WebhookMetrics;
  log: Logger;
}

export interface WebhookService {
  server: AdmissionServer;
  port: number;
  /** Re-applies the webhook configurations (after a config change). */
  refresh(): void;
  stop(): Promise<void>;
}

export async function startWebhookService(options: WebhookServiceOptions): Promise<WebhookService> {
  const log = options.log.child({ component: 'webhook' });
  const certOptions = {
    namespace: options.operatorNamespace,
    secretName: options.secretName ?? 'winfleet-webhook-tls',
    dnsNames: options.dnsNames,
    ipAddresses: options.ipAddresses,
    certValidityMs: options.certValidityMs,
    caValidityMs: options.caValidityMs,
  };
  const certificate = (): Promise<ServingCertificate> =>
    options.certificateSecret
      ? readServingCertificateSecret(
          options.kc,
          options.operatorNamespace,
          options.certificateSecret,
        )
      : ensureServingCertificate(options.kc, certOptions);
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
  const deps: PodAdmissionDeps = {
    config: options.config,
    operatorNamespace: options.operatorNamespace,
    runtimeClasses: options.facts.runtimeClasses,
    readyWindowsBuilds: () => options.facts.readyWindowsBuilds(),
    resolveImages: options.resolveImages,
    isCompatible: options.isCompatible,
    gmsaCredentialSpecs: () => options.facts.gmsaCredentialSpecs(),
    namespaceOptedOut: (ns) => options.facts.namespaceOptedOut(ns),
    log,
  };
  const server = createAdmissionServer({
    cert: initial.certPem,
    key: initial.keyPem,
    log,
    metrics: options.metrics,
    routes: {
      '/mutate/pods': { name: 'mutate', handler: (r) => admitPodMutation(r, deps) },
      '/validate/pods': { name: 'validate', handler: (r) => admitPodValidation(r, deps) },
    },
  });
  const port = await server.listen(options.port, options.host);
  let servedCert = initial.certPem;
  let publishedBundle = '';
  let reported = '';

  const reconcile = async () => {
    const cert = await certificate();
    // Publish the bundle first: it trusts both the old and the new CA during a CA change.
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
      if (differences.length > 0 && differences.join('\n') !== reported) {
        log.warn(
          'the webhook configurations differ from the configuration; they are the Helm chart’s: set these through its values (config.webhook, webhook.failurePolicy) and helm upgrade',
          { differences },
        );
      }
      reported = differences.join('\n');
    }
    if (cert.caBundle !== publishedBundle) {
      if (publishedBundle) log.info('webhook caBundle updated');
      publishedBundle = cert.caBundle;
    }
    if (cert.certPem !== servedCert) {
      if (cert.changed === 'renewed-ca') {
        // Give the API server a moment to read the new bundle before a new-CA cert is served.
        await new Promise((r) => setTimeout(r, 3000));
      }
      server.updateCertificate(cert.certPem, cert.keyPem);
      servedCert = cert.certPem;
      log.info('serving certificate renewed', { renewAt: cert.renewAt.toISOString() });
    }
    // Look again at least hourly (the Secret may be edited), and when renewal is due.
    return {
      requeueAfterMs: Math.min(60 * 60_000, Math.max(1000, cert.renewAt.getTime() - Date.now())),
    };
  };
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
      await server.close();
    },
  };
}

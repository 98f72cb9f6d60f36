/**
 * winfleet-operator: runs the controllers and the admission webhook against a cluster, in one
 * process (`--mode all`, the default) or in two (the Helm chart): `--mode controllers` (the
 * controllers, the dashboard, and the webhook's certificate and configurations) and
 * `--mode webhook` (admissions alone, its certificate from files; webhook-process.ts).
 *
 *   node src/operator/main.ts --kubeconfig admin.kubeconfig --webhook-url https://127.0.0.1:9443
 */
import { readFile } from 'node:fs/promises';
import { Command, InvalidArgumentError, Option, type OptionValues } from 'commander';
import { defaultOperatorNamespace } from '../api/operator-namespace.ts';
import { WinfleetError } from '../errors/catalog.ts';
import type { loadKubeConfig } from '../kube/client.ts';
import { userAgents } from '../kube/user-agent.ts';
import { createLogger } from '../log/logger.ts';
import { parsePinnedReference } from '../payload/oci/payload-reference.ts';
import { runUntilSignal } from '../process/run-until-signal.ts';
import type { OperatorOptions, PayloadImageOptions } from './operator.ts';

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new InvalidArgumentError(`"${value}" is not a port (0-65535)`);
  return n;
}

function service(value: string): { namespace: string; name: string; port: number } {
  const match = /^([a-z0-9-]+)\/([a-z0-9-]+):(\d+)$/.exec(value);
  if (!match)
    throw new InvalidArgumentError(
      `"${value}" is not namespace/name:port, e.g. winfleet-system/winfleet-webhook:443`,
    );
  return { namespace: match[1]!, name: match[2]!, port: port(match[3]!) };
}

function url(value: string): string {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new InvalidArgumentError(`"${value}" is not a URL, e.g. https://127.0.0.1:9443`);
  }
  if (parsed.protocol !== 'https:')
    throw new InvalidArgumentError(
      `"${value}" must be https:// (the API server only calls webhooks over TLS)`,
    );
  return value;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** A DNS-1123 label: a namespace or Secret name the flags take. */
function dnsLabel(what: string) {
  return (value: string): string => {
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(value))
      throw new InvalidArgumentError(
        `"${value}" is not a ${what} name (lower-case letters, digits and '-', at most 63)`,
      );
    return value;
  };
}

/** A DNS-1123 subdomain: the name of a Secret. */
function dnsSubdomain(what: string) {
  return (value: string): string => {
    if (value.length > 253 || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(value))
      throw new InvalidArgumentError(
        `"${value}" is not a ${what} name (lower-case letters, digits, '-' and '.', at most 253)`,
      );
    return value;
  };
}

/** A payload reference pinned by digest. */
function pinnedReference(value: string): string {
  try {
    parsePinnedReference(value, '--payload-image');
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message.replace(/^--payload-image: /, ''));
  }
  return value;
}

/** A host name or IP address for a Host header (no port, no scheme). */
const collectHostNames = (value: string, previous: string[] = []) => {
  if (!/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)$/.test(value))
    throw new InvalidArgumentError(
      `"${value}" is not a host name or address (e.g. winfleet.example.com, 10.0.0.5 or [fd00::5]; no port or scheme)`,
    );
  return [...previous, value];
};

const collectNamespaces = (value: string, previous: string[] = []) => [
  ...previous,
  dnsLabel('namespace')(value),
];

const program = new Command('winfleet-operator')
  .description(
    'Runs Windows worker nodes in a Kubernetes cluster: controllers and the admission webhook',
  )
  .option(
    '--kubeconfig <path>',
    'kubeconfig to use (default: KUBECONFIG, ~/.kube/config or in-cluster)',
  )
  .option('--namespace <name>', 'namespace of the operator', defaultOperatorNamespace)
  .addOption(
    new Option(
      '--mode <mode>',
      'all: controllers and webhook in this process; controllers: everything but serving admissions (another process runs --mode webhook); webhook: serve admissions only, with the certificate of --tls-cert-file and --tls-key-file',
    )
      .choices(['all', 'controllers', 'webhook'])
      .default('all'),
  )
  .option(
    '--tls-cert-file <file>',
    "--mode webhook: the serving certificate (PEM), read again when it changes: the mounted certificate Secret's tls.crt",
  )
  .option(
    '--tls-key-file <file>',
    "--mode webhook: the serving certificate's key (PEM): the mounted certificate Secret's tls.key",
  )
  .option('--webhook-host <address>', 'address the webhook listens on', '0.0.0.0')
  .option('--webhook-port <port>', 'port the webhook listens on', port, 9443)
  .option(
    '--webhook-url <url>',
    'how the API server reaches the webhook (loopback/lab clusters)',
    url,
  )
  .option(
    '--webhook-service <ns/name:port>',
    'the Service in front of the webhook (in-cluster)',
    service,
  )
  .option(
    '--webhook-dns-name <name>',
    'DNS name the webhook certificate covers (repeatable)',
    collect,
  )
  .option(
    '--webhook-ip <address>',
    'IP address the webhook certificate covers (repeatable)',
    collect,
  )
  .option('--no-webhook', 'run without the admission webhook')
  .addOption(
    new Option(
      '--webhook-configurations <mode>',
      'create: apply the webhook configurations; patch: only set the caBundle and endpoint of existing ones (the Helm chart owns them); none: leave them alone (cert-manager injects the CA)',
    )
      .choices(['create', 'patch', 'none'])
      .default('create'),
  )
  .option(
    '--webhook-cert-secret <name>',
    "serve tls.crt/tls.key of this Secret in the operator's namespace (cert-manager) instead of the operator's own CA",
    dnsLabel('Secret'),
  )
  .option(
    '--pull-secret-namespace <name>',
    'read image pull secrets only of pods in this namespace (repeatable; default: every namespace)',
    collectNamespaces,
  )
  .option('--no-pull-secrets', 'never read image pull secrets (images are looked up without them)')
  .option(
    '--no-create-namespace',
    "do not create the operator's namespace (it exists: the Helm chart is installed into it)",
  )
  .option('--no-install-crds', 'do not install the CRDs (the Helm chart does, or an administrator)')
  .option(
    '--no-cluster-bindings',
    'do not apply the ClusterRoleBindings winfleet:node-bootstrapper and winfleet:kube-proxies (the Helm chart does)',
  )
  .option(
    '--no-bootstrapper-binding',
    'the same as --no-cluster-bindings (its former name, kept as an alias)',
  )
  .option(
    '--status-host <address>',
    'address of /healthz, /readyz, /metrics and /config',
    '127.0.0.1',
  )
  .option('--status-port <port>', 'port of /healthz, /readyz, /metrics and /config', port, 8080)
  .option(
    '--dashboard-host <address>',
    'address of the dashboard (loopback: reach it with kubectl port-forward)',
    '127.0.0.1',
  )
  .option('--dashboard-port <port>', 'port of the dashboard', port, 8081)
  .option(
    '--dashboard-allowed-host <name>',
    'a name the dashboard answers to besides localhost, 127.0.0.1, [::1] and its address (repeatable; any other Host header is refused 421, against DNS rebinding)',
    collectHostNames,
  )
  .option('--no-dashboard', 'serve no dashboard')
  .option('--no-leader-elect', 'do not elect a leader (only one replica may run)')
  .option(
    '--payload-dir <dir>',
    'directory with payload.json and the Windows binaries (make payload builds one)',
  )
  .option(
    '--payload-image <reference>',
    'the payload as an OCI artifact, pinned by digest: registry/repository@sha256:… as winfleet payload push prints it (instead of --payload-dir)',
    pinnedReference,
  )
  .option(
    '--payload-pull-secret <name>',
    "a kubernetes.io/dockerconfigjson Secret in the operator's namespace with credentials for the payload registry (hosts that pull read it too)",
    dnsSubdomain('Secret'),
  )
  .option(
    '--payload-plain-http',
    'reach the payload registry over plain HTTP (loopback and lab registries)',
  )
  .option(
    '--payload-ca-file <file>',
    'PEM CA certificates trusted for the payload registry, besides the system roots',
  )
  .option(
    '--payload-cache-dir <dir>',
    'where payload files fetched from the registry are kept for hosts that must be sent them over SFTP (default: a directory in the temporary directory)',
  )
  .showHelpAfterError();

/** Loads the kubeconfig of --kubeconfig (or the default), or ends with an error naming the fix. */
function kubeConfigOf(opts: { kubeconfig?: string }, load: typeof loadKubeConfig) {
  try {
    const kc = load(opts.kubeconfig, userAgents.operator);
    if (!kc.getCurrentCluster())
      throw new WinfleetError('WF_KUBECONFIG_INVALID', 'it names no current cluster');
    return kc;
  } catch (error) {
    return program.error(
      `error: cannot use kubeconfig ${opts.kubeconfig ?? '(default)'}: ${(error as Error).message}; give --kubeconfig <file>`,
    );
  }
}

/** `--mode webhook`: the admission webhook alone (webhook-process.ts). */
async function runWebhook(
  opts: Record<string, string | number | boolean | string[] | undefined>,
  pullSecretNamespaces: string[],
) {
  if (!opts.tlsCertFile || !opts.tlsKeyFile)
    program.error(
      'error: --mode webhook needs --tls-cert-file and --tls-key-file (the mounted certificate Secret’s tls.crt and tls.key)',
    );
  if (!opts.webhook) program.error('error: --mode webhook and --no-webhook contradict each other');
  const [{ loadKubeConfig }, { startWebhookProcess }] = await Promise.all([
    import('../kube/client.ts'),
    import('./webhook-process.ts'),
  ]);
  const kc = kubeConfigOf(opts as { kubeconfig?: string }, loadKubeConfig);
  const webhook = await startWebhookProcess({
    kc,
    namespace: opts.namespace as string,
    log: createLogger({}, { component: 'webhook' }),
    host: opts.webhookHost as string,
    port: opts.webhookPort as number,
    certFile: opts.tlsCertFile as string,
    keyFile: opts.tlsKeyFile as string,
    pullSecretNamespaces: !opts.pullSecrets
      ? []
      : pullSecretNamespaces.length > 0
        ? pullSecretNamespaces
        : 'all',
    status: { host: opts.statusHost as string, port: opts.statusPort as number },
  });
  await runUntilSignal(() => webhook.stop());
}

/** The registry payload's flags only with --payload-image, and one payload source at most. */
function checkPayloadFlags(opts: OptionValues): void {
  if (opts.payloadDir && opts.payloadImage) {
    program.error(
      'error: give the payload as --payload-dir or as --payload-image (a registry artifact), not both',
    );
  }
  for (const flag of [
    'payloadPullSecret',
    'payloadPlainHttp',
    'payloadCaFile',
    'payloadCacheDir',
  ]) {
    if (opts[flag] !== undefined && !opts.payloadImage) {
      const name = `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
      program.error(`error: ${name} is for a registry payload; give --payload-image too`);
    }
  }
}

/** --payload-ca-file's PEM certificates, or an error naming the file and what is wrong. */
async function readPayloadCaBundle(opts: OptionValues): Promise<string | undefined> {
  let payloadCaBundle: string | undefined;
  if (opts.payloadCaFile) {
    try {
      payloadCaBundle = await readFile(opts.payloadCaFile, 'utf8');
    } catch (error) {
      program.error(
        `error: --payload-ca-file: cannot read ${opts.payloadCaFile} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
    if (!payloadCaBundle?.includes('-----BEGIN CERTIFICATE-----'))
      program.error(
        `error: --payload-ca-file: ${opts.payloadCaFile} holds no PEM certificate ("-----BEGIN CERTIFICATE-----")`,
      );
  }
  return payloadCaBundle;
}

/** The webhook as the flags give it: endpoint, the certificate's names and addresses. */
function webhookOptions(
  opts: OptionValues,
  pullSecretNamespaces: string[],
): NonNullable<OperatorOptions['webhook']> {
  const svc = opts.webhookService as { namespace: string; name: string } | undefined;
  // The names the API server may call: the URL's host (an IP goes in ips), the Service's.
  const urlHost = opts.webhookUrl ? new URL(opts.webhookUrl).hostname : undefined;
  const urlNames = urlHost && !/^[\d.]+$|^\[/.test(urlHost) ? [urlHost] : [];
  const dnsNames: string[] =
    opts.webhookDnsName ??
    (svc
      ? [
          ...urlNames,
          `${svc.name}.${svc.namespace}.svc`,
          `${svc.name}.${svc.namespace}.svc.cluster.local`,
        ]
      : urlNames.length > 0
        ? urlNames
        : ['localhost']);
  const ips: string[] =
    opts.webhookIp ??
    (opts.webhookUrl ? [new URL(opts.webhookUrl).hostname].filter((h) => /^[\d.]+$/.test(h)) : []);
  return {
    host: opts.webhookHost,
    port: opts.webhookPort,
    endpoint: opts.webhookUrl ? { url: opts.webhookUrl } : { service: opts.webhookService },
    dnsNames,
    ipAddresses: ips,
    configurations: opts.webhookConfigurations,
    certificateSecret: opts.webhookCertSecret,
    pullSecretNamespaces: !opts.pullSecrets
      ? []
      : pullSecretNamespaces.length > 0
        ? pullSecretNamespaces
        : 'all',
    serve: opts.mode !== 'controllers',
  };
}

/** --payload-image and its flags, as startOperator takes them. */
function payloadImageOptions(
  opts: OptionValues,
  payloadCaBundle: string | undefined,
): PayloadImageOptions {
  return {
    reference: opts.payloadImage,
    ...(opts.payloadPullSecret ? { pullSecret: opts.payloadPullSecret } : {}),
    ...(opts.payloadPlainHttp ? { plainHttp: true } : {}),
    ...(payloadCaBundle ? { caBundle: payloadCaBundle } : {}),
    ...(opts.payloadCacheDir ? { cacheDir: opts.payloadCacheDir } : {}),
  };
}

program.action(async (opts) => {
  const log = createLogger({}, { component: 'operator' });
  const pullSecretNamespaces: string[] = opts.pullSecretNamespace ?? [];
  if (!opts.pullSecrets && pullSecretNamespaces.length > 0) {
    program.error('error: give --pull-secret-namespace or --no-pull-secrets, not both');
  }
  if (opts.mode === 'webhook') return runWebhook(opts, pullSecretNamespaces);
  if (opts.tlsCertFile || opts.tlsKeyFile)
    program.error(
      'error: --tls-cert-file and --tls-key-file are for --mode webhook; this process keeps the certificate itself (or reads --webhook-cert-secret)',
    );
  checkPayloadFlags(opts);
  const payloadCaBundle = await readPayloadCaBundle(opts);
  if (opts.mode === 'controllers' && !opts.webhook)
    program.error(
      'error: --mode controllers is for a webhook served by another process; without a webhook, leave --mode at all',
    );
  if (opts.webhook && !opts.webhookUrl && !opts.webhookService) {
    program.error(
      'error: give --webhook-url (loopback clusters) or --webhook-service (in-cluster), or --no-webhook',
    );
  }
  // The operator and the Kubernetes client load only once the flags are good: a refused flag
  // answers at once instead of after loading every controller.
  const [{ loadKubeConfig }, { startOperator }] = await Promise.all([
    import('../kube/client.ts'),
    import('./operator.ts'),
  ]);
  const kc = kubeConfigOf(opts, loadKubeConfig);
  const webhook = opts.webhook ? webhookOptions(opts, pullSecretNamespaces) : false;
  const operator = await startOperator({
    kc,
    namespace: opts.namespace,
    log,
    webhook,
    status: { host: opts.statusHost, port: opts.statusPort },
    ...(opts.dashboard
      ? {
          dashboard: {
            host: opts.dashboardHost,
            port: opts.dashboardPort,
            allowedHosts: opts.dashboardAllowedHost ?? [],
          },
        }
      : {}),
    leaderElection: opts.leaderElect,
    payloadDir: opts.payloadDir,
    ...(opts.payloadImage ? { payloadImage: payloadImageOptions(opts, payloadCaBundle) } : {}),
    createNamespace: opts.createNamespace,
    installCrds: opts.installCrds,
    clusterBindings: opts.clusterBindings && opts.bootstrapperBinding,
  });
  await runUntilSignal(() => operator.stop());
});

program.parseAsync().catch((error: unknown) => {
  console.error(`winfleet-operator: ${(error as Error).message}`);
  process.exit(1);
});

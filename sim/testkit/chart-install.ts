/**
 * The Helm chart (charts/winfleet) in a test cluster or the lab: `helm install`/`upgrade`/
 * `uninstall` with values from an object, and the chart's operator run as a local process the
 * way the chart's Deployment would run it — the container's args and env as `helm template`
 * renders them with the same values — adding only what a process outside the cluster needs
 * (a kubeconfig, loopback ports for the webhook and status server, and a payload directory).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments, stringify } from 'yaml';
import { waitFor } from '../../src/kube/wait-for.ts';
import { runHelm } from './helm.ts';
import { waitUntilAllowed } from './service-account.ts';

export const chartDir = fileURLToPath(new URL('../../charts/winfleet', import.meta.url));
/** The release name tests and the lab install the chart as. */
export const releaseName = 'winfleet';
/** The chart's ServiceAccount (the release's full name). */
export const chartServiceAccount = 'winfleet';
/** The webhook's Deployment and ServiceAccount (webhook-deployment.yaml). */
export const chartWebhookServiceAccount = 'winfleet-webhook';

const operatorMain = fileURLToPath(new URL('../../src/operator/main.ts', import.meta.url));

export interface ChartRelease {
  /** Admin kubeconfig helm uses. */
  kubeconfig: string;
  /** Release namespace = the operator's namespace. */
  namespace: string;
  /** Chart values (given to helm as a values file on stdin). */
  values?: Record<string, unknown>;
  /** Chart directory (default: charts/winfleet). */
  chart?: string;
  /**
   * On upgrade, start from the release's current values (helm's --reuse-values): what a
   * person set on the release stays unless `values` sets it.
   */
  reuseValues?: boolean;
}

/** `helm install` (or `upgrade`) of the release into its namespace, created when missing. */
export async function helmInstall(
  release: ChartRelease,
  verb: 'install' | 'upgrade' = 'install',
): Promise<string> {
  const { stdout } = await runHelm(
    [
      verb,
      releaseName,
      release.chart ?? chartDir,
      '--namespace',
      release.namespace,
      ...(verb === 'install' ? ['--create-namespace'] : []),
      ...(verb === 'upgrade' && release.reuseValues ? ['--reuse-values'] : []),
      '--kubeconfig',
      release.kubeconfig,
      '--values',
      '-',
    ],
    { input: stringify(release.values ?? {}) },
  );
  return stdout;
}

/** `helm uninstall` of the release. */
export async function helmUninstall(
  release: Pick<ChartRelease, 'kubeconfig' | 'namespace'>,
): Promise<string> {
  const { stdout } = await runHelm([
    'uninstall',
    releaseName,
    '--namespace',
    release.namespace,
    '--kubeconfig',
    release.kubeconfig,
    '--wait',
  ]);
  return stdout;
}

/** A rendered Kubernetes object, as far as these helpers read it. */
export interface RenderedObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  spec?: unknown;
  [key: string]: unknown;
}

/** `helm template` of the release with `values`: every object the install would create. */
export async function renderChart(
  release: Omit<ChartRelease, 'kubeconfig'>,
): Promise<RenderedObject[]> {
  const { stdout } = await runHelm(
    [
      'template',
      releaseName,
      release.chart ?? chartDir,
      '--namespace',
      release.namespace,
      '--values',
      '-',
    ],
    { input: stringify(release.values ?? {}) },
  );
  return parseAllDocuments(stdout)
    .map((d) => {
      if (d.errors.length > 0)
        throw new Error(`helm template printed invalid YAML: ${d.errors[0]}`);
      return d.toJS() as RenderedObject | null;
    })
    .filter((o): o is RenderedObject => o !== null && typeof o === 'object');
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath?: string } };
}

interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
}

export interface OperatorCommand {
  /** The container's args with $(VAR) references resolved. */
  args: string[];
  /** The container's env, as the kubelet would set it. */
  env: Record<string, string>;
}

/**
 * The operator's command line from the rendered chart: the Deployment's one container, its
 * args with `$(VAR)` references resolved from its env the way the kubelet resolves them
 * (fieldRef metadata.namespace is the release namespace, metadata.name the pod's name).
 * Anything else it cannot reproduce outside the cluster is an error naming it.
 */
export function operatorCommand(
  objects: RenderedObject[],
  options: { namespace: string; podName?: string; deployment?: string },
): OperatorCommand {
  const name = options.deployment ?? releaseName;
  const deployments = objects.filter((o) => o.kind === 'Deployment' && o.metadata?.name === name);
  if (deployments.length !== 1)
    throw new Error(
      `the chart renders ${deployments.length} Deployments named ${name}; expected exactly one`,
    );
  const spec = deployments[0]!.spec as {
    template?: { spec?: { containers?: Container[]; serviceAccountName?: string } };
  };
  const containers = spec.template?.spec?.containers ?? [];
  if (containers.length !== 1)
    throw new Error(
      `the chart's Deployment has ${containers.length} containers; expected one (the operator)`,
    );
  const container = containers[0]!;
  const fields: Record<string, string> = {
    'metadata.namespace': options.namespace,
    'metadata.name': options.podName ?? `${releaseName}-local`,
    'spec.serviceAccountName': spec.template?.spec?.serviceAccountName ?? 'default',
  };
  const env: Record<string, string> = {};
  for (const v of container.env ?? []) {
    if (v.value !== undefined) env[v.name] = expand(v.value, env);
    else if (v.valueFrom?.fieldRef?.fieldPath) {
      const value = fields[v.valueFrom.fieldRef.fieldPath];
      if (value === undefined)
        throw new Error(
          `env ${v.name}: fieldRef ${v.valueFrom.fieldRef.fieldPath} has no local equivalent; add it to operatorCommand`,
        );
      env[v.name] = value;
    } else
      throw new Error(`env ${v.name}: only value and fieldRef can be reproduced outside a cluster`);
  }
  return { args: (container.args ?? []).map((a) => expand(a, env)), env };
}

/** Whether the rendered chart runs the webhook in its own Deployment. */
export function hasWebhookDeployment(objects: RenderedObject[]): boolean {
  return objects.some((o) => o.kind === 'Deployment' && o.metadata?.name === chartWebhookName);
}

const chartWebhookName = chartWebhookServiceAccount;

/**
 * Expands $(VAR) as the kubelet does: a defined variable is replaced, $$ escapes, an undefined
 * reference stays as written.
 */
export function expand(text: string, env: Record<string, string>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (whole, name?: string) => {
    if (whole === '$$') return '$';
    return name !== undefined && name in env ? env[name]! : whole;
  });
}

export interface ChartOperatorOptions {
  /** The kubeconfig the operator uses (the chart ServiceAccount's token). */
  kubeconfig: string;
  namespace: string;
  /** Values the chart was installed with (webhook.url must point at webhookPort). */
  values: Record<string, unknown>;
  chart?: string;
  webhookPort: number;
  statusPort: number;
  /** The dashboard's loopback port (default: any free one, not reported). */
  dashboardPort?: number;
  payloadDir?: string;
  /** Flags after everything else (a registry payload's --payload-plain-http, its cache). */
  extraArgs?: string[];
  /** Where its output goes (default: discarded). */
  logFile?: string;
  /**
   * The webhook's own process, when the chart renders its Deployment: run as the webhook's
   * ServiceAccount (`kubeconfig`, its token alone) with the certificate Secret's tls.crt and
   * tls.key written to `certDir` the way the kubelet mounts them (read with `admin`, kept
   * current while it runs).
   */
  webhook?: {
    kubeconfig: string;
    admin: k8s.KubeConfig;
    certDir: string;
    statusPort: number;
    logFile?: string;
  };
}

export interface ChartOperator {
  child: ChildProcess;
  /** The webhook's process, when the chart runs it apart (ChartOperatorOptions.webhook). */
  webhook?: { child: ChildProcess; args: string[]; statusUrl: string; stop(): Promise<void> };
  /** Everything after `node src/operator/main.ts`. */
  args: string[];
  statusUrl: string;
  /** The dashboard, when the caller chose its port (ChartOperatorOptions.dashboardPort). */
  dashboardUrl?: string;
}

/**
 * Starts the operator as the chart's Deployment runs it (see operatorCommand), outside the
 * cluster; resolves once its /readyz answers.
 */
export async function startChartOperator(options: ChartOperatorOptions): Promise<ChartOperator> {
  const rendered = await renderChart({
    namespace: options.namespace,
    values: options.values,
    chart: options.chart,
  });
  const command = operatorCommand(rendered, { namespace: options.namespace });
  // helm install has just written the chart's RBAC; an operator started before the authorizer
  // follows gets 403 and exits (in a cluster the Deployment would restart it).
  const account = new k8s.KubeConfig();
  account.loadFromFile(options.kubeconfig);
  await waitUntilAllowed(
    account,
    [
      {
        namespace: options.namespace,
        verb: 'get',
        group: 'coordination.k8s.io',
        resource: 'leases',
        name: 'winfleet-operator',
      },
      {
        namespace: options.namespace,
        verb: 'list',
        group: 'winfleet.io',
        resource: 'windowshosts',
      },
      { verb: 'list', resource: 'nodes' },
    ],
    "the chart's ServiceAccount",
  );
  const split = hasWebhookDeployment(rendered);
  if (split && !options.webhook)
    throw new Error(
      'the chart runs the webhook in its own Deployment: give startChartOperator the webhook’s kubeconfig, an admin kubeconfig and a directory for its certificate',
    );
  // Later options win (commander), so these replace what the chart sets for in-cluster use.
  const args = [
    ...command.args,
    '--kubeconfig',
    options.kubeconfig,
    // In the controllers' process these only name where a one-process operator would listen.
    '--webhook-host',
    '127.0.0.1',
    '--webhook-port',
    String(options.webhookPort),
    '--status-host',
    '127.0.0.1',
    '--status-port',
    String(options.statusPort),
    '--dashboard-port',
    String(options.dashboardPort ?? 0),
    ...(options.payloadDir ? ['--payload-dir', options.payloadDir] : []),
    ...(options.extraArgs ?? []),
  ];
  const statusUrl = `http://127.0.0.1:${options.statusPort}`;
  const child = await startReady('operator', args, command.env, statusUrl, options.logFile);
  let webhook: ChartOperator['webhook'];
  if (split && options.webhook) {
    try {
      webhook = await startChartWebhook(options, rendered, options.webhook);
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    }
  }
  return {
    child,
    args,
    statusUrl,
    ...(webhook ? { webhook } : {}),
    ...(options.dashboardPort ? { dashboardUrl: `http://127.0.0.1:${options.dashboardPort}` } : {}),
  };
}

/**
 * The webhook's process as its Deployment runs it, with the certificate Secret's tls.crt and
 * tls.key in `certDir` as the kubelet mounts them (the Secret is read as the admin, never as
 * the webhook, and written again when it changes, by a rename as the kubelet swaps its files).
 */
async function startChartWebhook(
  options: ChartOperatorOptions,
  rendered: RenderedObject[],
  webhook: NonNullable<ChartOperatorOptions['webhook']>,
): Promise<NonNullable<ChartOperator['webhook']>> {
  const command = operatorCommand(rendered, {
    namespace: options.namespace,
    deployment: chartWebhookName,
  });
  const deployment = rendered.find(
    (o) => o.kind === 'Deployment' && o.metadata?.name === chartWebhookName,
  ) as {
    spec: { template: { spec: { volumes?: { name: string; secret?: { secretName: string } }[] } } };
  };
  const secretName = deployment.spec.template.spec.volumes?.find((v) => v.name === 'webhook-tls')
    ?.secret?.secretName;
  if (!secretName) throw new Error('the webhook Deployment mounts no webhook-tls Secret');
  const account = new k8s.KubeConfig();
  account.loadFromFile(webhook.kubeconfig);
  await waitUntilAllowed(
    account,
    [
      { verb: 'list', resource: 'nodes' },
      {
        namespace: options.namespace,
        verb: 'list',
        resource: 'configmaps',
        name: 'winfleet-config',
      },
    ],
    "the webhook's ServiceAccount",
  );
  const core = webhook.admin.makeApiClient(k8s.CoreV1Api);
  await mkdir(webhook.certDir, { recursive: true });
  let written = '';
  const mount = async (): Promise<boolean> => {
    const secret = await core
      .readNamespacedSecret({ namespace: options.namespace, name: secretName })
      .catch(() => undefined);
    const crt = secret?.data?.['tls.crt'];
    const key = secret?.data?.['tls.key'];
    if (!crt || !key) return false;
    if (crt + key === written) return true;
    for (const [file, data] of [
      ['tls.crt', crt],
      ['tls.key', key],
    ] as const) {
      const target = join(webhook.certDir, file);
      await writeFile(`${target}.new`, Buffer.from(data, 'base64'), { mode: 0o600 });
      await rename(`${target}.new`, target);
    }
    written = crt + key;
    return true;
  };
  await waitFor(mount, {
    description: `Secret ${options.namespace}/${secretName} with the webhook certificate (the operator writes it)`,
    timeoutMs: 60_000,
  });
  const resync = setInterval(() => void mount().catch(() => {}), 2000);
  resync.unref();
  const args = [
    ...command.args,
    '--kubeconfig',
    webhook.kubeconfig,
    '--webhook-host',
    '127.0.0.1',
    '--webhook-port',
    String(options.webhookPort),
    '--tls-cert-file',
    join(webhook.certDir, 'tls.crt'),
    '--tls-key-file',
    join(webhook.certDir, 'tls.key'),
    '--status-host',
    '127.0.0.1',
    '--status-port',
    String(webhook.statusPort),
  ];
  const statusUrl = `http://127.0.0.1:${webhook.statusPort}`;
  let child: ChildProcess;
  try {
    child = await startReady('webhook', args, command.env, statusUrl, webhook.logFile);
  } catch (error) {
    clearInterval(resync);
    throw error;
  }
  child.once('exit', () => clearInterval(resync));
  return {
    child,
    args,
    statusUrl,
    stop: async () => {
      clearInterval(resync);
      await stopChild(child);
    },
  };
}

/** Ends a child process (SIGTERM, then SIGKILL after 10 s) and waits for it. */
function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Spawns `node src/operator/main.ts args` and resolves once `${statusUrl}/readyz` answers. */
async function startReady(
  what: string,
  args: string[],
  env: Record<string, string>,
  statusUrl: string,
  logFile: string | undefined,
): Promise<ChildProcess> {
  const out = logFile ? openSync(logFile, 'a') : 'ignore';
  const { KUBECONFIG: _ignored, ...inherited } = process.env;
  const child = spawn(process.execPath, [operatorMain, ...args], {
    stdio: ['ignore', out, out],
    env: { ...inherited, ...env },
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code, signal) =>
      reject(
        new Error(
          `the ${what} exited (${code ?? signal}) before it was ready${logFile ? `; see ${logFile}, which ends:\n${logTail(logFile)}` : ''}`,
        ),
      ),
    ),
  );
  exited.catch(() => {});
  try {
    await Promise.race([
      exited,
      waitFor(async () => (await fetch(`${statusUrl}/readyz`)).ok, {
        description: `the chart's ${what} to answer ${statusUrl}/readyz`,
        timeoutMs: 60_000,
      }),
    ]);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return child;
}

/** The last lines of a log file, for an error message (the file may be gone with its dir). */
function logTail(path: string, lines = 15): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch (error) {
    return `(cannot read it: ${(error as Error).message})`;
  }
}

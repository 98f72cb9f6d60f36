/**
 * winfleet migrate plan --to <2019|2022|2025|BUILD> [-n NS | -A] [-o table|wide|json|yaml]:
 * for every workload that runs Windows pods (Deployments, StatefulSets, DaemonSets, Jobs,
 * CronJobs, bare pods), whether it can move to Windows nodes of the target build: each image's
 * variants looked up through the webhook's resolver (the operator's mirrors, the pods' pull
 * secrets, the same address policy), and what else pins it (src/migration/workload-plan.ts).
 * Exit 0 when every workload can move under process isolation; 1 when one cannot (an image
 * with no variant the target runs, one it runs only under Hyper-V isolation, a build pinned
 * elsewhere, or an image that could not be looked up).
 */
import * as k8s from '@kubernetes/client-node';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { defaultOperatorNamespace } from '../../api/operator-namespace.ts';
import { defaultConfig, parseConfig, type WinfleetConfig } from '../../config/winfleet-config.ts';
import { windowsOsVersions } from '../../images/image-platforms.ts';
import { httpStatus } from '../../kube/client.ts';
import { readRuntimeClassSelectors, readWorkloads } from '../../migration/read-workloads.ts';
import {
  type ImageLookup,
  planWorkload,
  type WorkloadPlan,
  type WorkloadVerdict,
  windowsWorkloads,
} from '../../migration/workload-plan.ts';
import { isForbiddenStatus, isNotFoundStatus } from '../../net/http-status.ts';
import { configKey, configMapName } from '../../operator/config-source.ts';
import { parseDuration } from '../../rollout/duration.ts';
import { apiPullSecrets, resolverFor } from '../../webhook/pod-images.ts';
import { windowsReleases } from '../../windows/builds.ts';
import { parseWindowsVersion } from '../../windows/compatibility.ts';
import { ExitCode } from '../exit-codes.ts';
import {
  type KubeFlags,
  kubeConfigFrom,
  namespaceFrom,
  namespaceName,
  withKubeFlags,
} from '../kube-flags.ts';
import {
  formatData,
  formatTable,
  type OutputFormat,
  outputOption,
  paint,
  type Tone,
} from '../output.ts';

export interface MigrationTarget {
  /** "2022", or the build itself when it is no release winfleet names. */
  name: string;
  /** major.minor.build, as the windows-build label has it. */
  build: string;
}

/** --to: a release name (2019, 2022, 2025) or a build (10.0.20348). */
export function parseTarget(value: string): MigrationTarget {
  const release = windowsReleases.find((r) => r.name === value);
  if (release) return { name: release.name, build: release.build };
  let version: ReturnType<typeof parseWindowsVersion>;
  try {
    version = parseWindowsVersion(value, '--to');
  } catch (error) {
    throw new InvalidArgumentError(
      `${(error as Error).message}; or give a release: ${windowsReleases.map((r) => r.name).join(', ')}`,
    );
  }
  const build = `${version.major}.${version.minor}.${version.build}`;
  return { name: windowsReleases.find((r) => r.build === build)?.name ?? build, build };
}

/** @package */
export interface MigrationPlan {
  target: MigrationTarget;
  namespace: string;
  workloads: WorkloadPlan[];
  summary: Record<WorkloadVerdict, number>;
}

/** Whether every workload of the plan can move as it is. */
export function planMoves(plan: MigrationPlan): boolean {
  return plan.workloads.every((w) => w.verdict === 'ready');
}

const verdictTone: Record<WorkloadVerdict, Tone> = {
  ready: 'good',
  hyperv: 'warn',
  blocked: 'bad',
  unknown: 'warn',
};

const verdictText: Record<WorkloadVerdict, string> = {
  ready: 'ready',
  hyperv: 'hyper-v only',
  blocked: 'blocked',
  unknown: 'unknown',
};

/** The plan as -o prints it. */
export function formatPlan(plan: MigrationPlan, format: OutputFormat, color = true): string {
  if (format === 'json' || format === 'yaml') return formatData(format, plan);
  const tint = (tone: Tone, text: string) => (color ? paint(tone, text) : text);
  const { ready, hyperv, blocked, unknown } = plan.summary;
  let out = `Migration to Windows Server ${plan.target.name} (${plan.target.build}), ${plan.namespace}: ${plan.workloads.length} workload(s) with Windows pods; ${ready} ready, ${hyperv} only under Hyper-V isolation, ${blocked} blocked, ${unknown} unknown\n`;
  if (plan.workloads.length === 0) return out;
  const workloadName = (w: WorkloadPlan) => `${w.kind}/${w.name}`;
  if (format === 'wide') {
    out += formatTable(
      ['namespace', 'workload', 'container', 'image', 'on target', 'variants'],
      plan.workloads.flatMap((w) =>
        w.images.map((i) => [
          w.namespace,
          workloadName(w),
          i.container,
          i.image,
          i.verdict === 'unknown'
            ? tint('warn', `unknown: ${i.reason}`)
            : i.verdict === 'none'
              ? tint('bad', 'cannot run')
              : tint(
                  i.verdict === 'process' ? 'good' : 'warn',
                  `${i.verdict === 'process' ? 'process' : 'hyper-v'} ${i.osVersion || '(any)'}`,
                ),
          i.variants.map((v) => v || '(any)').join(',') || '-',
        ]),
      ),
    );
  } else {
    out += formatTable(
      ['namespace', 'workload', 'verdict', 'images', 'why'],
      plan.workloads.map((w) => [
        w.namespace,
        workloadName(w),
        tint(verdictTone[w.verdict], verdictText[w.verdict]),
        String(w.images.length),
        w.blockers[0] ??
          w.images.find((i) => i.verdict === 'unknown')?.reason ??
          (w.verdict === 'hyperv'
            ? `${w.images
                .filter((i) => i.verdict === 'hyperv')
                .map((i) => i.image)
                .join(', ')} run on ${plan.target.name} only under Hyper-V isolation`
            : ''),
      ]),
    );
  }
  const details = plan.workloads.flatMap((w) =>
    [...w.blockers.slice(format === 'wide' ? 0 : 1), ...w.notes].map(
      (text) => `  ${w.namespace}/${workloadName(w)}: ${text}`,
    ),
  );
  if (details.length > 0) out += `\n${details.join('\n')}\n`;
  if (hyperv > 0)
    out += `\nHyper-V isolation: these move only onto a pool with spec.isolation.hyperV: true (the webhook then gives their pods a Hyper-V RuntimeClass); otherwise rebuild their images for ${plan.target.name}.\n`;
  return out;
}

/** The operator's configuration (its mirrors and address policy), the defaults without one. */
async function operatorConfig(kc: k8s.KubeConfig, namespace: string): Promise<WinfleetConfig> {
  try {
    const cm = await kc
      .makeApiClient(k8s.CoreV1Api)
      .readNamespacedConfigMap({ name: configMapName, namespace });
    const text = cm.data?.[configKey];
    return text === undefined
      ? defaultConfig()
      : parseConfig(text, `ConfigMap ${namespace}/${configMapName} key ${configKey}`);
  } catch (error) {
    const status = httpStatus(error);
    if (isNotFoundStatus(status) || isForbiddenStatus(status)) return defaultConfig();
    throw error;
  }
}

/** Builds the plan against the cluster of `kc`. */
export async function buildMigrationPlan(
  kc: k8s.KubeConfig,
  options: {
    target: MigrationTarget;
    namespace: string | undefined;
    operatorNamespace: string;
    lookupTimeoutMs: number;
  },
): Promise<MigrationPlan> {
  const config = await operatorConfig(kc, options.operatorNamespace);
  const runtimeClasses = await readRuntimeClassSelectors(kc);
  const workloads = windowsWorkloads(await readWorkloads(kc, options.namespace), runtimeClasses);
  // The webhook's resolver and policy, with the CLI's own (longer) time per lookup.
  const resolver = resolverFor({
    ...config,
    images: { ...config.images, lookupBudgetMs: options.lookupTimeoutMs },
  });
  const pullSecrets = apiPullSecrets(kc);
  const plans: WorkloadPlan[] = [];
  for (const workload of workloads) {
    const secrets = await pullSecrets(workload.pod, workload.namespace);
    const lookups = new Map<string, ImageLookup>();
    for (const container of [
      ...(workload.pod.spec?.initContainers ?? []),
      ...(workload.pod.spec?.containers ?? []),
    ]) {
      const image = container.image;
      if (!image || lookups.has(image)) continue;
      const result = await resolver.resolveImagePlatforms(
        image,
        { pullSecrets: secrets },
        AbortSignal.timeout(options.lookupTimeoutMs),
      );
      lookups.set(
        image,
        result.status === 'resolved'
          ? { state: 'resolved', windowsVersions: windowsOsVersions(result.platforms) }
          : { state: 'unknown', reason: result.message },
      );
    }
    plans.push(planWorkload(workload, lookups, options.target, runtimeClasses));
  }
  const summary = { ready: 0, hyperv: 0, blocked: 0, unknown: 0 };
  for (const p of plans) summary[p.verdict]++;
  return {
    target: options.target,
    namespace:
      options.namespace === undefined ? 'all namespaces' : `namespace ${options.namespace}`,
    workloads: plans,
    summary,
  };
}

interface PlanFlags extends KubeFlags {
  to: MigrationTarget;
  output: OutputFormat;
  operatorNamespace: string;
  lookupTimeout: number;
}

function lookupTimeout(value: string): number {
  try {
    return parseDuration(value, '--lookup-timeout', { minMs: 100, maxMs: 300_000 });
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

export function registerMigrate(program: Command): void {
  const migrate = program
    .command('migrate')
    .description('move Windows workloads between Windows Server builds');
  const plan = migrate
    .command('plan')
    .description(
      'which workloads with Windows pods can move to a Windows Server build, image by image; exit 1 when one cannot',
    )
    .addOption(
      new Option('--to <release|build>', 'the target: 2019, 2022, 2025 or a build like 10.0.20348')
        .argParser(parseTarget)
        .makeOptionMandatory(),
    );
  withKubeFlags(plan);
  const namespaceOption = plan.options.find((o) => o.long === '--namespace');
  if (namespaceOption)
    namespaceOption.description = "namespace (default: the context's, else default)";
  plan
    .addOption(outputOption())
    .option(
      '--operator-namespace <name>',
      "the operator's namespace: image mirrors are read from its ConfigMap winfleet-config",
      namespaceName,
      defaultOperatorNamespace,
    )
    .addOption(
      new Option('--lookup-timeout <duration>', 'time for each image lookup (e.g. 10s)')
        .argParser(lookupTimeout)
        .default(15_000, '15s'),
    )
    .action(async (flags: PlanFlags) => {
      const kc = kubeConfigFrom(flags);
      const result = await buildMigrationPlan(kc, {
        target: flags.to,
        // Workloads, not WindowsHosts: the context's namespace, else default, as kubectl.
        namespace:
          flags.allNamespaces || flags.namespace
            ? namespaceFrom(flags, kc)
            : kc.getContextObject(kc.getCurrentContext())?.namespace || 'default',
        operatorNamespace: flags.operatorNamespace,
        lookupTimeoutMs: flags.lookupTimeout,
      });
      process.stdout.write(formatPlan(result, flags.output));
      if (!planMoves(result)) process.exitCode = ExitCode.problem;
    });
  plan.exitOverride();
}

/**
 * winfleet diagnose [HOST…] -o bundle.tar.gz: a support bundle. The cluster side (versions,
 * WindowsHosts, pools, Nodes, Events, RuntimeClasses, webhooks, Secret names, operator logs
 * and metrics) and, over SSH, each host's side (diagnose/hosts.ts), every file scrubbed
 * (diagnose/scrub.ts), with an index.html saying what was collected and what failed.
 * HOST names WindowsHosts; without any, every WindowsHost in the namespace (-A: all);
 * --host ADDRESS reaches a host by address, also when the cluster cannot be reached.
 * Exit code 1 when anything could not be collected (the bundle is still written).
 */
import { constants, createWriteStream } from 'node:fs';
import { access } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { Listr } from 'listr2';
import { apiGroup } from '../../api/group-version.ts';
import { isPullHost, type WindowsHost } from '../../api/windows-host.ts';
import { diagnosticTextLimit } from '../../hostaccess/remote-scripts.ts';
import { hostKeyCheck } from '../check/host-checks.ts';
import { type BundleFile, bundleRoot, writeBundle } from '../diagnose/bundle.ts';
import { type CollectedItem, collectCluster } from '../diagnose/cluster.ts';
import { collectHost, type HostCollection } from '../diagnose/hosts.ts';
import { formatBytes, type IndexSection, renderIndex } from '../diagnose/index-html.ts';
import { scrub } from '../diagnose/scrub.ts';
import { cliExit, ExitCode } from '../exit-codes.ts';
import {
  addressTargets,
  type HostFlags,
  type HostTarget,
  pullHostNote,
  windowsHostTargets,
  withHostFlags,
} from '../host-targets.ts';
import {
  defaultHostNamespace,
  type KubeFlags,
  kubeConfigFrom,
  namespaceFrom,
  withKubeFlags,
} from '../kube-flags.ts';
import { cliVersion } from '../version.ts';

interface DiagnoseFlags extends KubeFlags, HostFlags {
  output?: string;
  since: number;
  operatorUrl?: string;
  operatorLog?: string;
}

/** --since: a whole number of hours (6h) or minutes (90m), 1 minute to 30 days; in ms. */
export function parseSince(value: string): number {
  const match = /^(\d{1,5})(h|m)$/.exec(value);
  const ms = match ? Number(match[1]) * (match[2] === 'h' ? 3_600_000 : 60_000) : 0;
  if (!match || ms < 60_000 || ms > 30 * 24 * 3_600_000)
    throw new InvalidArgumentError(
      `"${value}" is not a duration like 6h or 90m (whole hours or minutes, 1m to 720h)`,
    );
  return ms;
}

function operatorUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError(
      `"${value}" is not a URL; give the operator's status server, e.g. http://127.0.0.1:8080`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new InvalidArgumentError(`"${value}" is not an http:// or https:// URL`);
  return value;
}

export function registerDiagnose(program: Command): void {
  const command = program
    .command('diagnose')
    .description(
      'write a support bundle (.tar.gz with index.html): cluster objects, events, operator logs and metrics, and per host over SSH its services, HNS, network, firewall, updates, event logs, logs and configs; credentials scrubbed',
    )
    .argument('[host...]', 'WindowsHosts to include (NAME or NAMESPACE/NAME; default: all)')
    .option(
      '-o, --output <file>',
      'where to write the bundle; - for stdout (default: ./winfleet-diagnose-<time>.tar.gz)',
    )
    .addOption(
      new Option('--since <duration>', 'how far back events and logs go, e.g. 6h or 90m')
        .argParser(parseSince)
        .default(6 * 3_600_000, '6h'),
    )
    .option(
      '--operator-url <url>',
      "the operator's status server when it runs outside the cluster (its /metrics)",
      operatorUrl,
    )
    .option(
      '--operator-log <file>',
      "the operator's log file when it runs outside the cluster (its Pods' logs are then not read)",
    );
  withKubeFlags(command);
  withHostFlags(command);
  command.action(async (names: string[], flags: DiagnoseFlags) => {
    process.exitCode = await diagnose(names, flags);
  });
}

interface Progress {
  step(title: string, run: (say: (text: string) => void) => Promise<string>): void;
  run(): Promise<void>;
}

/** The first line of `text`, at most 200 characters (a listr2 title is one line). */
function oneLine(text: string): string {
  const first = text.split('\n')[0] ?? '';
  return first.length > 200 ? `${first.slice(0, 199)}…` : first;
}

/** listr2 on a terminal; otherwise one plain line per step and per outcome. */
function progress(stream: NodeJS.WriteStream): Progress {
  const steps: { title: string; run: (say: (text: string) => void) => Promise<string> }[] = [];
  return {
    step: (title, run) => steps.push({ title, run }),
    run: async () => {
      if (stream.isTTY && stream === process.stdout) {
        await new Listr(
          steps.map((s) => ({
            title: s.title,
            task: async (_ctx: unknown, task: { title: string; output: string }) => {
              const outcome = await s.run((text) => {
                task.output = text;
              });
              task.title = `${s.title}: ${oneLine(outcome)}`;
            },
          })),
          { concurrent: false, exitOnError: false, renderer: 'default' },
        ).run();
        return;
      }
      for (const s of steps) {
        stream.write(`${s.title} …\n`);
        stream.write(`${s.title}: ${await s.run(() => {})}\n`);
      }
    },
  };
}

/** The first line of a cut item's file: which end was kept (set where the cut was made). */
export function truncationNote(item: CollectedItem): string {
  return `[truncated: only the ${item.keepTail ? 'last' : 'first'} ${diagnosticTextLimit} characters were kept]\n`;
}

/** What one `winfleet diagnose` run gathers as it goes. */
interface DiagnoseRun {
  names: string[];
  flags: DiagnoseFlags;
  since: Date;
  /** Credentials to scrub wherever they appear (the --ssh-key's private key). */
  secrets: string[];
  byAddress: HostTarget[];
  kc?: k8s.KubeConfig;
  namespace?: string;
  clusterSection: IndexSection;
  clusterItems: CollectedItem[];
  hostSections: { section: IndexSection; items: CollectedItem[] }[];
  windowsHosts: WindowsHost[];
  /** Host names asked for that no WindowsHost has. */
  missing: string[];
}

/** --operator-log must be readable now (a usage error otherwise). */
async function checkOperatorLog(flags: DiagnoseFlags): Promise<void> {
  if (!flags.operatorLog) return;
  try {
    await access(flags.operatorLog, constants.R_OK);
  } catch (error) {
    throw cliExit(
      ExitCode.usage,
      `--operator-log: cannot read ${flags.operatorLog}: ${(error as Error).message}`,
    );
  }
}

/** Whether host name `n` (NAME or NAMESPACE/NAME) names WindowsHost `h`. */
function namesHost(n: string, h: WindowsHost): boolean {
  return n === h.metadata.name || n === `${h.metadata.namespace}/${h.metadata.name}`;
}

/** The cluster step: the cluster part, then the WindowsHosts to visit (the ones named, or all). */
async function collectClusterStep(run: DiagnoseRun, kc: k8s.KubeConfig): Promise<string> {
  const { flags, names, clusterSection, clusterItems } = run;
  try {
    clusterItems.push(
      ...(await collectCluster({
        kc,
        namespace: run.namespace ?? defaultHostNamespace,
        since: run.since,
        operatorUrl: flags.operatorUrl,
        operatorLog: flags.operatorLog,
        limit: diagnosticTextLimit,
      })),
    );
  } catch (error) {
    clusterSection.failure = `${(error as Error).message} (the hosts given with --host are still collected)`;
    return `not collected: ${clusterSection.failure}`;
  }
  if (names.length > 0 || run.byAddress.length === 0) {
    try {
      run.windowsHosts = await listHosts(kc, run.namespace);
    } catch (error) {
      clusterSection.failure = `cannot list WindowsHosts: ${(error as Error).message}`;
    }
    if (names.length > 0) {
      const chosen = run.windowsHosts.filter((h) => names.some((n) => namesHost(n, h)));
      for (const n of names) if (!chosen.some((h) => namesHost(n, h))) run.missing.push(n);
      run.windowsHosts = chosen;
    }
  }
  const failed = clusterItems.filter((i) => i.error).length;
  const visited = run.windowsHosts.filter((h) => !isPullHost(h)).length;
  return `${clusterItems.length - failed} items${failed ? `, ${failed} failed` : ''}; ${visited} WindowsHost(s) to visit`;
}

/** Index rows for the hosts not visited: Pull hosts (by design) and names no WindowsHost has. */
function noteUnvisitedHosts(run: DiagnoseRun): void {
  for (const host of run.windowsHosts.filter(isPullHost))
    run.clusterSection.items.push({
      path: `hosts/${host.metadata.namespace}/${host.metadata.name}`,
      title: `host ${host.metadata.namespace}/${host.metadata.name}`,
      bytes: 0,
      // Not a failure: winfleet never reaches such a host over SSH, by design; the note says
      // where its state is (the cluster section has its WindowsHost, Node and Events).
      status: 'ok',
      note: pullHostNote(host),
    });
  for (const name of run.missing)
    run.clusterSection.items.push({
      path: `hosts/${name}`,
      title: `host ${name}`,
      bytes: 0,
      status: 'failed',
      note: `no WindowsHost "${name}" in ${run.namespace ?? 'the namespace'}; list them with winfleet hosts list`,
    });
}

/** One host's step: its items over SSH, and what its host key check says. */
async function collectHostStep(
  run: DiagnoseRun,
  target: HostTarget,
  hours: number,
  tell: (text: string) => void,
): Promise<string> {
  const collected: HostCollection = await collectHost(target, hours, (item) => tell(item));
  const section: IndexSection = { title: `Host ${target.name} (${target.address})`, items: [] };
  if (collected.failure) section.failure = collected.failure;
  const hostKey = collected.presentedKey
    ? `Host key: ${
        hostKeyCheck(
          target.address,
          collected.presentedKey,
          target.pin,
          target.windowsHost !== undefined,
        ).message
      }`
    : undefined;
  if (hostKey) section.facts = [hostKey];
  run.hostSections.push({ section, items: collected.items });
  if (collected.failure) return `not collected: ${collected.failure}`;
  const failed = collected.items.filter((i) => i.error).length;
  return `${collected.items.length - failed} items${failed ? `, ${failed} failed` : ''}${hostKey ? `; ${hostKey}` : ''}`;
}

/** Scrubs a section's items into bundle files and index rows; returns the redactions made. */
function placeItems(
  section: IndexSection,
  items: CollectedItem[],
  secrets: string[],
  files: BundleFile[],
): number {
  let redactions = 0;
  for (const item of items) {
    if (item.error !== undefined || item.text === undefined) {
      section.items.push({
        path: item.path,
        title: item.title,
        bytes: 0,
        status: 'failed',
        note: scrub(item.error ?? 'no output', { literals: secrets }).text,
      });
      continue;
    }
    const cleaned = scrub(item.text, { literals: secrets });
    redactions += cleaned.redactions;
    const text = cleaned.text.length > 0 ? cleaned.text : '(the command printed nothing)\n';
    const content = Buffer.from(item.truncated ? `${truncationNote(item)}${text}` : text);
    files.push({ path: item.path, content });
    section.items.push({
      path: item.path,
      title: item.title,
      bytes: content.length,
      status: item.truncated ? 'truncated' : 'ok',
      note: [
        item.truncated ? 'cut to the size limit' : '',
        cleaned.redactions ? `${cleaned.redactions} credential(s) scrubbed` : '',
      ]
        .filter(Boolean)
        .join('; '),
    });
  }
  return redactions;
}

/** Writes the bundle (to -o, or stdout for -); a write failure is the command's failure. */
async function writeBundleTo(
  output: string,
  toStdout: boolean,
  root: string,
  files: BundleFile[],
  started: Date,
): Promise<void> {
  const out: Writable = toStdout ? process.stdout : createWriteStream(output, { mode: 0o600 });
  try {
    await writeBundle(out, root, files, started);
  } catch (error) {
    throw cliExit(
      ExitCode.problem,
      `-o ${output}: cannot write the bundle: ${(error as Error).message}`,
    );
  }
}

/** Names every part not collected; the exit code says whether there was one. */
function reportFailures(say: NodeJS.WriteStream, sections: IndexSection[]): ExitCode {
  const failures = sections.reduce(
    (n, s) => n + (s.failure ? 1 : 0) + s.items.filter((i) => i.status === 'failed').length,
    0,
  );
  if (failures === 0) return ExitCode.ok;
  for (const s of sections) {
    if (s.failure) say.write(`not collected: ${s.title}: ${s.failure}\n`);
    for (const i of s.items.filter((x) => x.status === 'failed'))
      say.write(`not collected: ${i.path}: ${i.note}\n`);
  }
  return ExitCode.problem;
}

/** Starts a run: the kubeconfig and namespace, or why the cluster part is skipped. */
function startRun(
  names: string[],
  flags: DiagnoseFlags,
  since: Date,
  addressed: { targets: HostTarget[]; privateKey?: string },
): DiagnoseRun {
  const run: DiagnoseRun = {
    names,
    flags,
    since,
    secrets: addressed.privateKey ? [addressed.privateKey.trim()] : [],
    byAddress: addressed.targets,
    clusterSection: { title: 'Cluster', items: [] },
    clusterItems: [],
    hostSections: [],
    windowsHosts: [],
    missing: [],
  };
  try {
    run.kc = kubeConfigFrom(flags);
    run.namespace = namespaceFrom(flags, run.kc);
  } catch (error) {
    run.clusterSection.failure = `${(error as Error).message} (host-only: pass --host ADDRESS --ssh-key FILE for the hosts)`;
  }
  return run;
}

async function diagnose(names: string[], flags: DiagnoseFlags): Promise<ExitCode> {
  const started = new Date();
  const root = bundleRoot(started);
  const toStdout = flags.output === '-';
  const output = flags.output ?? `${root}.tar.gz`;
  const say = toStdout ? process.stderr : process.stdout;
  const since = new Date(started.getTime() - flags.since);
  const hours = Math.max(1, Math.ceil(flags.since / 3_600_000));
  await checkOperatorLog(flags);
  // --host targets need the key now (a usage error otherwise); the key itself is scrubbed.
  const run = startRun(names, flags, since, await addressTargets(flags));
  const { kc, clusterSection, secrets } = run;
  const steps = progress(say);
  steps.step('cluster', async () =>
    kc ? collectClusterStep(run, kc) : `not collected: ${clusterSection.failure}`,
  );
  await steps.run();

  const targets: HostTarget[] = [
    ...(kc ? windowsHostTargets(kc, run.windowsHosts) : []),
    ...run.byAddress,
  ];
  noteUnvisitedHosts(run);
  const hostSteps = progress(say);
  for (const target of targets)
    hostSteps.step(`host ${target.name} (${target.address})`, (tell) =>
      collectHostStep(run, target, hours, tell),
    );
  await hostSteps.run();

  // Scrub, then lay out the files and the index.
  const files: BundleFile[] = [];
  let redactions = placeItems(clusterSection, run.clusterItems, secrets, files);
  for (const { section, items } of run.hostSections)
    redactions += placeItems(section, items, secrets, files);
  if (targets.length === 0)
    clusterSection.items.push({
      path: 'hosts',
      title: 'hosts',
      bytes: 0,
      status: kc && !clusterSection.failure ? 'ok' : 'failed',
      note: 'no hosts to visit: no WindowsHosts, and no --host given',
    });
  const sections = [clusterSection, ...run.hostSections.map((h) => h.section)];
  const index = renderIndex({
    startedAt: started,
    finishedAt: new Date(),
    cliVersion,
    command: scrub(['winfleet', 'diagnose', ...process.argv.slice(3)].join(' '), {
      literals: secrets,
    }).text,
    sections,
  });
  files.unshift({ path: 'index.html', content: Buffer.from(index) });
  await writeBundleTo(output, toStdout, root, files, started);
  const bytes = files.reduce((n, f) => n + f.content.length, 0);
  say.write(
    `wrote ${toStdout ? 'the bundle to stdout' : output}: ${root}/ with ${files.length} files (${formatBytes(bytes)} before compression), ${redactions} credential(s) scrubbed\n`,
  );
  return reportFailures(say, sections);
}

async function listHosts(
  kc: k8s.KubeConfig,
  namespace: string | undefined,
): Promise<WindowsHost[]> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const list = (
    namespace
      ? await custom.listNamespacedCustomObject({
          group: apiGroup,
          version: 'v1alpha1',
          namespace,
          plural: 'windowshosts',
        })
      : await custom.listClusterCustomObject({
          group: apiGroup,
          version: 'v1alpha1',
          plural: 'windowshosts',
        })
  ) as { items: WindowsHost[] };
  return list.items;
}

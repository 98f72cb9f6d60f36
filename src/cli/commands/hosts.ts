/**
 * winfleet hosts add | list | remove | trust-key: the WindowsHost API for people.
 *
 *   hosts add NAME --address A [--port P] [--user U] (--ssh-key-file F | --ssh-key-secret S)
 *             [--host-key SHA256:… | --host-key-from-file F]
 *             [--pool P] [--node-name N] [--label k=v]… [--host-label k=v]… [--dry-run] [-o yaml|json]
 *   hosts list [-o table|wide|json|yaml] [-n NS | -A]
 *   hosts remove NAME… [--wait] [--timeout 10m] [--ignore-not-found]
 *   hosts trust-key NAME [FINGERPRINT]
 *
 * Every flag is checked before the first API call; the private key of --ssh-key-file is
 * checked (one unencrypted private key) and stored in a Secret, and never printed.
 */
import { readFile, stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { Listr } from 'listr2';
import { ConditionType } from '../../api/reasons.ts';
import {
  trustHostKeyAnnotation,
  type WindowsHost,
  windowsHostResource,
} from '../../api/windows-host.ts';
import { errorCode } from '../../errors/catalog.ts';
import { isAlreadyExists, isInvalid, isNotFound } from '../../kube/client.ts';
import { parseDuration } from '../../rollout/duration.ts';
import { cliExit, cliExitCode, ExitCode, exitFor } from '../exit-codes.ts';
import { listHosts, listPools } from '../fleet/fleet-source.ts';
import { stateTone } from '../fleet/fleet-status.ts';
import { fingerprintProblem, hostKeyFingerprintFromText, hostKeyState } from '../fleet/host-key.ts';
import { hostListTable, hostRows, printableObject } from '../fleet/host-rows.ts';
import {
  type AddFlags,
  buildKeySecret,
  buildWindowsHost,
  checkHostName,
  redactedSecret,
  sameSpec,
  sshKeySecretKey,
} from '../fleet/host-spec.ts';
import { checkPrivateKey, maxKeyFileBytes } from '../fleet/ssh-key-file.ts';
import { type KubeFlags, kubeConfigFrom, namespaceFrom, withKubeFlags } from '../kube-flags.ts';
import { formatData, formatTable, type OutputFormat, outputOption, paint } from '../output.ts';

const [group, version] = windowsHostResource.apiVersion.split('/') as [string, string];
const plural = windowsHostResource.plural;
const resourceName = `windowshost.${group}`;

const usage = (message: string) => cliExit(ExitCode.usage, message);

/** Flag checks as usage errors (exit 2). */
function checked<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (errorCode(error) === 'WF_FLAG_INVALID') throw usage((error as Error).message);
    throw error;
  }
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** The one namespace a command that changes objects works in (-A makes no sense there). */
function singleNamespace(flags: KubeFlags, kc: k8s.KubeConfig, command: string): string {
  if (flags.allNamespaces)
    throw usage(`-A: ${command} works in one namespace; use -n NAMESPACE instead`);
  return namespaceFrom(flags, kc)!;
}

async function readHost(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
): Promise<WindowsHost | undefined> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  try {
    return (await custom.getNamespacedCustomObject({
      group,
      version,
      namespace,
      plural,
      name,
    })) as WindowsHost;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** The API's error message without the raw body, for a 404 or 422 that is the user's to fix. */
function apiMessage(error: unknown): string {
  const body = (error as { body?: unknown }).body;
  try {
    return (JSON.parse(String(body)) as { message?: string }).message ?? String(body);
  } catch {
    return String(body ?? (error as Error).message);
  }
}

// ---------------------------------------------------------------------------------------------
// hosts add

interface AddOptions extends KubeFlags, AddFlags {
  hostKeyFromFile?: string;
  overwriteSecret?: boolean;
  dryRun?: boolean;
  output?: 'json' | 'yaml';
}

/** The fingerprint of the one public host key in --host-key-from-file. */
async function readHostKeyFile(file: string): Promise<string> {
  let text: string;
  try {
    const info = await stat(file);
    if (!info.isFile() || info.size > 64 * 1024)
      throw usage(
        `--host-key-from-file: ${file} is not a public key file (a regular file of at most 64 KiB)`,
      );
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (cliExitCode(error) !== undefined) throw error;
    throw usage(
      `--host-key-from-file: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); give the host's public key file`,
    );
  }
  const result = hostKeyFingerprintFromText(text, `--host-key-from-file ${file}`);
  if ('problem' in result) throw usage(result.problem);
  return result.fingerprint;
}

async function readKeyFile(file: string): Promise<string> {
  let size: number;
  try {
    const info = await stat(file);
    if (!info.isFile())
      throw usage(`--ssh-key-file: ${file} is not a regular file; give the private key file`);
    size = info.size;
  } catch (error) {
    if (cliExitCode(error) !== undefined) throw error;
    throw usage(
      `--ssh-key-file: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); give the path of the private key file`,
    );
  }
  if (size > maxKeyFileBytes)
    throw usage(
      `--ssh-key-file: ${file} is ${size} bytes, more than any SSH private key; give the private key file`,
    );
  const data = await readFile(file);
  const result = checkPrivateKey(data, `--ssh-key-file ${file}`);
  if (!result.ok) throw usage(result.problem);
  return result.text;
}

/** Creates or reuses the key Secret; refuses to change a different key unless asked. */
async function ensureKeySecret(
  core: k8s.CoreV1Api,
  secret: k8s.V1Secret,
  overwrite: boolean,
): Promise<string> {
  const name = secret.metadata!.name!;
  const namespace = secret.metadata!.namespace!;
  const wanted = Buffer.from(secret.data![sshKeySecretKey]!, 'base64').toString('utf8');
  for (let attempt = 0; attempt < 3; attempt++) {
    let existing: k8s.V1Secret | undefined;
    try {
      existing = await core.readNamespacedSecret({ name, namespace });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    if (!existing) {
      try {
        await core.createNamespacedSecret({ namespace, body: secret });
        return `secret/${name} created`;
      } catch (error) {
        if (isAlreadyExists(error)) continue; // created meanwhile: compare it
        if (isNotFound(error))
          throw cliExit(
            ExitCode.problem,
            `-n: namespace ${namespace} does not exist; install winfleet there or pass -n with the operator's namespace`,
          );
        throw error;
      }
    }
    const current = existing.data?.[sshKeySecretKey];
    const same =
      current !== undefined &&
      Buffer.from(current, 'base64').toString('utf8').trim() === wanted.trim();
    if (same) return `secret/${name} unchanged`;
    if (!overwrite)
      throw cliExit(
        ExitCode.problem,
        `--ssh-key-file: Secret ${namespace}/${name} already exists with ${current === undefined ? `no "${sshKeySecretKey}" key` : 'a different key'}; pass --overwrite-secret to replace it (every WindowsHost naming it then uses the new key), or --ssh-key-secret OTHER-NAME to store this key under another name`,
      );
    try {
      await core.patchNamespacedSecret(
        { name, namespace, body: { data: secret.data } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      return `secret/${name} replaced (--overwrite-secret)`;
    } catch (error) {
      if (isNotFound(error)) continue;
      throw error;
    }
  }
  throw cliExit(
    ExitCode.problem,
    `--ssh-key-file: Secret ${namespace}/${name} kept changing while it was written; try again`,
  );
}

/** For --ssh-key-secret alone: the Secret must exist and hold a key the operator reads. */
async function checkExistingSecret(core: k8s.CoreV1Api, namespace: string, name: string) {
  let secret: k8s.V1Secret;
  try {
    secret = await core.readNamespacedSecret({ name, namespace });
  } catch (error) {
    if (!isNotFound(error)) throw error;
    throw cliExit(
      ExitCode.problem,
      `--ssh-key-secret: Secret ${namespace}/${name} does not exist; pass --ssh-key-file KEY to create it, or create it: kubectl create secret generic ${name} -n ${namespace} --from-file=${sshKeySecretKey}=KEY`,
    );
  }
  if (!secret.data?.[sshKeySecretKey] && !secret.data?.['private-key.pem'])
    throw cliExit(
      ExitCode.problem,
      `--ssh-key-secret: Secret ${namespace}/${name} has no "${sshKeySecretKey}" key (keys: ${Object.keys(secret.data ?? {}).join(', ') || 'none'}); pass --ssh-key-file KEY --overwrite-secret to write it`,
    );
}

function specDifferences(a: WindowsHost['spec'], b: WindowsHost['spec']): string[] {
  const fields = [
    'address',
    'port',
    'username',
    'sshKeySecretRef',
    'nodeName',
    'labels',
    'taints',
    'pool',
    'hostKey',
  ] as const;
  const norm = (s: WindowsHost['spec'], f: (typeof fields)[number]) =>
    JSON.stringify(
      f === 'port' ? (s.port ?? 22) : f === 'sshKeySecretRef' ? s.sshKeySecretRef?.name : s[f],
    );
  return fields.filter((f) => norm(a, f) !== norm(b, f)).map((f) => `spec.${f}`);
}

/** What --dry-run prints: the objects as one JSON List, or YAML documents. */
function printDryRun(objects: object[], format: 'json' | 'yaml'): void {
  if (format === 'json')
    process.stdout.write(formatData('json', { apiVersion: 'v1', kind: 'List', items: objects }));
  else process.stdout.write(objects.map((o) => formatData('yaml', o)).join('---\n'));
}

/**
 * Creates the WindowsHost; one created meanwhile with the same spec is taken as is. Says what
 * it did, or why the API server refused.
 */
async function createHost(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
  host: WindowsHost,
): Promise<{ result: WindowsHost; said: string }> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  try {
    const result = (await custom.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural,
      body: host,
    })) as WindowsHost;
    return { result, said: `${resourceName}/${name} created` };
  } catch (error) {
    if (isAlreadyExists(error)) {
      const raced = await readHost(kc, namespace, name);
      if (raced && sameSpec(raced.spec, host.spec))
        return {
          result: raced,
          said: `${resourceName}/${name} unchanged (it already exists with this spec)`,
        };
      throw cliExit(
        ExitCode.problem,
        `NAME: WindowsHost ${namespace}/${name} was created by someone else meanwhile with a different spec; look at it with winfleet hosts list`,
      );
    }
    if (isNotFound(error))
      throw cliExit(
        ExitCode.problem,
        `the cluster has no WindowsHost API or no namespace ${namespace} (${apiMessage(error)}); install winfleet first, or pass -n with the operator's namespace`,
      );
    if (isInvalid(error))
      throw cliExit(
        ExitCode.problem,
        `the API server refused the WindowsHost: ${apiMessage(error)}`,
      );
    throw error;
  }
}

/** `winfleet hosts add`: every flag checked, then the key Secret, then the WindowsHost. */
async function addHost(name: string, flags: AddOptions): Promise<void> {
  // Everything the user typed is checked before the kubeconfig is even read.
  checked(() => checkHostName(name));
  if (flags.sshKeyFile === undefined && flags.overwriteSecret)
    throw usage('--overwrite-secret: only with --ssh-key-file (the key to write)');
  if (flags.hostKeyFromFile !== undefined) {
    if (flags.hostKey !== undefined)
      throw usage('--host-key-from-file: give the host key once, with --host-key or with a file');
    flags.hostKey = await readHostKeyFile(flags.hostKeyFromFile);
  }
  const draft = checked(() => buildWindowsHost(name, 'draft', flags));
  const privateKey = flags.sshKeyFile ? await readKeyFile(flags.sshKeyFile) : undefined;
  const kc = kubeConfigFrom(flags);
  const namespace = singleNamespace(flags, kc, 'hosts add');
  const host: WindowsHost = {
    ...draft.host,
    metadata: { ...draft.host.metadata, namespace },
  };
  const secret =
    privateKey === undefined ? undefined : buildKeySecret(draft.secretName, namespace, privateKey);
  if (flags.dryRun) {
    printDryRun([...(secret ? [redactedSecret(secret)] : []), host], flags.output ?? 'yaml');
    return;
  }
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const said: string[] = [];
  // The host is checked for a conflict before a Secret is written for it.
  const existing = await readHost(kc, namespace, name);
  if (existing && !sameSpec(existing.spec, host.spec))
    throw cliExit(
      ExitCode.problem,
      `NAME: WindowsHost ${namespace}/${name} already exists with a different ${specDifferences(existing.spec, host.spec).join(', ')}; remove it first (winfleet hosts remove ${name} --wait) or change it with kubectl edit windowshost ${name} -n ${namespace}`,
    );
  if (secret) said.push(await ensureKeySecret(core, secret, flags.overwriteSecret === true));
  else await checkExistingSecret(core, namespace, draft.secretName);
  let result: WindowsHost;
  if (existing) {
    result = existing;
    said.push(`${resourceName}/${name} unchanged (it already exists with this spec)`);
  } else {
    const created = await createHost(kc, namespace, name, host);
    result = created.result;
    said.push(created.said);
  }
  if (flags.output) {
    process.stdout.write(formatData(flags.output, printableObject(result!)));
    for (const line of said) process.stderr.write(`${line}\n`);
    return;
  }
  process.stdout.write(
    `${said.join('\n')}\nThe operator joins ${name} now; follow it with: winfleet status -w -n ${namespace}\n`,
  );
}

// ---------------------------------------------------------------------------------------------
// hosts list

interface ListOptions extends KubeFlags {
  output: OutputFormat;
}

async function listCommand(flags: ListOptions): Promise<void> {
  const kc = kubeConfigFrom(flags);
  const namespace = namespaceFrom(flags, kc);
  const [hosts, pools] = await Promise.all([listHosts(kc, namespace), listPools(kc, namespace)]);
  if (flags.output === 'json' || flags.output === 'yaml') {
    const items = [...hosts]
      .sort(
        (a, b) =>
          (a.metadata.namespace ?? '').localeCompare(b.metadata.namespace ?? '') ||
          a.metadata.name.localeCompare(b.metadata.name),
      )
      .map(printableObject);
    process.stdout.write(formatData(flags.output, { apiVersion: 'v1', kind: 'List', items }));
    return;
  }
  if (hosts.length === 0) {
    process.stderr.write(
      namespace === undefined
        ? 'No WindowsHosts found.\n'
        : `No WindowsHosts found in namespace ${namespace}.\n`,
    );
    return;
  }
  const rows = hostRows(hosts, {
    now: new Date(),
    ...(pools.pools ? { pools: pools.pools } : {}),
  });
  const table = hostListTable(rows, {
    wide: flags.output === 'wide',
    allNamespaces: namespace === undefined,
    tone: (row, text) => paint(stateTone(row), text),
  });
  process.stdout.write(formatTable(table.headers, table.rows));
  if (pools.unavailable) process.stderr.write(`warning: ${pools.unavailable}\n`);
}

// ---------------------------------------------------------------------------------------------
// hosts remove

interface RemoveOptions extends KubeFlags {
  wait?: boolean;
  timeout: number;
  ignoreNotFound?: boolean;
}

/** What a host being removed is doing, from its Ready condition (Draining, RemovalBlocked, …). */
function removalProgress(host: WindowsHost): string {
  const ready = host.status?.conditions?.find((c) => c.type === ConditionType.Ready);
  if (!host.metadata.deletionTimestamp) return 'waiting for the deletion to start';
  const text = ready ? `${ready.reason}: ${ready.message}` : 'deconfiguring';
  return text.replace(/\s+/g, ' ').slice(0, 300);
}

async function removeCommand(names: string[], flags: RemoveOptions): Promise<void> {
  for (const name of names) checked(() => checkHostName(name));
  if (new Set(names).size !== names.length)
    throw usage('NAME: a host is named twice; name each once');
  if (!flags.wait && flags.timeout !== defaultRemoveTimeoutMs)
    throw usage('--timeout: only with --wait; add --wait or drop --timeout');
  const kc = kubeConfigFrom(flags);
  const namespace = singleNamespace(flags, kc, 'hosts remove');
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const deleted: string[] = [];
  const missing: string[] = [];
  for (const name of names) {
    try {
      await custom.deleteNamespacedCustomObject({ group, version, namespace, plural, name });
      deleted.push(name);
      process.stdout.write(
        `${resourceName}/${name} deleted${flags.wait ? '' : ' (the operator deconfigures the host and removes its Node)'}\n`,
      );
    } catch (error) {
      if (!isNotFound(error)) throw error;
      missing.push(name);
      if (!flags.ignoreNotFound)
        process.stderr.write(
          `error: ${resourceName}/${name} not found in namespace ${namespace}\n`,
        );
    }
  }
  if (flags.wait && deleted.length)
    await waitForRemoval(deleted, (name) => readHost(kc, namespace, name), {
      deadline: Date.now() + flags.timeout,
      namespace,
    });
  if (missing.length && !flags.ignoreNotFound)
    throw cliExit(
      ExitCode.problem,
      `${missing.join(', ')} not found in namespace ${namespace} (winfleet hosts list -A shows every host; --ignore-not-found makes this not an error)`,
    );
}

const defaultRemoveTimeoutMs = 10 * 60_000;

/**
 * `hosts remove --wait`: follows each host (with progress) until it is gone. Ends with exit 1
 * when one is still there at the deadline, and when one cannot be read any more (exit 3 when
 * that is because the cluster cannot be reached or refused): waiting is the point of --wait,
 * so not knowing is not success.
 * @package
 */
export async function waitForRemoval(
  names: string[],
  read: (name: string) => Promise<WindowsHost | undefined>,
  options: { deadline: number; namespace: string; quiet?: boolean },
): Promise<void> {
  const { deadline, namespace } = options;
  const stuck = new Map<string, string>();
  const lost = new Map<string, unknown>();
  const tasks = new Listr(
    names.map((name) => ({
      title: `${name}: removing`,
      task: async (_: unknown, task: { title: string; output: string }) => {
        let said = '';
        for (;;) {
          let host: WindowsHost | undefined;
          try {
            host = await read(name);
          } catch (error) {
            lost.set(name, error);
            throw cliExit(ExitCode.problem, `${name}: cannot read it: ${exitFor(error).message}`);
          }
          if (!host) {
            task.title = `${name}: removed`;
            return;
          }
          const progress = removalProgress(host);
          if (progress !== said) {
            said = progress;
            task.title = `${name}: ${progress}`;
          }
          if (Date.now() >= deadline) {
            stuck.set(name, progress);
            throw cliExit(ExitCode.problem, `${name}: still there after --timeout: ${progress}`);
          }
          await sleep(Math.min(1000, Math.max(50, deadline - Date.now())));
        }
      },
    })),
    {
      concurrent: true,
      exitOnError: false,
      renderer: options.quiet ? 'silent' : process.stdout.isTTY ? 'default' : 'simple',
      fallbackRenderer: 'simple',
      collectErrors: false,
    },
  );
  await tasks.run();
  if (lost.size) {
    const outcomes = [...lost].map(([name, error]) => ({ name, ...exitFor(error) }));
    throw cliExit(
      outcomes.some((o) => o.code === ExitCode.cluster) ? ExitCode.cluster : ExitCode.problem,
      `--wait: cannot follow the removal of ${outcomes.map((o) => `${o.name} (${o.message})`).join('; ')}. The deletion was made; the operator goes on removing the host: follow it with winfleet hosts list -n ${namespace}`,
    );
  }
  if (stuck.size)
    throw cliExit(
      ExitCode.problem,
      `${[...stuck].map(([n, p]) => `${n} is not removed yet: ${p}`).join('; ')}. The host's Ready condition above says what blocks it (kubectl describe windowshost NAME -n ${namespace}); wait longer with --timeout`,
    );
}

// ---------------------------------------------------------------------------------------------
// hosts trust-key

async function trustKeyCommand(
  name: string,
  fingerprint: string | undefined,
  flags: KubeFlags,
): Promise<void> {
  checked(() => checkHostName(name));
  if (fingerprint !== undefined) {
    const problem = fingerprintProblem(fingerprint);
    if (problem) throw usage(problem);
  }
  const kc = kubeConfigFrom(flags);
  const namespace = singleNamespace(flags, kc, 'hosts trust-key');
  const host = await readHost(kc, namespace, name);
  if (!host)
    throw cliExit(
      ExitCode.problem,
      `NAME: ${resourceName}/${name} not found in namespace ${namespace} (winfleet hosts list -A shows every host)`,
    );
  const state = hostKeyState(host);
  const pending = host.metadata.annotations?.[trustHostKeyAnnotation];
  if (fingerprint === undefined) {
    process.stdout.write(`pinned:    ${state.pinned ?? '(none yet: pinned on first contact)'}\n`);
    if (state.presented) process.stdout.write(`presented: ${state.presented}\n`);
    if (pending) process.stdout.write(`trusted (waiting for the operator): ${pending}\n`);
    if (!state.presented)
      throw cliExit(
        ExitCode.problem,
        `${name} has no host key mismatch recorded, so there is nothing to trust; to trust a key you verified on the host's console, run: winfleet hosts trust-key ${name} FINGERPRINT`,
      );
    throw cliExit(
      ExitCode.problem,
      `${name} presented ${state.presented}, not the pinned key. Only if the host was rebuilt on purpose, check the fingerprint on its console (ssh-keygen -lf C:\\ProgramData\\ssh\\ssh_host_ed25519_key.pub) and run: winfleet hosts trust-key ${name} ${state.presented}`,
    );
  }
  if (fingerprint === state.pinned && !state.presented) {
    process.stdout.write(`${name}: ${fingerprint} is already the pinned host key; nothing to do\n`);
    return;
  }
  if (state.presented && state.presented !== fingerprint)
    process.stderr.write(
      `warning: ${name} last presented ${state.presented}, not ${fingerprint}; the operator accepts the host only once it presents ${fingerprint}\n`,
    );
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  // An admin's pin (spec.hostKey) wins over the annotation: trusting a new key changes the pin.
  const pinnedInSpec = host.spec.hostKey !== undefined;
  await custom.patchNamespacedCustomObject(
    {
      group,
      version,
      namespace,
      plural,
      name,
      body: pinnedInSpec
        ? { spec: { hostKey: fingerprint } }
        : { metadata: { annotations: { [trustHostKeyAnnotation]: fingerprint } } },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
  if (pinnedInSpec) {
    process.stdout.write(
      `${resourceName}/${name} spec.hostKey set to ${fingerprint} (was ${host.spec.hostKey}); the operator connects only to a host presenting it\n`,
    );
    return;
  }
  process.stdout.write(
    `${resourceName}/${name} annotated ${trustHostKeyAnnotation}=${fingerprint}; the operator pins it on its next connection to a host presenting it, then removes the annotation\n`,
  );
}

// ---------------------------------------------------------------------------------------------

function removeTimeout(value: string): number {
  try {
    return parseDuration(value, '--timeout', { minMs: 1000, maxMs: 24 * 3_600_000 });
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** `winfleet hosts add` and its flags. */
function registerAddHost(hosts: Command): void {
  withKubeFlags(
    hosts
      .command('add')
      .argument('<NAME>', 'the WindowsHost’s name (DNS-1123: lower-case letters, digits, - and .)')
      .description(
        'add a Windows host: creates the WindowsHost and, from --ssh-key-file, its SSH key Secret',
      ),
  )
    .option('--address <address>', 'IPv4 address or DNS name the operator reaches the host at')
    .option('--port <port>', 'SSH port (default 22)')
    .option('--user <name>', 'administrator account to log in as', 'Administrator')
    .option(
      '--ssh-key-file <file>',
      'unencrypted SSH private key; stored in a Secret, never printed',
    )
    .option(
      '--ssh-key-secret <name>',
      'Secret with the key (key ssh-privatekey); with --ssh-key-file, the Secret to write (default NAME-ssh-key)',
    )
    .option(
      '--host-key <fingerprint>',
      'pin the host’s SSH key before first contact (SHA256:…, as ssh-keygen -lf prints); required for hosts of Active Directory pools',
    )
    .option(
      '--host-key-from-file <file>',
      'pin the host’s SSH key from its public key file (ssh_host_ed25519_key.pub) or one ssh-keyscan line',
    )
    .option('--overwrite-secret', 'replace the Secret’s key when it holds a different one')
    .option('--pool <name>', 'spec.pool: the pool name put on the node (label winfleet.io/pool)')
    .option('--node-name <name>', 'node name (default: the host’s hostname, lower-cased)')
    .option('--label <key=value>', 'label for the node (repeatable)', collect)
    .option(
      '--host-label <key=value>',
      'label on the WindowsHost itself, which pools select on (repeatable)',
      collect,
    )
    .option('--dry-run', 'print what would be created (the key redacted); change nothing')
    .addOption(
      new Option('-o, --output <format>', 'print the WindowsHost').choices(['json', 'yaml']),
    )
    .action((name: string, flags: AddOptions) => addHost(name, flags));
}

export function registerHosts(program: Command): void {
  const hosts = program
    .command('hosts')
    .description('add, list, remove WindowsHosts, and trust a rebuilt host’s SSH key');

  registerAddHost(hosts);

  withKubeFlags(hosts.command('list').alias('ls').description('list WindowsHosts and their state'))
    .addOption(outputOption())
    .action((flags: ListOptions) => listCommand(flags));

  withKubeFlags(
    hosts
      .command('remove')
      .alias('rm')
      .argument('<NAME...>', 'WindowsHosts to remove')
      .description(
        'remove WindowsHosts: the operator drains and deconfigures each host and deletes its Node',
      ),
  )
    .option('--wait', 'wait, with progress, until each host is gone')
    .addOption(
      new Option('--timeout <duration>', 'with --wait: how long to wait (e.g. 10m, 90s)')
        .argParser(removeTimeout)
        .default(defaultRemoveTimeoutMs, '10m'),
    )
    .option('--ignore-not-found', 'a host that does not exist is not an error')
    .action((names: string[], flags: RemoveOptions) => removeCommand(names, flags));

  withKubeFlags(
    hosts
      .command('trust-key')
      .argument('<NAME>', 'the WindowsHost')
      .argument('[FINGERPRINT]', 'the new host key, SHA256:… (without it: show the presented one)')
      .description(
        'accept a new SSH host key after a host was rebuilt on purpose (sets winfleet.io/trust-host-key)',
      ),
  ).action((name: string, fingerprint: string | undefined, flags: KubeFlags) =>
    trustKeyCommand(name, fingerprint, flags),
  );
}

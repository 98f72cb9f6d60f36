/**
 * Container logs on a simulated host, where the kubelet and containerd keep them: one file per
 * container start, `C:\var\log\pods\<namespace>_<pod>_<uid>\<container>\<restartCount>.log`
 * (kuberuntime's BuildContainerLogsDirectory and buildContainerLogsPath, podLogsDir
 * /var/log/pods on the system drive), each line in the CRI log format containerd writes:
 * `<RFC3339Nano time> <stdout|stderr> <F|P> <text>`, P marking a line split in parts.
 *
 * The kubelet stand-in runs a ContainerLogWriter: when a container of one of its node's pods is
 * running (kwok plays the containers; their status says so), the container "prints" what it
 * starts with, and the pod's log directory goes with the pod. `readContainerLog` reads a file
 * back as the kubelet's `/containerLogs` does (kuberuntime/logs), honouring the PodLogOptions
 * the API server passes on.
 */
import type * as k8s from '@kubernetes/client-node';
import type { Informer } from '../../src/controller-runtime/informer.ts';
import type { SimMachine } from './machine.ts';

/** The kubelet's podLogsDir on Windows (its default /var/log/pods, on drive C:). */
export const podLogsDir = 'C:\\var\\log\\pods';

/** `<podLogsDir>\<namespace>_<name>_<uid>`. */
export function podLogsDirectory(namespace: string, name: string, uid: string): string {
  return `${podLogsDir}\\${[namespace, name, uid].join('_')}`;
}

/** `<pod logs dir>\<container>\<restartCount>.log`. */
export function containerLogPath(
  pod: { namespace: string; name: string; uid: string },
  container: string,
  restartCount: number,
): string {
  return `${podLogsDirectory(pod.namespace, pod.name, pod.uid)}\\${container}\\${restartCount}.log`;
}

/** One CRI log line. */
export interface CriLogLine {
  time: Date;
  /** The time as written (nanosecond precision). */
  timestamp: string;
  stream: 'stdout' | 'stderr';
  /** False for a part of a longer line (tag P). */
  full: boolean;
  text: string;
}

/** `2026-01-02T03:04:05.123456789Z`: RFC3339Nano in UTC, as containerd writes it. */
export function criTimestamp(time: Date, nanos = 0): string {
  const iso = time.toISOString(); // …T03:04:05.123Z
  const fraction = `${iso.slice(20, 23)}${String(nanos % 1_000_000).padStart(6, '0')}`;
  return `${iso.slice(0, 19)}.${fraction}Z`;
}

/** The file's lines; a line that is not in the CRI format is skipped, as the kubelet does. */
export function parseCriLog(text: string): CriLogLine[] {
  const lines: CriLogLine[] = [];
  for (const line of text.split('\n')) {
    const match = /^(\S+) (stdout|stderr) ([FP]) (.*)$/.exec(line.replace(/\r$/, ''));
    if (!match) continue;
    const time = new Date(match[1]!);
    if (Number.isNaN(time.getTime())) continue;
    lines.push({
      time,
      timestamp: match[1]!,
      stream: match[2] as 'stdout' | 'stderr',
      full: match[3] === 'F',
      text: match[4]!,
    });
  }
  return lines;
}

/** The subset of PodLogOptions the kubelet applies when it reads a file. */
export interface LogReadOptions {
  timestamps?: boolean;
  tailLines?: number;
  limitBytes?: number;
  sinceTime?: Date;
}

/**
 * What the kubelet returns for a CRI log file: whole lines (parts joined), each followed by
 * "\n", with its timestamp first when asked, from sinceTime on, the last tailLines of them, cut
 * at limitBytes.
 */
export function renderContainerLog(text: string, options: LogReadOptions = {}): string {
  const whole: { timestamp: string; time: Date; text: string }[] = [];
  let partial = '';
  for (const line of parseCriLog(text)) {
    partial += line.text;
    if (!line.full) continue;
    whole.push({ timestamp: line.timestamp, time: line.time, text: partial });
    partial = '';
  }
  let selected = options.sinceTime
    ? whole.filter((l) => l.time.getTime() >= options.sinceTime!.getTime())
    : whole;
  if (options.tailLines !== undefined) {
    selected = options.tailLines === 0 ? [] : selected.slice(-options.tailLines);
  }
  let out = selected
    .map((l) => `${options.timestamps ? `${l.timestamp} ` : ''}${l.text}\n`)
    .join('');
  if (options.limitBytes !== undefined) {
    out = Buffer.from(out).subarray(0, options.limitBytes).toString('utf8');
  }
  return out;
}

/** What a simulated container prints when it starts: its image and command, as lines. */
export function startLines(pod: k8s.V1Pod, container: k8s.V1Container): string[] {
  const command = [...(container.command ?? []), ...(container.args ?? [])].join(' ');
  return [
    `winfleet simulated container "${container.name}" of pod ${pod.metadata?.namespace}/${pod.metadata?.name} started from image ${container.image ?? ''}`,
    command === '' ? "running the image's entrypoint" : `running: ${command}`,
  ];
}

export interface ContainerLogWriterOptions {
  machine: SimMachine;
  /** The node's pods (node-pods.ts); whoever made it starts it. */
  pods: Informer<k8s.V1Pod>;
  signal: AbortSignal;
  log: (severity: 'I' | 'W' | 'E', message: string) => void;
}

/**
 * Writes each running container's log file once (a container restarted gets the next file),
 * and removes a pod's log directory once the pod is gone from the node.
 */
export class ContainerLogWriter {
  readonly #options: ContainerLogWriterOptions;
  readonly #informer: Informer<k8s.V1Pod>;
  /** Container log files written, so each is written once. */
  readonly #written = new Set<string>();
  #chain: Promise<void> = Promise.resolve();

  constructor(options: ContainerLogWriterOptions) {
    this.#options = options;
    this.#informer = options.pods;
    const written = (pod: k8s.V1Pod) => this.#serially(() => this.#writeStarted(pod));
    this.#informer
      .on('add', written)
      .on('update', written)
      .on('delete', (pod) => this.#serially(() => this.#removePod(pod)));
  }

  /** Resolves when what was queued is written. */
  settled(): Promise<void> {
    return this.#chain;
  }

  #serially(work: () => Promise<void>): void {
    this.#chain = this.#chain.then(work).catch((error: unknown) => {
      if (!this.#options.signal.aborted) {
        this.#options.log('W', `Cannot write container logs: ${(error as Error).message}`);
      }
    });
  }

  async #writeStarted(pod: k8s.V1Pod): Promise<void> {
    const { namespace, name, uid } = pod.metadata ?? {};
    if (!namespace || !name || !uid) return;
    const statuses = [
      ...(pod.status?.initContainerStatuses ?? []),
      ...(pod.status?.containerStatuses ?? []),
    ];
    const specs = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
    for (const status of statuses) {
      const started = status.state?.running?.startedAt ?? status.state?.terminated?.startedAt;
      const container = specs.find((c) => c.name === status.name);
      if (!started || !container) continue;
      const path = containerLogPath({ namespace, name, uid }, status.name, status.restartCount);
      if (this.#written.has(path)) continue;
      this.#written.add(path);
      const { fs } = this.#options.machine;
      if (await fs.stat(path)) continue; // written by an earlier kubelet run
      const time = new Date(started);
      const lines = startLines(pod, container).map(
        (text, i) => `${criTimestamp(time, i)} stdout F ${text}\n`,
      );
      await fs.mkdir(path.slice(0, path.lastIndexOf('\\')), { recursive: true });
      await fs.writeFileAtomic(path, lines.join(''));
    }
  }

  async #removePod(pod: k8s.V1Pod): Promise<void> {
    const { namespace, name, uid } = pod.metadata ?? {};
    if (!namespace || !name || !uid) return;
    const dir = podLogsDirectory(namespace, name, uid);
    for (const path of this.#written) if (path.startsWith(`${dir}\\`)) this.#written.delete(path);
    await this.#options.machine.fs.remove(dir, { recursive: true, missingOk: true });
  }
}

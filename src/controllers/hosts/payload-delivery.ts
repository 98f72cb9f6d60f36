/**
 * How the payload reaches a host joined over SSH, so that the operator's bandwidth does not
 * grow with the fleet: when the operator serves its payload from a registry (--payload-image),
 * it copies only the agent and its service shim (and, in between, the config) over SFTP and
 * has the host's agent pull the rest itself (`winfleet-agent pull-payload`,
 * src/agent/pull-payload-command.ts). Only when the agent cannot reach the registry while the
 * operator can does the operator push the missing files over SFTP, streamed as always
 * (payload-sync.ts) — the way the payload went is an Event either way. When neither reaches
 * it, the registry is down for everyone: WF_PAYLOAD_REGISTRY_UNAVAILABLE names it and the
 * join retries with the work queue's backoff. A payload directory has no registry: the
 * operator pushes the whole payload, as before.
 *
 * Joining and upgrading both deliver through here (host-bootstrap.ts): copyOperatorFiles first
 * (it also locks C:\k down before anything lands), then the config when joining, then
 * deliverRest.
 */
import { EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import { errorCode, WinfleetError } from '../../errors/catalog.ts';
import { syncOperatorFiles, syncPayload } from '../../hostaccess/payload-sync.ts';
import type { RemoteCommandFailure, RemoteHost } from '../../hostaccess/remote-host.ts';
import type { LoadedPayload } from '../../payload/loaded-payload.ts';

/** How the rest of the payload reached the host. */
export type PayloadDelivery =
  /** A payload directory: the operator pushed every file that differed (copyOperatorFiles). */
  | { way: 'push' }
  /** The host's agent pulled what was not staged from `registry`. */
  | { way: 'pull'; registry: string; downloaded: number; bytes: number }
  /** The host cannot reach `registry`; the operator pushed `copied` over SFTP instead. */
  | { way: 'push-fallback'; registry: string; copied: number; why: string };

/** The agent's own report of a pull-payload, as far as the operator reads it. */
interface PullReport {
  downloaded: string[];
  bytes: number;
}

/** What a failed agent run printed: its catalog code and reason (run-agent.ts). */
interface AgentFailure {
  code?: string;
  reason?: string;
  message: string;
}

/** Reasons a pull fails for with which the host, not the registry, is what cannot connect. */
const hostCannotConnect = new Set(['unreachable', 'timeout']);

/** At most this much of a host's or registry's message goes into ours. */
const quotedMessageChars = 400;

function quoted(message: string): string {
  return message.length > quotedMessageChars ? `${message.slice(0, quotedMessageChars)}…` : message;
}

/** "host:port/path@sha256:…" of the artifact, as messages name it. */
function artifactOf(loaded: LoadedPayload): string {
  return `${loaded.registry!.repository}@${loaded.registry!.digest}`;
}

/**
 * Copies the files the operator installs itself: the agent and its service shim when the host
 * pulls the rest from a registry, the whole payload otherwise. Returns the paths copied.
 * @package
 */
export async function copyOperatorFiles(
  remote: RemoteHost,
  loaded: LoadedPayload,
): Promise<string[]> {
  if (!loaded.registry) return syncPayload(remote, loaded.payload, loaded.fileOnDisk);
  try {
    return await syncOperatorFiles(remote, loaded.payload, loaded.fileOnDisk);
  } catch (error) {
    // The agent comes from the registry too (into the operator's cache, once): without it the
    // host can pull nothing, so a registry the operator cannot read holds the join up.
    if (errorCode(error) !== 'WF_PAYLOAD_DOWNLOAD') throw error;
    throw new WinfleetError(
      'WF_PAYLOAD_REGISTRY_UNAVAILABLE',
      `The payload registry of ${loaded.registry.repository} does not answer the operator, which copies the agent and its service shim from it to the host (${quoted((error as Error).message)}); the join waits for it and retries with backoff: check that the registry is up`,
      { cause: error },
    );
  }
}

/**
 * The payload files besides the agent and its shim: pulled by the host's agent from the
 * registry, or pushed over SFTP when the host cannot reach it (see the module comment).
 * `servicesVersion` is given for an upgrade: the agent reads that published manifest with the
 * node's credentials; joining, it stages the manifest of the bootstrap.json just copied.
 * @package
 */
export async function deliverRest(
  events: EventRecorder,
  host: WindowsHost,
  remote: RemoteHost,
  loaded: LoadedPayload,
  servicesVersion?: string,
): Promise<PayloadDelivery> {
  if (!loaded.registry) return { way: 'push' };
  const registry = artifactOf(loaded);
  const args = [
    'pull-payload',
    ...(servicesVersion ? ['--services-version', servicesVersion] : []),
  ];
  let failure: AgentFailure;
  let failed: unknown;
  try {
    const report = readPullReport(await remote.agent(args), loaded);
    events.record(
      host,
      'Normal',
      EventReason.PayloadPulled,
      report.downloaded.length > 0
        ? `The agent on ${host.spec.address} pulled ${report.downloaded.length} payload files (${report.bytes} bytes) of services ${servicesVersion ?? loaded.manifest.version} from ${registry}; the operator sent only the agent and its service shim`
        : `The agent on ${host.spec.address} has every payload file of services ${servicesVersion ?? loaded.manifest.version} staged already`,
    );
    return {
      way: 'pull',
      registry,
      downloaded: report.downloaded.length,
      bytes: report.bytes,
    };
  } catch (error) {
    const printed = agentFailure(error);
    if (printed?.code !== 'WF_PAYLOAD_DOWNLOAD') throw error;
    failure = printed;
    failed = error;
  }
  await operatorReachesRegistry(loaded, failure);
  if (!hostCannotConnect.has(failure.reason ?? '')) {
    // The registry answers the operator but refused the host something else (credentials, an
    // error of its own): pushing would hide that, so the failure stands and is retried.
    throw failed;
  }
  const copied = await syncPayload(remote, loaded.payload, loaded.fileOnDisk);
  const why = quoted(failure.message);
  events.record(
    host,
    'Warning',
    EventReason.PayloadPushFallback,
    `${host.spec.address} cannot reach the payload registry (the agent: ${why}); the operator, which reaches ${registry}, pushed ${copied.length} payload files over SFTP instead. Let the host reach the registry to spare the operator this traffic`,
  );
  return { way: 'push-fallback', registry, copied: copied.length, why };
}

/** What the Bootstrapped condition's message says about how the payload went. */
export function deliveryText(delivery: PayloadDelivery): string {
  switch (delivery.way) {
    case 'push':
      return 'payload pushed over SFTP (a payload directory)';
    case 'pull':
      return `payload pulled by the host from ${delivery.registry} (${delivery.downloaded} files, ${delivery.bytes} bytes)`;
    case 'push-fallback':
      return `payload pushed over SFTP (${delivery.copied} files): the host cannot reach ${delivery.registry}`;
  }
}

/**
 * Resolves when the operator reads the artifact from its registry; throws
 * WF_PAYLOAD_REGISTRY_UNAVAILABLE, naming it and both failures, when it cannot either.
 */
async function operatorReachesRegistry(
  loaded: LoadedPayload,
  hostFailure: AgentFailure,
): Promise<void> {
  if (!loaded.reachRegistry) return;
  try {
    await loaded.reachRegistry();
  } catch (error) {
    if (errorCode(error) !== 'WF_PAYLOAD_DOWNLOAD') throw error;
    const repository = loaded.registry!.repository;
    throw new WinfleetError(
      'WF_PAYLOAD_REGISTRY_UNAVAILABLE',
      `The payload registry of ${repository} answers neither the host nor the operator (the host's agent: ${quoted(hostFailure.message)}; the operator: ${quoted((error as Error).message)}); the join waits for it and retries with backoff: check that the registry is up`,
      { cause: error },
    );
  }
}

/** The code, reason and message a failed agent run printed as its last line (run-agent.ts). */
function agentFailure(error: unknown): AgentFailure | undefined {
  if (errorCode(error) !== 'WF_REMOTE_COMMAND_FAILED') return undefined;
  const result = (error as WinfleetError<RemoteCommandFailure>).details?.result;
  const lastLine = result?.stdout.trim().split('\n').at(-1) ?? '';
  let printed: unknown;
  try {
    printed = JSON.parse(lastLine);
  } catch {
    return undefined;
  }
  if (typeof printed !== 'object' || printed === null) return undefined;
  const { code, reason, error: message } = printed as Record<string, unknown>;
  if (typeof message !== 'string') return undefined;
  return {
    ...(typeof code === 'string' ? { code } : {}),
    ...(typeof reason === 'string' ? { reason } : {}),
    message,
  };
}

/**
 * The agent's report, read strictly: the host may say anything, and what it says goes into
 * Events, so only names of this payload's files and a byte count no larger than the payload
 * are taken. Throws WF_REMOTE_COMMAND_FAILED otherwise.
 * @package
 */
export function readPullReport(result: Record<string, unknown>, loaded: LoadedPayload): PullReport {
  const names = new Set(loaded.payload.files.map((f) => f.name));
  const { downloaded, bytes } = result;
  const problem = !Array.isArray(downloaded)
    ? 'no list of downloaded files'
    : downloaded.some((d) => typeof d !== 'string' || !names.has(d))
      ? 'a downloaded file that is not one of the payload'
      : new Set(downloaded).size !== downloaded.length
        ? 'a file downloaded twice'
        : !Number.isSafeInteger(bytes) ||
            (bytes as number) < 0 ||
            (bytes as number) > loaded.totalBytes
          ? 'a byte count that is not within the payload size'
          : undefined;
  if (problem)
    throw new WinfleetError<RemoteCommandFailure>(
      'WF_REMOTE_COMMAND_FAILED',
      `agent pull-payload reported ${problem}; the agent on the host is not the payload's: bootstrap the host again`,
      { details: { step: 'agent pull-payload', result: { code: 0, stdout: '', stderr: '' } } },
    );
  return { downloaded: downloaded as string[], bytes: bytes as number };
}

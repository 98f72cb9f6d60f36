/**
 * The payload: the Windows binaries winfleet installs on hosts, listed in payload.json with
 * name, version and SHA-256, each coming from the payload directory (what the operator image
 * carries) or an HTTP mirror. Every file's hash is checked before it is sent to a host; a file
 * whose hash does not match is never used (payload-file.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { WinfleetError } from '../errors/catalog.ts';
import { compileSchema, invalidDocument } from '../schema/validator.ts';

export interface PayloadFile {
  name: string;
  version: string;
  sha256: string;
  source: { path: string } | { url: string };
}

export interface Payload {
  /** Version of the whole payload; names the services manifest. */
  version: string;
  kubernetesVersion: string;
  files: PayloadFile[];
}

const schema = {
  type: 'object',
  additionalProperties: false,
  required: ['version', 'kubernetesVersion', 'files'],
  properties: {
    version: { type: 'string', pattern: '^[0-9A-Za-z][0-9A-Za-z.+-]{0,62}$' },
    kubernetesVersion: { type: 'string', pattern: '^v\\d+\\.\\d+\\.\\d+' },
    files: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'version', 'sha256', 'source'],
        properties: {
          name: { type: 'string', pattern: '^[A-Za-z0-9_.-]+$' },
          version: { type: 'string', minLength: 1 },
          sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
          source: {
            oneOf: [
              {
                type: 'object',
                additionalProperties: false,
                required: ['path'],
                properties: { path: { type: 'string', pattern: '^[^/\\\\][^\\\\]*$' } },
              },
              {
                type: 'object',
                additionalProperties: false,
                required: ['url'],
                properties: { url: { type: 'string', pattern: '^https?://' } },
              },
            ],
          },
        },
      },
    },
  },
} as const;
/** The agent, and the shim that runs it as a Windows service; the operator installs both. */
export const agentFileName = 'winfleet-agent.exe';
export const serviceShimFileName = 'winfleet-service.exe';
/** @package */
export const operatorInstalledFiles: readonly string[] = [agentFileName, serviceShimFileName];
/**
 * kube-log-runner.exe (k8s.io/component-base/logs/kube-log-runner, in the Kubernetes node
 * binaries for Windows): runs the kubelet and kube-proxy services and keeps their logs.
 * @package
 */
export const logRunnerFileName = 'kube-log-runner.exe';
/**
 * The programs that log only to standard error, so run under kube-log-runner.exe: the one
 * list of them (node-services.ts gives each of their services its log from it).
 * @package
 */
export const logRunnerPrograms: readonly string[] = ['kubelet.exe', 'kube-proxy.exe'];

const validatePayload = compileSchema<Payload>(schema, {
  code: 'WF_PAYLOAD_INVALID',
  document: 'payload.json',
});

/** Reads and validates `<dir>/payload.json`; `flag` is the option that named `dir`, for the fix. */
export async function loadPayload(dir: string, flag = '--payload-dir'): Promise<Payload> {
  const file = join(dir, 'payload.json');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new WinfleetError(
      'WF_PAYLOAD_INVALID',
      `Cannot read ${file}: ${(error as Error).message}; run make payload or point ${flag} at a payload`,
    );
  }
  return parsePayload(text, file, `run make payload or point ${flag} at a payload`);
}

/**
 * Parses and checks payload.json's text (from a payload directory, or the config of a payload
 * artifact); `where` names it in messages, `fix` says what to do when it is not JSON.
 */
export function parsePayload(text: string, where: string, fix: string): Payload {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new WinfleetError(
      'WF_PAYLOAD_INVALID',
      `Cannot read ${where}: ${(error as Error).message}; ${fix}`,
    );
  }
  const payload = validatePayload(value, where);
  const names = new Set<string>();
  for (const f of payload.files) {
    if (names.has(f.name))
      throw invalidDocument('WF_PAYLOAD_INVALID', where, [
        `files: "${f.name}" is listed twice; list each file once`,
      ]);
    names.add(f.name);
  }
  const listed = new Set([...names].map((n) => n.toLowerCase()));
  if (listed.has(agentFileName) && !listed.has(serviceShimFileName)) {
    throw invalidDocument('WF_PAYLOAD_INVALID', where, [
      `files: ${agentFileName} is listed without ${serviceShimFileName}, which runs it as a Windows service; rebuild the payload with make payload`,
    ]);
  }
  const needRunner = logRunnerPrograms.filter((name) => listed.has(name));
  if (needRunner.length > 0 && !listed.has(logRunnerFileName)) {
    throw invalidDocument('WF_PAYLOAD_INVALID', where, [
      `files: ${needRunner.join(' and ')} ${needRunner.length > 1 ? 'are' : 'is'} listed without ${logRunnerFileName}, which keeps their logs (a service has no console); rebuild the payload with make payload`,
    ]);
  }
  return payload;
}

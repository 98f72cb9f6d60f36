/**
 * What `hosts add` creates, from its flags: the WindowsHost and, with a key file, the SSH key
 * Secret it names. Every value is checked here against the CRD's own schema patterns (read
 * from windowsHostCrd, not copied), so a bad flag is a usage error naming the flag before any
 * API call, not an API server rejection naming a field the user never typed.
 */
import type * as k8s from '@kubernetes/client-node';
import { windowsHostCrd } from '../../api/crds.ts';
import { apiVersion } from '../../api/group-version.ts';
import { type WindowsHost, windowsHostResource } from '../../api/windows-host.ts';
import { WinfleetError } from '../../errors/catalog.ts';

/** The data key the operator reads the private key from (hostaccess/host-session.ts). */
export const sshKeySecretKey = 'ssh-privatekey';

type Schema = k8s.V1JSONSchemaProps;

function specSchema(): Record<string, Schema> {
  const root = windowsHostCrd.spec.versions[0]?.schema?.openAPIV3Schema;
  const spec = root?.properties?.spec?.properties;
  if (!spec) throw new WinfleetError('WF_INVARIANT', 'windowsHostCrd has no spec schema');
  return spec;
}

function schemaPattern(schema: Schema | undefined, field: string): RegExp {
  if (!schema?.pattern)
    throw new WinfleetError('WF_INVARIANT', `windowsHostCrd has no pattern for ${field}`);
  return new RegExp(schema.pattern);
}

const spec = specSchema();
const patterns = {
  address: schemaPattern(spec.address, 'address'),
  username: schemaPattern(spec.username, 'username'),
  secretName: schemaPattern(spec.sshKeySecretRef?.properties?.name, 'sshKeySecretRef.name'),
  nodeName: schemaPattern(spec.nodeName, 'nodeName'),
  pool: schemaPattern(spec.pool, 'pool'),
  hostKey: schemaPattern(spec.hostKey, 'hostKey'),
  labelValue: schemaPattern(spec.labels?.additionalProperties as Schema, 'labels'),
};
/** Whether `value` is what spec.address accepts (an IPv4 address or DNS name), by the CRD's own pattern. */
export function isHostAddress(value: string): boolean {
  return (
    value.length >= 1 &&
    value.length <= (spec.address?.maxLength ?? 253) &&
    patterns.address.test(value)
  );
}

const labelKeyPattern =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** A DNS-1123 subdomain, as object names are (what kubectl accepts for a custom resource). */
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A problem with one flag: the flag, and what is wrong with how to fix it. */
export function flagProblem(flag: string, message: string): WinfleetError<{ flag: string }> {
  return new WinfleetError('WF_FLAG_INVALID', `${flag}: ${message}`, { details: { flag } });
}

/** A WindowsHost name: a DNS-1123 subdomain of at most 253 characters. */
export function checkHostName(name: string, flag = 'NAME'): string {
  if (name.length > 253 || !dnsSubdomain.test(name))
    throw flagProblem(
      flag,
      `"${printable(name)}" is not a valid WindowsHost name: use lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters (e.g. win-01)`,
    );
  return name;
}

/** A value quoted in a message: control characters shown escaped, long values cut. */
export function printable(value: string): string {
  const shown = JSON.stringify(value).slice(1, -1);
  return shown.length > 80 ? `${shown.slice(0, 77)}...` : shown;
}

export interface AddFlags {
  address?: string;
  port?: string;
  user: string;
  sshKeyFile?: string;
  sshKeySecret?: string;
  pool?: string;
  nodeName?: string;
  label?: string[];
  hostLabel?: string[];
  /** spec.hostKey: the host key's SHA-256 fingerprint, pinned before first contact. */
  hostKey?: string;
}

/** `k=v` pairs of --label / --host-label, checked as Kubernetes label keys and values. */
export function parseLabels(pairs: string[] | undefined, flag: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of pairs ?? []) {
    const at = pair.indexOf('=');
    const key = at < 0 ? pair : pair.slice(0, at);
    const value = at < 0 ? undefined : pair.slice(at + 1);
    if (value === undefined)
      throw flagProblem(flag, `"${printable(pair)}" is not KEY=VALUE (e.g. ${flag} zone=a)`);
    if (key.length > 317 || !labelKeyPattern.test(key) || (key.split('/').at(-1)?.length ?? 0) > 63)
      throw flagProblem(
        flag,
        `"${printable(key)}" is not a label key ([prefix/]name: letters, digits, '-', '_', '.', name at most 63 characters)`,
      );
    if (value.length > 63 || !patterns.labelValue.test(value))
      throw flagProblem(
        flag,
        `value "${printable(value)}" of ${key} is not a label value (at most 63 letters, digits, '-', '_', '.', alphanumeric at both ends)`,
      );
    if (key in labels) throw flagProblem(flag, `${key} is given twice; give each key once`);
    labels[key] = value;
  }
  return labels;
}

/** The default name of the key Secret `hosts add --ssh-key-file` writes. */
export function defaultSecretName(hostName: string): string {
  const name = `${hostName}-ssh-key`;
  return name.length <= 253 ? name : `${hostName.slice(0, 245).replace(/[-.]+$/, '')}-ssh-key`;
}

/** The WindowsHost `hosts add` creates, and the Secret name it refers to. */
export function buildWindowsHost(
  name: string,
  namespace: string,
  flags: AddFlags,
): { host: WindowsHost; secretName: string } {
  checkHostName(name);
  const address = flags.address;
  if (!address) throw flagProblem('--address', 'required: the host’s IPv4 address or DNS name');
  if (!isHostAddress(address))
    throw flagProblem(
      '--address',
      `"${printable(address)}" is not an IPv4 address or DNS name (e.g. 10.1.42.7 or win-01.example.com; no port here, use --port)`,
    );
  let port: number | undefined;
  if (flags.port !== undefined) {
    port = /^[1-9][0-9]{0,4}$/.test(flags.port) ? Number(flags.port) : Number.NaN;
    if (!(port >= 1 && port <= 65535))
      throw flagProblem('--port', `"${printable(flags.port)}" is not a port (1 to 65535)`);
  }
  if (!flags.user || flags.user.length > 104 || !patterns.username.test(flags.user))
    throw flagProblem(
      '--user',
      `"${printable(flags.user)}" is not an account name (1 to 104 characters, no control characters)`,
    );
  if (flags.sshKeyFile === undefined && flags.sshKeySecret === undefined)
    throw flagProblem(
      '--ssh-key-file',
      'give the SSH private key: --ssh-key-file FILE (winfleet stores it in a Secret) or --ssh-key-secret NAME (an existing Secret with key ssh-privatekey)',
    );
  if (flags.sshKeyFile === '')
    throw flagProblem('--ssh-key-file', 'empty file name; give the private key file');
  const secretName = flags.sshKeySecret ?? defaultSecretName(name);
  if (secretName.length > 253 || !patterns.secretName.test(secretName))
    throw flagProblem(
      '--ssh-key-secret',
      `"${printable(secretName)}" is not a Secret name (a DNS subdomain: lower-case letters, digits, '-', '.')`,
    );
  if (
    flags.nodeName !== undefined &&
    (flags.nodeName.length > 63 || !patterns.nodeName.test(flags.nodeName))
  )
    throw flagProblem(
      '--node-name',
      `"${printable(flags.nodeName)}" is not a node name (an RFC 1123 label: lower-case letters, digits, '-', at most 63)`,
    );
  if (flags.pool !== undefined && (flags.pool.length > 63 || !patterns.pool.test(flags.pool)))
    throw flagProblem(
      '--pool',
      `"${printable(flags.pool)}" is not a pool name (an RFC 1123 label: lower-case letters, digits, '-', at most 63)`,
    );
  if (flags.hostKey !== undefined && !patterns.hostKey.test(flags.hostKey))
    throw flagProblem(
      '--host-key',
      `"${printable(flags.hostKey)}" is not an OpenSSH SHA-256 fingerprint: "SHA256:" and 43 base64 characters, as ssh-keygen -lf prints it for the host's key (on the host: ssh-keygen -lf C:\\ProgramData\\ssh\\ssh_host_ed25519_key.pub); or pass the key file with --host-key-from-file`,
    );
  const nodeLabels = parseLabels(flags.label, '--label');
  if (Object.keys(nodeLabels).length > 64) throw flagProblem('--label', 'at most 64 node labels');
  const hostLabels = parseLabels(flags.hostLabel, '--host-label');
  const host: WindowsHost = {
    apiVersion,
    kind: windowsHostResource.kind,
    metadata: {
      name,
      namespace,
      ...(Object.keys(hostLabels).length ? { labels: hostLabels } : {}),
    },
    spec: {
      address,
      ...(port !== undefined ? { port } : {}),
      ...(flags.hostKey !== undefined ? { hostKey: flags.hostKey } : {}),
      username: flags.user,
      sshKeySecretRef: { name: secretName },
      ...(flags.nodeName ? { nodeName: flags.nodeName } : {}),
      ...(Object.keys(nodeLabels).length ? { labels: nodeLabels } : {}),
      ...(flags.pool ? { pool: flags.pool } : {}),
    },
  };
  return { host, secretName };
}

/** The Secret holding the key, as the operator reads it (type kubernetes.io/ssh-auth). */
export function buildKeySecret(name: string, namespace: string, privateKey: string): k8s.V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace,
      labels: { 'app.kubernetes.io/managed-by': 'winfleet' },
    },
    type: 'kubernetes.io/ssh-auth',
    data: { [sshKeySecretKey]: Buffer.from(privateKey).toString('base64') },
  };
}

/** The Secret as printed (--dry-run -o yaml): the key replaced by a note. */
export function redactedSecret(secret: k8s.V1Secret): k8s.V1Secret {
  return {
    ...secret,
    data: Object.fromEntries(Object.keys(secret.data ?? {}).map((k) => [k, '(redacted)'])),
  };
}

/** Whether two WindowsHost specs ask for the same host (port 22 and no port are the same). */
export function sameSpec(a: WindowsHost['spec'], b: WindowsHost['spec']): boolean {
  const norm = (s: WindowsHost['spec']) =>
    JSON.stringify({
      address: s.address,
      port: s.port ?? 22,
      username: s.username,
      mode: s.mode ?? 'SSH',
      secret: s.sshKeySecretRef?.name,
      key: s.sshKeySecretRef ? (s.sshKeySecretRef.key ?? sshKeySecretKey) : undefined,
      nodeName: s.nodeName ?? '',
      labels: Object.entries(s.labels ?? {}).sort(),
      taints: s.taints ?? [],
      pool: s.pool ?? '',
      hostKey: s.hostKey ?? '',
    });
  return norm(a) === norm(b);
}

/**
 * What the kubelet stand-in reads before it starts: its command-line flags (from the service's
 * command line) and its KubeletConfiguration file, merged as the real kubelet merges them
 * (flags win). It applies the kubelet's own Windows validation, so a configuration that would
 * stop a real kubelet stops the stand-in with the same message: cgroupsPerQOS and
 * enforceNodeAllocatable default to Linux values and must be turned off on Windows.
 */
import type * as k8s from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { FlagError, flagLists, parsePflag } from './flag-lists.ts';
import { parseGoBool } from './go-values.ts';

export interface KubeletSettings {
  configPath?: string;
  bootstrapKubeconfigPath?: string;
  kubeconfigPath?: string;
  certDir: string;
  hostnameOverride?: string;
  nodeIp?: string;
  nodeLabels: Record<string, string>;
  registerWithTaints: k8s.V1Taint[];
  systemReserved: Record<string, string>;
  kubeReserved: Record<string, string>;
  maxPods: number;
  cgroupsPerQOS: boolean;
  enforceNodeAllocatable: string[];
  containerRuntimeEndpoint: string;
  rotateCertificates: boolean;
  serverTLSBootstrap: boolean;
  clientCAFile?: string;
  windowsService: boolean;
  windowsPriorityClass?: string;
  /** The kubelet API's port (KubeletConfiguration `port`, or --port; default 10250). */
  port: number;
  /**
   * What pflag prints for deprecated flags given (logged by the stand-in); every flag the
   * pinned kubelet does not have is refused by parseKubeletFlags.
   */
  flagWarnings: string[];
}

/** The runtime endpoint of containerd on Windows (and the kubelet's Windows default). */
export const containerdEndpoint = 'npipe://./pipe/containerd-containerd';

/** Where the kubelet keeps certificates when --cert-dir is not given (on drive C:). */
export const defaultCertDir = 'C:\\var\\lib\\kubelet\\pki';

/**
 * Parses the kubelet's flags as the pinned kubelet does (NewKubeletCommand: pflag, with "_"
 * read as "-"), against the flags it has (flag-lists.ts, generated from its module for
 * Windows). A flag it does not have, a missing value or an argument that is not a flag stops
 * it with its message ("failed to parse kubelet flag: unknown flag: --x", "unknown command x").
 * `flags` holds the last value given for each flag, by canonical name; `warnings` what pflag
 * prints for deprecated flags.
 */
export function parseKubeletFlags(argv: readonly string[]): {
  flags: Map<string, string>;
  warnings: string[];
} {
  let parsed: ReturnType<typeof parsePflag>;
  try {
    parsed = parsePflag(flagLists().kubelet, argv);
  } catch (error) {
    if (error instanceof FlagError)
      throw new Error(`failed to parse kubelet flag: ${error.message}`);
    throw error;
  }
  if (parsed.positional.length > 0) throw new Error(`unknown command ${parsed.positional[0]}`);
  return { flags: parsed.values, warnings: parsed.warnings };
}

/** `k=v,k2=v2` (the form of --node-labels, --system-reserved). */
export function parseKeyValueList(text: string, flag: string): Record<string, string> {
  const result: Record<string, string> = {};
  for (const item of text.split(',')) {
    if (item.trim() === '') continue;
    const at = item.indexOf('=');
    if (at <= 0) {
      throw new Error(
        `invalid argument "${text}" for "--${flag}" flag: "${item}" is not key=value`,
      );
    }
    result[item.slice(0, at).trim()] = item.slice(at + 1).trim();
  }
  return result;
}

/** `key=value:Effect,key2:Effect` (the form of --register-with-taints). */
export function parseTaints(text: string): k8s.V1Taint[] {
  const taints: k8s.V1Taint[] = [];
  for (const item of text.split(',')) {
    if (item.trim() === '') continue;
    const match = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(
      item.trim(),
    );
    if (!match) {
      throw new Error(
        `invalid argument "${text}" for "--register-with-taints" flag: "${item}" is not key[=value]:Effect with Effect NoSchedule, PreferNoSchedule or NoExecute`,
      );
    }
    const taint: k8s.V1Taint = { key: match[1]!, effect: match[3]! };
    if (match[2] !== undefined && match[2] !== '') taint.value = match[2];
    taints.push(taint);
  }
  return taints;
}

/** A bool flag's value as Go reads it (parsePflag has refused what ParseBool refuses). */
function parseBoolean(value: string, flag: string): boolean {
  const parsed = parseGoBool(value);
  if (parsed === undefined)
    throw new Error(
      `invalid argument "${value}" for "--${flag}" flag: strconv.ParseBool: parsing "${value}": invalid syntax`,
    );
  return parsed;
}

/** The kubelet API's port when neither the file nor --port sets it. */
export const defaultKubeletPort = 10250;

/** --port (an int32 flag) or the file's `port`, checked as the kubelet's validation does. */
function kubeletPortSetting(flag: string | undefined, config: number | undefined): number {
  let port = config ?? defaultKubeletPort;
  if (flag !== undefined) {
    if (!/^[+-]?\d+$/.test(flag))
      throw new Error(
        `failed to parse kubelet flag: invalid argument "${flag}" for "--port" flag: strconv.ParseInt: parsing "${flag}": invalid syntax`,
      );
    port = Number(flag);
  }
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error(
      `invalid configuration: port (--port) ${port} must be between 1 and 65535, inclusive`,
    );
  return port;
}

/** A KubeletConfiguration as the stand-in reads it (the fields it uses). */
interface KubeletConfigurationFile {
  apiVersion?: string;
  kind?: string;
  registerWithTaints?: k8s.V1Taint[];
  systemReserved?: Record<string, string>;
  kubeReserved?: Record<string, string>;
  maxPods?: number;
  port?: number;
  cgroupsPerQOS?: boolean;
  enforceNodeAllocatable?: string[];
  containerRuntimeEndpoint?: string;
  rotateCertificates?: boolean;
  serverTLSBootstrap?: boolean;
  authentication?: { x509?: { clientCAFile?: string } };
}

/** Reads a KubeletConfiguration document; throws the kubelet's kind of message. */
export function parseKubeletConfiguration(text: string, path: string): KubeletConfigurationFile {
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    throw new Error(
      `failed to load kubelet config file, path: ${path}: ${(error as Error).message}`,
    );
  }
  const config = (document ?? {}) as KubeletConfigurationFile;
  if (typeof document !== 'object' || Array.isArray(document)) {
    throw new Error(`failed to load kubelet config file, path: ${path}: not a YAML mapping`);
  }
  if (
    config.kind !== 'KubeletConfiguration' ||
    config.apiVersion !== 'kubelet.config.k8s.io/v1beta1'
  ) {
    throw new Error(
      `failed to load kubelet config file, path: ${path}: expected apiVersion kubelet.config.k8s.io/v1beta1 and kind KubeletConfiguration, got apiVersion "${config.apiVersion ?? ''}" kind "${config.kind ?? ''}"`,
    );
  }
  return config;
}

/**
 * Merges the flags over the config file (the file may be undefined: no --config) and checks
 * the result as the kubelet does on Windows.
 */
export function kubeletSettings(
  argv: readonly string[],
  configFile: KubeletConfigurationFile | undefined,
): KubeletSettings {
  const { flags, warnings } = parseKubeletFlags(argv);
  const config = configFile ?? {};
  const flag = (name: string) => flags.get(name);
  const settings: KubeletSettings = {
    certDir: flag('cert-dir') ?? defaultCertDir,
    nodeLabels: flag('node-labels') ? parseKeyValueList(flag('node-labels')!, 'node-labels') : {},
    registerWithTaints: flag('register-with-taints')
      ? parseTaints(flag('register-with-taints')!)
      : (config.registerWithTaints ?? []),
    systemReserved: flag('system-reserved')
      ? parseKeyValueList(flag('system-reserved')!, 'system-reserved')
      : { ...(config.systemReserved ?? {}) },
    kubeReserved: flag('kube-reserved')
      ? parseKeyValueList(flag('kube-reserved')!, 'kube-reserved')
      : { ...(config.kubeReserved ?? {}) },
    maxPods: flag('max-pods') ? Number(flag('max-pods')) : (config.maxPods ?? 110),
    cgroupsPerQOS: flag('cgroups-per-qos')
      ? parseBoolean(flag('cgroups-per-qos')!, 'cgroups-per-qos')
      : (config.cgroupsPerQOS ?? true),
    enforceNodeAllocatable:
      flag('enforce-node-allocatable') !== undefined
        ? flag('enforce-node-allocatable')!
            .split(',')
            .map((s) => s.trim())
            .filter((s) => s !== '')
        : (config.enforceNodeAllocatable ?? ['pods']),
    containerRuntimeEndpoint:
      flag('container-runtime-endpoint') ?? config.containerRuntimeEndpoint ?? containerdEndpoint,
    rotateCertificates: flag('rotate-certificates')
      ? parseBoolean(flag('rotate-certificates')!, 'rotate-certificates')
      : (config.rotateCertificates ?? false),
    serverTLSBootstrap: flag('rotate-server-certificates')
      ? parseBoolean(flag('rotate-server-certificates')!, 'rotate-server-certificates')
      : (config.serverTLSBootstrap ?? false),
    windowsService: flag('windows-service')
      ? parseBoolean(flag('windows-service')!, 'windows-service')
      : false,
    port: kubeletPortSetting(flag('port'), config.port),
    flagWarnings: warnings,
  };
  const optional = {
    configPath: flag('config'),
    bootstrapKubeconfigPath: flag('bootstrap-kubeconfig'),
    kubeconfigPath: flag('kubeconfig'),
    hostnameOverride: flag('hostname-override'),
    nodeIp: flag('node-ip'),
    clientCAFile: flag('client-ca-file') ?? config.authentication?.x509?.clientCAFile,
    windowsPriorityClass: flag('windows-priorityclass'),
  };
  for (const [key, value] of Object.entries(optional)) {
    if (value !== undefined) (settings as unknown as Record<string, unknown>)[key] = value;
  }
  if (!Number.isInteger(settings.maxPods) || settings.maxPods <= 0) {
    throw new Error(
      `invalid configuration: maxPods (--max-pods) ${settings.maxPods} must be a positive integer`,
    );
  }
  // The kubelet's validation_windows.go.
  if (settings.cgroupsPerQOS) {
    throw new Error(
      'invalid configuration: CgroupsPerQOS (--cgroups-per-qos) true is not supported on Windows',
    );
  }
  if (settings.enforceNodeAllocatable.length > 0) {
    throw new Error(
      `invalid configuration: EnforceNodeAllocatable (--enforce-node-allocatable) [${settings.enforceNodeAllocatable.join(' ')}] is not supported on Windows`,
    );
  }
  if (
    settings.windowsPriorityClass !== undefined &&
    ![
      'IDLE_PRIORITY_CLASS',
      'BELOW_NORMAL_PRIORITY_CLASS',
      'NORMAL_PRIORITY_CLASS',
      'ABOVE_NORMAL_PRIORITY_CLASS',
      'HIGH_PRIORITY_CLASS',
      'REALTIME_PRIORITY_CLASS',
    ].includes(settings.windowsPriorityClass)
  ) {
    throw new Error(
      `invalid argument "${settings.windowsPriorityClass}" for "--windows-priorityclass" flag: unknown priority class`,
    );
  }
  return settings;
}

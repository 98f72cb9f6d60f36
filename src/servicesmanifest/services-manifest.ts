/**
 * The services manifest: the versioned description of every Windows service the agent keeps
 * on a node (binary, arguments, dependencies, start priority, whether it starts during
 * bootstrap) and the payload files it needs. The operator publishes each version as an
 * immutable ConfigMap; the agent validates it before use: unknown fields, dependency cycles,
 * dependencies on unknown services, bootstrap services that depend on later ones, and unknown
 * node variables are all refused with the field named. A manifest is also an attack path (the
 * agent runs its binaries as LocalSystem), so every binary must be one of its payload files
 * (whose SHA-256 the agent checks before it starts the service), every path must stay inside
 * C:\k (confined-path.ts), and no environment variable may change how Windows finds or loads
 * programs.
 *
 * Environment: a service's own `env` is given to its process alone (the service's
 * `Environment` registry value), at its next start. The manifest's `env` is set at machine
 * level, for what runs outside the services (an administrator's session, a tool run over SSH);
 * services get it too, through their own environment, since a machine variable reaches a
 * running system's services only after a reboot.
 */

import { containerdHostDirectory } from '../images/containerd-hosts.ts';
import { trustedCertificateProblem } from '../pki/trusted-ca-bundle.ts';
import { compileSchema, invalidDocument } from '../schema/validator.ts';
import { confinedPathProblem } from './confined-path.ts';
import { hostPaths } from './host-paths.ts';
import { type NodeNetwork, nodeNetworkSchema } from './node-network.ts';

/** Node-derived values a service argument may use as {{name}}. */
export const nodeVariables = [
  'nodeName',
  'nodeIP',
  'nodeLabels',
  'hostname',
  'kubeDir',
  'clusterDNS',
  'clusterDomain',
  'serviceCIDR',
  'podCIDR',
  'apiServer',
  /**
   * kube-proxy's --source-vip on an overlay network: an address of this node's pod subnet the
   * agent reserves in host-local's store (source-vip.ts); a service using it waits until it is.
   */
  'sourceVip',
] as const;
export type NodeVariable = (typeof nodeVariables)[number];

export interface ManifestService {
  name: string;
  displayName: string;
  description?: string;
  /** Full Windows path of the executable. */
  binary: string;
  /** Arguments; may contain {{nodeVariable}}. */
  args: string[];
  /** Services of this manifest that must run first. */
  dependencies: string[];
  /** Lower starts earlier. */
  priority: number;
  /** Started by `agent bootstrap` (containerd, kubelet); the rest by the run loop. */
  bootstrap: boolean;
  startType?: 'auto' | 'delayed-auto' | 'demand';
  /**
   * Environment variables for this service's process only, on top of the manifest's `env`;
   * values may contain {{nodeVariable}}. A change restarts the service.
   */
  env?: Record<string, string>;
  /**
   * Runs `binary` under kube-log-runner.exe, which becomes the service's executable and appends
   * the program's standard output and error to a file: a service has no console, and the
   * kubelet and kube-proxy log only to standard error (klog's --log-file went in 1.26).
   */
  logRunner?: ManifestLogRunner;
  /**
   * Runs `binary` under winfleet-service.exe (windows/service), which becomes the service's
   * executable and answers the service control manager for a program that cannot (flanneld
   * has no Windows service support): the program's output goes to winfleet-agent.log in
   * `logDir`, and a stop ends it after the shim's stop timeout. Not with `logRunner`.
   */
  serviceShim?: ManifestServiceShim;
}

/** winfleet-service.exe and its flags (windows/service/options.go). */
export interface ManifestServiceShim {
  /** Full Windows path of winfleet-service.exe: a payload file of this manifest. */
  binary: string;
  /** Its --log-dir: a directory directly in C:\k\logs, one per service. */
  logDir: string;
  /** Its --stop-timeout, a Go duration from 1s to 10m (default 30s). */
  stopTimeout?: string;
}

/** kube-log-runner.exe and its flags (k8s.io/component-base/logs/kube-log-runner). */
export interface ManifestLogRunner {
  /** Full Windows path of kube-log-runner.exe: a payload file of this manifest. */
  binary: string;
  /** The log file (-log-file): a .log file in C:\k\logs, one per service. */
  logFile: string;
  /** Rotate the log at this size (-log-file-size, a Kubernetes quantity such as "100M" or "64Mi"). */
  maxSize?: string;
  /** Delete rotated logs older than this (-log-file-age, a duration such as "168h"). */
  maxAge?: string;
}

/** The executables a service runs: its program, and kube-log-runner.exe or the shim. */
export function serviceExecutables(service: ManifestService): string[] {
  if (service.logRunner) return [service.binary, service.logRunner.binary];
  if (service.serviceShim) return [service.binary, service.serviceShim.binary];
  return [service.binary];
}

/** The service's executable and arguments, after kube-log-runner.exe's flags when it has one. */
export function serviceCommand(
  service: ManifestService,
  args: string[],
): { binaryPath: string; args: string[] } {
  const shim = service.serviceShim;
  if (shim) {
    const flags = ['--log-dir', shim.logDir];
    if (shim.stopTimeout !== undefined) flags.push('--stop-timeout', shim.stopTimeout);
    return { binaryPath: shim.binary, args: [...flags, '--', service.binary, ...args] };
  }
  const runner = service.logRunner;
  if (!runner) return { binaryPath: service.binary, args };
  const flags = [`-log-file=${runner.logFile}`];
  if (runner.maxSize !== undefined) flags.push(`-log-file-size=${runner.maxSize}`);
  if (runner.maxAge !== undefined) flags.push(`-log-file-age=${runner.maxAge}`);
  // kube-log-runner's flags end at the first argument that is not one: the program.
  return { binaryPath: runner.binary, args: [...flags, service.binary, ...args] };
}

export interface ManifestFile {
  /** Name of the file in the payload (C:\k\winfleet\payload\<name>). */
  payload: string;
  /** Where it is installed. */
  path: string;
  sha256: string;
}

/**
 * What the node gets besides its services (winfleet-config's host settings): they change with
 * the manifest's version, so they roll out through the pools like a payload.
 */
export interface ManifestHostSettings {
  /** CAs the agent keeps in LocalMachine\Root, by thumbprint (trusted-ca-bundle.ts). */
  trustedCertificates?: { thumbprint: string; pem: string }[];
  /**
   * containerd's registry host directories under C:\k\containerd\certs.d (containerd-hosts.ts):
   * the registry, its directory name and the files in it (hosts.toml, CA files).
   */
  registryHosts?: { registry: string; directory: string; files: Record<string, string> }[];
  /** The machine's WinHTTP proxy (proxy-settings.ts); absent: direct access. */
  winHttpProxy?: { proxyServer: string; bypassList: string };
}

export interface ServicesManifest {
  /** e.g. "1.36.5-wf.1"; the ConfigMap is winfleet-services-<version>. */
  version: string;
  services: ManifestService[];
  files: ManifestFile[];
  /**
   * Machine environment variables the node needs (e.g. proxy settings): set at machine level
   * and given to every service through its own environment (see the header).
   */
  env?: Record<string, string>;
  hostSettings?: ManifestHostSettings;
  /**
   * The node's pod network (node-network.ts); absent: routed. In the manifest, not the agent's
   * config, so that a new network mode reaches each host through its pool's rollout.
   */
  network?: NodeNetwork;
}

const schema = {
  type: 'object',
  additionalProperties: false,
  required: ['version', 'services', 'files'],
  properties: {
    version: { type: 'string', pattern: '^[0-9A-Za-z][0-9A-Za-z.+-]{0,62}$' },
    services: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: [
          'name',
          'displayName',
          'binary',
          'args',
          'dependencies',
          'priority',
          'bootstrap',
        ],
        properties: {
          name: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,80}$' },
          displayName: { type: 'string', minLength: 1, maxLength: 256 },
          description: { type: 'string', maxLength: 1024 },
          binary: { type: 'string', pattern: '^[A-Za-z]:\\\\' },
          args: { type: 'array', items: { type: 'string' } },
          dependencies: { type: 'array', items: { type: 'string' } },
          priority: { type: 'integer', minimum: 0 },
          bootstrap: { type: 'boolean' },
          startType: { enum: ['auto', 'delayed-auto', 'demand'] },
          env: { type: 'object', additionalProperties: { type: 'string' } },
          logRunner: {
            type: 'object',
            additionalProperties: false,
            required: ['binary', 'logFile'],
            properties: {
              binary: { type: 'string', pattern: '^[A-Za-z]:\\\\' },
              logFile: { type: 'string', pattern: '^[A-Za-z]:\\\\[^{}]*\\.log$' },
              // A resource.Quantity kube-log-runner accepts: binary (Ki…) or decimal (k, M, G)
              // suffixes; "K" is not one.
              maxSize: { type: 'string', pattern: '^[1-9][0-9]{0,5}(Ki|Mi|Gi|k|M|G)$' },
              maxAge: { type: 'string', pattern: '^[1-9][0-9]{0,5}(h|m)$' },
            },
          },
          serviceShim: {
            type: 'object',
            additionalProperties: false,
            required: ['binary', 'logDir'],
            properties: {
              binary: { type: 'string', pattern: '^[A-Za-z]:\\\\' },
              logDir: { type: 'string', pattern: '^[A-Za-z]:\\\\[^{}]*$' },
              stopTimeout: { type: 'string', pattern: '^([1-9][0-9]?s|10m|[1-9]m)$' },
            },
          },
        },
      },
    },
    files: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['payload', 'path', 'sha256'],
        properties: {
          payload: { type: 'string', pattern: '^[A-Za-z0-9_.-]+$' },
          path: { type: 'string', pattern: '^[A-Za-z]:\\\\' },
          sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
        },
      },
    },
    env: { type: 'object', additionalProperties: { type: 'string' } },
    network: nodeNetworkSchema,
    hostSettings: {
      type: 'object',
      additionalProperties: false,
      properties: {
        trustedCertificates: {
          type: 'array',
          maxItems: 200,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['thumbprint', 'pem'],
            properties: {
              thumbprint: { type: 'string', pattern: '^[0-9A-F]{40}$' },
              pem: { type: 'string', maxLength: 65536 },
            },
          },
        },
        registryHosts: {
          type: 'array',
          maxItems: 100,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['registry', 'directory', 'files'],
            properties: {
              registry: { type: 'string' },
              directory: { type: 'string' },
              files: {
                type: 'object',
                required: ['hosts.toml'],
                maxProperties: 20,
                additionalProperties: { type: 'string', maxLength: 262144 },
              },
            },
          },
        },
        winHttpProxy: {
          type: 'object',
          additionalProperties: false,
          required: ['proxyServer', 'bypassList'],
          properties: {
            proxyServer: { type: 'string', pattern: '^[A-Za-z0-9=.:;_-]{1,2048}$' },
            bypassList: { type: 'string', pattern: '^[A-Za-z0-9.*:;<>\\[\\]_-]{0,8192}$' },
          },
        },
      },
    },
  },
} as const;

const validateSchema = compileSchema<ServicesManifest>(schema, {
  code: 'WF_MANIFEST_INVALID',
  document: 'services manifest',
});

const invalidManifest = (problems: string[]) =>
  invalidDocument('WF_MANIFEST_INVALID', 'services manifest', problems);

const variablePattern = /\{\{\s*([A-Za-z]+)\s*\}\}/g;

/**
 * Machine environment variables that decide which program or library Windows and .NET load
 * (search paths, system directories, profiler and runtime hooks): a manifest may not set them.
 */
const forbiddenEnvironment =
  /^(path|pathext|comspec|psmodulepath|systemroot|systemdrive|windir|programdata|programfiles.*|programw6432|commonprogram.*|allusersprofile|userprofile|appdata|localappdata|temp|tmp|(complus|dotnet|coreclr|cor)_.*)$/i;

/** Windows' limits for an environment variable: name and value lengths, in characters. */
const maxEnvNameLength = 255;
const maxEnvValueLength = 32767;

/**
 * Problems with one environment map (`field` is its path): names Windows cannot hold or that
 * decide which programs load, two names that differ only in case (one variable on Windows),
 * and empty or oversized values (an empty one would unset the variable, not set it). The
 * agent checks a service's environment with it too before it writes one (service-environment.ts).
 */
export function environmentProblems(
  field: string,
  env: Readonly<Record<string, string>>,
): string[] {
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const [name, value] of Object.entries(env)) {
    if (name === '' || name.length > maxEnvNameLength || /[=\0]/.test(name)) {
      problems.push(
        `${field}.${name}: not a Windows environment variable name; use 1 to ${maxEnvNameLength} characters without "="`,
      );
      continue;
    }
    if (forbiddenEnvironment.test(name))
      problems.push(
        `${field}.${name}: this variable decides which programs Windows loads; a manifest may not set it`,
      );
    const other = seen.get(name.toLowerCase());
    if (other !== undefined)
      problems.push(
        `${field}.${name}: the same variable as "${other}" (Windows environment names ignore case); keep one`,
      );
    seen.set(name.toLowerCase(), name);
    if (value === '' || value.length > maxEnvValueLength || value.includes('\0'))
      problems.push(
        `${field}.${name}: the value must be 1 to ${maxEnvValueLength} characters without NUL; leave the variable out to unset it`,
      );
  }
  return problems;
}

/**
 * Problems with the services' shims: winfleet-service.exe runs as LocalSystem, so it must be a
 * payload file; its log directory is a directory of its own directly in C:\k\logs.
 */
function serviceShimProblems(manifest: ServicesManifest, files: Set<string>): string[] {
  const problems: string[] = [];
  const logsDir = `${hostPaths.logs.toLowerCase()}\\`;
  const logDirs = new Map<string, string>();
  manifest.services.forEach((service, index) => {
    const shim = service.serviceShim;
    if (!shim) return;
    const field = `services.${index}.serviceShim`;
    if (service.logRunner)
      problems.push(`${field}: a service runs under kube-log-runner.exe or the shim, not both`);
    const binaryProblem = confinedPathProblem(shim.binary);
    if (binaryProblem) problems.push(`${field}.binary: ${binaryProblem}`);
    else if (!files.has(shim.binary.toLowerCase()))
      problems.push(
        `${field}.binary: "${shim.binary}" is not the path of a file of this manifest; winfleet-service.exe must be a payload file with its SHA-256`,
      );
    const dir = shim.logDir.toLowerCase();
    const dirProblem = confinedPathProblem(shim.logDir);
    if (dirProblem) problems.push(`${field}.logDir: ${dirProblem}`);
    else if (
      !dir.startsWith(logsDir) ||
      dir.slice(logsDir.length).includes('\\') ||
      dir === logsDir
    )
      problems.push(
        `${field}.logDir: "${shim.logDir}" is not a directory directly in ${hostPaths.logs}; give each service its own, e.g. ${hostPaths.logs}\\${service.name}`,
      );
    const other = logDirs.get(dir);
    if (other !== undefined)
      problems.push(
        `${field}.logDir: "${shim.logDir}" is also the log directory of service "${other}"`,
      );
    logDirs.set(dir, service.name);
  });
  return problems;
}

/**
 * Problems with the services' log runners: kube-log-runner.exe runs as LocalSystem like any
 * service binary, so it must be a payload file; and it appends to its log file whatever the
 * program prints, so that file must be a .log file in C:\k\logs (never an executable or a
 * file another component reads) and no two services may share one.
 */
function logRunnerProblems(manifest: ServicesManifest, files: Set<string>): string[] {
  const problems: string[] = [...serviceShimProblems(manifest, files)];
  const logsDir = `${hostPaths.logs.toLowerCase()}\\`;
  const logFiles = new Map<string, string>();
  manifest.services.forEach((service, index) => {
    const runner = service.logRunner;
    if (!runner) return;
    const field = `services.${index}.logRunner`;
    const binaryProblem = confinedPathProblem(runner.binary);
    if (binaryProblem) problems.push(`${field}.binary: ${binaryProblem}`);
    else if (!files.has(runner.binary.toLowerCase()))
      problems.push(
        `${field}.binary: "${runner.binary}" is not the path of a file of this manifest; kube-log-runner.exe must be a payload file with its SHA-256`,
      );
    const logFile = runner.logFile.toLowerCase();
    const logProblem = confinedPathProblem(runner.logFile);
    if (logProblem) problems.push(`${field}.logFile: ${logProblem}`);
    else if (!logFile.startsWith(logsDir) || logFile.slice(logsDir.length).includes('\\'))
      problems.push(
        `${field}.logFile: "${runner.logFile}" is not a file directly in ${hostPaths.logs}; put each service's log there, e.g. ${hostPaths.logs}\\${service.name}.log`,
      );
    const other = logFiles.get(logFile);
    if (other !== undefined)
      problems.push(
        `${field}.logFile: "${runner.logFile}" is also the log of service "${other}"; give each service its own log file`,
      );
    logFiles.set(logFile, service.name);
  });
  return problems;
}

/**
 * Problems with the host settings: each CA is one CA certificate with its own thumbprint, and
 * each registry directory is the one containerd would use for its registry, with plain file
 * names in it, so nothing from a manifest is trusted or written anywhere else.
 */
function hostSettingsProblems(settings: ManifestHostSettings | undefined): string[] {
  const problems: string[] = [];
  settings?.trustedCertificates?.forEach((cert, index) => {
    const problem = trustedCertificateProblem(cert);
    if (problem) problems.push(`hostSettings.trustedCertificates.${index}.pem: ${problem}`);
  });
  settings?.registryHosts?.forEach((host, index) => {
    const field = `hostSettings.registryHosts.${index}`;
    let directory: string | undefined;
    try {
      directory = containerdHostDirectory(host.registry);
    } catch (error) {
      problems.push(`${field}.registry: ${(error as Error).message}`);
    }
    if (directory !== undefined && directory !== host.directory)
      problems.push(
        `${field}.directory: "${host.directory}" is not containerd's directory for ${host.registry} ("${directory}")`,
      );
    for (const name of Object.keys(host.files)) {
      if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/.test(name) || name.includes('..'))
        problems.push(`${field}.files: "${name}" is not a plain file name`);
    }
  });
  return problems;
}

/** Problems with the paths and environment a manifest names (see the header). */
function confinementProblems(manifest: ServicesManifest): string[] {
  const problems: string[] = [];
  const files = new Set(manifest.files.map((f) => f.path.toLowerCase()));
  manifest.files.forEach((file, index) => {
    const problem = confinedPathProblem(file.path);
    if (problem) problems.push(`files.${index}.path: ${problem}`);
  });
  manifest.services.forEach((service, index) => {
    const problem = confinedPathProblem(service.binary);
    if (problem) problems.push(`services.${index}.binary: ${problem}`);
    else if (!files.has(service.binary.toLowerCase()))
      problems.push(
        `services.${index}.binary: "${service.binary}" is not the path of a file of this manifest; every service binary must be a payload file with its SHA-256`,
      );
  });
  problems.push(...logRunnerProblems(manifest, files));
  problems.push(...hostSettingsProblems(manifest.hostSettings));
  problems.push(...environmentProblems('env', manifest.env ?? {}));
  manifest.services.forEach((service, index) => {
    problems.push(...environmentProblems(`services.${index}.env`, service.env ?? {}));
  });
  return problems;
}

/** Parses and validates a manifest (object or JSON text). */
export function parseServicesManifest(input: unknown): ServicesManifest {
  let value = input;
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input);
    } catch (error) {
      throw invalidManifest([`(top level): not JSON: ${(error as Error).message}`]);
    }
  }
  const manifest = validateSchema(value);
  const problems: string[] = confinementProblems(manifest);
  const byName = new Map<string, { service: ManifestService; index: number }>();
  manifest.services.forEach((service, index) => {
    if (byName.has(service.name))
      problems.push(
        `services.${index}.name: "${service.name}" appears twice; names must be unique`,
      );
    byName.set(service.name, { service, index });
  });
  for (const [index, service] of manifest.services.entries()) {
    for (const dependency of service.dependencies) {
      const target = byName.get(dependency);
      if (!target) {
        problems.push(
          `services.${index}.dependencies: "${dependency}" is not a service of this manifest`,
        );
        continue;
      }
      if (service.bootstrap && !target.service.bootstrap) {
        problems.push(
          `services.${index}.dependencies: bootstrap service "${service.name}" depends on "${dependency}", which is not a bootstrap service; bootstrap services must come first`,
        );
      }
      if (target.service.priority >= service.priority) {
        problems.push(
          `services.${index}.priority: "${service.name}" (priority ${service.priority}) depends on "${dependency}" (priority ${target.service.priority}); a dependency needs a lower priority`,
        );
      }
    }
    const templated = [
      ...service.args.map((text) => ({ field: 'args', text })),
      ...Object.entries(service.env ?? {}).map(([name, text]) => ({ field: `env.${name}`, text })),
    ];
    for (const { field, text } of templated) {
      for (const match of text.matchAll(variablePattern)) {
        if (!(nodeVariables as readonly string[]).includes(match[1]!)) {
          problems.push(
            `services.${index}.${field}: unknown variable {{${match[1]}}}; use one of ${nodeVariables.join(', ')}`,
          );
        }
      }
    }
  }
  const maxBootstrap = Math.max(
    -1,
    ...manifest.services.filter((s) => s.bootstrap).map((s) => s.priority),
  );
  for (const [index, service] of manifest.services.entries()) {
    if (!service.bootstrap && service.priority <= maxBootstrap) {
      problems.push(
        `services.${index}.priority: "${service.name}" starts after bootstrap, so its priority must be above every bootstrap service's (${maxBootstrap})`,
      );
    }
  }
  const cycle = findCycle(manifest.services);
  if (cycle) problems.push(`services: dependency cycle ${cycle.join(' → ')}; break it`);
  if (problems.length > 0) throw invalidManifest(problems);
  return manifest;
}

function findCycle(services: ManifestService[]): string[] | undefined {
  const deps = new Map(services.map((s) => [s.name, s.dependencies]));
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (name: string): string[] | undefined => {
    if (state.get(name) === 'done') return undefined;
    if (state.get(name) === 'visiting') return [...path.slice(path.indexOf(name)), name];
    state.set(name, 'visiting');
    path.push(name);
    for (const d of deps.get(name) ?? []) {
      if (!deps.has(d)) continue;
      const found = visit(d);
      if (found) return found;
    }
    path.pop();
    state.set(name, 'done');
    return undefined;
  };
  for (const s of services) {
    const found = visit(s.name);
    if (found) return found;
  }
  return undefined;
}

/** Services in start order: priority, then name. */
export function startOrder(manifest: ServicesManifest): ManifestService[] {
  return [...manifest.services].sort(
    (a, b) => a.priority - b.priority || a.name.localeCompare(b.name),
  );
}

/** The services whose arguments or environment use {{variable}}. */
export function servicesUsing(manifest: ServicesManifest, variable: NodeVariable): string[] {
  const token = `{{${variable}}}`;
  return manifest.services
    .filter(
      (s) =>
        s.args.some((a) => a.includes(token)) ||
        Object.values(s.env ?? {}).some((v) => v.includes(token)),
    )
    .map((s) => s.name);
}

/** Replaces {{variable}} in `arg` with the node's values. */
export function expandArgument(arg: string, values: Record<NodeVariable, string>): string {
  return arg.replace(variablePattern, (_, name: string) => values[name as NodeVariable] ?? '');
}

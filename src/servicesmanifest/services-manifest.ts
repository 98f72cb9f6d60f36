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
 */
import { compileSchema, invalidDocument } from '../schema/validator.ts';
import { confinedPathProblem } from './confined-path.ts';

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
}

export interface ManifestFile {
  /** Name of the file in the payload (C:\k\winfleet\payload\<name>). */
  payload: string;
  /** Where it is installed. */
  path: string;
  sha256: string;
}

export interface ServicesManifest {
  /** e.g. "1.36.5-wf.1"; the ConfigMap is winfleet-services-<version>. */
  version: string;
  services: ManifestService[];
  files: ManifestFile[];
  /** Machine environment variables the node needs (e.g. proxy settings). */
  env?: Record<string, string>;
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
  for (const name of Object.keys(manifest.env ?? {})) {
    if (forbiddenEnvironment.test(name))
      problems.push(
        `env.${name}: this variable decides which programs Windows loads; a manifest may not set it`,
      );
  }
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
    for (const arg of service.args) {
      for (const match of arg.matchAll(variablePattern)) {
        if (!(nodeVariables as readonly string[]).includes(match[1]!)) {
          problems.push(
            `services.${index}.args: unknown variable {{${match[1]}}}; use one of ${nodeVariables.join(', ')}`,
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

/** Replaces {{variable}} in `arg` with the node's values. */
export function expandArgument(arg: string, values: Record<NodeVariable, string>): string {
  return arg.replace(variablePattern, (_, name: string) => values[name as NodeVariable] ?? '');
}

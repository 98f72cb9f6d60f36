/**
 * What the operator hands the agent: bootstrap.json (the node's identity, where the cluster
 * is, a short-lived bootstrap token and the services manifest) and, derived from it,
 * agent.json (what the run loop needs, without the token). Both are validated; a problem names
 * the field.
 */

import { type AgentHealthConfig, agentHealthSchema } from '../config/winfleet-config.ts';
import { parseIpv4 } from '../net/ipv4-cidr.ts';
import { compileSchema, invalidDocument } from '../schema/validator.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';
import {
  parseServicesManifest,
  type ServicesManifest,
} from '../servicesmanifest/services-manifest.ts';

// The on-host paths are the operator↔agent contract; the agent's modules import them from here.
export { kubeDir, winfleetDir } from '../servicesmanifest/host-paths.ts';
export const paths = hostPaths;

/** @package */
export interface NodeSettings {
  nodeName: string;
  nodeIP: string;
  hostname: string;
  apiServer: string;
  clusterDNS: string;
  clusterDomain: string;
  serviceCIDR: string;
  podCIDR: string;
  labels: Record<string, string>;
  taints: { key: string; value?: string; effect: string }[];
  kubelet: {
    systemReserved: Record<string, string>;
    priorityClass: string;
    maxPods: number;
  };
  /** The operator's namespace, where manifests are published. */
  operatorNamespace: string;
  /** Seconds between run-loop checks. */
  checkIntervalSeconds: number;
  /**
   * Seconds between Windows Update searches (besides one at each boot and one after each
   * install). Optional; default defaultUpdateSearchIntervalSeconds (6 hours).
   */
  updateSearchIntervalSeconds?: number;
  /**
   * The host pulls each new payload from the registry winfleet-join names (it joined by
   * command: winfleet never copies files to it). Optional; absent: the operator stages it.
   */
  pullsPayload?: boolean;
  /** hosts.agentHealth when the host was bootstrapped. Optional; absent: the defaults. */
  agentHealth?: AgentHealthConfig;
}

/** @package */
export const defaultUpdateSearchIntervalSeconds = 21600;

export interface BootstrapConfig extends NodeSettings {
  caCertificate: string;
  /** "<id>.<secret>"; short-lived, deleted by the operator after the node joins. */
  bootstrapToken: string;
  manifest: ServicesManifest;
}

export type AgentConfig = NodeSettings;

const nodeSettingsSchema = {
  nodeName: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 63 },
  nodeIP: { type: 'string', pattern: '^([0-9]{1,3}\\.){3}[0-9]{1,3}$' },
  hostname: { type: 'string', minLength: 1, maxLength: 63 },
  apiServer: { type: 'string', pattern: '^https://' },
  clusterDNS: { type: 'string' },
  clusterDomain: { type: 'string' },
  serviceCIDR: { type: 'string' },
  podCIDR: { type: 'string' },
  labels: { type: 'object', additionalProperties: { type: 'string' } },
  taints: {
    type: 'array',
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['key', 'effect'],
      properties: {
        key: { type: 'string' },
        value: { type: 'string' },
        effect: { type: 'string' },
      },
    },
  },
  kubelet: {
    type: 'object',
    additionalProperties: false,
    required: ['systemReserved', 'priorityClass', 'maxPods'],
    properties: {
      systemReserved: { type: 'object', additionalProperties: { type: 'string' } },
      priorityClass: {
        enum: [
          'ABOVE_NORMAL_PRIORITY_CLASS',
          'NORMAL_PRIORITY_CLASS',
          'HIGH_PRIORITY_CLASS',
          'IDLE_PRIORITY_CLASS',
          'BELOW_NORMAL_PRIORITY_CLASS',
          'REALTIME_PRIORITY_CLASS',
        ],
      },
      maxPods: { type: 'integer', minimum: 1, maximum: 1000 },
    },
  },
  operatorNamespace: { type: 'string', minLength: 1 },
  checkIntervalSeconds: { type: 'number', minimum: 0.1 },
  updateSearchIntervalSeconds: { type: 'number', minimum: 1, maximum: 2592000 },
  pullsPayload: { type: 'boolean' },
  agentHealth: agentHealthSchema,
};
const optionalNodeSettings = ['updateSearchIntervalSeconds', 'pullsPayload', 'agentHealth'];
const nodeSettingsRequired = Object.keys(nodeSettingsSchema).filter(
  (key) => !optionalNodeSettings.includes(key),
);

const validateAgent = compileSchema<AgentConfig>(
  {
    type: 'object',
    additionalProperties: false,
    required: nodeSettingsRequired,
    properties: nodeSettingsSchema,
  },
  { code: 'WF_AGENT_CONFIG_INVALID', document: 'agent.json' },
);
const validateBootstrap = compileSchema<BootstrapConfig>(
  {
    type: 'object',
    additionalProperties: false,
    required: [...nodeSettingsRequired, 'caCertificate', 'bootstrapToken', 'manifest'],
    properties: {
      ...nodeSettingsSchema,
      caCertificate: { type: 'string', pattern: '-----BEGIN CERTIFICATE-----' },
      bootstrapToken: { type: 'string', pattern: '^[a-z0-9]{6}\\.[a-z0-9]{16}$' },
      manifest: { type: 'object' },
    },
  },
  { code: 'WF_AGENT_CONFIG_INVALID', document: 'bootstrap.json' },
);

function parseJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw invalidDocument('WF_AGENT_CONFIG_INVALID', file, [
      `(top level): not JSON: ${(error as Error).message}`,
    ]);
  }
}

/**
 * Throws WF_AGENT_CONFIG_INVALID unless nodeIP is exactly an IPv4 address (the schema's
 * pattern only shapes it: 999.1.1.1 passes it). The kubelet would refuse it at start.
 */
function checkNodeIP(config: NodeSettings, file: string): void {
  if (parseIpv4(config.nodeIP) !== undefined) return;
  throw invalidDocument('WF_AGENT_CONFIG_INVALID', file, [
    `nodeIP: "${config.nodeIP}" is not an IPv4 address (four decimal octets 0-255 without leading zeros); the operator writes ${file} from the host's address: check the WindowsHost's spec.address and the host's IPv4 addresses, then re-bootstrap the host, which rewrites ${file} (annotate its WindowsHost with winfleet.io/rejoin=<any value>)`,
  ]);
}

export function parseBootstrapConfig(text: string, file = paths.bootstrapConfig): BootstrapConfig {
  const config = validateBootstrap(parseJson(text, file), file);
  checkNodeIP(config, file);
  return { ...config, manifest: parseServicesManifest(config.manifest) };
}

/** @package */
export function parseAgentConfig(text: string, file = paths.agentConfig): AgentConfig {
  const config = validateAgent(parseJson(text, file), file);
  checkNodeIP(config, file);
  return config;
}

export function agentConfigFrom(config: BootstrapConfig): AgentConfig {
  const { caCertificate: _ca, bootstrapToken: _token, manifest: _manifest, ...settings } = config;
  return settings;
}

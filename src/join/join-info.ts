/**
 * What a joining host learns from the cluster besides cluster-info: the ConfigMap
 * `winfleet-join` in the operator's namespace, key `join.json`. The operator writes it from its
 * configuration and the payload in use; a host reads it with its join token (group
 * system:bootstrappers:winfleet) before it has a node identity, and with its node credentials
 * afterwards (to know where to pull a new payload from). RBAC lets both read it by name and
 * nothing else, so it holds nothing secret: the payload registry's pull credentials, when there
 * are any, are a Secret named here, readable the same way.
 *
 * The agent parses it strictly: an unknown field, a missing one or a value out of shape is
 * refused with the field named, and the host does not go on with a half-understood join.
 */

import type { MirrorConfig } from '../config/winfleet-config.ts';
import { type AgentHealthConfig, agentHealthSchema } from '../config/winfleet-config.ts';
import { compileSchema, invalidDocument } from '../schema/validator.ts';

export const joinInfoConfigMapName = 'winfleet-join';
export const joinInfoKey = 'join.json';

/** Where the agents pull payload files from: layers of the payload artifact, by digest. */
export interface JoinPayloadSource {
  /** "host[:port]/path" of the payload artifact's repository, without tag or digest. */
  repository: string;
  /** The artifact's manifest digest, "sha256:<64 hex>", for the record and for checks. */
  digest: string;
  /** Mirrors of the repository's registry host, tried in order before it (winfleet-config). */
  mirrors: MirrorConfig[];
  /** Plain HTTP to the registry itself (loopback test registries only). */
  insecure?: boolean;
  /**
   * A Secret in the operator's namespace of type kubernetes.io/dockerconfigjson holding
   * read-only credentials for the registry (and its mirrors), readable by joining hosts and
   * nodes by name. Absent: anonymous pulls.
   */
  pullSecretName?: string;
}

export interface JoinInfo {
  /** The API server URL hosts use (https://…). */
  apiServer: string;
  clusterDNS: string;
  clusterDomain: string;
  serviceCIDR: string;
  podCIDR: string;
  /** The Windows taint every Windows node registers with. */
  windowsTaint: {
    key: string;
    value?: string;
    effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  };
  kubelet: {
    systemReserved: Record<string, string>;
    priorityClass: string;
    maxPods: number;
  };
  /** Seconds between the agent's run-loop checks. */
  checkIntervalSeconds: number;
  /** The agent's health checks (hosts.agentHealth); absent from older operators: defaults. */
  agentHealth?: AgentHealthConfig;
  /**
   * The services manifest a joining host applies: its version; the agent reads the published
   * ConfigMap winfleet-services-<version> and checks it against the published record.
   */
  servicesVersion: string;
  /** Absent when the operator serves the payload from a directory: hosts cannot pull it. */
  payload?: JoinPayloadSource;
}

const mirrorSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['endpoint'],
  properties: {
    endpoint: { type: 'string', pattern: '^https?://[^\\s]+$', maxLength: 2048 },
    pathPrefix: { type: 'string', pattern: '^[a-z0-9._/-]*$', maxLength: 255 },
    insecure: { type: 'boolean' },
  },
} as const;

const schema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'apiServer',
    'clusterDNS',
    'clusterDomain',
    'serviceCIDR',
    'podCIDR',
    'windowsTaint',
    'kubelet',
    'checkIntervalSeconds',
    'servicesVersion',
  ],
  properties: {
    apiServer: { type: 'string', pattern: '^https://[^\\s/]+(/[^\\s]*)?$', maxLength: 2048 },
    clusterDNS: { type: 'string', pattern: '^([0-9]{1,3}\\.){3}[0-9]{1,3}$' },
    clusterDomain: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$', maxLength: 253 },
    serviceCIDR: { type: 'string', pattern: '^([0-9]{1,3}\\.){3}[0-9]{1,3}/[0-9]{1,2}$' },
    podCIDR: { type: 'string', pattern: '^([0-9]{1,3}\\.){3}[0-9]{1,3}/[0-9]{1,2}$' },
    windowsTaint: {
      type: 'object',
      additionalProperties: false,
      required: ['key', 'effect'],
      properties: {
        key: { type: 'string', minLength: 1, maxLength: 316 },
        value: { type: 'string', maxLength: 63 },
        effect: { enum: ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] },
      },
    },
    kubelet: {
      type: 'object',
      additionalProperties: false,
      required: ['systemReserved', 'priorityClass', 'maxPods'],
      properties: {
        systemReserved: { type: 'object', additionalProperties: { type: 'string' } },
        priorityClass: { type: 'string' },
        maxPods: { type: 'integer', minimum: 1, maximum: 1000 },
      },
    },
    checkIntervalSeconds: { type: 'number', minimum: 0.1 },
    agentHealth: agentHealthSchema,
    servicesVersion: { type: 'string', pattern: '^[0-9A-Za-z][0-9A-Za-z.+-]{0,62}$' },
    payload: {
      type: 'object',
      additionalProperties: false,
      required: ['repository', 'digest', 'mirrors'],
      properties: {
        repository: {
          type: 'string',
          pattern: '^[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)+$',
          maxLength: 255,
        },
        digest: { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' },
        mirrors: { type: 'array', maxItems: 16, items: mirrorSchema },
        insecure: { type: 'boolean' },
        pullSecretName: {
          type: 'string',
          pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
          maxLength: 253,
        },
      },
    },
  },
} as const;

const validate = compileSchema<JoinInfo>(schema, {
  code: 'WF_JOIN_INFO_INVALID',
  document: `ConfigMap ${joinInfoConfigMapName} key ${joinInfoKey}`,
});

/** Parses `join.json` strictly; throws WF_JOIN_INFO_INVALID naming each bad field. */
export function parseJoinInfo(text: string): JoinInfo {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw invalidDocument('WF_JOIN_INFO_INVALID', `ConfigMap ${joinInfoConfigMapName}`, [
      `${joinInfoKey}: not JSON (${(error as Error).message}); the operator writes it: check that the operator runs`,
    ]);
  }
  return validate(value, `ConfigMap ${joinInfoConfigMapName} key ${joinInfoKey}`);
}
